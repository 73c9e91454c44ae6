"""The SLURM profile parses and gives every scoring job one GPU (dry run, no sbatch needed)."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SNAKEMAKE = Path(sys.executable).with_name("snakemake")


def test_slurm_profile_requests_one_gpu_per_scoring_job():
    pytest.importorskip("snakemake_executor_plugin_slurm", reason="pip install snakemake-executor-plugin-slurm")
    target = "results/scores/knowledge/control.parquet"
    proc = subprocess.run(
        [str(SNAKEMAKE), "-n", "--workflow-profile", "profiles/slurm", "--forceall", target],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    assert "executor plugin" not in out.lower() or "slurm" in out.lower()
    jobs = re.split(r"\n(?=(?:local)?rule \w+:)", out)
    shards = [j for j in jobs if re.match(r"(?:local)?rule score_shard:", j)]
    assert shards, out[-3000:]
    for job in shards:
        resources = re.search(r"resources: (.*)", job).group(1)
        assert re.search(r"\bgpu=1\b", resources), resources
        assert "slurm_partition=gpu" in resources, resources
        assert "cpus_per_gpu=8" in resources, resources
    others = [j for j in jobs if re.match(r"(?:local)?rule (train_control|build_probes):", j)]
    for job in others:
        resources = re.search(r"resources: (.*)", job).group(1)
        assert "gpu=" not in resources.replace("cpus_per_gpu", ""), resources
