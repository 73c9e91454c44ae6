"""Workflow-level checks: style gates, dry-runs, and config errors raised before any job runs."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def run(args, cwd=ROOT, check=True):
    proc = subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=300)
    if check and proc.returncode != 0:
        raise AssertionError(f"{args} failed ({proc.returncode}):\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}")
    return proc


def snakemake(*args, cwd=ROOT, check=True):
    return run([sys.executable, "-m", "snakemake", *args], cwd=cwd, check=check)


def test_snakefmt_clean():
    files = ["Snakefile", *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "workflow/rules").glob("*.smk"))]
    run([str(BIN / "snakefmt"), "--check", *files])


def test_ruff_clean():
    run([str(BIN / "ruff"), "check", "workflow", "tests", "benchmarks"])


def test_snakemake_lint_clean():
    proc = snakemake("--lint", check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-4000:]
    assert "Lints for rule" not in out and "Lints for snakefile" not in out, out[-4000:]


def test_dry_run_of_whole_dag():
    proc = snakemake("-n", "--forceall", "--cores", "2", "--quiet", "rules")
    assert "extract_dump" in proc.stdout + proc.stderr


@pytest.fixture
def workdir(tmp_path):
    """A copy of the workflow files (not results) in which config can be broken safely."""
    for name in ("Snakefile", "workflow", "config", "profiles"):
        src = ROOT / name
        (shutil.copytree if src.is_dir() else shutil.copy)(src, tmp_path / name)
    (tmp_path / "resources").symlink_to(ROOT / "resources")
    return tmp_path


def _edit(path, old, new):
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


def test_wrong_config_key_fails_before_jobs(workdir):
    _edit(workdir / "config/config.yaml", "  languages:", "  langauges:")
    proc = snakemake("-n", "--cores", "1", cwd=workdir, check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "config/config.yaml: invalid configuration" in out and "langauges" in out
    assert "Job stats" not in out


def test_unquoted_dump_date_and_missing_file_fail(workdir):
    tsv = workdir / "config/dumps.tsv"
    _edit(tsv, "20190201\ttrue", "2019-02-01\ttrue")
    out = snakemake("-n", "--cores", "1", cwd=workdir, check=False)
    assert out.returncode != 0 and "line 3, column dump" in out.stdout + out.stderr
    _edit(tsv, "2019-02-01\ttrue", "20190201\ttrue")
    _edit(tsv, "wikidata-20190201-sample", "wikidata-20190201-missing")
    out = snakemake("-n", "--cores", "1", cwd=workdir, check=False)
    assert out.returncode != 0
    assert "line 3 (dump 20190201): file resources/demo/wikidata-20190201-missing.json.bz2 not found" in (
        out.stdout + out.stderr
    )
