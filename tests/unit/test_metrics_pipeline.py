"""compute_suite_metrics / summarize / leaderboard / control_check on a hand table."""

import math

import pandas as pd
import pytest
from contract_frames import full_inputs
from factprobe.metrics.knowledge import chance_per_prompt
from factprobe.metrics.pipeline import (
    SuiteInputs,
    coinciding_strategies,
    compute_suite_metrics,
    control_check,
    headline_table,
    leaderboard,
    summarize,
)
from factprobe.settings import Metrics

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
    return full_inputs(SuiteInputs(scores=scores, prompts=prompts, candidates=cands, facts=facts, topk=topk))


def test_end_to_end_tables():
    per_fact, suite = compute_suite_metrics(
        inputs(), Metrics(families={}, ns=[1, 2]), ["knowledge", "ranking", "belief"]
    )
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
    rob = suite[(suite["measure"] == "verbalization_tau:k_avg") & (suite["n"] == 2)]
    assert rob["value"].iloc[0] == pytest.approx(1.0)

    summary = summarize("m1", per_fact, suite)
    row = summary[
        (summary["measure"] == "k_avg") & (summary["n"] == 2) & (summary["verbalization"] == "template")
    ]
    assert row["value"].iloc[0] == pytest.approx(0.75) and row["n_facts"].iloc[0] == 2
    other = summary.assign(model="m2", value=summary["value"] / 2)
    board = leaderboard({"knowledge": headline_table(pd.concat([summary, other]))})
    top = board[(board["measure"] == "k_avg") & (board["n"] == 2)].set_index("model")["rank"]
    assert top["m1"] == 1 and top["m2"] == 2
    ranks = board[board["measure"] == "mean_rank"].set_index("model")["rank"]
    assert ranks["m2"] == 1  # lower mean rank is better

    check = control_check(per_fact, control_strategy="random", taught_target=0.9, chance_band=0.15)
    verdict = check[check["verdict"] != ""].set_index("split")
    assert verdict.loc["taught", "n"] == 2
    assert verdict.loc["taught", "value"] == pytest.approx(1.0)  # a1: 1, a2: 1
    assert verdict.loc["untaught", "value"] == pytest.approx(0.25)  # b1: 0.5, b2: 0
    assert verdict.loc["untaught", "chance"] == 0.5 and verdict.loc["untaught", "low"] == pytest.approx(0.35)
    assert verdict.loc["taught", "verdict"] == "pass" and verdict.loc["untaught", "verdict"] == "FAIL"
    assert verdict["facts"].tolist() == [1, 1]
    # Min@1 curve row of the untaught fact: b1 0.1 < 0.2 and b2 0.1 < 0.3 -> 0; chance 1/(1+1).
    row = check[(check["measure"] == "k_min") & (check["n"] == 1) & (check["split"] == "untaught")]
    assert row["value"].iloc[0] == 0.0 and row["chance"].iloc[0] == pytest.approx(0.5)
    row = check[(check["measure"] == "k_min") & (check["n"] == 2) & (check["split"] == "taught")]
    assert row["chance"].iloc[0] == pytest.approx(1 / 3) and row["n_used"].iloc[0] == 2


def test_split_comes_from_facts_only():
    data = inputs()
    data.facts.loc[1, "split"] = "taught"
    per_fact, _ = compute_suite_metrics(data, Metrics(families={}, ns=[1]), ["knowledge"])
    assert set(per_fact["split"]) == {"taught"}
    data.facts["split"] = ""  # a suite without a taught/untaught split
    per_fact, _ = compute_suite_metrics(data, Metrics(families={}, ns=[1]), ["knowledge"])
    assert set(per_fact["split"]) == {""}
    with pytest.raises(ValueError, match="no k_avg rows on taught/untaught"):
        control_check(per_fact)


def test_random_ranker_chance_by_hand_and_by_enumeration():
    """Avg@n of a random ranker is 1/2 for every n, Min@n is 1/(m+1) for m distractors used.

    By hand: with m = 2 the 3! = 6 orders of (o, d1, d2) give wins over (d1, d2) of
    o first: 2 orders x (1, 1); o middle: 2 x one win; o last: 2 x none. Avg = (2*1 + 2*0.5 + 0)/6
    = 1/2 and Min = 2/6 = 1/3. Enumeration checks the same for m = 1..5.
    """
    from itertools import permutations

    for m in range(1, 6):
        avgs, mins = [], []
        for order in permutations(range(m + 1)):  # order[i]: rank of item i; item 0 is the object
            wins = [order[0] < order[d] for d in range(1, m + 1)]
            avgs.append(sum(wins) / m)
            mins.append(float(all(wins)))
        chance = chance_per_prompt(pd.Series([m])).iloc[0]
        assert chance["k_avg_chance"] == pytest.approx(sum(avgs) / len(avgs)) == pytest.approx(0.5)
        assert chance["k_min_chance"] == pytest.approx(sum(mins) / len(mins)) == pytest.approx(1 / (m + 1))


def test_leaderboard_names_n_used_chance_and_coinciding_strategies():
    data = inputs()
    # "sem" repeats the random lists (as temp falling back to sem would); "short" has one distractor.
    sem = data.candidates[data.candidates["strategy"] == "random"].assign(strategy="sem")
    short = data.candidates[(data.candidates["rank"] == 1)].assign(strategy="short")
    data.candidates = pd.concat([data.candidates, sem, short], ignore_index=True)
    # short_lists "available": K@2 of "short" uses its one distractor (the default leaves it undefined).
    settings = Metrics(families={}, ns=[1, 2], short_lists="available")
    per_fact, suite = compute_suite_metrics(data, settings, ["knowledge", "ranking"])
    summary = summarize("m1", per_fact, suite)
    assert coinciding_strategies(summary) == {"sem": "random"}
    # A combined strategy has K rows only (no ranking rows): it still coincides on what it has.
    combo = summary[(summary["strategy"] == "sem") & summary["measure"].str.startswith("k_")]
    with_combo = pd.concat([summary, combo.assign(strategy="temp+sem")], ignore_index=True)
    assert coinciding_strategies(with_combo) == {"sem": "random", "temp+sem": "random"}
    board = leaderboard({"knowledge": headline_table(summary)}).set_index(["measure", "strategy", "n"])
    assert board.loc[("k_avg", "short", 2), "n_used"] == 1.0  # Avg@2 computed with 1 distractor
    assert board.loc[("k_min", "short", 2), "chance"] == pytest.approx(0.5)  # 1/(1+1)
    assert board.loc[("k_min", "random", 2), "chance"] == pytest.approx(1 / 3)
    assert board.loc[("k_avg", "random", 2), "chance"] == 0.5
    assert board.loc[("k_avg", "sem", 2), "same_as"] == "random"
    assert board.loc[("k_avg", "random", 2), "same_as"] == ""
    assert pd.isna(board.loc[("probability", "", 0), "chance"])


def test_unknown_family_is_rejected():
    with pytest.raises(ValueError, match="unknown family"):
        compute_suite_metrics(inputs(), Metrics(families={}), ["knowlege"])


def test_summary_csv_round_trip_keeps_empty_keys(tmp_path):
    from factprobe.metrics.pipeline import read_summary

    per_fact, suite = compute_suite_metrics(inputs(), Metrics(families={}, ns=[1]), ["knowledge", "belief"])
    summary = summarize("m1", per_fact, suite)
    summary.to_csv(tmp_path / "summary.csv", index=False)
    back = read_summary(tmp_path / "summary.csv")
    assert (back["strategy"] == "").any() and back["bin"].dtype == "int64"
    board = leaderboard({"knowledge": headline_table(back)})
    # Measures without a strategy ("" keys) reach the leaderboard too.
    assert {"probability", "belief_acc_mean", "k_avg"} <= set(board["measure"])


def test_leaderboard_takes_value_and_interval_from_the_headline_table(tmp_path):
    """One source: the leaderboard row of a measure is the suite's headline row (value next to its
    interval, written by summarize_metrics), ranked; the value is the summary rows' mean over
    prompt groups and the interval lies around it."""
    from factprobe import contracts
    from factprobe.metrics.pipeline import Bootstrap, headline_per_fact

    per_fact, suite = compute_suite_metrics(inputs(), Metrics(families={}, ns=[1, 2]), ["knowledge"])
    summary = summarize("m1", per_fact, suite)
    head = headline_table(summary, {"m1": headline_per_fact(per_fact)}, Bootstrap(50, 0))
    contracts.write("headline", head, tmp_path / "headline.parquet")
    back = contracts.read("headline", tmp_path / "headline.parquet")
    board = leaderboard({"knowledge": back})
    keys = ["measure", "strategy", "n", "model"]
    cols = ["value", "ci_low", "ci_high", "n_facts"]
    merged = board.merge(head, on=keys, suffixes=("", "_head"))
    assert len(merged) == len(board) == len(head)
    for col in cols:
        assert merged[col].astype(float).equals(merged[f"{col}_head"].astype(float)), col
    row = board.set_index(keys).loc[("k_avg", "random", 2, "m1")]
    groups = summary[(summary["measure"] == "k_avg") & (summary["n"] == 2) & (summary["bin"] == -1)]
    assert len(groups) == 2  # template and sentence
    assert row["value"] == pytest.approx(groups["value"].mean())
    assert row["ci_low"] <= row["value"] <= row["ci_high"] and row["n_facts"] == 2
    assert board["rank"].eq(1).all()  # one model: rank 1 everywhere


def short_list_suite():
    """Four facts, strategy random, one or two cloze sentences (Pl of object, then distractors
    in rank order; a distractor without a score is not compared in that sentence):

    F1  s1: o 0.5 vs 0.1 0.1 0.1   Min@3 1, Avg@3 1
    F2  s2: o 0.5 vs 0.1           one distractor: K at 3 undefined
    F3  s3: o 0.3 vs 0.1 0.2 0.4   Min@3 0, Avg@3 2/3
    F4  s4a: o 0.5 vs 0.1 0.2 0.3; s4b: o 0.5 vs 0.1 0.2 (third unscored): s4b short at 3
    """
    lists = {"F1": [0.1, 0.1, 0.1], "F2": [0.1], "F3": [0.1, 0.2, 0.4], "F4": [0.1, 0.2, 0.3]}
    objects = {"F1": 0.5, "F2": 0.5, "F3": 0.3, "F4": 0.5}
    sentences = {"s1": "F1", "s2": "F2", "s3": "F3", "s4a": "F4", "s4b": "F4"}
    facts = pd.DataFrame(
        {
            "fact_id": list(lists),
            "subject": [f"S{f}" for f in lists],
            "property": "P",
            "object": [f"O{f}" for f in lists],
            "objects": [[f"O{f}"] for f in lists],
        }
    )
    prompts = pd.DataFrame(
        {
            "prompt_id": list(sentences),
            "fact_id": list(sentences.values()),
            "template_id": [p[-1] if p[-1].isalpha() else "t" for p in sentences],
            "lang": "en",
            "text": list(sentences),
        }
    )
    cands, rows = [], []
    for fact, values in lists.items():
        cands.append((fact, f"O{fact}", "object", "object", 0))
        cands += [(fact, f"{fact}d{i}", "distractor", "random", i) for i in range(1, len(values) + 1)]
    for pid, fact in sentences.items():
        rows.append((pid, f"O{fact}", objects[fact]))
        scored = lists[fact][:2] if pid == "s4b" else lists[fact]
        rows += [(pid, f"{fact}d{i}", v) for i, v in enumerate(scored, start=1)]
    scores = pd.DataFrame(rows, columns=["prompt_id", "entity", "p"])
    scores = scores.assign(
        form=scores["entity"], logprob=[ln(v) for v in scores["p"]], n_tokens=1, end_logprob=0.0
    )
    scores["first_logprob"] = scores["logprob"]
    cands = pd.DataFrame(cands, columns=["fact_id", "entity", "role", "strategy", "rank"])
    return full_inputs(
        SuiteInputs(scores=scores.drop(columns="p"), prompts=prompts, candidates=cands, facts=facts)
    )


def test_chance_and_n_used_describe_the_facts_the_value_averages():
    """§3.2 eq. 2-3 with ``short_lists: undefined`` (the reference): at n = 3 only F1 and F3
    have K(f) (F2 has one distractor, F4's sentence s4b two), so Min@3 = (1 + 0) / 2 = 0.5 and
    Avg@3 = (1 + 2/3) / 2 = 5/6 over 2 facts; beside them n_used = 3 and a random ranker's
    Min@3 = 1 / (3 + 1) = 0.25, Avg@3 = 0.5, over the same 2 facts (averaged over all four facts
    they would read n_used 2.375 and chance 0.321). At n = 1 all four facts count: n_used 1,
    chance Min@1 1/2. Two facts are counted as dropped at n = 3."""
    from factprobe.report.html import distractors_used_table

    per_fact, suite = compute_suite_metrics(
        short_list_suite(), Metrics(families={}, ns=[1, 3]), ["knowledge"]
    )
    summary = summarize("m", per_fact, suite)
    at = summary[summary["strategy"] == "random"].set_index(["measure", "n"])
    expected = {
        ("k_min", 3): (0.5, 2),
        ("k_avg", 3): (5 / 6, 2),
        ("n_used", 3): (3.0, 2),
        ("k_min_chance", 3): (0.25, 2),
        ("k_avg_chance", 3): (0.5, 2),
        ("k_min", 1): (1.0, 4),
        ("n_used", 1): (1.0, 4),
        ("k_min_chance", 1): (0.5, 4),
    }
    for key, (value, facts) in expected.items():
        assert at.loc[key, "value"] == pytest.approx(value), key
        assert at.loc[key, "n_facts"] == facts, key
    assert at.loc[("k_dropped_facts", 3), "value"] == 2
    # every chance and n_used row is a fact with a K value at the same n
    keys = ["fact_id", "strategy", "n"]
    k_rows = set(map(tuple, per_fact[per_fact["measure"] == "k_min"][keys].to_numpy()))
    for name in ("n_used", "k_min_chance", "k_avg_chance"):
        assert set(map(tuple, per_fact[per_fact["measure"] == name][keys].to_numpy())) == k_rows
    board = headline_table(summary).set_index(["measure", "strategy", "n"])
    assert board.loc[("k_min", "random", 3), "chance"] == pytest.approx(0.25)
    assert board.loc[("k_min", "random", 3), "n_used"] == pytest.approx(3.0)
    # the report's line for n = 3: 3 distractors used, chance Min@3 0.25, Avg@3 0.5
    html_table = distractors_used_table(summary)
    row = (
        "<td>random</td>\n      <td>3</td>\n      <td>3.000</td>\n      <td>0.250</td>\n      <td>0.500</td>"
    )
    assert row in html_table and "over the same facts" in html_table
