"""Paper-fidelity paths of the workflow on a tiny config, run through compute_metrics with the
control model on the bundled demo dumps (extraction tables from the session fixture).

* ApprOpt (distractors paper §3.3): a knowledge suite with ``strategies: [random,
  appropt]``; the per-model rule appropt_distractors produces the candidates, scoring scores them,
  and the metrics carry an ``appropt`` strategy next to ``random``.
* Sentence perplexity (PROBELM §4.1): a plausibility suite is scored in
  sentence mode, so each score covers the whole scenario sentence (prompt + answer) from its first
  token, and both swap lists of Algorithm 1 (object and subject) are scored and ranked.
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
PLAUSIBILITY = {
    "kind": "plausibility",
    "dump": "20190201",
    "diff_old": "20141201",
    "cutoff": "20160101",
    "changes": {"statuses": ["new"], "rules": ["added_undated"]},
    "relations": ["P530", "P190"],
    "n_facts": 2,
    "templates": {"max_per_relation": 1},
}


def snakemake(workdir: Path, *args: str, timeout: int = 600) -> str:
    cmd = [
        sys.executable,
        "-m",
        "snakemake",
        "-s",
        str(ROOT / "workflow" / "Snakefile"),
        "--directory",
        str(workdir),
    ]
    cmd += ["--configfile", str(workdir / "config" / "config.yaml"), "--cores", "2", *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, f"{' '.join(cmd)}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc.stdout + proc.stderr


# A long end-to-end variant: the demo (tests/test_demo.py) runs ApprOpt per model through the
# measures on every `make test`; this one runs in `make test-full`.
@pytest.mark.full
@pytest.mark.slow
def test_appropt_runs_per_model_through_metrics(tmp_path, demo_tables):
    work = tmp_path / "work"
    (work / "config").mkdir(parents=True)
    for name in ("resources", "tests"):
        (work / name).symlink_to(ROOT / name)
    shutil.copy(ROOT / "config" / "models.tsv", work / "config" / "models.tsv")
    config = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    config.update(dumps="dumps.tsv", suites={"tiny": SUITE, "plaus": PLAUSIBILITY})
    config["scoring"].update(shards=1, models=["control"])
    config["control"].update(suites=["tiny", "plaus"], steps=2, batch_size=4)
    config["metrics"]["ns"] = [1, 3]
    config["metrics"]["human_alignment"]["suites"] = []  # no judged suite here
    config["distractors"]["appropt"]["n"] = 3
    (work / "config" / "config.yaml").write_text(yaml.safe_dump(config))
    (work / "dumps.tsv").write_text(HEADER + "".join(ROWS))
    for dump, folder in demo_tables.items():
        shutil.copytree(folder, work / "results" / "wikidata" / dump)

    log = snakemake(work, "results/metrics/tiny/control.parquet", "results/metrics/plaus/control.parquet")
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
    pairs = set(zip(appropt["fact_id"], appropt["entity"], strict=True))
    assert not pairs & set(zip(facts["fact_id"], facts["object"], strict=True))

    scores = pd.read_parquet(work / "results/scores/tiny/control.parquet")
    assert pairs <= set(zip(scores["fact_id"], scores["entity"], strict=True))
    per_fact = pd.read_parquet(work / "results/metrics/tiny/control.parquet")
    assert {"random", "appropt"} <= set(per_fact["strategy"])

    # Sentence mode on the plausibility suite only: the same model scores the whole scenario.
    shard_log = (work / "logs/score_shard/plaus/control/0.log").read_text()
    assert "scoring mode: whole sentence" in shard_log
    assert "scoring mode: continuation" in (work / "logs/score_shard/tiny/control/0.log").read_text()
    from factprobe.lm import HFCausalLM, SentenceRequest

    plaus = pd.read_parquet(work / "results/scores/plaus/control.parquet")
    assert len(plaus) > 0
    prompts = pd.read_parquet(work / "results/probes/plaus/prompts.parquet").set_index("prompt_id")
    row_ = {"name": "control", "source": "builtin:control", "dtype": "float32", "device": "cpu"}
    lm = HFCausalLM.from_row(row_, work / "results/models/control/plaus")
    own = plaus[plaus["prompt_id"].isin(prompts.index)]
    row = own.iloc[0]
    prompt = prompts.loc[row["prompt_id"]]
    sentence = prompt["context"] + prompt["text"] + " " + row["form"]
    expected = lm.sentence_loglikelihood([SentenceRequest(sentence)])[0]
    assert abs(row["logprob"] - expected.logprob) < 1e-4 and row["n_tokens"] == expected.n_tokens
    assert row["n_tokens"] > len(lm.form_ids(row["form"], "en")) + 1  # the prompt's tokens are in
    per_fact = pd.read_parquet(work / "results/metrics/plaus/control.parquet")
    assert {"plaus_acc", "plaus_rr", "plaus_ndcg"} <= set(per_fact["measure"])
    # Both lists of PROBELM Algorithm 1: subject swaps scored as their own sentences and ranked.
    swaps = pd.read_parquet(work / "results/probes/plaus/subject_swaps.parquet")
    assert set(swaps["group_prompt_id"]) <= set(prompts.index)
    assert plaus["prompt_id"].isin(swaps["prompt_id"]).any()
    assert set(per_fact.loc[per_fact["measure"] == "plaus_rr", "strategy"]) == {"object", "subject"}
    # PROBELM §3.1: the facts new to this model (models.tsv cutoff 2016-01-01), reported per model.
    suite = pd.read_parquet(work / "results/metrics/plaus/control.suite.parquet").set_index("measure")[
        "value"
    ]
    # The model's cut-off is the suite's: every suite fact is new to it.
    n_facts = len(pd.read_parquet(work / "results/probes/plaus/facts.parquet"))
    assert suite["plausible_facts"] == n_facts >= per_fact["fact_id"].nunique() > 0
    assert (suite["facts_seen_by_model"], suite["cutoff_after_dump"]) == (0, 0)
    assert "cut-off 20160101 (model)" in (work / "logs/compute_metrics/plaus/control.log").read_text()
