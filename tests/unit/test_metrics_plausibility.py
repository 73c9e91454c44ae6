"""PROBELM accuracy, MRR, NDCG and PLAUSIBILITY (probelm-plausibility §4.2) on hand tables."""

import math

import pandas as pd
import pytest
from factprobe.metrics.common import entity_scores, prompt_frame
from factprobe.metrics.plausibility import (
    grades,
    ndcg,
    plausibility_per_fact,
    plausibility_score,
    scenario_group_scores,
)

L2 = math.log2


def test_grades_from_alternative_ranks():
    assert grades([2, 1, 3]) == (4.0, [2.0, 3.0, 1.0])


def test_scenario_group_hand_values():
    # Object (grade 3) ranked second behind the top alternative (grade 2); alt 2 (grade 1) last.
    acc, rr, nd = scenario_group_scores(-1.0, [-0.5, -2.0], [1, 2], "exponential")
    dcg = (2**2 - 1) / L2(2) + (2**3 - 1) / L2(3) + (2**1 - 1) / L2(4)
    idcg = (2**3 - 1) / L2(2) + (2**2 - 1) / L2(3) + (2**1 - 1) / L2(4)
    assert (acc, rr) == (0.0, 0.5)
    assert nd == pytest.approx(dcg / idcg)
    assert nd == pytest.approx(7.916508 / 9.392789, abs=1e-6)
    _, _, lin = scenario_group_scores(-1.0, [-0.5, -2.0], [1, 2], "linear")
    assert lin == pytest.approx((2 + 3 / L2(3) + 1 / 2) / (3 + 2 / L2(3) + 1 / 2))


def test_tie_with_object_is_a_failure():
    acc, rr, _ = scenario_group_scores(-1.0, [-1.0], [1], "exponential")
    assert (acc, rr) == (0.0, 0.5)


def test_perfect_ranking_and_single_scenario():
    assert ndcg([3, 2, 1]) == pytest.approx(1.0)
    assert scenario_group_scores(-1.0, [], [], "exponential") == (1.0, 1.0, 1.0)


def test_per_fact_per_style_and_plausibility_mean_of_nine():
    facts = pd.DataFrame({"fact_id": ["F"], "subject": ["S"], "property": ["P"], "object": ["O"]})
    styles = ["statement", "completion", "question"]
    prompts = prompt_frame(
        pd.DataFrame({"prompt_id": [f"p{i}" for i in range(3)], "fact_id": "F", "style": styles})
    )
    cands = pd.DataFrame(
        {
            "fact_id": "F",
            "entity": ["O", "A1", "A2", "R9"],
            "role": ["object", "distractor", "distractor", "distractor"],
            "strategy": ["object", "cooccur", "cooccur", "random"],  # random is not a scenario
            "rank": [0, 1, 2, 1],
        }
    )
    rows = []
    # statement: O first. completion: A1 first, O second (perplexity over 2 tokens). question: O last.
    per_style = {
        "p0": {"O": (-1, 1), "A1": (-2, 1), "A2": (-3, 1)},
        "p1": {"O": (-3, 2), "A1": (-1, 1), "A2": (-4, 2)},
        "p2": {"O": (-5, 1), "A1": (-1, 1), "A2": (-2, 1)},
    }
    for pid, ents in per_style.items():
        for e, (lp, nt) in ents.items():
            rows.append((pid, e, e.lower(), float(lp), nt))
        rows.append((pid, "R9", "r9", 0.0, 1))
    scores = pd.DataFrame(rows, columns=["prompt_id", "entity", "form", "logprob", "n_tokens"])
    out = plausibility_per_fact(entity_scores(scores), prompts, cands, facts, ["cooccur"])
    got = out.set_index(["style", "measure"])["value"]
    assert got[("statement", "plaus_acc")] == 1.0
    assert got[("completion", "plaus_rr")] == 0.5  # O: -1.5/token vs A1 -1.0, A2 -2.0
    assert got[("question", "plaus_rr")] == pytest.approx(1 / 3)
    q_dcg = (2**2 - 1) / L2(2) + (2**1 - 1) / L2(3) + (2**3 - 1) / L2(4)
    q_idcg = (2**3 - 1) + (2**2 - 1) / L2(3) + 1 / L2(4)
    assert got[("question", "plaus_ndcg")] == pytest.approx(q_dcg / q_idcg)
    means = out.groupby(["lang", "verbalization", "style", "shots", "measure"])["value"].mean().reset_index()
    score = plausibility_score(means)
    assert int(score["n_parts"].iloc[0]) == 9
    assert score["value"].iloc[0] == pytest.approx(out["value"].mean())
