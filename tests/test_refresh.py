"""``make refresh`` (factprobe.wikidata.refresh) against the loopback dump server (tests/dump_server.py).

The server lists dated directories up to 20261118; 20261118 is still being written (no checksum
file), so the newest registrable dump is 20261116, whose ``wikidata-20261116-sha1sums.txt`` gives
``d14a7864…`` for ``wikidata-20261116-all.json.bz2`` (tests/data/dump_sources/README.md).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from dump_server import DumpServer
from factprobe.wikidata.refresh import main, planned_jobs, refresh
from factprobe.wikidata.resolve import ENV_WIKIMEDIA, Sources

ROOT = Path(__file__).resolve().parents[1]
HEADER = "dump\tenabled\tpath\turl\tchecksum\n"
ROWS = (
    "20141201\ttrue\tresources/demo/wikidata-20141201-sample.json.bz2\t\t\n"
    "20190201\ttrue\tresources/demo/wikidata-20190201-sample.json.bz2\t\t\n"
)
SHA1 = "d14a7864de5e19ad1d5fc02640af80b91c51320b"  # the json.bz2 line of the 20261116 sha1sums


@pytest.fixture()
def server():
    with DumpServer() as srv:
        yield srv


def test_refresh_appends_exactly_one_row(tmp_path, server):
    registry = tmp_path / "dumps.tsv"
    registry.write_text(HEADER + ROWS)
    status, message, row = refresh(registry, "json.bz2", Sources(server.wikimedia))
    assert status == 0 and "added dump 20261116" in message
    assert f"sha1:{SHA1}" in message and "wikidata-20261116-sha1sums.txt" in message
    # the old lines keep their cells, padded for the two columns the new row needs
    assert registry.read_text() == (
        "dump\tenabled\tpath\turl\tchecksum\tsource\tformat\n"
        "20141201\ttrue\tresources/demo/wikidata-20141201-sample.json.bz2\t\t\t\t\n"
        "20190201\ttrue\tresources/demo/wikidata-20190201-sample.json.bz2\t\t\t\t\n"
        f"20261116\ttrue\t\t\tsha1:{SHA1}\tauto\tjson.bz2\n"
    )
    assert not list(tmp_path.glob(".dumps.tsv.*"))  # the temporary sibling is gone
    # the workflow's own reader accepts the file
    from factprobe.config_check import read_registry

    rows = read_registry(registry, ROOT / "workflow/schemas/dumps.schema.yaml", key="dump")
    assert [r["dump"] for r in rows] == ["20141201", "20190201", "20261116"]
    assert {k: v for k, v in rows[2].items() if k != "_line"} == {
        "dump": "20261116",
        "enabled": True,
        "checksum": f"sha1:{SHA1}",
        "source": "auto",
        "format": "json.bz2",
    }
    # a second refresh finds nothing newer and changes nothing
    before = registry.read_text()
    status, message, row = refresh(registry, "json.bz2", Sources(server.wikimedia))
    assert status == 0 and row is None and registry.read_text() == before
    assert message.startswith("refresh: no dump newer than 20261116")


def test_directory_still_being_written_is_passed_over(tmp_path, server):
    registry = tmp_path / "dumps.tsv"
    registry.write_text(HEADER + ROWS + "20261116\ttrue\t\thttp://example.org/x.json.bz2\t\n")
    status, message, row = refresh(registry, "json.gz", Sources(server.wikimedia))
    assert status == 0 and row is None
    assert "lists no checksum for wikidata-20261118-all.json.gz yet" in message


def test_offline_says_so_in_one_line_and_changes_nothing(tmp_path):
    registry = tmp_path / "dumps.tsv"
    registry.write_text(HEADER + ROWS)
    closed = "http://127.0.0.1:9/wikimedia/"  # the discard port: nothing listens there
    status, message, row = refresh(registry, "json.gz", Sources(closed))
    assert status == 1 and row is None and "\n" not in message
    assert message.startswith(f"refresh: {closed} unreachable") and message.endswith("unchanged")
    assert registry.read_text() == HEADER + ROWS


def demo_workdir(tmp_path: Path) -> Path:
    """A working directory with the demo config, its registry the two demo dumps (``dumps.tsv``)."""
    work = tmp_path / "work"
    work.mkdir()
    for name in ("resources", "tests", "config"):
        (work / name).symlink_to(ROOT / name)
    config = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    config["dumps"] = "dumps.tsv"
    (work / "config.yaml").write_text(yaml.safe_dump(config))
    (work / "dumps.tsv").write_text(HEADER + ROWS)
    return work


def _dry_run(work: Path, *targets: str) -> str:
    cmd = [sys.executable, "-m", "snakemake", "-s", str(ROOT / "workflow/Snakefile")]
    cmd += ["--directory", str(work), "--configfile", str(work / "config.yaml"), "--cores", "1", "-n"]
    proc = subprocess.run([*cmd, *targets], capture_output=True, text=True, cwd=work, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return proc.stdout + proc.stderr


OLD_TARGETS = [
    "results/temporal/20141201/temporal.parquet",
    "results/temporal/20190201/temporal.parquet",
    "results/diff/20141201_20190201/changes.parquet",
    "results/diff/20141201_20190201/stats.tsv",
]
NEW_TARGETS = ["results/diff/20190201_20261116/changes.parquet", "results/temporal/20261116/temporal.parquet"]


@pytest.mark.slow  # Snakemake dry runs (about 10 s): the only proof of the planned job list
def test_after_refresh_only_the_new_dumps_jobs_are_planned(tmp_path, server, monkeypatch, capsys):
    """Dry runs only: the two demo dumps' extraction, diff and temporal views stand as done (their
    outputs written in the order a run writes them), then refresh registers 20261116."""
    work = demo_workdir(tmp_path)
    log = _dry_run(work, *OLD_TARGETS)
    outputs = re.findall(r"^\s+output: (.*)$", log, re.M)
    assert len(outputs) == 5  # two extractions, one diff, two temporal views
    now = time.time()
    for rank, line in enumerate(sorted(outputs, key=lambda s: "wikidata/" not in s)):
        for path in line.split(", "):
            (work / path).parent.mkdir(parents=True, exist_ok=True)
            (work / path).write_bytes(b"")
            os.utime(work / path, (now + rank, now + rank))  # extraction before what reads it
    assert planned_jobs(_dry_run(work, *OLD_TARGETS)) == []

    monkeypatch.setenv(ENV_WIKIMEDIA, server.wikimedia)
    args = ["--configfile", str(work / "config.yaml"), "--directory", str(work), "--format", "json.bz2"]
    assert main([*args, *OLD_TARGETS, *NEW_TARGETS]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert printed[0].startswith("refresh: added dump 20261116")
    head, counts = printed[1].split(": ", 1)
    assert head == "the next run plans 4 job(s)"
    assert sorted(counts.split(", ")) == [
        "diff_dumps 1",
        "download_dump 1",
        "extract_dump 1",
        "temporal_view 1",
    ]
    jobs = set(planned_jobs(_dry_run(work, *OLD_TARGETS, *NEW_TARGETS)))
    assert jobs == {
        ("download_dump", "dump=20261116, ext=json.bz2"),
        ("extract_dump", "dump=20261116"),
        ("diff_dumps", "old=20190201, new=20261116"),
        ("temporal_view", "dump=20261116"),
    }
    assert {f"  {rule} ({w})" for rule, w in jobs} == set(printed[2:])


@pytest.mark.slow  # a Snakemake run of rule refresh and its dry run of the next run
def test_snakemake_refresh_rule(tmp_path, server):
    """``snakemake refresh`` (the rule ``make refresh`` calls) appends the newest dump's row with
    the json.gz checksum of its sums file and prints what the next run does."""
    work = demo_workdir(tmp_path)
    cmd = [sys.executable, "-m", "snakemake", "refresh", "-s", str(ROOT / "workflow/Snakefile")]
    cmd += ["--cores", "1", "--directory", str(work), "--configfile", str(work / "config.yaml")]
    env = dict(os.environ, **{ENV_WIKIMEDIA: server.wikimedia})
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=work, env=env, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    rows = (work / "dumps.tsv").read_text().splitlines()
    assert len(rows) == 4 and rows[-1].split("\t")[0] == "20261116"
    assert "sha1:f4bdd311a2509223af4477e2b1597219a3f0e99c" in rows[-1].split("\t")
    assert "refresh: added dump 20261116" in proc.stdout
    assert re.search(r"the next run plans \d+ job\(s\): .*download_dump 1", proc.stdout)
    assert "  extract_dump (dump=20261116)" in proc.stdout


def _run(work: Path, *args: str) -> str:
    cmd = [sys.executable, "-m", "snakemake", "-s", str(ROOT / "workflow/Snakefile")]
    cmd += ["--directory", str(work), "--configfile", str(work / "config.yaml"), "--cores", "2", *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=work, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    return proc.stdout + proc.stderr


# The demo dumps' diff and views, then the refreshed dump's four jobs, for real (minutes on 2
# cores): make test-full. In make test, tests/test_incremental.py runs an added dump's jobs for
# real and checks that a dry run then plans nothing.
@pytest.mark.full
@pytest.mark.slow
def test_the_jobs_refresh_plans_run_and_then_nothing_is_planned(
    tmp_path, server, demo_tables, monkeypatch, capsys
):
    """Refresh's "only new work" ends in "then nothing": after the two demo dumps' work (their
    extractions from the session's tables), refresh registers 20261116; its four planned jobs
    run (the dump downloaded from the loopback server), and a dry run of the same targets plans
    no job."""
    work = demo_workdir(tmp_path)
    for dump, folder in demo_tables.items():
        shutil.copytree(folder, work / "results" / "wikidata" / dump)
    _run(work, *OLD_TARGETS)
    monkeypatch.setenv(ENV_WIKIMEDIA, server.wikimedia)
    args = ["--configfile", str(work / "config.yaml"), "--directory", str(work), "--format", "json.bz2"]
    assert main([*args, *OLD_TARGETS, *NEW_TARGETS]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert printed[0].startswith("refresh: added dump 20261116")
    assert printed[1].startswith("the next run plans 4 job(s)")
    ran = planned_jobs(_run(work, *OLD_TARGETS, *NEW_TARGETS))
    assert sorted(rule for rule, _ in ran) == ["diff_dumps", "download_dump", "extract_dump", "temporal_view"]
    assert planned_jobs(_run(work, "-n", *OLD_TARGETS, *NEW_TARGETS)) == []
