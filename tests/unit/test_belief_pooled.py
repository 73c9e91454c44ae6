"""BELIEF over all prompts of a pair (belief-myriadlama §2.1–2.4, §7).

P_t is every prompt of a (subject, relation) pair t, whatever the template's style; the per-style
values are a breakdown (``*_by_style`` rows). Every measure averages over pairs, so an N-M pair
with k facts counts once.
"""

import math

import pandas as pd
import pytest
from contract_frames import full_inputs
from factprobe.metrics.belief import BREAKDOWN_SUFFIX, PREDICTION_COLUMNS, belief_dataset, belief_per_fact
from factprobe.metrics.pipeline import (
    SuiteInputs,
    compute_suite_metrics,
    headline_table,
    leaderboard,
    summarize,
)
from factprobe.settings import Metrics

ln = math.log

# A 3-pair toy: (pair, template, style, prediction); the right answer is A
# for every pair, every confidence 0.5.
#   t1: statement s1 A, s2 B | question q1 A
#   t2: statement s1 A, s2 B | question q1 A, q2 B
#   t3: statement s1 A, s2 A, s3 A, s4 B | question q1 C
TOY = [
    ("t1", "s1", "statement", "A"),
    ("t1", "s2", "statement", "B"),
    ("t1", "q1", "question", "A"),
    ("t2", "s1", "statement", "A"),
    ("t2", "s2", "statement", "B"),
    ("t2", "q1", "question", "A"),
    ("t2", "q2", "question", "B"),
    ("t3", "s1", "statement", "A"),
    ("t3", "s2", "statement", "A"),
    ("t3", "s3", "statement", "A"),
    ("t3", "s4", "statement", "B"),
    ("t3", "q1", "question", "C"),
]


def toy_predictions() -> pd.DataFrame:
    frame = pd.DataFrame(TOY, columns=["pair", "template_id", "style", "prediction"])
    frame["prompt_id"] = frame["pair"] + "/" + frame["template_id"]
    frame["property"] = "P1"
    frame["lang"], frame["verbalization"], frame["shots"] = "en", "template", ""
    frame["correct"] = (frame["prediction"] == "A").astype(float)
    frame["confidence"] = 0.5
    return frame[PREDICTION_COLUMNS]


def test_pooled_over_every_prompt_of_a_pair_with_style_breakdown():
    """Hand-worked values.

    Consist, §2.3 eq. (1): 1/|T| Σ_t #{i<j: ŵ_i = ŵ_j} / (½|P_t|(|P_t|−1)).
      pooled P_t:  t1 {A,B,A} 1/3;  t2 {A,B,A,B} 2/6;  t3 {A,A,A,B,C} 3/10
                   -> (1/3 + 1/3 + 3/10) / 3 = 29/90 = 0.322
      statement:   t1 {A,B} 0;  t2 {A,B} 0;  t3 {A,A,A,B} 3/6 -> 1/6 = 0.167
      question:    t1 and t3 have one prompt (no term); t2 {A,B} 0 -> 0.000
    Oracle coverage, §7 (a pair is covered if one of its prompts is right):
      pooled 3/3 = 1;  statement 1;  question t1 A, t2 A, t3 C -> 2/3.
    Maximum coverage, §7 (per relation, the best template's share of covered pairs):
      pooled s1 covers t1, t2, t3 -> 1;  question q1 covers t1, t2 of 3 -> 2/3.
    Ovconf, §2.4 eq. (2) with all confidences 0.5: Σ_i |P(i)|/|P| (0.5 − Acc_i) = 0.5 − Acc(P):
      pooled 0.5 − 7/12 = −1/12;  statement 0.5 − 5/8 = −1/8;  question 0.5 − 2/4 = 0.
    Acc@1 mean, §2.2 (one prompt per pair, N samplings): its expectation is the mean over pairs of
      the pair's share of right prompts: pooled (2/3 + 2/4 + 3/5) / 3 = 53/90 = 0.589;
      question (1/1 + 1/2 + 0/1) / 3 = 0.5.
    """
    ds = belief_dataset(toy_predictions(), "belief", 20_000, 10)
    pooled = ds[(ds["style"] == "") & (ds["bin"] == -1)].set_index("measure")["value"]
    assert pooled["belief_consist"] == pytest.approx(29 / 90)
    assert round(pooled["belief_consist"], 3) == 0.322
    assert pooled["belief_cov_oracle"] == 1.0
    assert pooled["belief_cov_maximum"] == 1.0
    assert pooled["belief_ovconf"] == pytest.approx(-1 / 12)
    assert pooled["belief_acc_mean"] == pytest.approx(53 / 90, abs=0.01)
    # No pooled row is a per-style row, and every breakdown row names its style.
    assert not pooled.index.str.endswith(BREAKDOWN_SUFFIX).any()
    split = ds[ds["measure"].str.endswith(BREAKDOWN_SUFFIX)].set_index(["style", "measure"])["value"]
    assert set(split.index.get_level_values("style")) == {"statement", "question"}
    assert split[("statement", "belief_consist_by_style")] == pytest.approx(1 / 6)
    assert split[("question", "belief_consist_by_style")] == 0.0
    assert split[("question", "belief_cov_oracle_by_style")] == pytest.approx(2 / 3)
    assert split[("question", "belief_cov_maximum_by_style")] == pytest.approx(2 / 3)
    assert split[("statement", "belief_ovconf_by_style")] == pytest.approx(-1 / 8)
    assert split[("question", "belief_ovconf_by_style")] == pytest.approx(0.0)
    assert split[("question", "belief_acc_mean_by_style")] == pytest.approx(0.5, abs=0.01)
    # Calibration bins belong to the pooled prompt set only: 12 prompts in 10 bins.
    bins = ds[ds["measure"] == "belief_calib_acc"]
    assert len(bins) == 10 and set(bins["style"]) == {""}


def test_per_fact_values_pool_the_styles():
    """A fact's Acc is over its pair's every prompt: t3 3/5 right (s1, s2, s3 of s1–s4, q1)."""
    facts = pd.DataFrame({"fact_id": ["t3|P1|A"], "subject": ["t3"], "property": ["P1"], "object": ["A"]})
    pp = toy_predictions()
    pp["pair"] = pp["pair"] + "|P1"
    per_fact = belief_per_fact(pp, facts, "belief", "exact")
    got = per_fact.set_index(["fact_id", "measure"])
    assert got.loc[("t3|P1|A", "belief_acc"), "value"] == pytest.approx(3 / 5)
    assert got.loc[("t3|P1|A", "belief_acc"), "n_prompts"] == 5
    assert set(per_fact["style"]) == {""} and set(per_fact["measure"]) == {"belief_acc", "belief_conf"}


def test_icl_consist_matches_two_ways_by_default():
    """§3.2: BELIEF-ICL's Consist uses bi-directional inclusion ("guitar" ~ "a guitar"): 1, not 0."""
    pp = toy_predictions().iloc[[0, 1]].assign(prediction=["guitar", "a guitar"])
    ds = belief_dataset(pp, "belief_icl", 10, 10).set_index(["style", "measure"])["value"]
    assert ds[("", "belief_icl_consist")] == 1.0
    assert (
        belief_dataset(pp, "belief", 10, 10).set_index(["style", "measure"])["value"][("", "belief_consist")]
        == 0.0
    )


def nm_inputs() -> SuiteInputs:
    """Pair T|P is N-M with three facts (objects B, C, E) sharing their prompt texts; pair S|P has one fact.

    T's two distinct prompts both predict " c" (a name of C: right); S's three prompts predict
    " the", " d", " x" (all wrong).
    """
    facts = pd.DataFrame(
        {
            "fact_id": ["T|P|B", "T|P|C", "T|P|E", "S|P|A"],
            "subject": ["T", "T", "T", "S"],
            "property": "P",
            "object": ["B", "C", "E", "A"],
            "objects": [["B", "C", "E"]] * 3 + [["A"]],
        }
    )
    t_prompts = [(f"t{o}{i}", f"T|P|{o.upper()}", f"x{i}", f"T text {i}") for o in "bce" for i in (1, 2)]
    s_prompts = [(f"s{i}", "S|P|A", f"x{i}", f"S text {i}") for i in (1, 2, 3)]
    prompts = pd.DataFrame(t_prompts + s_prompts, columns=["prompt_id", "fact_id", "template_id", "text"])
    prompts["lang"] = "en"
    cands = pd.concat(
        [
            facts[["fact_id", "object"]].rename(columns={"object": "entity"}).assign(role="object", rank=0),
            facts[["fact_id"]].assign(entity="D", role="distractor", rank=1),
        ]
    ).assign(strategy=lambda f: f["role"].map({"object": "object", "distractor": "random"}))
    rows = []
    for pid, fid, *_ in t_prompts + s_prompts:
        for ent in ["B", "C", "E", "D"] if fid.startswith("T") else ["A", "D"]:
            rows.append((pid, ent, ent.lower(), ln(0.2), 1))
    scores = pd.DataFrame(rows, columns=["prompt_id", "entity", "form", "logprob", "n_tokens"])
    top = {"t": " c", "s1": " the", "s2": " d", "s3": " x"}
    topk = pd.DataFrame(
        {
            "prompt_id": prompts["prompt_id"],
            "rank": 1,
            "token_id": 1,
            "token": [top.get(p, top["t"]) for p in prompts["prompt_id"]],
            "logprob": ln(0.4),
        }
    )
    return full_inputs(SuiteInputs(scores=scores, prompts=prompts, candidates=cands, facts=facts, topk=topk))


def test_nm_pair_counts_once_in_consist_and_coverage():
    """Per pair (eq. 1, §7): Consist = (1 + 0) / 2 = 0.5, oracle and maximum
    coverage = (1 + 0) / 2 = 0.5, Acc@1 mean = 0.5 in every sampling (T always right, S never).
    Counting per fact would give (3·1 + 0) / 4 = 0.75 for each."""
    per_fact, suite = compute_suite_metrics(
        nm_inputs(), Metrics(families={}, belief_samplings=50), ["belief"]
    )
    summary = summarize("m", per_fact, suite)
    pooled = summary[(summary["style"] == "") & (summary["bin"] == -1)].set_index("measure")
    for measure in ("belief_consist", "belief_cov_oracle", "belief_cov_maximum", "belief_acc_mean"):
        assert pooled.loc[measure, "value"] == pytest.approx(0.5), measure
        assert pooled.loc[measure, "level"] == "suite"
    assert pooled.loc["belief_acc_range", "value"] == 0.0
    board = leaderboard({"multiprompt": headline_table(summary)})
    assert board.set_index("measure").loc["belief_consist", "value"] == pytest.approx(0.5)
    # Each fact keeps its pair's per-fact accuracy (T's two distinct prompts, not six).
    acc = per_fact[per_fact["measure"] == "belief_acc"].set_index("fact_id")
    assert acc.loc["T|P|C", "value"] == 1.0 and acc.loc["T|P|C", "n_prompts"] == 2
    assert acc.loc["S|P|A", "value"] == 0.0


def test_report_shows_pooled_values_and_the_style_breakdown():
    """The BELIEF table holds the pooled Consist 0.322; the breakdown table 0.167 and 0.000."""
    from factprobe.report.html import Figures, belief_section

    no_facts = pd.DataFrame({"fact_id": [], "subject": [], "property": []})
    per_fact = belief_per_fact(toy_predictions(), no_facts, "belief", "exact")
    summary = summarize("m", per_fact, belief_dataset(toy_predictions(), "belief", 200, 10))
    page = belief_section({"multiprompt": summary}, Figures(dpi=50))
    main, _, split = page.partition("Breakdown by template style")
    assert "0.322" in main and "0.167" not in main
    assert split.count("<td>statement</td>") == 1 and split.count("<td>question</td>") == 1
    assert "0.167" in split and "0.322" not in split


def test_undefined_consist_gets_no_row():
    """One prompt per pair (a single-template suite): eq. (1) has no term, so no Consist row."""
    pp = toy_predictions().drop_duplicates("pair")
    ds = belief_dataset(pp, "belief", 10, 10)
    assert not ds["measure"].str.contains("consist").any()
    assert ds["value"].notna().all() and (ds["measure"] == "belief_acc_mean").sum() == 1
