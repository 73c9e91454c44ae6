"""A job that fails with one of factprobe's own errors says its cause once.

The console shows one line ``factprobe: <rule> (<wildcards>) failed: <Error>: <message>
(traceback in <log>)`` and no Python traceback; the traceback is in the job's log file.
"""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from factprobe.plumbing.rulelog import failure_line, is_own_error
from factprobe.wikidata.stream import DumpError

ROOT = Path(__file__).resolve().parents[1]
SNAKEFILE = ROOT / "workflow" / "Snakefile"
DEMO = ROOT / "resources/demo/wikidata-20141201-sample.json.bz2"


def test_own_errors_are_the_package_s_exception_classes():
    assert is_own_error(DumpError)
    assert not is_own_error(ValueError) and not is_own_error(KeyError)

    class Sub(DumpError):  # a subclass elsewhere is still one of ours
        pass

    assert is_own_error(Sub)


def test_failure_line_is_one_line_with_the_log_path():
    err = DumpError("dump.json.bz2: truncated\nnear file byte 10 of 20")
    line = failure_line("extract_dump (dump=20141201)", err, "logs/extract_dump/20141201.log")
    assert "\n" not in line
    assert line == (
        "factprobe: extract_dump (dump=20141201) failed: DumpError: dump.json.bz2: truncated near file "
        "byte 10 of 20 (traceback in logs/extract_dump/20141201.log)"
    )


@pytest.fixture
def truncated_dump_run(tmp_path):
    """The .test config with its dump cut to two thirds, extraction run by Snakemake."""
    work = tmp_path / ".test"
    shutil.copytree(ROOT / ".test", work, ignore=shutil.ignore_patterns("results", "logs", ".snakemake"))
    data = DEMO.read_bytes()
    (work / "cut.json.bz2").write_bytes(data[: len(data) * 2 // 3])
    (work / "config/dumps.tsv").write_text(
        "dump\tenabled\tpath\turl\tchecksum\n20141201\ttrue\tcut.json.bz2\t\t\n"
    )
    cmd = [sys.executable, "-m", "snakemake", "-s", str(SNAKEFILE), "--directory", str(work)]
    cmd += ["--cores", "1", "results/wikidata/20141201/claims.parquet"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    return work, proc


def test_a_truncated_dump_says_its_dump_error_once_without_traceback(truncated_dump_run):
    work, proc = truncated_dump_run
    console = proc.stdout + proc.stderr
    assert proc.returncode != 0
    lines = [line for line in console.splitlines() if "DumpError" in line]
    assert len(lines) == 1, console
    assert re.match(
        r"factprobe: extract_dump \(dump=20141201\) failed: DumpError: .*cut\.json\.bz2", lines[0]
    )
    assert "(traceback in logs/extract_dump/20141201.log)" in lines[0]
    assert "Traceback (most recent call last)" not in console, console
    log = (work / "logs/extract_dump/20141201.log").read_text()
    assert "Traceback (most recent call last)" in log and "DumpError" in log
    assert not (work / "results/wikidata/20141201/claims.parquet").exists()


def test_registry_where_names_the_models_tsv_line(tmp_path):
    from factprobe.scoring.prepare import registry_where

    tsv = tmp_path / "models.tsv"
    tsv.write_text("name\tsource\ncontrol\tbuiltin:control\npythia\tEleutherAI/pythia-14m\n")
    assert registry_where(tsv, "pythia") == f"{tsv}: line 3, model 'pythia'"
    assert registry_where(tsv, "absent") == f"{tsv}: model 'absent'"
    assert registry_where(tmp_path / "missing.tsv", "pythia") == f"{tmp_path / 'missing.tsv'}: model 'pythia'"


def test_an_offline_hub_model_says_its_prepare_error_once_with_the_line(tmp_path):
    work = tmp_path / ".test"
    shutil.copytree(ROOT / ".test", work, ignore=shutil.ignore_patterns("results", "logs", ".snakemake"))
    with open(work / "config/models.tsv", "a") as fh:
        fh.write("pythia\tEleutherAI/pythia-14m\tmain\tfloat32\tcpu\t2016-01-01\tfalse\n")
    cmd = [sys.executable, "-m", "snakemake", "-s", str(SNAKEFILE), "--directory", str(work)]
    cmd += ["--cores", "1", "resources/models/pythia"]
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)
    console = proc.stdout + proc.stderr
    assert proc.returncode != 0
    lines = [line for line in console.splitlines() if "PrepareError" in line]
    assert len(lines) == 1, console
    assert (
        "config/models.tsv: line 3, model 'pythia': cannot download hub id 'EleutherAI/pythia-14m'"
        in lines[0]
    )
    assert "line ?" not in console and "Traceback (most recent call last)" not in console


def test_an_extraction_under_a_file_size_limit_says_so_once(tmp_path):
    """`ulimit -f` below the size of a table: one line naming the table and the limit (not
    pyarrow's `OSError: [Errno 27]` traceback), and no table or temporary file is left."""
    import resource

    work = tmp_path / ".test"
    shutil.copytree(ROOT / ".test", work, ignore=shutil.ignore_patterns("results", "logs", ".snakemake"))
    cmd = [sys.executable, "-m", "snakemake", "-s", str(SNAKEFILE), "--directory", str(work)]
    cmd += ["--cores", "1", "results/wikidata/20141201/claims.parquet"]

    def limit() -> None:  # 20 KiB: the demo's claims table is about 38 KB
        resource.setrlimit(resource.RLIMIT_FSIZE, (20480, 20480))

    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, preexec_fn=limit)
    console = proc.stdout + proc.stderr
    assert proc.returncode != 0
    lines = [line for line in console.splitlines() if "File too large" in line]
    assert len(lines) == 1, console
    assert re.match(
        r"factprobe: extract_dump \(dump=20141201\) failed: File too large: "
        r"results/wikidata/20141201/\w+\.parquet: the file-size limit of the job \(ulimit -f: 20480 bytes\)",
        lines[0],
    ), lines[0]
    assert "run with `ulimit -f unlimited`" in lines[0]
    assert "Traceback (most recent call last)" not in console, console
    tables = work / "results/wikidata/20141201"
    assert not tables.exists() or not any(tables.iterdir())
