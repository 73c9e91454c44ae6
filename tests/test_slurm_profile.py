"""The SLURM profile parses and gives every scoring job one GPU (dry run, no sbatch needed).

Runs in a scratch copy of the workflow (symlinks) whose probe tables are placeholders, with
``--allowed-rules`` limited to the scoring/control rules, so it checks this profile and the score
rules independently of the state of upstream stages and of results/.
"""

import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
SNAKEMAKE = Path(sys.executable).with_name("snakemake")
PROBE_FILES = [
    "facts",
    "prompts",
    "entity_forms",
    "candidates",
    "forms",
    "translated_prompts",
    "translated_forms",
]


def jobs_of(output: str, rule: str) -> list[str]:
    blocks = re.split(r"\n(?=(?:local)?rule \w+:)", output)
    return [b for b in blocks if re.match(rf"(?:local)?rule {rule}:", b)]


def test_slurm_profile_requests_one_gpu_per_scoring_job(tmp_path):
    pytest.importorskip("snakemake_executor_plugin_slurm", reason="pip install snakemake-executor-plugin-slurm")
    for name in ("Snakefile", "config", "workflow", "resources", "tests", "profiles"):
        (tmp_path / name).symlink_to(ROOT / name)
    config = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    models = [line.split("\t")[0] for line in (ROOT / "config" / "models.tsv").read_text().splitlines()[1:] if line]
    targets = []
    for suite in config["suites"]:
        folder = tmp_path / "results" / "probes" / suite
        (folder / "appropt").mkdir(parents=True)
        for name in PROBE_FILES:
            (folder / f"{name}.parquet").touch()
        for model in models:
            (folder / "appropt" / f"{model}.parquet").touch()
            (folder / "appropt" / f"{model}.forms.parquet").touch()
            targets.append(f"results/scores/{suite}/{model}.parquet")
    proc = subprocess.run(
        [str(SNAKEMAKE), "-n", "--workflow-profile", "profiles/slurm"]
        + ["--allowed-rules", "score_shard", "score_suite", "train_control", "--"]
        + targets,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    shards = jobs_of(out, "score_shard")
    n_shards = config["scoring"].get("shards", 1)
    assert len(shards) == len(targets) * n_shards, out[-3000:]
    for job in shards:
        resources = re.search(r"resources: (.*)", job).group(1)
        assert re.search(r"(?<!_)\bgpu=1\b", resources), resources
        assert "slurm_partition=gpu" in resources, resources
        assert "cpus_per_gpu=8" in resources, resources
    for rule in ("score_suite", "train_control"):
        for job in jobs_of(out, rule):
            resources = re.search(r"resources: (.*)", job).group(1)
            assert not re.search(r"(?<!_)\bgpu=", resources), resources
            assert "slurm_partition=cpu" in resources, resources
