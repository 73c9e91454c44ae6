"""One comparison per surface form in a distractor list (metrics/knowledge.py,
``one_per_surface_form``): namesake distractors, the ``mul`` alias case."""

import math

import pandas as pd
import pytest
from contract_frames import full
from factprobe.metrics.common import correct_entities, entity_scores, prompt_frame
from factprobe.metrics.knowledge import knowledge_per_prompt, knowledge_tables
from factprobe.wikidata.labels import label_table

ln = math.log


@pytest.fixture
def forms(tmp_path):
    """entity_forms through the label rule: Q2 is labelled "Xtown" in English; Q3 is "Ytown" in
    English and has the ``mul`` alias "Xtown" (Wikidata's default for every language); Q4 "Ztown"."""
    folder = tmp_path / "20240101"
    folder.mkdir()
    labels = pd.DataFrame(
        [
            (1, "en", "Otown", False),
            (2, "en", "Xtown", False),
            (3, "en", "Ytown", False),
            (3, "mul", "Xtown", True),
            (4, "en", "Ztown", False),
        ],
        columns=["id", "lang", "text", "is_alias"],
    )
    labels.to_parquet(folder / "labels.parquet")
    return label_table([folder / "labels.parquet"], ["en"])


FACTS = full(
    "facts",
    pd.DataFrame(
        [("F", "Q9", "P1", "Q1", ["Q1"])], columns=["fact_id", "subject", "property", "object", "objects"]
    ),
)
PROMPTS = prompt_frame(full("prompts", pd.DataFrame([("p1", "F")], columns=["prompt_id", "fact_id"])))
# Two lists of the same three distractors: random ranks Q2 (Xtown) before Q3, sem ranks Q3 first.
CANDS = full(
    "candidates",
    pd.DataFrame(
        [
            ("F", "Q1", "object", "object", 0),
            ("F", "Q2", "distractor", "random", 1),
            ("F", "Q3", "distractor", "random", 2),
            ("F", "Q4", "distractor", "random", 3),
            ("F", "Q3", "distractor", "sem", 1),
            ("F", "Q2", "distractor", "sem", 2),
            ("F", "Q4", "distractor", "sem", 3),
        ],
        columns=["fact_id", "entity", "role", "strategy", "rank"],
    ),
)
# Pr(form + end | p1): Pl(Q1) = 0.3, Pl(Q2) = 0.2, Pl(Q3) = 0.05 + 0.2 = 0.25, Pl(Q4) = 0.4.
PROB = {"Otown": 0.3, "Xtown": 0.2, "Ytown": 0.05, "Ztown": 0.4}


def scores_of(forms: pd.DataFrame) -> pd.DataFrame:
    """Every form of every entity scored for p1 (as scoring does: each form of Λ(e))."""
    rows = forms[forms["lang"] == "en"]
    return full(
        "scores",
        pd.DataFrame(
            {
                "prompt_id": "p1",
                "entity": rows["entity"].to_numpy(),
                "form": rows["form"].to_numpy(),
                "logprob": [ln(PROB[f]) for f in rows["form"]],
                "n_tokens": 1,
                "first_logprob": [ln(PROB[f]) for f in rows["form"]],
                "end_logprob": 0.0,
            }
        ),
    )


def test_mul_alias_makes_a_namesake(forms):
    en = forms[forms["lang"] == "en"]
    assert sorted(en[en["entity"] == "Q3"]["form"]) == ["Xtown", "Ytown"]  # the mul alias applies to en
    assert list(en[en["entity"] == "Q2"]["form"]) == ["Xtown"]


def test_one_comparison_per_surface_form(forms):
    scores = scores_of(forms)
    ent = entity_scores(scores)
    correct = correct_entities(FACTS)
    got = knowledge_per_prompt(ent, PROMPTS, CANDS, FACTS, correct, [1, 2, 3], "undefined", scores)
    got = got.set_index(["strategy", "n"])
    # random: Q2 (Xtown) first; Q3 was scored on Xtown too, so it goes: the list is Q2, Q4.
    # Q1 0.3 > Q2 0.2 (win), Q1 0.3 < Q4 0.4 (loss).
    assert got.loc[("random", 1), "k_min"] == 1.0
    assert got.loc[("random", 2), "k_min"] == 0.0
    assert got.loc[("random", 2), "k_avg"] == 0.5
    assert got.loc[("random", 2), "n_used"] == 2
    assert math.isnan(got.loc[("random", 3), "k_min"])  # one shorter: undefined at n = 3
    # sem: Q3 first (kept, 0.25 < 0.3: a win), then Q2 whose only string Xtown Q3 was scored on: out.
    assert got.loc[("sem", 1), "k_min"] == 1.0
    assert got.loc[("sem", 2), "k_min"] == 0.0
    assert got.loc[("sem", 2), "k_avg"] == 0.5
    # Without the score table's forms every entity is its own comparison (Q2, Q3 both wins).
    every = knowledge_per_prompt(ent, PROMPTS, CANDS, FACTS, correct, [2, 3], "undefined")
    every = every.set_index(["strategy", "n"])
    assert every.loc[("random", 2), "k_min"] == 1.0
    assert every.loc[("random", 3), "k_avg"] == pytest.approx(2 / 3)


def test_metrics_stage_applies_the_rule(forms):
    scores = scores_of(forms)
    ent = entity_scores(scores)
    table, _ = knowledge_tables(
        ent, PROMPTS, CANDS, FACTS, correct_entities(FACTS), [2], [1], {}, scores=scores
    )
    k = table[(table["measure"] == "k_avg") & (table["n"] == 2)].set_index("strategy")["value"]
    assert k["random"] == 0.5
    assert k["sem"] == 0.5
