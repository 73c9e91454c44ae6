"""benchmarks/scale.py's true CPU: the job hook's rusage of a job's process
tree against this process's own rusage of the same run, and its place beside Snakemake's figure."""

from __future__ import annotations

import json
import resource
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCH))
import scale  # noqa: E402

# A job's script: Snakemake's object in __main__, CPU in the process, in a waited-for child
# (subprocess) and in forked pool workers (which must not write records of their own).
JOB = """
import multiprocessing as mp, subprocess, sys
class Job:
    rule = "extract_dump"
    log = ["logs/extract_dump/20141201.log"]
snakemake = Job()
def burn(n):
    return sum(i * i for i in range(n))
if __name__ == "__main__":
    burn(2_000_000)
    subprocess.run([sys.executable, "-c", "sum(i * i for i in range(3_000_000))"], check=True)
    with mp.get_context("fork").Pool(2) as pool:
        pool.map(burn, [1_000_000, 1_000_000])
"""


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _run(tmp_path: Path, code: str) -> float:
    script = tmp_path / "job.py"
    script.write_text(code)
    env = scale.job_cpu_env(tmp_path, "")
    before = _children_cpu()
    subprocess.run([sys.executable, str(script)], env=env, check=True)
    return _children_cpu() - before


def test_hook_records_the_whole_process_tree_once(tmp_path):
    measured = _run(tmp_path, JOB)
    records = list((tmp_path / "jobcpu").glob("*.json"))
    assert len(records) == 1  # not the pool workers, not the plain python child
    record = json.loads(records[0].read_text())
    assert record["rule"] == "extract_dump"
    assert record["children_cpu_s"] > 0.05  # the subprocess and the workers are in it
    # The same tree seen from outside (this test's RUSAGE_CHILDREN): equal up to interpreter teardown.
    assert record["cpu_s"] == pytest.approx(measured, rel=0.15, abs=0.1)
    assert scale.read_job_cpu(tmp_path) == {"benchmarks/extract_dump/20141201.tsv": record}


# A job holding 200 MB that forks two workers, each holding 100 MB of its own for a while: the
# pages the workers share with the parent count once in the tree's PSS (twice more in a sum of RSS).
MEMORY_JOB = """
import multiprocessing as mp, time
class Job:
    rule = "build_probes"
    log = ["logs/build_probes/knowledge.log"]
snakemake = Job()
held = bytearray(b"x") * (200 * 2**20)
def work(_):
    own = bytearray(b"y") * (100 * 2**20)
    time.sleep(2.5)
    return len(own) + len(held)
if __name__ == "__main__":
    time.sleep(1.0)
    with mp.get_context("fork").Pool(2) as pool:
        pool.map(work, [0, 1], chunksize=1)
"""


def test_hook_samples_the_process_tree_memory_by_pss(tmp_path):
    _run(tmp_path, MEMORY_JOB)
    (record,) = [json.loads(p.read_text()) for p in (tmp_path / "jobcpu").glob("*.json")]
    # 200 MB + 2 x 100 MB (+ interpreters); the RSS of the three summed would be about 800 MB.
    assert 390 < record["tree_pss_mb"] < 560
    # A worker: its own 100 MB and a third of the 200 MB it shares with the parent and the other.
    assert record["workers"] == 2 and 150 < record["worker_pss_mb"] < 230
    assert 95 < record["worker_own_mb"] < 130  # its own anonymous pages only
    assert record["max_rss_mb"] > 290  # ru_maxrss: the largest process, shared pages whole


def test_hook_is_inert_outside_a_job(tmp_path):
    _run(tmp_path, "sum(range(1000))\n")
    assert list((tmp_path / "jobcpu").glob("*.json")) == []


def _bench(path: Path, cpu: float, wall: float = 10.0, rss: float = 100.0) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"s\th:m:s\tmax_rss\tcpu_time\n{wall}\t0:00:10\t{rss}\t{cpu}\n")


def test_benchmarks_carry_both_figures_and_fits_use_the_true_one(tmp_path):
    _bench(tmp_path / "benchmarks" / "extract_dump" / "20141201.tsv", 1.0)
    _bench(tmp_path / "benchmarks" / "extract_dump" / "20190201.tsv", 2.0)
    (tmp_path / "jobcpu").mkdir()
    record = {"rule": "extract_dump", "log": ["logs/extract_dump/20141201.log"], "cpu_s": 2.5}
    (tmp_path / "jobcpu" / "extract_dump.1.json").write_text(json.dumps(record))
    rules = scale.read_benchmarks(tmp_path)
    # One job measured (2.5 true, 1.0 Snakemake), one without a record (Snakemake's 2.0 both ways).
    assert rules["extract_dump"] == {
        "jobs": 2,
        "true_jobs": 1,
        "wall_s": 20.0,
        "cpu_s": 4.5,
        "sm_cpu_s": 3.0,
        "rss_mb": 100.0,
    }
    table = "\n".join(scale.cpu_table([{"items": 1000, "rules": rules, "dag_cpu_s": 6.0}]))
    assert "| extract_dump | 3.0 / 4.5 / 1.50 (*) |" in table
    assert "| DAG by rusage (jobs + Snakemake) | 6.0 |" in table


BURN_RULE = """
rule burn:
    output:
        "done.txt",
    log:
        "logs/burn/x.log",
    benchmark:
        "benchmarks/burn/x.tsv"
    script:
        "burn.py"
"""
# Like an extraction job's workers: short-lived processes, one after another. The job writes its
# own account of their CPU (RUSAGE_CHILDREN) as its output.
BURN_SCRIPT = """
import resource, subprocess, sys
for _ in range(20):
    subprocess.run([sys.executable, "-c", "sum(i * i for i in range(6_000_000))"], check=True)
r = resource.getrusage(resource.RUSAGE_CHILDREN)
open(snakemake.output[0], "w").write(str(r.ru_utime + r.ru_stime))
"""


@pytest.mark.full  # benchmark tooling, a Snakemake run
def test_a_snakemake_job_with_short_lived_children_is_counted_whole(tmp_path):
    (tmp_path / "Snakefile").write_text(BURN_RULE)
    (tmp_path / "burn.py").write_text(BURN_SCRIPT)
    env = scale.job_cpu_env(tmp_path, "")
    cmd = [sys.executable, "-m", "snakemake", "-s", str(tmp_path / "Snakefile"), "--cores", "1", "-q"]
    before = _children_cpu()
    subprocess.run(cmd, env=env, check=True, capture_output=True, cwd=tmp_path)
    outside = _children_cpu() - before  # Snakemake and its job
    rules = scale.read_benchmarks(tmp_path)["burn"]
    children = float((tmp_path / "done.txt").read_text())
    assert rules["true_jobs"] == 1
    # The job's tree: at least its children's own account, at most Snakemake plus the job.
    assert children <= rules["cpu_s"] <= outside
    # Snakemake's sampling sees a child only while it lives (measured: 7.6 of 23.3 CPU-s for 40
    # children of ~0.6 s); the true figure is never below it.
    assert rules["cpu_s"] >= rules["sm_cpu_s"] - 0.2


def test_a_job_run_again_counts_its_latest_record(tmp_path):
    # --keep after a code change reruns a job: its benchmark file is the new run's, so is its CPU.
    folder = tmp_path / "jobcpu"
    folder.mkdir()
    log = ["logs/retrieve_distractors/knowledge.log"]
    # File names sort against the runs' order (pids wrap): the end time decides, not the name.
    for pid, cpu, end in ((100, 1.5, 200.0), (900, 9.0, 100.0)):
        record = {"rule": "retrieve_distractors", "log": log, "cpu_s": cpu, "end": end}
        (folder / f"retrieve_distractors.{pid}.json").write_text(json.dumps(record))
    got = scale.read_job_cpu(tmp_path)
    assert got["benchmarks/retrieve_distractors/knowledge.tsv"]["cpu_s"] == 1.5
