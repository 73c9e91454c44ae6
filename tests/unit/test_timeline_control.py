"""Known-answer validation of the effective cut-off (issue item 3) with the real builtin:control
model: trained on the facts of the static slice and the dated slices up to slice T, it must give
an estimate within one slice of T; trained on every slice, "no cut-off within the series".

The facts are real (the 2019 demo dump's labelled P17/P47/P530/P190 statements, one per
(subject, relation)); their slices are drawn by hash, since what a control model knows is only
what it was taught. The full protocol (10 seeds, T = 2 and 3, and everything taught) is a
``full`` test, as is one seed of T = 2 (about 5 s of training and scoring alone, more on busy
cores); ``make test`` checks the estimator on simulated known answers (test_timeline_cutoff.py).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch
from factprobe.hashing import stable_hash
from factprobe.lm import HFCausalLM, ModelSpec
from factprobe.metrics.timeline import estimate_cutoff
from factprobe.scoring.control import prior_docs, train_control, verbalizations
from factprobe.scoring.suite import build_pairs, score_pairs
from factprobe.wikidata.labels import label_table

torch.set_num_threads(1)

TEMPLATES = {
    "P17": "{} is located in the country of",
    "P47": "{} shares a border with",
    "P530": "{} maintains diplomatic relations with",
    "P190": "{} is a twin city of",
}
EDGES = [20100101, 20120101, 20140101, 20160101, 20180101]  # four dated slices + static
N_SLICES = len(EDGES) - 1


@pytest.fixture(scope="module")
def tables(demo_tables):
    claims = pd.read_parquet(demo_tables["20190201"] / "claims.parquet")
    labels = label_table([demo_tables[d] / "labels.parquet" for d in demo_tables], ["en"])
    forms = labels[labels["lang"] == "en"]
    label = forms[forms["source"] == "label"].drop_duplicates("entity").set_index("entity")["form"]
    c = claims[claims["property"].isin([17, 47, 530, 190]) & (claims["rank"] > 0)].copy()
    c["s"], c["o"], c["p"] = (
        "Q" + c["subject"].astype(str),
        "Q" + c["object"].astype(str),
        "P" + c["property"].astype(str),
    )
    c = c[c["s"].isin(label.index) & c["o"].isin(label.index) & (c["s"] != c["o"])]
    c = c.drop_duplicates(["s", "p"]).sort_values(["p", "s"])
    facts = pd.DataFrame(
        {
            "fact_id": c["s"] + "|" + c["p"] + "|" + c["o"],
            "subject": c["s"],
            "property": c["p"],
            "object": c["o"],
        }
    )
    prompts = pd.DataFrame(
        {
            "prompt_id": facts["fact_id"] + "|t",
            "fact_id": facts["fact_id"],
            "lang": "en",
            "template_id": facts["property"] + ".t",
            "text": [
                TEMPLATES[p].format(label[s])
                for s, p in zip(facts["subject"], facts["property"], strict=True)
            ],
            "context": "",
            "subject_form": [label[s] for s in facts["subject"]],
        }
    )
    # candidates: the object and the relation's other objects (a same-relation pool)
    rows = [
        (f.fact_id, e, "object" if e == f.object else "distractor")
        for f in facts.itertuples()
        for e in sorted(set(facts.loc[facts["property"] == f.property, "object"]))
    ]
    candidates = pd.DataFrame(rows, columns=["fact_id", "entity", "role"])
    return facts.reset_index(drop=True), prompts, candidates, forms


def control_cutoff(tables, t_index: int | None, seed: int, folder, steps: int = 250):
    """Train a control model on the static slice and slices 1..t_index (None: every slice) and
    estimate its cut-off from the per-fact share of distractors its object beats."""
    facts, prompts, candidates, forms = tables
    # slice 0 = static, 1..N dated, by hash (a fresh assignment per seed)
    slice_of = np.array([stable_hash("timeline-control", seed, f) % (N_SLICES + 1) for f in facts["fact_id"]])
    known = slice_of <= (N_SLICES if t_index is None else t_index)
    taught = facts.assign(split=np.where(known, "taught", "untaught"))
    docs = verbalizations(taught, prompts, forms, max_forms=1)
    prior = prior_docs(taught, prompts, candidates, forms, copies=1)
    settings = dict(vocab_size=400, n_layer=1, n_embd=64, n_head=4, batch_size=16, lr=5e-3, threads=1)
    train_control(docs * 2 + prior, folder, steps=steps, seed=seed, **settings)
    model = HFCausalLM.from_row(ModelSpec("control", "builtin:control", device="cpu"), model_dir=folder)
    labels = forms[forms["source"] == "label"].drop_duplicates("entity")
    scores = score_pairs(model, build_pairs(prompts, candidates, labels), progress=False)
    scores = scores.merge(candidates, on=["fact_id", "entity"])
    value = {}
    for fact, group in scores.groupby("fact_id"):
        obj = group.loc[group["role"] == "object", "logprob"].iloc[0]
        value[fact] = float(np.mean(obj > group.loc[group["role"] == "distractor", "logprob"].to_numpy()))
    v = facts["fact_id"].map(value).to_numpy()
    dated = [v[slice_of == i] for i in range(1, N_SLICES + 1)]
    return estimate_cutoff(dated, EDGES, static=v[slice_of == 0], samples=100, seed=seed)


@pytest.mark.full
def test_control_cutoff_one_seed(tables, tmp_path):
    cut = control_cutoff(tables, 2, seed=0, folder=tmp_path / "m")
    assert abs(cut.index - 2) <= 1, cut


@pytest.mark.full
@pytest.mark.parametrize("t_index", [2, 3])
def test_control_cutoff_ten_seeds(tables, tmp_path, t_index):
    got = [control_cutoff(tables, t_index, seed, tmp_path / f"m{seed}").index for seed in range(10)]
    assert sum(abs(k - t_index) <= 1 for k in got) >= 9, got


@pytest.mark.full
def test_control_taught_everything_has_no_cutoff(tables, tmp_path):
    got = [control_cutoff(tables, None, seed, tmp_path / f"m{seed}") for seed in range(10)]
    assert sum(c.status == "none" for c in got) >= 9, [c.index for c in got]
