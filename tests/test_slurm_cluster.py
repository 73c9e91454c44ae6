"""The workflow on a real one-node SLURM cluster (tests/slurm_cluster.py), and SLURM's faults.

Marked ``slurm``: not part of ``make test``; ``make test-slurm`` runs them (``.ci/run`` starts the
cluster first and stops it at the end). Run alone, ``pytest tests/test_slurm_cluster.py`` starts
the cluster itself when slurm-wlm is installed and none is up, and stops it afterwards; without
slurm-wlm every test here is skipped and listed at the end of the run.

The runs use the small ``.test`` config with ``--workflow-profile`` a site profile made the way
docs/slurm.md tells a site to: a copy of profiles/slurm with what this cluster needs changed
(:data:`SITE`). Every job but ``all`` is submitted with sbatch; scoring asks for a GPU of the
``gpu`` partition (two placeholder devices). The tables are compared exactly with a local run of
the same config (scoring is batch-invariant, one machine).
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import slurm_cluster
import yaml
from demo_digest import demo_digest

ROOT = Path(__file__).resolve().parents[1]
SNAKEFILE = ROOT / "workflow" / "Snakefile"
SNAKEMAKE = [sys.executable, "-m", "snakemake"]
SCORES = "results/scores/knowledge/control.parquet"
SHARD = "results/scores/knowledge/shards/control/0.parquet"

pytestmark = pytest.mark.slurm

#: What this cluster needs changed in a copy of profiles/slurm/profile.yaml (docs/slurm.md): a
#: node of 2 cores and 8 GB, no accounting (poll with squeue, no account to guess), and a status
#: check after 2 s rather than 40 s (the tests wait on every job).
SITE = {
    "set-resources": {
        "score_shard": {"cpus_per_gpu": 1, "mem_mb": 2000},
        "generate_shard": {"cpus_per_gpu": 1, "mem_mb": 2000},
        "appropt_distractors": {"cpus_per_gpu": 1, "mem_mb": 2000},
        "extract_dump": {"cpus_per_task": 1, "mem_mb": 2000},
        "train_control": {"cpus_per_task": 1},
    },
    "set-threads": {"build_probes": 2, "prepare_retrieval": 2},
    "default-resources": {"mem_mb": 1000},
    "slurm-status-command": "squeue",
    "slurm-no-account": True,
    "slurm-init-seconds-before-status-checks": 2,
}


def site_profile(folder: Path, changes: dict) -> Path:
    """profiles/slurm/profile.yaml with ``changes`` merged in (mappings key by key), written to
    ``folder``/profile.yaml: what a site does by hand."""
    profile = yaml.safe_load((ROOT / "profiles/slurm/profile.yaml").read_text())

    def merge(into: dict, new: dict) -> None:
        for key, value in new.items():
            if isinstance(value, dict) and isinstance(into.get(key), dict):
                merge(into[key], value)
            else:
                into[key] = value

    merge(profile, changes)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "profile.yaml").write_text(yaml.safe_dump(profile, sort_keys=False))
    return folder


def with_site(**rules: dict) -> dict:
    """:data:`SITE` with some rules' resources changed further."""
    changes = yaml.safe_load(yaml.safe_dump(SITE))
    for rule, values in rules.items():
        changes["set-resources"].setdefault(rule, {}).update(values)
    return changes


@pytest.fixture(scope="session")
def cluster():
    """The one-node cluster: started here (and stopped after the session) unless one is up."""
    if not slurm_cluster.installed():
        pytest.skip(
            "slurm-wlm is not installed (apt-get install slurm-wlm munge, or "
            "`python tests/slurm_cluster.py start --install`): the SLURM cluster tests did not run"
        )
    state = slurm_cluster.DEFAULT_STATE
    started = not slurm_cluster.is_up(state)
    if started and os.geteuid() != 0:
        pytest.skip("no SLURM cluster is up and starting one needs root: the SLURM cluster tests did not run")
    if started:
        slurm_cluster.start(state)
    yield state
    if started:
        slurm_cluster.stop(state)


def copy_test_config(folder: Path) -> Path:
    work = folder / ".test"
    shutil.copytree(ROOT / ".test", work, ignore=shutil.ignore_patterns("results", "logs", ".snakemake"))
    return work


class Run:
    """A Snakemake run in the background, its console in a file (several run at once)."""

    def __init__(self, work: Path, *args: str, name: str = "run"):
        self.work = work
        self.console_file = work.parent / f"{name}.console.txt"
        self.start = time.monotonic()
        cmd = [*SNAKEMAKE, "-s", str(SNAKEFILE), "--directory", str(work), *args]
        with open(self.console_file, "w") as out:
            self.proc = subprocess.Popen(
                cmd, cwd=work.parent, stdout=out, stderr=subprocess.STDOUT, text=True
            )
        self.wall = None

    def wait(self, timeout: float = 900) -> Run:
        self.proc.wait(timeout=timeout)
        self.wall = time.monotonic() - self.start
        return self

    @property
    def returncode(self) -> int | None:
        return self.proc.returncode

    @property
    def console(self) -> str:
        return self.console_file.read_text()


def exact_problems(expected: Path, actual: Path, only: str = "") -> list[str]:
    """Tables (under ``only``) that differ between two results folders, cell for cell."""
    a, b = demo_digest(expected), demo_digest(actual)
    names = [n for n in a.tables if n.startswith(only)]
    problems = [n for n in names if a.tables[n] != b.tables.get(n)]
    problems += [
        k
        for k in a.values
        if k.startswith(only) and not np.array_equal(a.values[k], b.values.get(k), equal_nan=True)
    ]
    if not only:
        problems += sorted(set(b.tables) - set(a.tables))
    return problems


def submissions(console: str) -> dict[str, str]:
    """SLURM job id -> rule of every submission a Snakemake console reports."""
    found = re.findall(r"submitted with SLURM jobid (\d+) \(log: \S*/slurm_logs/rule_(\w+?)/", console)
    return dict(found)


def scontrol(job: str) -> dict[str, str]:
    out = subprocess.run(["scontrol", "show", "job", job], capture_output=True, text=True, check=True).stdout
    return dict(re.findall(r"(\w+)=(\S*)", out))


@pytest.fixture(scope="module")
def runs(cluster, tmp_path_factory):
    """The .test config run on the cluster and, meanwhile, locally: (cluster Run, site profile,
    local results folder)."""
    base = tmp_path_factory.mktemp("cluster")
    profile = site_profile(base / "site", SITE)
    on_cluster = Run(copy_test_config(base), "--workflow-profile", str(profile))
    local = Run(copy_test_config(tmp_path_factory.mktemp("local")), "--cores", "1").wait()
    assert local.returncode == 0, local.console[-4000:]
    on_cluster.wait()
    assert on_cluster.returncode == 0, on_cluster.console[-4000:]
    return on_cluster, profile, local.work / "results"


@pytest.fixture(scope="module")
def reference(runs) -> Path:
    return runs[2]


def test_every_job_is_submitted_and_the_tables_equal_a_local_run(runs, reference):
    run, *_ = runs
    jobs = submissions(run.console)
    # 13 jobs of the .test DAG; `all` has nothing to run and is not submitted.
    assert sorted(jobs.values()) == sorted(
        [
            "extract_dump",
            "temporal_view",
            "build_probes",
            "retrieve_distractors",
            "train_control",
            "score_shard",
            "score_suite",
            "compute_metrics",
            "control_check",
            "summarize_metrics",
            "leaderboard",
            "render_report",
        ]
    ), run.console[-3000:]
    for job, rule in jobs.items():
        info = scontrol(job)
        assert info["JobState"] == "COMPLETED", (rule, info)
        if rule == "score_shard":  # the GPU rule: one of the placeholder GPUs
            assert info["Partition"] == "gpu" and info["TresPerJob"] == "gres:gpu:1", info
            assert info.get("CpusPerTres") == "gres:gpu:1", info
        else:
            assert info["Partition"] == "cpu" and "gpu" not in info.get("TresPerJob", ""), (rule, info)
    assert exact_problems(reference, run.work / "results") == []
    print(f"\ncluster run: {len(jobs)} submissions, {run.wall:.0f} s wall")


# --- faults ------------------------------------------------------------------------------------
#
# Each fault runs in a copy of the finished cluster run whose scores are removed, so score_shard
# (the GPU job) and score_suite run again; the three faults of `fault_runs` run at once.


def fault_copy(runs, folder: Path) -> Path:
    run, *_ = runs
    copy = folder / ".test"
    shutil.copytree(run.work, copy, symlinks=True, ignore=shutil.ignore_patterns("slurm_logs", "locks"))
    for name in ("control.parquet", "control.topk.parquet"):
        (copy / "results/scores/knowledge" / name).unlink()
    return copy


def running_job(rule: str, work: Path, timeout: float = 600) -> str:
    """The SLURM id of the job of ``rule`` that runs in ``work``, once it is running."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        out = subprocess.run(
            ["squeue", "-h", "-t", "running", "-o", "%i|%k|%Z"], capture_output=True, text=True
        )
        for line in out.stdout.splitlines():
            job, comment, folder = line.split("|", 2)
            if comment.startswith(f"rule_{rule}_") and Path(folder) == work:
                return job
        time.sleep(0.5)
    raise AssertionError(f"no running SLURM job of rule {rule} in {work} within {timeout:.0f} s")


def job_pids(job: str) -> list[int]:
    """Processes of a SLURM job (their environment names its id): the job script's and steps'."""
    pids = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                env = (proc / "environ").read_bytes().split(b"\0")
            except OSError:
                continue
            if f"SLURM_JOB_ID={job}".encode() in env:
                pids.append(int(proc.name))
    return pids


def hang(job: str) -> None:
    """Stop a job's processes (SIGSTOP) as a hung job would be: it runs on until SLURM ends it."""
    deadline = time.monotonic() + 60
    while not job_pids(job):  # the step starts a moment after the job
        assert time.monotonic() < deadline, f"no process of SLURM job {job}"
        time.sleep(0.2)
    time.sleep(1)
    for pid in job_pids(job):
        try:
            os.kill(pid, signal.SIGSTOP)
        except ProcessLookupError:
            pass


def fault_run(work: Path, profile: Path) -> Run:
    return Run(work, "--workflow-profile", str(profile), "--retries", "0", SCORES)


@pytest.fixture(scope="module")
def fault_runs(runs, tmp_path_factory):
    """A time limit, a scancel and a memory limit, each in its own copy, at once; then each
    copy run again with the site profile.

    {fault: (failed Run, SLURM job, its profile, rerun Run, scoring outputs left after the failure)}
    """
    made = {}
    for fault, changes in (
        ("time", with_site(score_shard={"runtime": 1})),
        ("cancel", SITE),
        # Below what a job's Snakemake and the scoring script hold: SLURM (jobacct_gather/linux
        # with OverMemoryKill, tests/slurm_cluster.py) kills the job.
        ("memory", with_site(score_shard={"mem_mb": 150})),
    ):
        folder = tmp_path_factory.mktemp(fault)
        profile = site_profile(folder / "site", changes)
        made[fault] = (fault_run(fault_copy(runs, folder), profile), profile)
    timed = running_job("score_shard", made["time"][0].work)
    hang(timed)
    cancelled = running_job("score_shard", made["cancel"][0].work)
    hang(cancelled)
    subprocess.run(["scancel", cancelled], check=True)
    failed = {fault: run.wait() for fault, (run, _) in made.items()}
    left = {fault: leftovers(run.work) for fault, run in failed.items()}  # before the reruns
    reruns = {}
    for fault, run in failed.items():
        profile = site_profile(run.work.parent / "site-rerun", SITE)
        reruns[fault] = Run(run.work, "--workflow-profile", str(profile), SCORES, name="rerun")
    jobs = {"time": timed, "cancel": cancelled, "memory": None}
    return {f: (failed[f], jobs[f], made[f][1], reruns[f].wait(), left[f]) for f in made}


def leftovers(work: Path) -> list[Path]:
    """Outputs of the scoring jobs, or temporary files of them, present in ``work``."""
    found = [work / p for p in (SHARD, SCORES) if (work / p).exists()]
    return found + [p for p in (work / "results/scores").rglob("*") if p.name.endswith(".tmp")]


def failed_without_output(run: Run, left: list[Path]) -> str:
    console = run.console
    assert run.returncode != 0, console[-3000:]
    assert left == [], (left, console[-3000:])
    return console


def rerun_equals_reference(rerun: Run, reference: Path) -> None:
    """The same command with the site profile finishes, and the scores equal the local run's."""
    assert rerun.returncode == 0, rerun.console[-4000:]
    assert exact_problems(reference, rerun.work / "results", only="scores/") == []


def factprobe_lines(console: str) -> list[str]:
    return [line for line in console.splitlines() if line.startswith("factprobe: rule score_shard")]


def test_a_job_past_its_time_limit_is_named_with_the_key_to_raise(fault_runs, reference):
    run, job, profile, rerun, left = fault_runs["time"]
    console = failed_without_output(run, left)
    assert scontrol(job)["JobState"] == "TIMEOUT"
    [line] = factprobe_lines(console)
    assert line.startswith(
        f"factprobe: rule score_shard (knowledge_control_0) hit its SLURM time limit (runtime=1 min, "
        f"SLURM job {job}): raise set-resources score_shard: runtime in {profile}/profile.yaml and rerun"
    ), line
    rerun_equals_reference(rerun, reference)


def test_a_cancelled_scoring_job_is_named_and_the_rerun_completes(fault_runs, reference):
    run, job, _, rerun, left = fault_runs["cancel"]
    console = failed_without_output(run, left)
    assert scontrol(job)["JobState"] == "CANCELLED"
    [line] = factprobe_lines(console)
    assert f"was cancelled in SLURM (scancel, an administrator or preemption; SLURM job {job})" in line
    assert "rerun the same command" in line
    rerun_equals_reference(rerun, reference)


def test_a_job_over_its_memory_limit_is_named_with_mem_mb(fault_runs, reference):
    run, _, profile, rerun, left = fault_runs["memory"]
    console = failed_without_output(run, left)
    [line] = factprobe_lines(console)
    assert "went over its SLURM memory limit (mem_mb=150, SLURM job" in line, line
    assert f"raise set-resources score_shard: mem_mb in {profile}/profile.yaml and rerun" in line
    rerun_equals_reference(rerun, reference)


def test_a_request_larger_than_every_node_is_refused_before_submission(runs, tmp_path):
    """score_shard asking for 4 GPUs of the node's 2: the run stops before its first sbatch with
    one line naming the rule, the request, the node and the key; the profile's `retries: 1` is
    not spent on it (nothing is submitted, so nothing is restarted)."""
    profile = site_profile(tmp_path / "site", with_site(score_shard={"gpu": 4}))
    run = Run(fault_copy(runs, tmp_path), "--workflow-profile", str(profile), SCORES).wait(timeout=300)
    console = run.console
    assert run.returncode != 0, console[-3000:]
    [line] = factprobe_lines(console)
    assert line == (
        "factprobe: rule score_shard asks SLURM for gpu=4, cpus_per_gpu=1 (4 CPUs), mem_mb=2000 on "
        f"partition gpu, which none of its nodes offers (1 node, largest: 2 GPUs, {os.cpu_count()} CPUs, "
        f"{slurm_cluster.NODE_MEMORY_MB} MB; sbatch: Requested node configuration is not available): "
        f"lower set-resources score_shard: gpu in {profile}/profile.yaml (or set its slurm_partition to "
        "one with larger nodes) and rerun"
    ), console[-3000:]
    assert submissions(console) == {} and "SLURM sbatch failed" not in console
    assert "Trying to restart" not in console


def step_running(job: str, timeout: float = 300) -> None:
    """Wait until the job's first step (the ``srun`` of Snakemake's job step executor) runs."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        out = subprocess.run(["squeue", "-h", "-s", "-j", job, "-o", "%i"], capture_output=True, text=True)
        if f"{job}.0" in out.stdout.split():
            return
        time.sleep(0.3)
    raise AssertionError(f"SLURM job {job} started no step within {timeout:.0f} s")


def test_a_controller_restart_mid_run_does_not_stop_the_run(cluster, runs, reference, tmp_path):
    """slurmctld stopped and started again while the scoring job's step runs: the job, and the
    run, go on. (Restarted while that step is being created, the step's srun waited on without
    an answer until the job's time limit: docs/slurm.md.)"""
    run = fault_run(fault_copy(runs, tmp_path), site_profile(tmp_path / "site", SITE))
    job = running_job("score_shard", run.work)
    step_running(job)
    slurm_cluster.restart_controller(cluster)
    run.wait()
    assert run.returncode == 0, run.console[-4000:]
    assert scontrol(job)["JobState"] == "COMPLETED"
    assert exact_problems(reference, run.work / "results", only="scores/") == []
