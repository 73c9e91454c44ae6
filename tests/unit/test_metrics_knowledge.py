"""K(f|c) Min@n / Avg@n, K(f), baselines (distractors-knowledge-measure §3.2, Table 2) on hand tables."""

import math

import numpy as np
import pandas as pd
import pytest
from factprobe.metrics.common import correct_entities, entity_scores, prompt_frame
from factprobe.metrics.knowledge import (
    combine_strategies,
    first_token_rank,
    k_of_prompt,
    knowledge_per_fact,
    knowledge_per_prompt,
    precision_per_prompt,
    probability_per_prompt,
)

ln = math.log


def table(rows, columns):
    return pd.DataFrame(rows, columns=columns)


def test_k_of_prompt_min_avg_and_fewer_than_n():
    obj = ln(0.3)
    dis = [ln(0.25), ln(0.1), ln(0.5)]  # rank order
    assert k_of_prompt(obj, dis, 1, "min") == 1.0
    assert k_of_prompt(obj, dis, 2, "avg") == 1.0
    assert k_of_prompt(obj, dis, 3, "min") == 0.0
    assert k_of_prompt(obj, dis, 3, "avg") == pytest.approx(2 / 3)
    # n larger than the list: the three that exist are used.
    assert k_of_prompt(obj, dis, 10, "avg") == pytest.approx(2 / 3)
    assert math.isnan(k_of_prompt(obj, [], 5, "min"))


def test_tie_counts_as_failure():
    assert k_of_prompt(ln(0.2), [ln(0.2)], 1, "min") == 0.0
    assert k_of_prompt(ln(0.2), [ln(0.2), ln(0.1)], 2, "avg") == 0.5


FACTS = table(
    [
        ("S1|P1|A", "S1", "P1", "A", ["A"]),
        # N-M: (S2, P1) has B and C; C must never act as a distractor of B.
        ("S2|P1|B", "S2", "P1", "B", ["B", "C"]),
    ],
    ["fact_id", "subject", "property", "object", "objects"],
)
PROMPTS = prompt_frame(
    table(
        [
            ("p1", "S1|P1|A", "t1", "en"),
            ("p2", "S1|P1|A", "t2", "en"),
            ("p3", "S2|P1|B", "t1", "en"),
            ("p4", "S1|P1|A", "t1", "de"),
        ],
        ["prompt_id", "fact_id", "template_id", "lang"],
    )
)
CANDS = table(
    [
        ("S1|P1|A", "A", "object", "object", 0),
        ("S1|P1|A", "D1", "distractor", "random", 1),
        ("S1|P1|A", "D2", "distractor", "random", 2),
        ("S1|P1|A", "D3", "distractor", "random", 3),  # never scored: dropped
        ("S1|P1|A", "T1", "distractor", "temp", 1),
        ("S2|P1|B", "B", "object", "object", 0),
        ("S2|P1|B", "C", "distractor", "random", 1),  # a valid object: dropped
        ("S2|P1|B", "D1", "distractor", "random", 2),
    ],
    ["fact_id", "entity", "role", "strategy", "rank"],
)
# (prompt, entity, form, probability, n_tokens, first-token probability)
SCORE_ROWS = [
    ("p1", "A", "a", 0.20, 1, 0.20),
    ("p1", "A", "a2", 0.15, 2, 0.30),  # Pl(A|p1) = 0.35 (sum over forms, eq. 1)
    ("p1", "D1", "d1", 0.30, 1, 0.30),
    ("p1", "D2", "d2", 0.05, 1, 0.05),
    ("p1", "T1", "t1", 0.40, 1, 0.40),
    ("p2", "A", "a", 0.10, 1, 0.10),
    ("p2", "D1", "d1", 0.10, 1, 0.10),  # tie with the object
    ("p2", "D2", "d2", 0.01, 1, 0.01),
    ("p2", "T1", "t1", 0.01, 1, 0.01),
    ("p3", "B", "b", 0.20, 1, 0.20),
    ("p3", "C", "c", 0.60, 1, 0.60),
    ("p3", "D1", "d1", 0.10, 1, 0.10),
    ("p4", "A", "a", 0.50, 1, 0.50),
    ("p4", "D1", "d1", 0.20, 1, 0.20),
    ("p4", "D2", "d2", 0.10, 1, 0.10),
]
SCORES = pd.DataFrame(
    {
        "prompt_id": [r[0] for r in SCORE_ROWS],
        "entity": [r[1] for r in SCORE_ROWS],
        "form": [r[2] for r in SCORE_ROWS],
        "logprob": [ln(r[3]) for r in SCORE_ROWS],
        "n_tokens": [r[4] for r in SCORE_ROWS],
        "first_logprob": [ln(r[5]) for r in SCORE_ROWS],
    }
)


@pytest.fixture
def ent():
    return entity_scores(SCORES)


def test_plausibility_sums_forms(ent):
    pl = ent.set_index(["prompt_id", "entity"])["logpl"]
    assert math.exp(pl[("p1", "A")]) == pytest.approx(0.35)
    assert math.exp(pl[("p1", "D1")]) == pytest.approx(0.30)


def test_knowledge_per_prompt_hand_values(ent):
    correct = correct_entities(FACTS)
    k = knowledge_per_prompt(ent, PROMPTS, CANDS, FACTS, correct, [1, 2, 5])
    k = k.set_index(["prompt_id", "strategy", "n"])
    # p1 random: A 0.35 vs D1 0.30 win, D2 0.05 win; D3 unscored -> only 2 distractors exist.
    assert k.loc[("p1", "random", 1), "k_min"] == 1.0
    assert k.loc[("p1", "random", 5), "k_min"] == 1.0
    assert k.loc[("p1", "random", 5), "n_used"] == 2
    # p1 temp: T1 0.40 beats A.
    assert k.loc[("p1", "temp", 1), "k_min"] == 0.0
    # p2 random: tie with D1 is a failure; D2 a win.
    assert k.loc[("p2", "random", 1), "k_min"] == 0.0
    assert k.loc[("p2", "random", 2), "k_min"] == 0.0
    assert k.loc[("p2", "random", 2), "k_avg"] == 0.5
    # p3: C is a valid object (N-M) so the only distractor is D1 (0.10 < 0.20).
    assert k.loc[("p3", "random", 5), "k_min"] == 1.0
    assert k.loc[("p3", "random", 5), "n_used"] == 1


def test_k_of_fact_averages_cloze_sentences_per_language(ent):
    correct = correct_entities(FACTS)
    out = knowledge_per_fact(ent, PROMPTS, CANDS, FACTS, correct, [2], [1], {})
    row = out[(out["fact_id"] == "S1|P1|A") & (out["strategy"] == "random") & (out["n"] == 2)]
    en = row[row["lang"] == "en"].set_index("measure")["value"]
    # en: p1 Min 1, Avg 1; p2 Min 0, Avg 0.5  ->  K(f) = mean over the two cloze sentences.
    assert en["k_min"] == 0.5
    assert en["k_avg"] == 0.75
    de = row[row["lang"] == "de"].set_index("measure")["value"]
    assert de["k_min"] == 1.0  # p4 alone: 0.5 > 0.2, 0.5 > 0.1
    assert set(row[row["lang"] == "en"]["n_prompts"]) == {2}


def test_vectorised_equals_scalar_definition():
    rng = np.random.default_rng(7)
    rows, cands = [], []
    facts = []
    prompts = []
    for f in range(6):
        fid = f"S{f}|P1|O{f}"
        facts.append((fid, f"S{f}", "P1", f"O{f}", [f"O{f}"]))
        n_dis = int(rng.integers(0, 6))
        cands.append((fid, f"O{f}", "object", "object", 0))
        for d in range(n_dis):
            cands.append((fid, f"X{d}", "distractor", "random", d + 1))
        for c in range(2):
            pid = f"{fid}|{c}"
            prompts.append((pid, fid))
            for e in [f"O{f}", *[f"X{d}" for d in range(n_dis)]]:
                # Coarse values so that ties happen.
                rows.append((pid, e, "x", float(rng.integers(-4, 0)), 1, 0.0))
    facts = table(facts, ["fact_id", "subject", "property", "object", "objects"])
    prompts = prompt_frame(table(prompts, ["prompt_id", "fact_id"]))
    cands = table(cands, ["fact_id", "entity", "role", "strategy", "rank"])
    scores = table(rows, ["prompt_id", "entity", "form", "logprob", "n_tokens", "first_logprob"])
    ent = entity_scores(scores)
    got = knowledge_per_prompt(ent, prompts, cands, facts, correct_entities(facts), [1, 3, 10])
    got = got.set_index(["prompt_id", "n"])
    lp = ent.set_index(["prompt_id", "entity"])["logpl"]
    checked = 0
    for pid, fid in zip(prompts["prompt_id"], prompts["fact_id"], strict=True):
        obj = fid.split("|")[2]
        dis = cands[(cands["fact_id"] == fid) & (cands["role"] == "distractor")].sort_values("rank")["entity"]
        dl = [lp[(pid, d)] for d in dis]
        for n in (1, 3, 10):
            for agg in ("min", "avg"):
                want = k_of_prompt(lp[(pid, obj)], dl, n, agg)
                if math.isnan(want):
                    assert (pid, n) not in got.index
                else:
                    assert got.loc[(pid, n), f"k_{agg}"] == pytest.approx(want)
                    checked += 1
    assert checked > 20


def test_temp_plus_sem_concatenates_without_duplicates():
    cands = table(
        [
            ("f", "T1", "distractor", "temp", 1),
            ("f", "S1", "distractor", "sem", 1),
            ("f", "T1", "distractor", "sem", 2),
            ("f", "S2", "distractor", "sem", 3),
            ("g", "S9", "distractor", "sem", 1),  # no temporal distractor: Sem alone
        ],
        ["fact_id", "entity", "role", "strategy", "rank"],
    )
    out = combine_strategies(cands, {"temp+sem": ["temp", "sem"]})
    combo = out[out["strategy"] == "temp+sem"].sort_values(["fact_id", "rank"])
    assert list(combo[combo["fact_id"] == "f"]["entity"]) == ["T1", "S1", "S2"]
    assert list(combo[combo["fact_id"] == "f"]["rank"]) == [1, 2, 3]
    assert list(combo[combo["fact_id"] == "g"]["entity"]) == ["S9"]
    no_temp = combine_strategies(cands[cands["strategy"] != "temp"], {"temp+sem": ["temp", "sem"]})
    assert "temp+sem" not in set(no_temp["strategy"])


def test_per_language_candidates_and_subject_side_alternatives():
    from factprobe.metrics.pipeline import SuiteInputs, compute_suite_metrics
    from factprobe.settings import Metrics

    facts = table([("S|P|A", "S", "P", "A", ["A"])], ["fact_id", "subject", "property", "object", "objects"])
    prompts = table([("en1", "S|P|A", "en"), ("cs1", "S|P|A", "cs")], ["prompt_id", "fact_id", "lang"])
    cands = table(
        [
            ("S|P|A", "A", "object", "object", 0, None, "object"),
            ("S|P|A", "X", "distractor", "pool", 1, "en", "object"),
            ("S|P|A", "Y", "distractor", "pool", 1, "cs", "object"),
            ("S|P|A", "Z", "distractor", "pool", 2, "", "subject"),  # a swapped subject: not a continuation
        ],
        ["fact_id", "entity", "role", "strategy", "rank", "lang", "side"],
    )
    scores = table(
        [
            ("en1", "A", "a", -1.0),
            ("en1", "X", "x", -2.0),
            ("en1", "Y", "y", -0.1),
            ("en1", "Z", "z", -0.1),
            ("cs1", "A", "a", -1.0),
            ("cs1", "Y", "y", -0.5),
            ("cs1", "X", "x", -3.0),
        ],
        ["prompt_id", "entity", "form", "logprob"],
    ).assign(n_tokens=1)
    per_fact, _ = compute_suite_metrics(
        SuiteInputs(scores, prompts, cands, facts), Metrics(families={}, ns=[5]), ["knowledge"]
    )
    k = per_fact[(per_fact["measure"] == "k_min") & (per_fact["strategy"] == "pool")].set_index("lang")[
        "value"
    ]
    # en competes with X only (Y is the Czech list, Z a subject swap): win; cs with Y only: loss.
    assert k["en"] == 1.0 and k["cs"] == 0.0


def test_probability_baseline(ent):
    prob = probability_per_prompt(ent, PROMPTS, FACTS).set_index("prompt_id")["probability"]
    assert prob["p1"] == pytest.approx(0.35)
    assert prob["p3"] == pytest.approx(0.20)


def test_first_token_rank_shares_equal_tokens():
    assert first_token_rank(ln(0.2), [ln(0.3), ln(0.3), ln(0.1)]) == 2  # one distinct better token
    assert first_token_rank(ln(0.2), [ln(0.2)]) == 1  # same first token as the object
    assert first_token_rank(ln(0.2), []) == 1


def test_precision_at_n(ent):
    correct = correct_entities(FACTS)
    prec = precision_per_prompt(ent, PROMPTS, CANDS, FACTS, correct, [1, 2])
    prec = prec.set_index(["prompt_id", "n"])["precision"]
    # p1: object's best first token 0.30 (form a2); distractor first tokens 0.30 (same), 0.05, 0.40.
    assert prec[("p1", 1)] == 0.0 and prec[("p1", 2)] == 1.0
    # p3: C is correct, not a competitor; D1 0.10 < B 0.20.
    assert prec[("p3", 1)] == 1.0


def test_precision_uses_vocabulary_rank_when_scored():
    scores = SCORES.assign(first_rank=[3, 1, 2, 5, 1, 1, 1, 1, 1, 1, 7, 1, 1, 1, 1])
    ent = entity_scores(scores)
    prec = precision_per_prompt(ent, PROMPTS, CANDS, FACTS, correct_entities(FACTS), [1, 2])
    prec = prec.set_index(["prompt_id", "n"])["precision"]
    assert prec[("p1", 1)] == 1.0  # min rank over A's forms = 1


def test_unscored_object_gives_no_value():
    scores = SCORES[~((SCORES["prompt_id"] == "p4") & (SCORES["entity"] == "A"))]
    ent = entity_scores(scores)
    k = knowledge_per_prompt(ent, PROMPTS, CANDS, FACTS, correct_entities(FACTS), [1])
    assert "p4" not in set(k["prompt_id"])


def test_non_finite_logprob_is_an_error():
    bad = SCORES.copy()
    bad.loc[3, "logprob"] = float("nan")
    with pytest.raises(ValueError, match="row 3 has a non-finite logprob"):
        entity_scores(bad, source="results/scores/x/m.parquet")
