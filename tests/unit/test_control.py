"""builtin:control on real demo facts: it learns the taught half only, and measures see it."""

import numpy as np
import pandas as pd
import pytest
import torch
from factprobe.hashing import stable_hash
from factprobe.lm import CachingLM, HFCausalLM, LoglikRequest, ModelSpec, RequestCache
from factprobe.lm.load import model_fingerprint
from factprobe.scoring.control import fact_split, prior_docs, train_control, verbalizations
from factprobe.scoring.suite import build_pairs, score_pairs
from factprobe.wikidata.labels import label_table

torch.set_num_threads(1)

TEMPLATES = {
    "P36": ["The capital of {} is", "{} has its capital in"],
    "P17": ["{} is located in the country of", "{} lies within the borders of"],
}


@pytest.fixture(scope="module")
def demo_facts(demo_tables):
    """Capital and country facts of the 2019 demo dump with English labels, split by hash."""
    claims = pd.read_parquet(demo_tables["20190201"] / "claims.parquet")
    labels = label_table([demo_tables[d] / "labels.parquet" for d in demo_tables], ["en"])
    forms = labels[labels["lang"] == "en"]
    label = forms[forms["source"] == "label"].drop_duplicates("entity").set_index("entity")["form"]
    claims = claims[claims["property"].isin([36, 17]) & (claims["rank"] > 0)].copy()
    claims["s"] = "Q" + claims["subject"].astype(str)
    claims["o"] = "Q" + claims["object"].astype(str)
    claims["p"] = "P" + claims["property"].astype(str)
    claims = claims[
        claims["s"].isin(label.index) & claims["o"].isin(label.index) & (claims["s"] != claims["o"])
    ]
    claims = claims.drop_duplicates(["s", "p"]).sort_values(["p", "s"]).groupby("p").head(12)
    facts = pd.DataFrame(
        {
            "fact_id": claims["s"] + "|" + claims["p"] + "|" + claims["o"],
            "subject": claims["s"],
            "property": claims["p"],
            "object": claims["o"],
        }
    )
    facts["split"] = ["taught" if stable_hash(f) % 2 else "untaught" for f in facts["fact_id"]]
    prompts = pd.DataFrame(
        [
            (
                f"{f.fact_id}|{f.property}.{i}",
                f.fact_id,
                "en",
                f"{f.property}.{i}",
                t.format(label[f.subject]),
                "",
                label[f.subject],
            )
            for f in facts.itertuples()
            for i, t in enumerate(TEMPLATES[f.property])
        ],
        columns=["prompt_id", "fact_id", "lang", "template_id", "text", "context", "subject_form"],
    )
    # candidates: the object and every other object of the relation (a same-relation pool)
    cands = [
        (f.fact_id, e, "object" if e == f.object else "distractor")
        for f in facts.itertuples()
        for e in sorted(set(facts.loc[facts["property"] == f.property, "object"]))
    ]
    candidates = pd.DataFrame(cands, columns=["fact_id", "entity", "role"])
    return facts, prompts, candidates, forms


def test_split_conflict_is_an_error():
    facts = pd.DataFrame(
        {
            "subject": ["Q1", "Q1"],
            "property": ["P36", "P36"],
            "object": ["Q2", "Q2"],
            "split": ["taught", "untaught"],
        }
    )
    with pytest.raises(ValueError, match="both taught and untaught"):
        fact_split(facts)


def test_untaught_facts_never_reach_training(demo_facts):
    facts, prompts, candidates, forms = demo_facts
    docs = verbalizations(facts, prompts, forms)
    assert docs and set(fact_split(facts)["split"]) == {"taught", "untaught"}
    untaught = prompts.merge(facts[facts["split"] == "untaught"], on="fact_id")
    label = forms[forms["source"] == "label"].drop_duplicates("entity").set_index("entity")["form"]
    for row in untaught.itertuples():
        assert f"{row.text} {label[row.object]}" not in docs
    prior = prior_docs(facts, prompts, candidates, forms, copies=1)
    subjects = set(prompts["subject_form"])
    assert prior and not any(doc.startswith(tuple(subjects)) for doc in prior)


def test_positive_control_separates_taught_from_untaught(demo_facts, tmp_path):
    facts, prompts, candidates, forms = demo_facts
    docs = verbalizations(facts, prompts, forms, max_forms=1)
    prior = prior_docs(facts, prompts, candidates, forms, copies=1)
    stats = train_control(
        docs * 2 + prior,
        tmp_path / "control",
        vocab_size=400,
        n_layer=1,
        n_embd=64,
        n_head=4,
        steps=250,
        batch_size=16,
        lr=5e-3,
        threads=1,
    )
    assert stats["documents"] == 2 * len(docs) + len(prior)
    loaded = HFCausalLM.from_row(
        ModelSpec("control", "builtin:control", device="cpu"), model_dir=tmp_path / "control"
    )
    labels = forms[forms["source"] == "label"].drop_duplicates("entity")
    scores = score_pairs(loaded, build_pairs(prompts, candidates, labels), progress=False)
    scores = scores.merge(candidates, on=["fact_id", "entity"])
    avg = {}
    for pid, group in scores.groupby("prompt_id"):
        obj = group.loc[group["role"] == "object", "logprob"].iloc[0]
        avg[pid] = float(np.mean(obj > group.loc[group["role"] == "distractor", "logprob"].to_numpy()))
    result = prompts.assign(avg=prompts["prompt_id"].map(avg)).merge(
        facts[["fact_id", "split"]], on="fact_id"
    )
    by_split = result.groupby("split")["avg"].mean()
    assert by_split["taught"] >= 0.9, by_split
    assert by_split["untaught"] <= 0.75, by_split


def test_retrained_identical_weights_hit_the_score_cache(tmp_path):
    """The cache key hashes weights, tokenizer and config, not training.json."""
    docs = ["The capital of France is Paris", "The capital of Italy is Rome", "Berlin is in Germany"]
    settings = dict(vocab_size=300, n_layer=1, n_embd=16, n_head=2, steps=4, batch_size=2, threads=1)
    spec = ModelSpec("control", "builtin:control", device="cpu")
    requests = [LoglikRequest("The capital of France is", " Paris"), LoglikRequest("Berlin is in", " Italy")]
    cache_dir = tmp_path / "cache"
    forwards = []
    results = []
    for run in range(2):
        folder = tmp_path / f"control{run}"
        stats = train_control(docs, folder, **settings)
        (folder / "training.json").write_text(f'{{"seconds": {stats["seconds"] + run}, "run": {run}}}')
        lm = HFCausalLM.from_row(spec, model_dir=folder)
        calls = []
        lm.model.register_forward_hook(lambda *args, calls=calls: calls.append(1))
        results.append(CachingLM(lm, RequestCache(cache_dir)).loglikelihood(requests))
        forwards.append(len(calls))
    assert (tmp_path / "control0" / "training.json").read_text() != (
        tmp_path / "control1" / "training.json"
    ).read_text()
    assert model_fingerprint(tmp_path / "control0") == model_fingerprint(tmp_path / "control1")
    assert forwards[0] > 0 and forwards[1] == 0  # the retrained model is served from the cache
    assert results[0] == results[1]
    # different weights (one more step) are a different model
    train_control(docs, tmp_path / "other", **{**settings, "steps": 5})
    assert model_fingerprint(tmp_path / "other") != model_fingerprint(tmp_path / "control0")
