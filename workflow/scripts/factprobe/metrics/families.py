"""The built-in measure families of :data:`factprobe.registries.FAMILIES`, one function each.

Each takes the suite's :class:`factprobe.metrics.pipeline.SuiteFrame` and returns
``(per-fact tables, suite-level tables)``; ``compute_suite_metrics`` runs the suite's families
in registry order and puts the tables together.
"""

from __future__ import annotations

import logging

import pandas as pd

from . import fluent
from .belief import (
    belief_dataset,
    belief_per_fact,
    candidate_predictions,
    generation_predictions,
    vocabulary_predictions,
)
from .common import GROUP_KEYS, prompt_frame
from .knowledge import knowledge_tables
from .pipeline import SuiteFrame
from .plausibility import plausibility_per_fact, plausibility_score
from .ranking import ranking_per_fact

log = logging.getLogger(__name__)

Tables = tuple[list[pd.DataFrame], list[pd.DataFrame]]


def knowledge(f: SuiteFrame) -> Tables:
    """K Min@n / Avg@n per strategy and the Table 2 baselines (distractors paper §3.2)."""
    s, own = f.settings, f.settings.own("knowledge")
    table, dropped = knowledge_tables(
        f.entity_scores,
        f.prompts,
        f.candidates,
        f.facts,
        f.correct,
        s.ns,
        own["precision_ns"],
        own["combined_strategies"],
        topk=f.inputs.topk,
        scores=f.scores,
        short_lists=s.short_lists,
    )
    return [table], [dropped]


def ranking(f: SuiteFrame) -> Tables:
    """Rank, R@n and mean rank of the object (fluent-mLAMA §3.3).

    Ties: the family's own setting ``ties``. With ``ranking_average: relation`` (the paper's
    Table 1) short-GT facts are left out (:func:`factprobe.metrics.fluent.drop_short_gt`, the
    authors' ``exclude_short``)."""
    s, own = f.settings, f.settings.own("ranking")
    ranks = ranking_per_fact(
        f.entity_scores, f.prompts, f.candidates, f.correct, own["recall_ns"], own["ties"]
    )
    return [fluent.drop_short_gt(ranks, f.facts) if s.ranking_average == "relation" else ranks], []


def plausibility(f: SuiteFrame) -> Tables:
    """Acc., MRR, NDCG per fact and PLAUSIBILITY (PROBELM §4.2)."""
    strategies = f.settings.own("plausibility")["strategies"]
    # Both slots of PROBELM Algorithm 1: subject swaps are ranked in their own groups.
    every = f.inputs.candidates.copy()
    every["rank"] = pd.to_numeric(every["rank"], errors="coerce").fillna(0)
    plaus = plausibility_per_fact(
        f.entity_scores, f.prompts, every, f.facts, strategies, f.inputs.subject_swaps
    )
    means = plaus.groupby([*GROUP_KEYS, "measure"])["value"].mean().reset_index()
    score = plausibility_score(means)
    dataset = [] if score.empty else [score.drop(columns="n_parts").assign(measure="plausibility", style="")]
    return [plaus], dataset


def belief(f: SuiteFrame) -> Tables:
    """BELIEF over the vocabulary (needs the top-k table) and its closed-set variant (§2.1)."""
    s = f.settings
    per_fact, dataset = [], []
    # §2.1: argmax over the vocabulary (needs the top-k table); belief_cand_*: the closed-set variant.
    normalize = model_normalizer(f.inputs.tokenizer)
    pp = vocabulary_predictions(f.inputs.topk, f.scores, f.prompts, f.facts, f.correct, normalize)
    if pp.empty:
        log.warning("belief: no top-k next-token table (scoring.topk = 0?); only belief_cand_* computed")
    else:
        per_fact.append(belief_per_fact(pp, f.facts, "belief", "exact"))
        dataset.append(belief_dataset(pp, "belief", s.belief_samplings, s.belief_bins))
    pp = candidate_predictions(f.entity_scores, f.prompts, f.candidates, f.facts, f.correct)
    per_fact.append(belief_per_fact(pp, f.facts, "belief_cand", "exact"))
    dataset.append(belief_dataset(pp, "belief_cand", s.belief_samplings, s.belief_bins))
    return per_fact, dataset


def model_normalizer(folder: str | None):
    """The normalization of the tokenizer in a model folder (:func:`factprobe.lm.encoding.
    tokenizer_normalizer`), None without a folder."""
    if folder is None:
        return None
    from transformers import AutoTokenizer

    from factprobe.lm.encoding import tokenizer_normalizer

    try:
        tokenizer = AutoTokenizer.from_pretrained(folder)
    except (OSError, ValueError) as err:
        raise ValueError(
            f"metrics: cannot load the tokenizer of model folder {folder} (BELIEF matches a masked LM's "
            f"prediction with it): {err}; re-run prepare_model"
        ) from err
    return tokenizer_normalizer(tokenizer)


def belief_icl(f: SuiteFrame) -> Tables:
    """BELIEF-ICL from the suite's generations (BELIEF §3.2)."""
    if f.inputs.generations is None:
        log.warning(
            "belief_icl requested but the suite has no generations (set suites.<suite>.generate: true)"
        )
        return [], []
    s = f.settings
    pp = generation_predictions(f.inputs.generations, f.prompts, f.facts, f.correct, answer_forms(f))
    return [belief_per_fact(pp, f.facts, "belief_icl", "two_way")], [
        belief_dataset(pp, "belief_icl", s.belief_samplings, s.belief_bins)
    ]


def answer_forms(f: SuiteFrame) -> pd.DataFrame:
    """Answer strings for BELIEF-ICL: forms table plus every form scored for a prompt's entity."""
    inputs = f.inputs
    parts = []
    if inputs.forms is not None:
        parts.append(inputs.forms[["entity", "lang", "form"]])
    langs = prompt_frame(inputs.prompts)[["prompt_id", "lang"]]
    scored = inputs.scores[["prompt_id", "entity", "form"]].merge(langs, on="prompt_id")
    parts.append(scored[["entity", "lang", "form"]])
    return pd.concat(parts, ignore_index=True).drop_duplicates()
