"""§5.1 curves of the distractors paper (Fig. 3: τ against the number of distractors; Fig. 4: τ
against the number of cloze sentences) and a triples file as human scores, on hand-made tables."""

import math

import pandas as pd
import pytest
from factprobe.metrics.cloze import cloze_order, cloze_tables
from factprobe.metrics.meta import alignment_for_models, curves_for_models, read_human

HUMAN = [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]
FACTS = pd.DataFrame(
    {
        "fact_id": [f"Q{i}|P36|Q{100 + i}" for i in range(6)],
        "subject": [f"Q{i}" for i in range(6)],
        "property": "P36",
        "object": [f"Q{100 + i}" for i in range(6)],
    }
)


def per_fact_table(by_n):
    """k_avg of strategy random per fact: ``by_n[n]`` = the six values at that n."""
    rows = [
        {
            "fact_id": f,
            "measure": "k_avg",
            "value": v,
            "strategy": "random",
            "n": n,
            "lang": "en",
            "verbalization": "template",
            "style": "statement",
            "shots": "none",
            "n_prompts": 1,
        }
        for n, values in by_n.items()
        for f, v in zip(FACTS["fact_id"], values, strict=True)
    ]
    return pd.DataFrame(rows)


@pytest.fixture
def human(tmp_path):
    """A judged triples TSV as a `source: triples` suite lists it (no header, one unscored row)."""
    path = tmp_path / "judged.tsv"
    lines = [f"Q{i}\tP36\tQ{100 + i}\t{s}" for i, s in enumerate(HUMAN)] + ["Q9\tP36\tQ109"]
    path.write_text("\n".join(lines) + "\n")
    return read_human(path)


def test_triples_tsv_reads_as_human_scores(human):
    assert len(human) == 6 and human["score"].tolist() == HUMAN
    assert human["fact_id"].iloc[0] == "Q0|P36|Q100" and list(human.columns)[:2] == ["fact_id", "subject"]


def test_curves_by_hand(human):
    """At n = 1 the values rank the facts as the humans do (τ = 1 on every fold, so every fold
    picks n = 1), at n = 2 in reverse (τ = -1), at n = 10 they are constant (τ undefined).
    Cloze sentences: with 1 sentence reversed (τ = -1), with 2 as the humans (τ = 1)."""
    table = per_fact_table({1: HUMAN, 2: HUMAN[::-1], 10: [0.5] * 6})
    alignment = alignment_for_models({"m": table}, human, FACTS, k=3)
    folds = alignment[(alignment["family"] == "dist:random") & (alignment["fold"] >= 0)]
    assert folds["n"].tolist() == [1, 1, 1] and folds["test_tau"].tolist() == [1.0, 1.0, 1.0]
    cloze = pd.concat(
        [per_fact_table({1: HUMAN[::-1]}).assign(n_cloze=1), per_fact_table({1: HUMAN}).assign(n_cloze=2)]
    )
    curves = curves_for_models({"m": table}, {"m": cloze}, human, FACTS, alignment, k=3)
    mean = curves[curves["fold"] == -1].set_index(["axis", "x"])
    assert mean.loc[("distractors", 1), "test_tau"] == 1.0
    assert mean.loc[("distractors", 2), "test_tau"] == -1.0
    assert (
        math.isnan(mean.loc[("distractors", 10), "test_tau"])
        and mean.loc[("distractors", 10), "n_folds"] == 0
    )
    assert mean.loc[("cloze_sentences", 1), "test_tau"] == -1.0
    assert mean.loc[("cloze_sentences", 2), "test_tau"] == 1.0
    assert len(curves[curves["fold"] >= 0]) == 3 * (3 + 2)  # 3 folds x (3 n + 2 m)


def test_cloze_order_ranks_templates_per_fact():
    prompts = pd.DataFrame(
        {
            "prompt_id": [f"p{i}" for i in range(8)],
            "fact_id": ["a"] * 6 + ["b"] * 2,
            "template_id": ["t1", "t1", "t2", "t2", "t3", "t3", "t1", "t2"],
        }
    )
    rank = cloze_order(prompts, seed=0)
    a = dict(zip(prompts["template_id"][:6], rank[:6], strict=True))
    assert sorted(a.values()) == [1, 2, 3] and rank[0] == rank[1] and rank[2] == rank[3]
    assert sorted(rank[6:]) == [1, 2]


def test_cloze_tables_first_m_sentences():
    """Two facts, two templates each; with m = 1 only each fact's first template counts."""
    from contract_frames import full_inputs
    from factprobe.metrics.pipeline import SuiteInputs
    from factprobe.settings import Metrics

    facts = pd.DataFrame(
        {
            "fact_id": ["S|P|A"],
            "subject": ["S"],
            "property": ["P"],
            "object": ["A"],
            "objects": [["A"]],
            "split": ["taught"],
        }
    )
    prompts = pd.DataFrame(
        {
            "prompt_id": ["x", "y"],
            "fact_id": "S|P|A",
            "template_id": ["t1", "t2"],
            "lang": "en",
            "verbalization": "template",
            "text": ["x", "y"],
        }
    )
    cands = pd.DataFrame(
        {
            "fact_id": "S|P|A",
            "entity": ["A", "X"],
            "role": ["object", "distractor"],
            "strategy": ["object", "random"],
            "rank": [0, 1],
        }
    )
    # x: A wins (K = 1); y: X wins (K = 0)
    scores = pd.DataFrame(
        {
            "prompt_id": ["x", "x", "y", "y"],
            "entity": ["A", "X", "A", "X"],
            "form": ["a", "x"] * 2,
            "logprob": [-1.0, -2.0, -2.0, -1.0],
            "n_tokens": 1,
            "first_logprob": [-1.0, -2.0, -2.0, -1.0],
            "end_logprob": 0.0,
        }
    )
    inputs = full_inputs(SuiteInputs(scores=scores, prompts=prompts, candidates=cands, facts=facts))
    table = cloze_tables(inputs, Metrics(families={}, ns=[1]), ["knowledge"])
    k = table[(table["measure"] == "k_avg") & (table["n"] == 1)].set_index("n_cloze")["value"]
    first = prompts["template_id"][cloze_order(prompts, 0) == 1].iloc[0]
    assert k.loc[1] == (1.0 if first == "t1" else 0.0)
    assert k.loc[2] == 0.5  # both sentences: mean of 1 and 0


def test_alignment_tables_meet_their_csv_contracts(human, tmp_path):
    """Rule human_alignment writes both tables through their contracts (docs/contracts.md), and
    they read back typed: fold -1 rows, an undefined τ as NaN."""
    from factprobe import contracts

    table = per_fact_table({1: HUMAN, 2: HUMAN[::-1], 10: [0.5] * 6})
    alignment = alignment_for_models({"m": table}, human, FACTS, k=3)
    cloze = per_fact_table({1: HUMAN}).assign(n_cloze=1)
    curves = curves_for_models({"m": table}, {"m": cloze}, human, FACTS, alignment, k=3)
    for name, frame in (("human_alignment", alignment), ("human_alignment_curves", curves)):
        path = tmp_path / f"{name}.csv"
        contracts.write_csv(name, frame, path)
        back = contracts.read_csv(name, path)
        assert list(back.columns) == contracts.columns(name) and len(back) == len(frame)
        assert back["fold"].dtype == "int64" and -1 in back["fold"].tolist()
    with pytest.raises(contracts.ContractError, match="human_alignment table lacks"):
        contracts.write_csv("human_alignment", alignment.drop(columns="std_tau"), tmp_path / "bad.csv")
