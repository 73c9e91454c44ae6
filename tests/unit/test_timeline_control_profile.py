"""Validation of the cut-off profile on builtin:control models whose knowledge over time is known.

A control model knows exactly what it was taught (:mod:`factprobe.scoring.control`), so the
dates of its facts are labels we choose: here a series of eight monthly dated slices and the
static slice, 24 facts each, each taught (or not) through ``control.taught_until``,
``control.taught_fractions`` and ``control.untaught_subjects``
(:func:`factprobe.scoring.control.timeline_split`). The facts are made up, Wikidata-shaped
(``Q`` subjects, ``P`` relations with English templates, 8 objects per relation): the demo
samples have too few facts per subject for eight slices and the subject-conditioned curve. Every
subject has two static facts (its "older" knowledge) and three dated ones. A seed draws the
names, objects and slices of the facts and is the control's training seed. The per-fact value is
the share of the relation's 7 other objects that the object's log-probability beats: near 1 for
taught facts, near 0.5 for the others.

Scenarios (issue item 5; the expectations are worked out by hand in each test's docstring):

* ``sharp`` at every boundary k = 0..8 (taught up to slice k; 8 = every slice);
* ``gradual``: slices 1..3 taught, 4 at 66 %, 5 at 33 %, 6..8 none;
* ``gap``: slices 1..2 and 4 taught, 3 and 5..8 not;
* unknown subjects: 16 more subjects the control never saw (``control.untaught_subjects``, static
  facts included), their dated facts in slices 5..6; every scenario's series holds them, since
  they add no training document, and the check uses ``sharp6``, whose last known slices they are.

The full protocol (10 seeds per scenario and boundary) is ``full``; ``make test`` runs one seed
of ``gradual``, ``gap`` and ``sharp6`` with the unknown subjects (three controls, about 8 s
each of training and scoring on one free core).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch
from factprobe.hashing import stable_hash
from factprobe.lm import HFCausalLM, ModelSpec
from factprobe.metrics import cutoff_profile as cp
from factprobe.scoring.control import (
    prior_docs,
    teaching_draw,
    timeline_split,
    train_control,
    unknown_subjects,
    verbalizations,
)
from factprobe.scoring.suite import build_pairs, score_pairs

torch.set_num_threads(1)

TEMPLATES = {
    "P19": "{} was born in the town of",
    "P27": "{} is a citizen of",
    "P106": "{} works as a",
    "P1412": "{} writes in the language",
    "P463": "{} is a member of",
}
OBJECTS = 8  # per relation: the object and 7 distractors
EDGES = [20180101, 20180201, 20180301, 20180401, 20180501, 20180601, 20180701, 20180801, 20180901]
N = len(EDGES) - 1
KNOWN, STATIC_PER, DATED_PER = 64, 2, 3  # subjects; each: 2 static facts, 3 dated (24 per slice)
UNKNOWN_SHARE, UNKNOWN = 0.2, 16  # control.untaught_subjects; the unknown subjects added
UNKNOWN_SLICES = (5, 6)  # where their dated facts go: the last slices the control knows
SEEDS = range(10)
SYLLABLES = "ka lo mi ne ru ta vo zi be do fu gra sel tor pu xa".split()
TRAIN = dict(vocab_size=500, n_layer=1, n_embd=64, n_head=4, batch_size=16, lr=5e-3, threads=1, steps=400)
#: min_facts 12, half a slice's 24: the known-subject curve loses the subjects one of whose two
#: static facts the control did not learn (3 to 14 of 64 in 10 seeds), and must still be profiled.
PROFILE = dict(penalty=2.0, samples=200, level=0.95, min_facts=12)


def word(*key: object) -> str:
    h = stable_hash("control-profile-word", *key)
    return "".join(SYLLABLES[(h >> (4 * i)) % len(SYLLABLES)] for i in range(3)).capitalize()


def subject_ids(seed: int) -> tuple[list[str], list[str]]:
    """The first ``KNOWN`` subject ids the control may be taught and the first ``UNKNOWN`` that
    ``control.untaught_subjects`` hides from it (the library's own hash decides which is which)."""
    ids = pd.Series([f"Q{seed}{i:05d}" for i in range(4 * (KNOWN + UNKNOWN))])
    hidden = unknown_subjects(ids, UNKNOWN_SHARE)
    return ids[~hidden].iloc[:KNOWN].tolist(), ids[hidden].iloc[:UNKNOWN].tolist()


def world(seed: int) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """``facts`` (with ``slice``, ``slice_start``, ``slice_end`` and ``unknown_subject``),
    ``prompts``, ``candidates`` and ``forms`` of one seed's series."""
    known, unknown = subject_ids(seed)
    props = sorted(TEMPLATES)
    objects = {p: [f"Q9{j}{props.index(p)}" for j in range(OBJECTS)] for p in props}
    rows = []
    for s in known + unknown:
        order = sorted(props, key=lambda p: stable_hash("control-profile-rel", seed, s, p))
        for rank, p in enumerate(order):
            o = objects[p][stable_hash("control-profile-obj", seed, s, p) % OBJECTS]
            rows.append((s, p, o, rank < STATIC_PER, s in unknown))
    facts = pd.DataFrame(rows, columns=["subject", "property", "object", "static", "unknown_subject"])
    facts["fact_id"] = facts["subject"] + "|" + facts["property"] + "|" + facts["object"]
    slice_no = np.zeros(len(facts), dtype=int)
    # Known subjects' dated facts, 24 per slice, stratified on the teaching draw: in order of draw,
    # each run of 8 facts goes one to every slice (in a seeded order), so a taught fraction f
    # teaches round(24 f) +- 1 facts of every slice, not a binomial count.
    dated = facts.index[~facts["static"] & ~facts["unknown_subject"]].to_numpy()
    dated = dated[np.argsort(teaching_draw(facts.loc[dated]), kind="stable")]
    for start in range(0, len(dated), N):
        run = dated[start : start + N]
        order = sorted(range(N), key=lambda k: stable_hash("control-profile-slice", seed, start, k))
        for k, i in zip(order, run, strict=False):
            slice_no[i] = 1 + k
    late = facts.index[~facts["static"] & facts["unknown_subject"]]
    for pos, i in enumerate(late):
        slice_no[i] = UNKNOWN_SLICES[pos % len(UNKNOWN_SLICES)]
    facts["slice_no"] = slice_no
    facts["slice"] = ["static" if k == 0 else str(EDGES[k]) for k in slice_no]
    facts["slice_start"] = pd.array([None if k == 0 else EDGES[k - 1] for k in slice_no], dtype="Int64")
    facts["slice_end"] = pd.array([None if k == 0 else EDGES[k] for k in slice_no], dtype="Int64")
    names = {s: f"{word(seed, s)} {word(seed, s, 'family')}" for s in known + unknown}
    names |= {o: word(seed, o) for p in props for o in objects[p]}
    forms = pd.DataFrame(
        {"entity": list(names), "lang": "en", "form": list(names.values()), "source": "label"}
    )
    prompts = pd.DataFrame(
        {
            "prompt_id": facts["fact_id"] + "|t",
            "fact_id": facts["fact_id"],
            "lang": "en",
            "template_id": facts["property"] + ".t",
            "text": [
                TEMPLATES[p].format(names[s])
                for s, p in zip(facts["subject"], facts["property"], strict=True)
            ],
            "context": "",
            "subject_form": facts["subject"].map(names),
        }
    )
    candidates = pd.DataFrame(
        [
            (f, e, "object" if e == o else "distractor")
            for f, p, o in zip(facts["fact_id"], facts["property"], facts["object"], strict=True)
            for e in objects[p]
        ],
        columns=["fact_id", "entity", "role"],
    )
    return facts, prompts, candidates, forms


#: What each scenario teaches: ``taught_until`` (a slice index) and ``taught_fractions`` by slice index.
SCENARIOS = {
    "gradual": (None, {1: 1.0, 2: 1.0, 3: 1.0, 4: 0.66, 5: 0.33, 6: 0.0, 7: 0.0, 8: 0.0}),
    "gap": (None, {1: 1.0, 2: 1.0, 3: 0.0, 4: 1.0, 5: 0.0, 6: 0.0, 7: 0.0, 8: 0.0}),
    **{f"sharp{k}": (k, {}) for k in range(N + 1)},
}


def training_docs(facts, prompts, candidates, forms, scenario: str) -> tuple[list[str], pd.DataFrame]:
    """The control's training documents under ``scenario`` (as rule train_control builds them) and
    the split."""
    until, fractions = SCENARIOS[scenario]
    split = timeline_split(
        facts,
        until=None if until is None else ("19000101" if until == 0 else str(EDGES[until])),
        fractions={str(EDGES[k]): f for k, f in fractions.items()},
        untaught_subjects=UNKNOWN_SHARE,
    )
    docs = verbalizations(split, prompts, forms, max_forms=1)
    prior = prior_docs(split, prompts, candidates, forms, copies=1)
    return docs * 2 + prior, split


def per_fact_values(scenario: str, seed: int, folder) -> pd.DataFrame:
    """Train the scenario's control (training seed = ``seed``) and return its facts with ``value``
    (share of distractors the object beats) and ``split``."""
    facts, prompts, candidates, forms = world(seed)
    docs, split = training_docs(facts, prompts, candidates, forms, scenario)
    train_control(docs, folder, seed=seed, **TRAIN)
    model = HFCausalLM.from_row(ModelSpec("control", "builtin:control", device="cpu"), model_dir=folder)
    scores = score_pairs(model, build_pairs(prompts, candidates, forms), progress=False)
    scores = scores.merge(candidates, on=["fact_id", "entity"])
    obj = scores[scores["role"] == "object"].set_index("fact_id")["logprob"]
    dis = scores[scores["role"] == "distractor"]
    beaten = (dis["fact_id"].map(obj) > dis["logprob"]).groupby(dis["fact_id"]).mean()
    return split.assign(value=split["fact_id"].map(beaten).to_numpy())


@pytest.fixture(scope="module")
def values(tmp_path_factory):
    """Per-fact values of (scenario, seed), trained once per test module."""
    cache: dict[tuple[str, int], pd.DataFrame] = {}

    def get(scenario: str, seed: int) -> pd.DataFrame:
        if (scenario, seed) not in cache:
            folder = tmp_path_factory.mktemp(f"control-{scenario}-{seed}")
            cache[scenario, seed] = per_fact_values(scenario, seed, folder)
        return cache[scenario, seed]

    return get


def profile(table: pd.DataFrame, seed: int) -> cp.Profile:
    """The profile of the facts of ``table`` (dated slices 1..N and the static slice)."""
    dated = [table.loc[table["slice_no"] == k, "value"].to_numpy() for k in range(1, N + 1)]
    static = table.loc[table["slice_no"] == 0, "value"].to_numpy()
    return cp.fit_profile(dated, EDGES, static, seed=seed, **PROFILE)


def base(table: pd.DataFrame) -> pd.DataFrame:
    """The series without the unknown subjects' facts."""
    return table[~table["unknown_subject"]]


# --- the mechanism the scenarios rest on ------------------------------------------------------


def test_world_has_24_facts_per_dated_slice_and_unknown_subjects_hidden():
    """Each dated slice holds 24 known-subject facts (192 / 8) and the static slice 128 (64 x 2); the
    unknown subjects' 48 dated facts lie in slices 5 and 6, and every fact of theirs is untaught."""
    facts, prompts, candidates, forms = world(0)
    counts = base(facts)["slice_no"].value_counts().sort_index()
    assert counts.tolist() == [128] + [24] * N
    late = facts[facts["unknown_subject"] & (facts["slice_no"] > 0)]
    assert len(late) == UNKNOWN * DATED_PER and set(late["slice_no"]) == set(UNKNOWN_SLICES)
    _, split = training_docs(facts, prompts, candidates, forms, "sharp8")
    assert set(split.loc[split["unknown_subject"], "split"]) == {"untaught"}
    assert set(split.loc[~split["unknown_subject"], "split"]) == {"taught"}


def test_unknown_subjects_leave_the_training_documents_unchanged():
    """Adding facts about subjects the control never saw adds no document: the prior documents
    depend on the relations' candidate objects only, which the new facts share. So one trained
    model serves the series with and without them."""
    facts, prompts, candidates, forms = world(1)
    with_them, _ = training_docs(facts, prompts, candidates, forms, "sharp6")
    keep = set(base(facts)["fact_id"])
    without, _ = training_docs(
        base(facts),
        prompts[prompts["fact_id"].isin(keep)],
        candidates[candidates["fact_id"].isin(keep)],
        forms,
        "sharp6",
    )
    assert with_them == without


def test_gradual_fractions_teach_nested_shares():
    """Slices 4 and 5 are taught about 66 % and 33 % of their facts (a hash of the triple below the
    fraction: 24 facts each, so within 5 facts of 16 and 8), and every fact taught at 33 % would
    be taught at 66 %."""
    facts, prompts, candidates, forms = world(0)
    _, split = training_docs(base(facts), prompts, candidates, forms, "gradual")
    share = (split["split"] == "taught").groupby(split["slice_no"]).sum()
    assert share[[1, 2, 3]].tolist() == [24] * 3 and share[[6, 7, 8]].tolist() == [0] * 3
    assert abs(share[4] - 16) <= 5 and abs(share[5] - 8) <= 5
    at33 = timeline_split(base(facts), fractions={str(e): 0.33 for e in EDGES[1:]})
    at66 = timeline_split(base(facts), fractions={str(e): 0.66 for e in EDGES[1:]})
    assert not ((at33["split"] == "taught") & (at66["split"] == "untaught")).any()


# --- the scenarios: one seed in make test ---------------------------------------------------------


def check_gradual(p: cp.Profile) -> None:
    """Taught 100, 66, 33, 0 % over slices 3..6: the curve falls linearly from slice 3 to 6, a ramp
    with b - a = 3, so the decay (10 % to 90 % of the fall) is 0.8 x 3 = 2.4 slices wide."""
    assert p.shape == cp.GRADUAL, p
    assert abs(p.decay_slices - 2.4) <= 1.0, p


def check_gap(p: cp.Profile) -> None:
    """Slice 4 (taught) is known far better than slice 3 (untaught): ~1 against ~0.5 on 24 facts
    each, so the curve is not monotone and no single date is given. (The issue's layout, slices
    1-2 and 4 known and 3 not, continued on eight slices by a real cut-off after slice 4, so a
    one-drop fit has two drops to choose from: after slice 2 and after slice 4.)"""
    assert p.shape == cp.NOT_MONOTONE, p
    assert p.index is None and p.date is None, p


#: The suite's timeline block as rule timeline reads it: a subject is known when its two static
#: facts average >= 0.85 (taught ~1, chance 0.5); min_facts as PROFILE.
BLOCK = {"subject_threshold": 0.85, "subject_min_facts": STATIC_PER, "min_facts": PROFILE["min_facts"]}


def suite_profile(table: pd.DataFrame, seed: int) -> tuple[cp.Profile, str, pd.Series]:
    """What cutoff_profile.csv reports for ``table``: the profile, the curve used and the
    known-subject mask (:func:`factprobe.metrics.cutoff_profile.model_profile`)."""
    values = table.set_index("fact_id")["value"]
    return cp.model_profile(
        values, table, BLOCK, samples=PROFILE["samples"], seed=seed, level=PROFILE["level"]
    )


def unknown_subject_estimates(table: pd.DataFrame, seed: int) -> tuple[cp.Profile, cp.Profile, cp.Profile]:
    """The suite's (known-subject) profile with and without the unknown subjects' facts, and the
    all-facts profile with them."""
    with_them, curve, _ = suite_profile(table, seed)
    without, curve_base, _ = suite_profile(base(table), seed)
    assert curve == curve_base == cp.KNOWN, (with_them.reason, without.reason)
    return with_them, without, profile(table, seed)


def check_unknown(table: pd.DataFrame, seed: int) -> None:
    """Taught up to slice 6; the 16 unknown subjects add 48 facts at ~0.5 to slices 5 and 6 (24
    each, beside 24 known facts at ~0.97).

    All facts: slices 5-6 fall to ~0.73, and one break after slice 4 (before: ~0.97 on 224 facts;
    after: 96 facts at ~0.73 and 48 at ~0.5; between-slice squared error ~1.7) beats the true one
    after slice 6 (224 at ~0.97 and 96 at ~0.73 before it, ~3.9): the all-facts estimate moves
    early, or at least its interval reaches before slice 6 (when the control learnt less, so its
    known level is nearer chance).

    Known subjects (static facts averaging >= 0.85; the curve cutoff_profile.csv uses, without the
    static slice, since its facts chose the subjects): an unknown subject passes only by chance
    (two values each ~uniform over 0, 1/7, .., 1: 6 of 64 pairs), so the curve holds at most a few
    of their facts, and its estimate (the change point) is the same with and without them: slice
    6, inside its interval."""
    known, known_base, every = unknown_subject_estimates(table, seed)
    assert every.low is not None and every.low < 6, every
    assert known.index == known_base.index == 6, (known, known_base)
    assert known.low <= 6 <= known.high, known


def test_gradual_one_seed(values):
    check_gradual(profile(base(values("gradual", 0)), 0))


def test_gap_one_seed(values):
    check_gap(profile(base(values("gap", 0)), 0))


def test_unknown_subjects_one_seed(values):
    check_unknown(values("sharp6", 0), 0)


# --- the full protocol: 10 seeds -----------------------------------------------------------------


@pytest.mark.full
@pytest.mark.parametrize("k", range(N + 1))
def test_sharp_interval_covers_every_boundary(values, k):
    """Taught the static slice and slices 1..k: the one-break interval covers k (8 = no cut-off
    within the series, reported as index 8) in at least 9 of 10 seeds, and the shape is
    ``sharp`` (k < 8) or ``none`` (k = 8)."""
    got = [profile(base(values(f"sharp{k}", seed)), seed) for seed in SEEDS]
    covered = [p.low is not None and p.low <= k <= p.high for p in got]
    assert sum(covered) >= 9, [(p.index, p.low, p.high, p.shape) for p in got]


@pytest.mark.full
def test_gradual_ten_seeds(values):
    for seed in SEEDS:
        check_gradual(profile(base(values("gradual", seed)), seed))


@pytest.mark.full
def test_gap_ten_seeds(values):
    for seed in SEEDS:
        check_gap(profile(base(values("gap", seed)), seed))


@pytest.mark.full
def test_unknown_subjects_ten_seeds(values):
    for seed in SEEDS:
        check_unknown(values("sharp6", seed), seed)
