"""The `export` target: its jobs, and that the default target (the demo) does not include them."""

import re
import subprocess
import sys

import pytest
from conftest import ROOT


def job_counts(*targets: str) -> dict[str, int]:
    """Job stats of a forced dry run of ``targets`` (the default target if none)."""
    args = [
        sys.executable,
        "-m",
        "snakemake",
        "-n",
        "--forceall",
        "--cores",
        "2",
        "--quiet",
        "rules",
        "--",
        *targets,
    ]
    proc = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=300)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    stats = out.split("Job stats:")[1].split("Reasons:")[0]
    return {m[1]: int(m[2]) for m in re.finditer(r"^(\w+)\s+(\d+)$", stats, re.M) if m[1] != "total"}


@pytest.mark.full  # two whole-DAG dry runs; the export functions have their unit tests
def test_export_target_jobs_and_default_target_unchanged():
    export = job_counts("export")
    assert export["export_lm_eval"] == export["export_hf"] == 5  # one per demo suite
    assert export["export"] == 1
    assert not {"score_shard", "train_control", "compute_metrics"} & set(export)  # no model is needed
    default = job_counts()
    assert not {"export", "export_lm_eval", "export_hf"} & set(default)
    assert default["all"] == 1 and "render_report" in default
