"""K(f|c) Min@n / Avg@n, K(f), baselines (distractors-knowledge-measure §3.2, Table 2) on hand tables."""

import math

import numpy as np
import pandas as pd
import pytest
from contract_frames import full, full_inputs
from factprobe.metrics.common import correct_entities, entity_scores, prompt_frame
from factprobe.metrics.knowledge import (
    combine_strategies,
    first_token_precision_per_prompt,
    first_token_rank,
    k_of_prompt,
    knowledge_per_fact,
    knowledge_per_prompt,
    knowledge_tables,
    precision_per_prompt,
    probability_per_prompt,
)

ln = math.log


def table(rows, columns):
    return pd.DataFrame(rows, columns=columns)


def full_table(name, rows, columns):
    """A hand table of contract ``name`` (the columns not named are added empty)."""
    return full(name, table(rows, columns))


def test_k_of_prompt_min_avg_and_fewer_than_n():
    obj = ln(0.3)
    dis = [ln(0.25), ln(0.1), ln(0.5)]  # rank order
    assert k_of_prompt(obj, dis, 1, "min") == 1.0
    assert k_of_prompt(obj, dis, 2, "avg") == 1.0
    assert k_of_prompt(obj, dis, 3, "min") == 0.0
    assert k_of_prompt(obj, dis, 3, "avg") == pytest.approx(2 / 3)
    # n larger than the list: undefined by default (the reference returns no value) ...
    assert math.isnan(k_of_prompt(obj, dis, 10, "avg"))
    assert math.isnan(k_of_prompt(obj, dis, 4, "min"))
    # ... or, as an option, the three that exist are used.
    assert k_of_prompt(obj, dis, 10, "avg", "available") == pytest.approx(2 / 3)
    assert math.isnan(k_of_prompt(obj, [], 5, "min"))
    with pytest.raises(ValueError, match="short_lists"):
        k_of_prompt(obj, dis, 1, "min", "use")


def test_tie_counts_as_failure():
    assert k_of_prompt(ln(0.2), [ln(0.2)], 1, "min") == 0.0
    assert k_of_prompt(ln(0.2), [ln(0.2), ln(0.1)], 2, "avg") == 0.5


FACTS = full_table(
    "facts",
    [
        ("S1|P1|A", "S1", "P1", "A", ["A"]),
        # N-M: (S2, P1) has B and C; C must never act as a distractor of B.
        ("S2|P1|B", "S2", "P1", "B", ["B", "C"]),
    ],
    ["fact_id", "subject", "property", "object", "objects"],
)
PROMPTS = prompt_frame(
    full_table(
        "prompts",
        [
            ("p1", "S1|P1|A", "t1", "en"),
            ("p2", "S1|P1|A", "t2", "en"),
            ("p3", "S2|P1|B", "t1", "en"),
            ("p4", "S1|P1|A", "t1", "de"),
        ],
        ["prompt_id", "fact_id", "template_id", "lang"],
    )
)
CANDS = full_table(
    "candidates",
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
# (prompt, entity, form, probability, n_tokens, first-token probability); the end marker's
# probability is 1 (end_logprob 0) except where END says otherwise.
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
# Pr(EOS | c, λ): p1's "a" 0.5, "a2" 0.75; p3's "b" 0.8.
END = {("p1", "a"): 0.5, ("p1", "a2"): 0.75, ("p3", "b"): 0.8}
SCORES["end_logprob"] = [ln(END.get((r[0], r[2]), 1.0)) for r in SCORE_ROWS]
SCORES = full("scores", SCORES)


@pytest.fixture
def ent():
    return entity_scores(SCORES)


def test_plausibility_sums_forms(ent):
    pl = ent.set_index(["prompt_id", "entity"])["logpl"]
    assert math.exp(pl[("p1", "A")]) == pytest.approx(0.35)
    assert math.exp(pl[("p1", "D1")]) == pytest.approx(0.30)


def test_knowledge_per_prompt_hand_values(ent):
    correct = correct_entities(FACTS)
    k = knowledge_per_prompt(ent, PROMPTS, CANDS, FACTS, correct, [1, 2, 5], short_lists="available")
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
    facts = full_table("facts", facts, ["fact_id", "subject", "property", "object", "objects"])
    prompts = prompt_frame(full_table("prompts", prompts, ["prompt_id", "fact_id"]))
    cands = full_table("candidates", cands, ["fact_id", "entity", "role", "strategy", "rank"])
    scores = full_table(
        "scores", rows, ["prompt_id", "entity", "form", "logprob", "n_tokens", "first_logprob"]
    )
    ent = entity_scores(scores)
    lp = ent.set_index(["prompt_id", "entity"])["logpl"]
    for rule in ("undefined", "available"):
        got = knowledge_per_prompt(ent, prompts, cands, facts, correct_entities(facts), [1, 3, 10], rule)
        got = got.set_index(["prompt_id", "n"])
        checked = 0
        for pid, fid in zip(prompts["prompt_id"], prompts["fact_id"], strict=True):
            obj = fid.split("|")[2]
            dis = cands[(cands["fact_id"] == fid) & (cands["role"] == "distractor")]
            dl = [lp[(pid, d)] for d in dis.sort_values("rank")["entity"]]
            for n in (1, 3, 10):
                for agg in ("min", "avg"):
                    want = k_of_prompt(lp[(pid, obj)], dl, n, agg, rule)
                    if math.isnan(want):
                        assert (pid, n) not in got.index or math.isnan(got.loc[(pid, n), f"k_{agg}"])
                    else:
                        assert got.loc[(pid, n), f"k_{agg}"] == pytest.approx(want)
                        checked += 1
        assert checked > (20 if rule == "available" else 5)


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
        full_inputs(SuiteInputs(scores, prompts, cands, facts)), Metrics(families={}, ns=[1]), ["knowledge"]
    )
    k = per_fact[(per_fact["measure"] == "k_min") & (per_fact["strategy"] == "pool")].set_index("lang")[
        "value"
    ]
    # en competes with X only (Y is the Czech list, Z a subject swap): win; cs with Y only: loss.
    assert k["en"] == 1.0 and k["cs"] == 0.0


def test_probability_baseline_excludes_end_marker(ent):
    """Table 2 Probability = Σ_{λ∈Λ(o)} Pr(λ|c), no EOS.

    p1: Pr(a + EOS) = 0.20 with Pr(EOS | a) = 0.5 -> Pr(a) = 0.40; Pr(a2 + EOS) = 0.15 with
    Pr(EOS | a2) = 0.75 -> Pr(a2) = 0.20; sum 0.60 (Pl with EOS would be 0.35).
    p3: 0.20 / 0.8 = 0.25. p2: end marker certain, 0.10.
    """
    prob = probability_per_prompt(ent, PROMPTS, FACTS).set_index("prompt_id")["probability"]
    assert prob["p1"] == pytest.approx(0.60)
    assert prob["p3"] == pytest.approx(0.25)
    assert prob["p2"] == pytest.approx(0.10)
    # A score table without end_logprob cannot give the paper's value: refused, not exp(Pl).
    with pytest.raises(ValueError, match=r"lacks column\(s\) \['end_logprob'\]"):
        entity_scores(SCORES.drop(columns="end_logprob"))


def test_first_token_rank_shares_equal_tokens():
    assert first_token_rank(ln(0.2), [ln(0.3), ln(0.3), ln(0.1)]) == 2  # one distinct better token
    assert first_token_rank(ln(0.2), [ln(0.2)]) == 1  # same first token as the object
    assert first_token_rank(ln(0.2), []) == 1


def test_first_token_precision_variant(ent):
    correct = correct_entities(FACTS)
    prec = first_token_precision_per_prompt(ent, PROMPTS, CANDS, FACTS, correct, [1, 2])
    prec = prec.set_index(["prompt_id", "n"])["precision"]
    # p1: object's best first token 0.30 (form a2); distractor first tokens 0.30 (same), 0.05, 0.40.
    assert prec[("p1", 1)] == 0.0 and prec[("p1", 2)] == 1.0
    # p3: C is correct, not a competitor; D1 0.10 < B 0.20.
    assert prec[("p3", 1)] == 1.0


def test_precision_uses_vocabulary_rank_when_scored():
    scores = SCORES.assign(first_rank=[3, 1, 2, 5, 1, 1, 1, 1, 1, 1, 7, 1, 1, 1, 1])
    ent = entity_scores(scores)
    prec = first_token_precision_per_prompt(ent, PROMPTS, CANDS, FACTS, correct_entities(FACTS), [1, 2])
    prec = prec.set_index(["prompt_id", "n"])["precision"]
    assert prec[("p1", 1)] == 1.0  # min rank over A's forms = 1


def test_precision_at_n_is_top_n_next_tokens_against_single_token_names():
    """Table 2 Precision@n: 1[top-n next tokens ∩ Λ(o) ≠ ∅] (reference generation.py).

    q1 (o = New Zealand, names "New Zealand", "NZ"): top tokens " New", " Australia", " NZ" ->
    @1 = 0 and @2 = 0 although " New" starts the name (the first-token variant says 1), @3 = 1.
    q2 (o = Paris): top tokens " France", " Paris" -> @1 = 0, @2 = 1; @5 beyond the 2-row table
    with a hit = 1. q3: no hit in a 2-row table -> @1 = 0, @5 unknown (NaN).
    """
    facts = table(
        [("S1|P|NZ", "S1", "P", "NZ"), ("S2|P|PA", "S2", "P", "PA"), ("S3|P|PA", "S3", "P", "PA")],
        ["fact_id", "subject", "property", "object"],
    )
    prompts = prompt_frame(
        full_table(
            "prompts", [("q1", "S1|P|NZ"), ("q2", "S2|P|PA"), ("q3", "S3|P|PA")], ["prompt_id", "fact_id"]
        )
    )
    scores = table(
        [
            ("q1", "NZ", "New Zealand"),
            ("q1", "NZ", "NZ"),
            ("q1", "AU", "Australia"),
            ("q2", "PA", "Paris"),
            ("q3", "PA", "Paris"),
        ],
        ["prompt_id", "entity", "form"],
    )
    topk = table(
        [
            ("q1", 1, " New"),
            ("q1", 2, " Australia"),
            ("q1", 3, " NZ"),
            ("q1", 4, " the"),
            ("q1", 5, " a"),
            ("q2", 1, " France"),
            ("q2", 2, " Paris"),
            ("q3", 1, " the"),
            ("q3", 2, " a"),
        ],
        ["prompt_id", "rank", "token"],
    )
    prec = precision_per_prompt(topk, scores, prompts, facts, [1, 2, 3, 5]).set_index(["prompt_id", "n"])[
        "precision"
    ]
    assert (prec["q1"].tolist()) == [0.0, 0.0, 1.0, 1.0]
    assert prec[("q2", 1)] == 0.0 and prec[("q2", 2)] == 1.0 and prec[("q2", 5)] == 1.0
    assert prec[("q3", 1)] == 0.0 and math.isnan(prec[("q3", 5)])
    assert precision_per_prompt(None, scores, prompts, facts, [1]).empty


def test_fewer_than_n_distractors_drop_the_fact_and_are_counted(ent):
    """§3.2/§3.3 + reference: K at n is undefined with fewer than n distractors.

    S1|P1|A (en) has 2 scored random distractors (D3 unscored): defined at n = 2, undefined at
    n = 5 -> dropped there. S2|P1|B has 1 (C is a valid object) -> dropped at 2 and 5.
    """
    correct = correct_entities(FACTS)
    out = knowledge_per_fact(ent, PROMPTS, CANDS, FACTS, correct, [1, 2, 5], [1], {})
    rnd = out[(out["strategy"] == "random") & (out["lang"] == "en")]
    kmin = rnd[rnd["measure"] == "k_min"].set_index(["fact_id", "n"])["value"]
    assert ("S1|P1|A", 2) in kmin.index and ("S1|P1|A", 5) not in kmin.index
    assert ("S2|P1|B", 1) in kmin.index and ("S2|P1|B", 2) not in kmin.index
    dropped = knowledge_tables(ent, PROMPTS, CANDS, FACTS, correct, [1, 2, 5], [1], {})[1]
    d = dropped[(dropped["strategy"] == "random") & (dropped["lang"] == "en")].set_index("n")["value"]
    assert d.to_dict() == {1: 0.0, 2: 1.0, 5: 2.0}
    assert (dropped["measure"] == "k_dropped_facts").all()
    # The option keeps the old behaviour: every fact has a value at n = 5.
    loose = knowledge_per_fact(ent, PROMPTS, CANDS, FACTS, correct, [5], [1], {}, short_lists="available")
    assert set(loose[(loose["measure"] == "k_min") & (loose["strategy"] == "random")]["fact_id"]) == {
        "S1|P1|A",
        "S2|P1|B",
    }


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
