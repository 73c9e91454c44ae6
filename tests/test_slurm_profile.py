"""The SLURM profile submits the sbatch lines we mean.

Snakemake runs for real with ``--workflow-profile profiles/slurm`` and the SLURM executor plugin,
but ``sbatch`` on PATH is a fake that records its arguments and refuses the job (so nothing runs,
and Snakemake stops after the submissions). ``sacct`` is a fake that knows no account. What is
asserted is therefore exactly what the plugin would hand to a real cluster.

The run happens in a scratch copy of the workflow (symlinks) whose probe tables, control model
and one suite's score shards are placeholders, with ``--allowed-rules score_shard score_suite``: a
GPU job (``score_shard``) and a CPU job (``score_suite``) are ready at once, independently of the
upstream stages and of results/.
"""

import json
import os
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
FAKE_SBATCH = """#!{python}
import json, os, sys
with open(os.environ["FAKE_SBATCH_LOG"], "a") as fh:
    fh.write(json.dumps(sys.argv[1:]) + "\\n")
sys.stderr.write("sbatch: error: fake sbatch of tests/test_slurm_profile.py, job not submitted\\n")
sys.exit(1)
"""


def option(args: list[str], name: str) -> str | None:
    """Value of ``--name=value``, ``--name value`` or ``-x value`` in an argument list (None if absent)."""
    for i, arg in enumerate(args):
        if arg.startswith(name + "="):
            return arg.split("=", 1)[1]
        if arg == name:
            return args[i + 1]
    return None


def fake_cluster(work: Path) -> dict[str, str]:
    """A scratch copy of the workflow (symlinks) and fake sbatch/sacct first on PATH: the env."""
    for name in ("config", "workflow", "resources", "tests", "profiles"):
        (work / name).symlink_to(ROOT / name)
    bin_dir = work / "bin"
    bin_dir.mkdir()
    (bin_dir / "sbatch").write_text(FAKE_SBATCH.format(python=sys.executable))
    (bin_dir / "sacct").write_text("#!/bin/sh\nexit 0\n")
    for tool in ("sbatch", "sacct"):
        (bin_dir / tool).chmod(0o755)
    return dict(
        os.environ,
        PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        FAKE_SBATCH_LOG=str(work / "sbatch.log"),
        PWD=str(work),
    )


@pytest.fixture(scope="module")
def submitted(tmp_path_factory) -> dict[str, list[str]]:
    """sbatch arguments per job (keyed by the plugin's ``--comment``, rule + wildcards)."""
    pytest.importorskip(
        "snakemake_executor_plugin_slurm", reason="pip install snakemake-executor-plugin-slurm"
    )
    work = tmp_path_factory.mktemp("slurm")
    env = fake_cluster(work)
    config = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    suites = list(config["suites"])
    gpu_suite, cpu_suite = suites[0], suites[1]
    for suite in suites:
        folder = work / "results" / "probes" / suite
        (folder / "appropt").mkdir(parents=True)
        for name in PROBE_FILES:
            (folder / f"{name}.parquet").touch()
        (folder / "appropt" / "control.parquet").touch()
        (folder / "appropt" / "control.forms.parquet").touch()
    for suite in suites:  # one control model per suite (results/models/control/{suite}/)
        (work / "results" / "models" / "control" / suite).mkdir(parents=True)
        (work / "results" / "models" / "control" / suite / "split.parquet").touch()
    shards = work / "results" / "scores" / cpu_suite / "shards" / "control"
    shards.mkdir(parents=True)
    n_shards = config["scoring"].get("shards", 1)
    for shard in range(n_shards):
        (shards / f"{shard}.parquet").touch()
        (shards / f"{shard}.topk.parquet").touch()
    targets = [f"results/scores/{gpu_suite}/shards/control/{s}.parquet" for s in range(n_shards)]
    targets.append(f"results/scores/{cpu_suite}/control.parquet")
    proc = subprocess.run(
        [str(SNAKEMAKE), "--workflow-profile", "profiles/slurm", "--keep-going", "--retries", "0"]
        + ["--slurm-init-seconds-before-status-checks", "1"]
        + ["--allowed-rules", "score_shard", "score_suite", "--"]
        + targets,
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "fake sbatch" in out, out[-3000:]
    calls = [json.loads(line) for line in (work / "sbatch.log").read_text().splitlines()]
    # onstart puts each rule's distinct request to sbatch --test-only first (factprobe.plumbing.slurmfit):
    # the same options as the submissions; the fake's refusal is not "larger than every node"
    tests = [args for args in calls if "--test-only" in args]
    calls = [args for args in calls if "--test-only" not in args]
    assert sorted(option(args, "--comment") for args in tests) == ["rule_score_shard", "rule_score_suite"]
    jobs = {option(args, "--comment"): args for args in calls}
    for args in tests:
        [submitted] = [a for c, a in jobs.items() if c.startswith(option(args, "--comment") + "_")][:1]
        for name in ("-p", "--gpus", "--cpus-per-gpu", "--cpus-per-task", "--mem", "-t"):
            assert option(args, name) == option(submitted, name), (name, args, submitted)
    expected = {f"rule_score_shard_wildcards_{gpu_suite}_control_{s}" for s in range(n_shards)}
    expected.add(f"rule_score_suite_wildcards_{cpu_suite}_control")
    assert set(jobs) == expected, (sorted(jobs), out[-3000:])
    return jobs


@pytest.mark.full  # make test-slurm submits the same jobs to a real cluster
def test_scoring_job_asks_for_one_gpu_and_cpus_per_gpu(submitted):
    shards = {k: v for k, v in submitted.items() if k.startswith("rule_score_shard")}
    assert shards
    for args in shards.values():
        assert option(args, "-p") == "gpu", args
        assert option(args, "--gpus") == "1", args
        assert option(args, "--cpus-per-gpu") == "8", args
        # The bug of A cpus_per_task default won over cpus_per_gpu.
        assert option(args, "--cpus-per-task") is None, args
        assert option(args, "--mem") == "32000", args
        assert option(args, "-t") == "240", args
        assert "--gres" not in " ".join(args)


@pytest.mark.full  # make test-slurm submits the same jobs to a real cluster
def test_cpu_job_asks_for_its_threads_and_no_gpu(submitted):
    [args] = [v for k, v in submitted.items() if k.startswith("rule_score_suite")]
    assert option(args, "-p") == "cpu", args
    assert option(args, "--gpus") is None, args
    assert option(args, "--cpus-per-gpu") is None, args
    # score_suite declares no threads: one task with one CPU.
    assert option(args, "--ntasks") == "1", args
    assert option(args, "--cpus-per-task") == "1", args
    assert option(args, "--mem") == "4000", args
    assert option(args, "-t") == "60", args


def test_profile_flag_is_refused_before_any_submission(tmp_path):
    """`snakemake --profile profiles/slurm` (what Snakemake users type) would also load
    profiles/default as the workflow profile (a one-GPU cap for the whole cluster run, CPU jobs
    without their partition): it stops at start-up with the flag that is right, submitting nothing.
    `--workflow-profile profiles/slurm` is the run of the fixture above."""
    pytest.importorskip("snakemake_executor_plugin_slurm")
    env = fake_cluster(tmp_path)
    proc = subprocess.run(
        [str(SNAKEMAKE), "--profile", "profiles/slurm", "--retries", "0"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "run `snakemake --workflow-profile profiles/slurm` instead" in out, out[-3000:]
    assert not (tmp_path / "sbatch.log").exists()
