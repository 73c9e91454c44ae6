"""Rank of the best correct form, R@n, mean rank (fluent-mlama-disfluency §3.3) on hand tables."""

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd
import pytest
from contract_frames import full, full_prompt_frame
from factprobe.metrics.common import correct_entities, entity_scores
from factprobe.metrics.ranking import mean_rank, ranking_per_fact

# Scalar reference of §3.3 for one prompt; ranking_per_fact is checked against it below.


def rank_of_best_correct(correct_logprobs: Sequence[float], distractor_logprobs: Sequence[float]) -> int:
    """Rank (1 = best) of the best correct form among correct forms + distractors (§3.3)."""
    best = max(correct_logprobs)
    return 1 + int(sum(d >= best for d in distractor_logprobs))


def recall_at(rank: int, n: int) -> float:
    """R_i@n of §3.3: 1 if the correct object is among the top n endings."""
    return float(rank <= n)


def test_rank_counts_ties_as_failures():
    assert rank_of_best_correct([-1.0, -3.0], [-2.0, -0.5, -4.0]) == 2
    assert rank_of_best_correct([-1.0], [-1.0]) == 2
    assert rank_of_best_correct([-1.0], []) == 1
    assert recall_at(2, 1) == 0.0 and recall_at(2, 2) == 1.0
    assert mean_rank([1, 2, 6]) == 3.0
    assert math.isnan(mean_rank([]))


def frame(rows, cols):
    return pd.DataFrame(rows, columns=cols)


def test_ranking_per_fact_by_language_and_verbalization():
    facts = frame(
        [("S|P|A", "S", "P", "A", ["A", "B"]), ("T|P|C", "T", "P", "C", ["C"])],
        ["fact_id", "subject", "property", "object", "objects"],
    )
    prompts = full_prompt_frame(
        frame(
            [
                ("q1", "S|P|A", "en", "template"),
                ("q2", "S|P|A", "cs", "template"),
                ("q3", "S|P|A", "cs", "sentence"),
                ("q4", "T|P|C", "en", "template"),
            ],
            ["prompt_id", "fact_id", "lang", "verbalization"],
        )
    )
    cands = frame(
        [
            ("S|P|A", "A", "object", "object", 0),
            ("S|P|A", "X", "distractor", "pool", 1),
            ("S|P|A", "Y", "distractor", "pool", 2),
            ("T|P|C", "C", "object", "object", 0),
            ("T|P|C", "X", "distractor", "pool", 1),
        ],
        ["fact_id", "entity", "role", "strategy", "rank"],
    )
    rows = [
        # q1: correct forms A:-2, A (inflected):-1.5, B (second valid object, N-M): -1.2 -> best -1.2
        ("q1", "A", "Praha", -2.0),
        ("q1", "A", "Prahy", -1.5),
        ("q1", "B", "b", -1.2),
        ("q1", "X", "x1", -1.0),  # X's best form beats -1.2
        ("q1", "X", "x2", -0.9),  # ...but X is one competitor, not two
        ("q1", "Y", "y", -3.0),
        # q2: Y ties with the best correct form -> counts against it
        ("q2", "A", "a", -1.0),
        ("q2", "X", "x", -2.0),
        ("q2", "Y", "y", -1.0),
        # q3: correct first
        ("q3", "A", "a", -0.5),
        ("q3", "X", "x", -2.0),
        ("q3", "Y", "y", -1.0),
        # q4: one distractor only, X better -> rank 2
        ("q4", "C", "c", -2.0),
        ("q4", "X", "x", -1.0),
    ]
    scores = frame(rows, ["prompt_id", "entity", "form", "logprob"]).assign(n_tokens=1)
    out = ranking_per_fact(
        entity_scores(full("scores", scores)),
        prompts,
        full("candidates", cands),
        correct_entities(facts),
        [1, 2, 3],
    )
    get = out.set_index(["fact_id", "lang", "verbalization", "measure", "n"])["value"]
    assert get[("S|P|A", "en", "template", "mean_rank", 0)] == 2
    assert get[("S|P|A", "en", "template", "recall", 1)] == 0.0
    assert get[("S|P|A", "en", "template", "recall", 2)] == 1.0
    assert get[("S|P|A", "cs", "template", "mean_rank", 0)] == 2
    assert get[("S|P|A", "cs", "sentence", "mean_rank", 0)] == 1
    assert get[("S|P|A", "cs", "sentence", "recall", 1)] == 1.0
    assert get[("T|P|C", "en", "template", "mean_rank", 0)] == 2
    assert get[("T|P|C", "en", "template", "recall", 3)] == 1.0
    # The suite-level R@1 for en/template is the mean over the two facts: (0 + 0) / 2.
    en = out[(out["lang"] == "en") & (out["measure"] == "recall") & (out["n"] == 1)]
    assert en["value"].mean() == pytest.approx(0.0)


def test_ranking_per_fact_matches_scalar_reference_on_random_scores():
    rng = np.random.default_rng(3)
    facts = frame(
        [(f"F{i}", f"S{i}", "P", f"O{i}", [f"O{i}"]) for i in range(6)],
        ["fact_id", "subject", "property", "object", "objects"],
    )
    prompts = full_prompt_frame(frame([(f"q{i}", f"F{i}") for i in range(6)], ["prompt_id", "fact_id"]))
    cands, rows, expected = [], [], {}
    for i in range(6):
        cands.append((f"F{i}", f"O{i}", "object", "object", 0))
        correct = rng.normal(size=2).round(1)  # rounding makes ties likely
        rows += [(f"q{i}", f"O{i}", f"o{k}", v) for k, v in enumerate(correct)]
        others = []
        for d in range(4):
            cands.append((f"F{i}", f"D{d}", "distractor", "pool", d + 1))
            forms = rng.normal(size=2).round(1)
            rows += [(f"q{i}", f"D{d}", f"d{d}{k}", v) for k, v in enumerate(forms)]
            others.append(forms.max())  # an entity competes with its best form
        expected[f"F{i}"] = rank_of_best_correct(correct, others)
    cands = frame(cands, ["fact_id", "entity", "role", "strategy", "rank"])
    scores = frame(rows, ["prompt_id", "entity", "form", "logprob"]).assign(n_tokens=1)
    out = ranking_per_fact(
        entity_scores(full("scores", scores)),
        prompts,
        full("candidates", cands),
        correct_entities(facts),
        [1, 2, 3],
    )
    get = out.set_index(["fact_id", "measure", "n"])["value"]
    for fact, rank in expected.items():
        assert get[(fact, "mean_rank", 0)] == rank
        assert [get[(fact, "recall", n)] for n in (1, 2, 3)] == [recall_at(rank, n) for n in (1, 2, 3)]
