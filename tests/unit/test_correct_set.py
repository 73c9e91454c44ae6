"""Correct set of fluent-mLAMA: Table 1 counts the object's label and inflected
forms (§3.2: "we consider all forms (both non-inflected and possibly inflected) of object NEs as
correct ones"); aliases count only in the "wide" setting of §5.2."""

import math

import pandas as pd
import pytest
from contract_frames import full_inputs
from factprobe import config_rules
from factprobe import settings as S
from factprobe.metrics.common import correct_form_scores
from factprobe.metrics.pipeline import SuiteInputs, compute_suite_metrics

ln = math.log

# One Czech prompt "Hlavní město Česka je" for the fact (Czechia, capital, Prague=Q1). Prague's
# forms: label "Praha", inflected "Praze" (from a sentence translation), alias "Prag". One
# distractor, Brno (Q2), label "Brno" and alias "Brünn".
FORMS = pd.DataFrame(
    [
        ("Q1", "cs", "Praha", "label"),
        ("Q1", "cs", "Praze", "inflected"),
        ("Q1", "cs", "Prag", "alias"),
        ("Q2", "cs", "Brno", "label"),
        ("Q2", "cs", "Brünn", "alias"),
    ],
    columns=["entity", "lang", "form", "source"],
)
# P(form | prompt): the alias Prag is the most probable ending, then Brünn (a distractor alias),
# then Brno, Praze, Praha.
PROBS = {"Prag": 0.40, "Brünn": 0.25, "Brno": 0.15, "Praze": 0.10, "Praha": 0.05}


def inputs():
    facts = pd.DataFrame(
        {
            "fact_id": ["Q3|P36|Q1"],
            "subject": ["Q3"],
            "property": ["P36"],
            "object": ["Q1"],
            "objects": [["Q1"]],
        }
    )
    prompts = pd.DataFrame(
        {
            "prompt_id": ["p"],
            "fact_id": ["Q3|P36|Q1"],
            "lang": ["cs"],
            "template_id": ["t"],
            "text": ["Hlavní město Česka je"],
        }
    )
    cands = pd.DataFrame(
        {
            "fact_id": ["Q3|P36|Q1"] * 2,
            "entity": ["Q1", "Q2"],
            "role": ["object", "distractor"],
            "strategy": ["object", "pool"],
            "rank": [0, 1],
        }
    )
    entity = dict(zip(FORMS["form"], FORMS["entity"], strict=True))
    scores = pd.DataFrame(
        [("p", entity[f], f, ln(p), 1, ln(p), 0.0, "Q3|P36|Q1", "cs") for f, p in PROBS.items()],
        columns=[
            "prompt_id",
            "entity",
            "form",
            "logprob",
            "n_tokens",
            "first_logprob",
            "end_logprob",
            "fact_id",
            "lang",
        ],
    )
    return full_inputs(
        SuiteInputs(scores=scores, prompts=prompts, candidates=cands, facts=facts, forms=FORMS)
    )


def _measure(per_fact, measure, n=0):
    rows = per_fact[(per_fact["measure"] == measure) & (per_fact["n"] == n)]
    return float(rows["value"].iloc[0])


def test_table1_counts_label_and_inflected_forms_only():
    settings = S.Metrics(families={}, ns=[1], family_settings={"ranking": {"recall_ns": [1]}})
    # Table 1: the object's best correct form is Praze (0.10); Brno's best form Brünn (0.25) wins.
    table1, _ = compute_suite_metrics(inputs(), settings, ["ranking", "knowledge"], "table1")
    assert _measure(table1, "mean_rank") == 2.0 and _measure(table1, "recall", 1) == 0.0
    # Knowledge (distractors paper eq. 1 on the correct set): Pl(o) = 0.10 + 0.05 < Pl(Brno) = 0.40.
    assert _measure(table1, "k_min", 1) == 0.0
    # Wide (§5.2): the alias Prag (0.40) is correct too and ranks first; Pl(o) = 0.55 > 0.40.
    wide, _ = compute_suite_metrics(inputs(), settings, ["ranking", "knowledge"], "wide")
    assert _measure(wide, "mean_rank") == 1.0 and _measure(wide, "recall", 1) == 1.0
    assert _measure(wide, "k_min", 1) == 1.0


def test_filter_keeps_distractor_aliases_and_needs_form_sources():
    data = inputs()
    kept = correct_form_scores(
        data.scores, pd.DataFrame({"fact_id": ["Q3|P36|Q1"], "entity": ["Q1"]}), FORMS, "table1"
    )
    assert sorted(kept["form"]) == ["Brno", "Brünn", "Praha", "Praze"]
    with pytest.raises(ValueError, match=r"lacks column\(s\) \['source'\]"):
        correct_form_scores(
            data.scores, data.facts[["fact_id"]].assign(entity="Q1"), FORMS.drop(columns="source"), "table1"
        )
    with pytest.raises(ValueError, match="correct_set 'narrow'"):
        correct_form_scores(data.scores, data.facts[["fact_id"]].assign(entity="Q1"), FORMS, "narrow")


def test_correct_set_defaults_per_kind():
    base = {
        "dumps": "d.tsv",
        "models": "m.tsv",
        "extract": {"languages": ["en"], "max_bad_fraction": 0.0, "chunk_mb": 1},
        "diff": {"single_value": "list", "single_value_list": "x.tsv"},
        "templates": {"sets": {"team": {"format": "yaml", "path": "t"}}},
    }
    suite = {"dump": "20190201", "relations": ["P36"]}
    suites = {
        "ml": {**suite, "kind": "multilingual"},
        "ml_wide": {**suite, "kind": "multilingual", "correct_set": "wide"},
        "k": {**suite, "kind": "knowledge"},
        "k_table1": {**suite, "kind": "knowledge", "correct_set": "table1"},
        "mp": {**suite, "kind": "multiprompt"},
    }
    cfg = S.load_settings(S.Config, {**base, "suites": suites})
    got = {s: config_rules.suite_correct_set(cfg, s) for s in suites}
    assert got == {"ml": "table1", "ml_wide": "wide", "k": "wide", "k_table1": "table1", "mp": "wide"}
