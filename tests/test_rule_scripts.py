"""Rule scripts import the workflow's own library and log through one helper:
checked statically on every script, and by running one rule script under
Snakemake with a decoy ``factprobe`` first on PYTHONPATH."""

import ast
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = sorted((ROOT / "workflow/scripts").glob("*.py"))


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_script_puts_workflow_library_first_and_logs_through_helper(script):
    body = ast.parse(script.read_text()).body
    statements = [ast.unparse(node) for node in body[1:3]]  # after the docstring
    assert statements == ["import sys", "sys.path.insert(0, snakemake.scriptdir)"], script.name
    # No library import may run before the path is set.
    assert not any("factprobe" in ast.unparse(node) for node in body[:3])
    calls = [ast.unparse(node) for node in body if isinstance(node, ast.Assign)]
    assert "log = rule_logger(snakemake)" in calls, script.name
    assert "basicConfig" not in script.read_text()


def test_rule_script_uses_workflow_library_not_another_copy(tmp_path):
    decoy = tmp_path / "decoy" / "factprobe"
    decoy.mkdir(parents=True)
    (decoy / "__init__.py").write_text("raise ImportError('decoy factprobe imported')\n")
    pd.DataFrame(
        {
            "measure": ["k_avg"],
            "strategy": ["random"],
            "n": [2],
            "model": ["m1"],
            "value": [0.75],
            "ci_low": [0.5],
            "ci_high": [1.0],
            "n_facts": [4],
            "n_used": [2.0],
            "chance": [0.5],
            "same_as": [""],
        }
    ).to_parquet(tmp_path / "headline.parquet", index=False)
    (tmp_path / "Snakefile").write_text(
        textwrap.dedent(
            f"""
            rule leaderboard:
                input:
                    headlines=["headline.parquet"],
                    per_fact=[],
                output:
                    board="leaderboard.csv",
                    paired="paired.csv",
                log:
                    "leaderboard.log",
                params:
                    suites=["knowledge"],
                    models=[],
                    bootstrap=dict(bootstrap_samples=10, bootstrap_seed=0, confidence_level=0.95),
                script:
                    "{ROOT / "workflow/scripts/leaderboard.py"}"
            """
        )
    )
    env = dict(os.environ, PYTHONPATH=str(decoy.parent))
    # The decoy really is first for a plain import: without the preamble the script would fail.
    plain = subprocess.run(
        [sys.executable, "-c", "import factprobe"], env=env, capture_output=True, text=True
    )
    assert "decoy factprobe imported" in plain.stderr
    proc = subprocess.run(
        [sys.executable, "-m", "snakemake", "--cores", "1", "--quiet"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    log = (tmp_path / "leaderboard.log").read_text()
    assert f"library {ROOT / 'workflow/scripts/factprobe'}" in log, log
    assert "output leaderboard.csv: 1 rows" in log, log
