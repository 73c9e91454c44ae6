"""compute_suite_metrics / summarize / leaderboard / control_avg_by_split on a hand table."""

import math

import pandas as pd
import pytest
from factprobe.io import write_frame
from factprobe.metrics.pipeline import (
    Settings,
    SuiteInputs,
    compute_suite_metrics,
    control_avg_by_split,
    leaderboard,
    summarize,
)

ln = math.log


def inputs():
    facts = pd.DataFrame(
        {
            "fact_id": ["S1|P|A", "S2|P|B"],
            "subject": ["S1", "S2"],
            "property": ["P", "P"],
            "object": ["A", "B"],
            "objects": [["A"], ["B"]],
            "split": ["taught", "untaught"],
        }
    )
    prompts = pd.DataFrame(
        {
            "prompt_id": ["a1", "a2", "b1", "b2"],
            "fact_id": ["S1|P|A", "S1|P|A", "S2|P|B", "S2|P|B"],
            "template_id": ["t1", "t1", "t1", "t1"],
            "lang": "en",
            "verbalization": ["template", "sentence", "template", "sentence"],
            "text": ["x", "x'", "y", "y'"],
        }
    )
    cands = pd.DataFrame(
        {
            "fact_id": ["S1|P|A"] * 3 + ["S2|P|B"] * 3,
            "entity": ["A", "X", "Y", "B", "X", "Y"],
            "role": ["object", "distractor", "distractor"] * 2,
            "strategy": ["object", "random", "random"] * 2,
            "rank": [0, 1, 2] * 2,
        }
    )
    p = {"a1": (0.5, 0.2, 0.1), "a2": (0.4, 0.3, 0.2), "b1": (0.1, 0.2, 0.05), "b2": (0.1, 0.3, 0.4)}
    rows = [
        (pid, e, e.lower(), ln(v), 1, ln(v))
        for pid, vals in p.items()
        for e, v in zip("OXY", vals, strict=True)
    ]
    scores = pd.DataFrame(
        rows, columns=["prompt_id", "entity", "form", "logprob", "n_tokens", "first_logprob"]
    )
    scores["entity"] = [
        ("A" if pid.startswith("a") else "B") if e == "O" else e
        for pid, e in zip(scores["prompt_id"], scores["entity"], strict=True)
    ]
    scores["end_logprob"] = 0.0  # the end marker is certain: Probability = Pl here
    # Vocabulary argmax per prompt (BELIEF §2.1): a1 and b1 predict their object, a2 and b2 do not.
    topk = pd.DataFrame(
        {
            "prompt_id": ["a1", "a2", "b1", "b2"],
            "rank": 1,
            "token_id": [1, 2, 3, 4],
            "token": [" o", " x", " o", " y"],  # the objects' form is "o"
            "logprob": [ln(0.5), ln(0.4), ln(0.2), ln(0.4)],
        }
    )
    return SuiteInputs(scores=scores, prompts=prompts, candidates=cands, facts=facts, topk=topk)


def test_end_to_end_tables(tmp_path):
    per_fact, suite = compute_suite_metrics(inputs(), Settings(ns=[1, 2]), ["knowledge", "ranking", "belief"])
    get = per_fact.set_index(["fact_id", "measure", "strategy", "n", "verbalization"])["value"]
    assert get[("S1|P|A", "k_min", "random", 2, "template")] == 1.0
    assert get[("S2|P|B", "k_avg", "random", 2, "template")] == 0.5  # 0.1 < 0.2, 0.1 > 0.05
    assert get[("S2|P|B", "k_avg", "random", 2, "sentence")] == 0.0
    assert set(per_fact["split"]) == {"taught", "untaught"}
    # BELIEF (vocabulary argmax): S1's prompts a1 right, a2 wrong; confidence = top-1 probability.
    assert get[("S1|P|A", "belief_acc", "", 0, "template")] == 1.0
    assert get[("S1|P|A", "belief_acc", "", 0, "sentence")] == 0.0
    assert get[("S1|P|A", "belief_conf", "", 0, "sentence")] == pytest.approx(0.4)
    assert ("S1|P|A", "belief_cand_acc", "", 0, "template") in get.index
    # Probability (Table 2) with a certain end marker: Pr(a|a1) = 0.5.
    assert get[("S1|P|A", "probability", "", 0, "template")] == pytest.approx(0.5)
    # Robustness τ (template vs sentence) of Avg@2: template (1, 0.5), sentence (1, 0) -> concordant.
    rob = suite[(suite["measure"] == "robustness_tau:k_avg") & (suite["n"] == 2)]
    assert rob["value"].iloc[0] == pytest.approx(1.0)

    summary = summarize("m1", per_fact, suite)
    row = summary[
        (summary["measure"] == "k_avg") & (summary["n"] == 2) & (summary["verbalization"] == "template")
    ]
    assert row["value"].iloc[0] == pytest.approx(0.75) and row["n_facts"].iloc[0] == 2
    other = summary.assign(model="m2", value=summary["value"] / 2)
    board = leaderboard({"knowledge": pd.concat([summary, other])})
    top = board[(board["measure"] == "k_avg") & (board["n"] == 2)].set_index("model")["rank"]
    assert top["m1"] == 1 and top["m2"] == 2
    ranks = board[board["measure"] == "mean_rank"].set_index("model")["rank"]
    assert ranks["m2"] == 1  # lower mean rank is better

    path = tmp_path / "control.parquet"
    write_frame(per_fact, path)
    res = control_avg_by_split(path)
    assert res["n"] == 2
    assert res["taught"] == pytest.approx(1.0)  # a1: 1, a2: 1
    assert res["untaught"] == pytest.approx(0.25)  # b1: 0.5, b2: 0
    split = pd.DataFrame({"subject": ["S1", "S2"], "property": "P", "object": ["A", "B"], "split": "taught"})
    write_frame(split, tmp_path / "split.parquet")
    res = control_avg_by_split(path, tmp_path / "split.parquet", n=1)
    assert res["facts_taught"] == 2 and math.isnan(res["untaught"])


def test_unknown_family_is_rejected():
    with pytest.raises(ValueError, match="unknown family"):
        compute_suite_metrics(inputs(), Settings(), ["knowlege"])


def test_summary_csv_round_trip_keeps_empty_keys(tmp_path):
    from factprobe.metrics.pipeline import read_summary

    per_fact, suite = compute_suite_metrics(inputs(), Settings(ns=[1]), ["knowledge", "belief"])
    summary = summarize("m1", per_fact, suite)
    summary.to_csv(tmp_path / "summary.csv", index=False)
    back = read_summary(tmp_path / "summary.csv")
    assert (back["strategy"] == "").any() and back["bin"].dtype == "int64"
    board = leaderboard({"knowledge": back})
    # Measures without a strategy ("" keys) reach the leaderboard too.
    assert {"probability", "belief_acc_mean", "k_avg"} <= set(board["measure"])
