"""Subject swaps as prompts of their own (PROBELM Algorithm 1, "repeat with o fixed"):
the distractors stage writes them with real ids, scoring scores them, metrics group them by
``group_prompt_id``."""

import pandas as pd
import pytest
from contract_frames import full
from factprobe import contracts
from factprobe.distractors.swaps import subject_swaps
from factprobe.metrics.plausibility import swap_scores
from factprobe.scoring.suite import build_pairs

FACTS = pd.DataFrame({"fact_id": ["F", "G"], "subject": ["Q1", "Q2"]})
PROMPTS = pd.DataFrame(
    {
        "prompt_id": ["p", "q", "r"],
        "fact_id": ["F", "F", "G"],
        "lang": "en",
        "template_id": ["t1", "t2", "t1"],
        "style": ["statement", "question", "statement"],
        # q's text does not hold its subject form: no swap fits it
        "subject_form": ["Marcelo", "Marcelo", "Ana"],
        "text": ["Marcelo is a citizen of", "Who is he? A citizen of", "Ana is a citizen of"],
        "context": "",
        "ending": ".",
    }
)
CANDS = pd.DataFrame(
    {
        "fact_id": ["F", "F", "F", "F", "G"],
        "entity": ["Q29", "Q145", "Q100", "Q1", "Q29"],
        "role": ["object", "distractor", "distractor", "distractor", "object"],
        "strategy": ["object", "cooccur", "cooccur", "cooccur", "object"],
        "rank": [0, 1, 1, 2, 0],
        # Q1 "swaps" the subject with itself: not an alternative. G has no subject side.
        "side": ["object", "object", "subject", "subject", "object"],
    }
)
FORMS = pd.DataFrame(
    {
        "entity": ["Q29", "Q29", "Q145", "Q100", "Q100"],
        "lang": "en",
        "form": ["España", "Spain", "United Kingdom", "Pepe", "José"],
        "source": ["alias", "label", "label", "label", "alias"],
    }
)


def test_swaps_are_prompts_with_their_own_ids_grouped_by_the_prompt_they_swap():
    swaps = subject_swaps(PROMPTS, CANDS, FORMS, FACTS, "label")
    contracts.check(swaps, "subject_swaps", "test")
    got = {
        (r.prompt_id, r.group_prompt_id, r.subject, r.text, r.object, r.object_form)
        for r in swaps.itertuples()
    }
    assert got == {
        ("p|swap|Q1|Marcelo", "p", "Q1", "Marcelo is a citizen of", "Q29", "Spain"),  # the true scenario
        ("p|swap|Q100|Pepe", "p", "Q100", "Pepe is a citizen of", "Q29", "Spain"),
    }
    # The prompt's fact, template and style come along; the ending too.
    assert set(swaps["template_id"]) == {"t1"} and set(swaps["ending"]) == {"."}
    assert swaps["prompt_id"].tolist() == [
        contracts.swap_prompt_id("p", s, f)
        for s, f in zip(swaps["subject"], swaps["subject_form"], strict=True)
    ]
    # sentence_forms all: one prompt per form of the subject (metrics take the best).
    every = subject_swaps(PROMPTS, CANDS, FORMS, FACTS, "all")
    assert set(every["prompt_id"]) == {"p|swap|Q1|Marcelo", "p|swap|Q100|Pepe", "p|swap|Q100|José"}
    with pytest.raises(ValueError, match="sentence_forms"):
        subject_swaps(PROMPTS, CANDS, FORMS, FACTS, "best")
    # No subject-side candidates: an empty table with the contract's columns.
    none = subject_swaps(PROMPTS, CANDS[CANDS["side"] == "object"], FORMS, FACTS)
    assert none.empty and list(none.columns) == contracts.columns("subject_swaps")


def test_scoring_scores_each_swap_once_and_metrics_group_by_the_columns():
    swaps = subject_swaps(PROMPTS, CANDS, FORMS, FACTS, "all")
    pairs = build_pairs(PROMPTS, CANDS, FORMS, swaps=swaps, ending=True)
    mine = pairs[pairs["prompt_id"].isin(swaps["prompt_id"])]
    assert dict(zip(mine["prompt_id"], mine["prompt_text"] + mine["continuation"], strict=True)) == {
        "p|swap|Q1|Marcelo": "Marcelo is a citizen of Spain.",
        "p|swap|Q100|Pepe": "Pepe is a citizen of Spain.",
        "p|swap|Q100|José": "José is a citizen of Spain.",
    }
    assert dict(zip(mine["prompt_id"], mine["entity"], strict=True))["p|swap|Q100|José"] == "Q100"
    # Without swaps the subject-side candidates are scored nowhere.
    assert "Q100" not in set(build_pairs(PROMPTS, CANDS, FORMS)["entity"])
    # Metrics: one scenario per (group, subject), its best form's score; unrelated rows ignored.
    ent = full(
        "scores",
        pd.DataFrame(
            {
                "prompt_id": ["p|swap|Q1|Marcelo", "p|swap|Q100|Pepe", "p|swap|Q100|José", "p"],
                "entity": ["Q1", "Q100", "Q100", "Q29"],
            }
        ),
    ).assign(best_norm=[-1.0, -3.0, -2.0, -0.5])
    got = swap_scores(ent, swaps).set_index(["prompt_id", "entity"])["best_norm"].to_dict()
    assert got == {("p", "Q1"): -1.0, ("p", "Q100"): -2.0}
