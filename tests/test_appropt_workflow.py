"""ApprOpt as a first-class strategy of the workflow (distractors paper §3.3, issue 13 item 1).

A tiny knowledge suite with ``strategies: [random, appropt]`` runs through compute_metrics with
the control model on the bundled demo dumps (extraction tables from the session fixture): the
per-model rule appropt_distractors produces the candidates, scoring scores them, and the metrics
carry an ``appropt`` strategy next to ``random``.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
HEADER = "dump\tenabled\tpath\turl\tchecksum\n"
ROWS = [
    "20141201\ttrue\tresources/demo/wikidata-20141201-sample.json.bz2\t\t\n",
    "20190201\ttrue\tresources/demo/wikidata-20190201-sample.json.bz2\t\t\n",
]
SUITE = {
    "kind": "knowledge",
    "dump": "20141201",
    "label_dumps": ["20141201", "20190201"],
    "relations": ["P17", "P36", "P47"],
    "n_facts": 2,
    "templates": {"styles": ["statement"], "max_per_relation": 1},
    "distractors": {"strategies": ["random", "appropt"], "n": 3},
}


def snakemake(workdir: Path, *args: str, timeout: int = 600) -> str:
    cmd = [sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile"), "--directory", str(workdir)]
    cmd += ["--configfile", str(workdir / "config" / "config.yaml"), "--cores", "2", *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, f"{' '.join(cmd)}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc.stdout + proc.stderr


@pytest.mark.slow
def test_appropt_runs_per_model_through_metrics(tmp_path, demo_tables):
    work = tmp_path / "work"
    (work / "config").mkdir(parents=True)
    for name in ("resources", "tests"):
        (work / name).symlink_to(ROOT / name)
    shutil.copy(ROOT / "config" / "models.tsv", work / "config" / "models.tsv")
    config = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    config.update(dumps="dumps.tsv", suites={"tiny": SUITE})
    config["scoring"].update(shards=1, models=["control"])
    config["control"].update(suites=["tiny"], steps=2, batch_size=4)
    config["metrics"]["ns"] = [1, 3]
    (work / "config" / "config.yaml").write_text(yaml.safe_dump(config))
    (work / "dumps.tsv").write_text(HEADER + "".join(ROWS))
    for dump, folder in demo_tables.items():
        shutil.copytree(folder, work / "results" / "wikidata" / dump)

    log = snakemake(work, "results/metrics/tiny/control.parquet")
    assert "rule appropt_distractors" in log

    retrieved = pd.read_parquet(work / "results/probes/tiny/candidates.parquet")
    assert set(retrieved.loc[retrieved["role"] == "distractor", "strategy"]) == {"random"}
    appropt = pd.read_parquet(work / "results/probes/tiny/appropt/control.parquet")
    assert len(appropt) > 0 and set(appropt["strategy"]) == {"appropt"}
    # Ranked best first per fact by log Pr(λ + EOS | c), at most n distinct entities (§3.3).
    for _, group in appropt.groupby("fact_id"):
        assert list(group["rank"]) == list(range(1, len(group) + 1))
        assert group["score"].is_monotonic_decreasing and group["entity"].is_unique and len(group) <= 3
    facts = pd.read_parquet(work / "results/probes/tiny/facts.parquet")
    assert not set(zip(appropt["fact_id"], appropt["entity"])) & set(zip(facts["fact_id"], facts["object"]))

    scores = pd.read_parquet(work / "results/scores/tiny/control.parquet")
    scored = set(zip(scores["fact_id"], scores["entity"]))
    assert set(zip(appropt["fact_id"], appropt["entity"])) <= scored
    per_fact = pd.read_parquet(work / "results/metrics/tiny/control.parquet")
    assert {"random", "appropt"} <= set(per_fact["strategy"])
