"""Calibration per time slice (factprobe.metrics.slice_calibration) on hand-worked tables."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from contract_frames import full
from factprobe.metrics import slice_calibration as sc
from factprobe.metrics.common import correct_entities, entity_scores, prompt_frame

FACTS = full(
    "facts",
    pd.DataFrame(
        [("F1", "S1", "P1", "A", ["A"]), ("F2", "S2", "P1", "B", ["B"])],
        columns=["fact_id", "subject", "property", "object", "objects"],
    ),
)
PROMPTS = prompt_frame(
    full(
        "prompts",
        pd.DataFrame([("p1", "F1", "en"), ("p2", "F2", "en")], columns=["prompt_id", "fact_id", "lang"]),
    )
)
CANDS = full(
    "candidates",
    pd.DataFrame(
        [
            ("F1", "A", "object", "object", 0),
            ("F1", "D1", "distractor", "random", 1),
            ("F1", "D2", "distractor", "random", 2),
            ("F2", "B", "object", "object", 0),
            ("F2", "D1", "distractor", "random", 1),
            ("F2", "D2", "distractor", "random", 2),
        ],
        columns=["fact_id", "entity", "role", "strategy", "rank"],
    ),
)
# Pl(entity | prompt), one form each, end marker probability 1
PL = {
    ("p1", "A"): 0.4,
    ("p1", "D1"): 0.2,
    ("p1", "D2"): 0.2,
    ("p2", "B"): 0.1,
    ("p2", "D1"): 0.6,
    ("p2", "D2"): 0.3,
}
SCORES = full(
    "scores",
    pd.DataFrame(
        {
            "prompt_id": [k[0] for k in PL],
            "entity": [k[1] for k in PL],
            "form": [k[1].lower() for k in PL],
            "logprob": [math.log(v) for v in PL.values()],
            "n_tokens": 1,
            "first_logprob": [math.log(v) for v in PL.values()],
            "end_logprob": 0.0,
        }
    ),
)


def test_candidate_confidence_hand_values():
    got = sc.candidate_confidence(
        entity_scores(SCORES), PROMPTS, CANDS, FACTS, correct_entities(FACTS), [1, 2]
    ).set_index(["prompt_id", "n"])
    # p1, n = 2: q = 0.4/0.8, 0.2/0.8, 0.2/0.8 = 0.5, 0.25, 0.25; right; Brier 0.25 + 2 * 0.0625
    assert got.loc[("p1", 2), ["p_true", "confidence", "correct", "brier"]].tolist() == pytest.approx(
        [0.5, 0.5, 1.0, 0.375]
    )
    # p1, n = 1: q = 2/3, 1/3; Brier (1/3)^2 + (1/3)^2
    assert got.loc[("p1", 1), ["p_true", "confidence", "brier"]].tolist() == pytest.approx(
        [2 / 3, 2 / 3, 2 / 9]
    )
    # p2, n = 2: q = 0.1, 0.6, 0.3: wrong, answer D1 at 0.6; Brier 0.81 + 0.36 + 0.09
    assert got.loc[("p2", 2), ["p_true", "confidence", "correct", "brier"]].tolist() == pytest.approx(
        [0.1, 0.6, 0.0, 1.26]
    )
    # p2, n = 1: q = 1/7, 6/7: wrong with confidence 6/7 >= 0.8
    assert got.loc[("p2", 1), ["p_true", "confidence", "brier"]].tolist() == pytest.approx(
        [1 / 7, 6 / 7, 2 * (6 / 7) ** 2]
    )
    facts = sc.fact_confidence(got.reset_index(), "random", 1, confident=0.8)
    assert facts["confidently_wrong"].to_dict() == {"F1": 0.0, "F2": 1.0}
    facts = sc.fact_confidence(got.reset_index(), "random", 2, confident=0.8)
    assert facts["confidently_wrong"].to_dict() == {"F1": 0.0, "F2": 0.0}
    # fewer than n = 3 distractors: no forecast (as K at n = 3)
    none = sc.candidate_confidence(entity_scores(SCORES), PROMPTS, CANDS, FACTS, correct_entities(FACTS), [3])
    assert none.empty


def _facts(confidence, correct, ids=None):
    ids = ids or [f"f{i:02d}" for i in range(len(confidence))]
    return pd.DataFrame(
        {
            "p_true": confidence,
            "confidence": confidence,
            "correct": correct,
            "brier": 0.0,
            "confidently_wrong": [
                float(c < 0.5 and p >= 0.8) for p, c in zip(confidence, correct, strict=True)
            ],
        },
        index=pd.Index(ids, name="fact_id"),
    )


def test_group_calibration_hand_values():
    row = sc.group_calibration(_facts([0.9, 0.6, 0.8, 0.3], [1.0, 0.0, 0.0, 1.0]))
    # four facts, one per bin: ECE = mean |right - confidence| = (0.1 + 0.6 + 0.8 + 0.7) / 4
    assert row["ece"] == pytest.approx(0.55)
    assert (row["accuracy"], row["mean_confidence"], row["confidently_wrong"]) == pytest.approx(
        (0.5, 0.65, 0.25)
    )
    # least confident first: 0.3 right, 0.6 wrong, 0.8 wrong, 0.9 right. Kept ceil((1 - r) 4):
    # 4, 4, 4, 3, 3, 2, 2, 2, 1, 1 -> accuracy 1/2, 1/2, 1/2, 1/3, 1/3, 1/2, 1/2, 1/2, 1, 1
    assert [row[f"ar_{p}"] for p in sc.REJECT] == pytest.approx(
        [0.5, 0.5, 0.5, 1 / 3, 1 / 3, 0.5, 0.5, 0.5, 1, 1]
    )


def test_ece_equal_count_bins():
    # 40 facts, all at confidence 0.75, ties ordered by id: 20 bins of two consecutive ids
    alternating = sc.group_calibration(_facts([0.75] * 40, [1.0, 0.0] * 20))
    assert alternating["ece"] == pytest.approx(0.25)  # every bin: |0.5 - 0.75|
    halves = sc.group_calibration(_facts([0.75] * 40, [1.0] * 20 + [0.0] * 20))
    assert halves["ece"] == pytest.approx(0.5 * 0.25 + 0.5 * 0.75)


def test_calibration_rows_per_slice_and_around_the_cutoff():
    facts = pd.DataFrame(
        {
            "fact_id": ["a1", "a2", "b1", "b2", "c1", "c2", "s1", "s2"],
            "slice": [
                "20200201",
                "20200201",
                "20200301",
                "20200301",
                "20200401",
                "20200401",
                "static",
                "static",
            ],
            "slice_start": [20200101] * 2 + [20200201] * 2 + [20200301] * 2 + [None] * 2,
            "slice_end": [20200201] * 2 + [20200301] * 2 + [20200401] * 2 + [None] * 2,
        }
    )
    per_fact = _facts(
        [0.9, 0.7, 0.9, 0.85, 0.6, 0.95, 0.9, 0.9],
        [1.0, 1.0, 0.0, 1.0, 0.0, 0.0, 1.0, 1.0],
        ids=list(facts["fact_id"]),
    )
    rows = {r["part"]: r for r in sc.calibration_rows(per_fact, facts, 1)}
    assert list(rows) == ["20200201", "20200301", "20200401", "static", "before", "after"]
    assert rows["before"]["n_facts"] == 2 and rows["before"]["accuracy"] == 1.0
    assert (rows["before"]["slice_start"], rows["before"]["slice_end"]) == ("20200101", "20200201")
    # after: b1 wrong at 0.9, b2 right, c1 wrong at 0.6, c2 wrong at 0.95 -> 2 of 4 confidently wrong
    assert rows["after"]["n_facts"] == 4 and rows["after"]["confidently_wrong"] == 0.5
    assert rows["after"]["accuracy"] == 0.25
    assert rows["static"]["slice_start"] == ""
    # no date (none / not monotone / insufficient): slices only
    assert [r["part"] for r in sc.calibration_rows(per_fact, facts, None)] == [
        "20200201",
        "20200301",
        "20200401",
        "static",
    ]
    assert np.isnan(sc.ece(np.zeros(0), np.zeros(0)))
