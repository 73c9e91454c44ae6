"""Self-candidates on a symmetric relation (P530, diplomatic relation), hand-built tables.

A self-candidate is the fact's own subject as an object-side distractor (a country "in
diplomatic relation" with itself) or its own object as a subject-side one. What each reference
does with it:

* distractors paper §3.3 (Ω(f): (s, r, o*) ∉ B, a shared type, no shared label) and its
  reference code (DistFactAssessLM ``src/know/distractor_find.py``: every retriever removes the
  valid objects of (s, r) and the entities named by a label of o, nothing else): the subject is
  in Ω(f) and is kept;
* PROBELM Algorithm 1 (Appendix B): the anchor is taken out of its siblings (e ≠ s) but
  nothing is said of s among the siblings' objects; the released groups hold no
  self-scenario, so co-occurrence leaves it out and counts it.

Countries 1..6 (type 6), each with its own name; P530 holds both directions of the pairs
1-2, 1-3, 2-3, 2-4, 3-4, 3-5, 4-5, 5-6. Fact (1, P530, 2).

Object side, siblings of 1 = {2, 3, 4, 5, 6}, objects of (sib, P530, ·) counted:
2 -> {1, 3, 4}, 3 -> {1, 2, 4, 5}, 4 -> {2, 3, 5}, 5 -> {3, 4, 6}, 6 -> {5}:
frequency 3: {3, 4, 5}; 2: {1, 2}; 1: {6}. Ω removes o = 2 and the valid objects 2, 3 of
(1, P530): 4, 5 (frequency 3), then 1 = s (frequency 2), then 6.

Subject side ("repeat with o fixed"), siblings of 2 = {1, 3, 4, 5, 6}, subjects of
(·, P530, sib) counted: 1 -> {3}, 2 -> {1, 3, 4}, 3 -> {1, 4, 5}, 4 -> {3, 5}, 5 -> {3, 4, 6},
6 -> {5}: frequency 3: {2, 3, 5}; 2: {4}; 1: {1, 6}. Ω mirrored removes s = 1 and the subjects
of a valid (·, P530, 2): 1, 3, 4: 2 = o and 5 (frequency 3), then 6.
"""

from __future__ import annotations

import pandas as pd
from factprobe.distractors.cooccur import Cooccurrence
from factprobe.distractors.omega import Omega
from factprobe.hashing import stable_hash

PAIRS = [(1, 2), (1, 3), (2, 3), (2, 4), (3, 4), (3, 5), (4, 5), (5, 6)]
FACT = "Q1|P530|Q2"


def world() -> tuple[pd.DataFrame, Omega]:
    both = PAIRS + [(b, a) for a, b in PAIRS]
    statements = pd.DataFrame(
        {"subject": [a for a, _ in both], "property": 530, "object": [b for _, b in both], "rank": 1}
    )
    types = pd.DataFrame({"id": range(1, 7), "type": 6})
    forms = pd.DataFrame({"entity": range(1, 7), "form": [f"country {i}" for i in range(1, 7)]})
    omega = Omega(types, forms, statements[["subject", "property", "object"]], form_threshold=None)
    return statements, omega


def tie_order(entities: list[int], side: str) -> list[int]:
    """A frequency level in the documented tie order (module docstring of distractors.cooccur)."""
    return sorted(entities, key=lambda e: stable_hash(FACT, side, e))


def test_the_distractor_papers_omega_keeps_the_subject():
    """§3.3's Ω(f) and the reference's filters admit s: (1, P530, 1) is not a fact, 1 is a
    country like 2 and its name differs."""
    _, omega = world()
    assert omega.filter(1, 530, 2, [1, 4, 5, 6]) == [1, 4, 5, 6]
    assert omega.filter_subjects(1, 530, 2, [2, 5, 6]) == [2, 5, 6]


def test_cooccurrence_leaves_self_scenarios_out_and_counts_them():
    statements, omega = world()
    co = Cooccurrence(statements)
    # Object side, n = 3: 4 and 5, then s = 1 left out for 6.
    got = co.alternatives(omega, FACT, 1, 530, 2, 3, "object")
    assert got == [(e, 3, rel) for e, rel in zip(tie_order([4, 5], "object"), (3.0, 2.0), strict=True)] + [
        (6, 1, 1.0)
    ]
    assert co.self_left_out == {"object": 1, "subject": 0}
    # n = 2 stops in the first level: s would not have been taken, so nothing is counted.
    assert [e for e, _, _ in co.alternatives(omega, FACT, 1, 530, 2, 2, "object")] == tie_order(
        [4, 5], "object"
    )
    assert co.self_left_out == {"object": 1, "subject": 0}
    # Subject side, n = 10: 5 (frequency 3) and 6 (frequency 1); o = 2 left out.
    got = co.alternatives(omega, FACT, 1, 530, 2, 10, "subject")
    assert got == [(5, 3, 10.0), (6, 1, 9.0)]
    assert co.self_left_out == {"object": 1, "subject": 1}


def test_retrieval_logs_what_was_kept_and_left_out(caplog):
    """The suite's retrieval with Random (the distractor paper's reference keeps s) and
    co-occurrence (left out, n = 3 per side as above): one line names both counts."""
    import logging

    from factprobe.distractors.retrieve import retrieve
    from factprobe.settings import Retrieve

    statements, omega = world()
    facts = pd.DataFrame({"fact_id": [FACT], "subject": ["Q1"], "property": ["P530"], "object": ["Q2"]})
    settings = Retrieve(
        strategies=["random", "cooccur"],
        n=3,
        languages=["en"],
        dump="20141201",
        strategy_settings={"cooccur": {"n": 3, "sides": ["object", "subject"]}},
        form_threshold=90,
        pool_size=5,
        search="exact",
        valid_ranks="non_deprecated",
        ef_search=200,
    )
    with caplog.at_level(logging.INFO, logger="factprobe.distractors.retrieve"):
        got = retrieve(facts, omega, settings, {"cooccur": Cooccurrence(statements)})
    dis = got[got["role"] == "distractor"]
    # Random takes 3 of Ω(f) = {1, 4, 5, 6} (hash order); cooccur never lists s = Q1 or, on the
    # subject side, o = Q2.
    cooccur = dis[dis["strategy"] == "cooccur"]
    assert "Q1" not in set(cooccur[cooccur["side"] == "object"]["entity"])
    assert "Q2" not in set(cooccur[cooccur["side"] == "subject"]["entity"])
    kept = int((dis[dis["strategy"] == "random"]["entity"] == "Q1").sum())
    line = f"self-candidates: kept per strategy { ({'random': 1} if kept else {}) }; left out of cooccur per side "
    assert line + "{'object': 1, 'subject': 1}" in caplog.text
