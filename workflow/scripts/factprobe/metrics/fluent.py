"""Fluent-mLAMA's aggregation of ranks into its Table 1 (fluent-mlama-disfluency §3.3, §4).

§3.3: R@n is "the percentage of such hits for a given verbalization type ... within a given
language-relation subset"; "for the general results we will average the scores for the whole
language dataset". The authors' statistics code (ZurichNLP/Fluent-mLAMA ``stats.py``, read, not
copied) makes that precise, and this module follows it:

1. **Short GT prompts out** (:func:`factprobe.probes.fluent.short_gt_prompt`, applied by the importer): a fact whose Google-Translate prompt is
   much shorter than the other verbalizations' (a translation that lost the sentence) is left out
   of every verbalization of its language. The importer evaluates the rule on the release's raw
   strings and records the languages in the facts table's ``short_gt`` column.
2. **Per language × relation**: R@n = share of facts whose best correct form ranks ≤ n; mean rank
   = mean of the best correct rank.
3. **Macro over relations**: the language's value is the unweighted mean of its relations'
   values (:func:`relation_means`), so a relation with 2,000 facts weighs as one with 50.

``metrics.ranking_average: facts`` keeps the former micro-average over all facts of the language
(no fact left out); ``relation`` is this module's aggregation (the paper config's setting).
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

#: metrics.ranking_average: the paper's (macro over relations, short GT prompts out) or micro over facts.
RANKING_AVERAGES = ("relation", "facts")
#: Per-fact measures of the ranking family (metrics/ranking.py) that this aggregation concerns.
RANKING_MEASURES = ("recall", "mean_rank")


def short_gt_keys(facts: pd.DataFrame) -> set[tuple[str, str]]:
    """``(fact_id, lang)`` pairs the importer marked short (facts column ``short_gt``: the languages
    in which the fact's GT prompt is short); empty when the facts table has no such column."""
    if "short_gt" not in facts.columns:
        return set()
    out = set()
    for fact_id, langs in zip(facts["fact_id"].astype(str), facts["short_gt"], strict=True):
        if langs is not None:
            out.update((fact_id, str(lang)) for lang in langs)
    return out


def drop_short_gt(per_fact: pd.DataFrame, facts: pd.DataFrame) -> pd.DataFrame:
    """``per_fact`` without the rows of (fact, language) pairs whose GT prompt is short, in every
    verbalization (step 1 of the module docstring)."""
    keys = short_gt_keys(facts)
    if not keys or per_fact.empty:
        return per_fact
    pairs = pd.MultiIndex.from_arrays([per_fact["fact_id"].astype(str), per_fact["lang"].astype(str)])
    keep = ~pairs.isin(list(keys))
    return per_fact[keep].reset_index(drop=True)


def relation_of(fact_ids: pd.Series) -> pd.Series:
    """The relation of each ``"S|P|O"`` fact id (docs/contracts.md)."""
    return fact_ids.astype(str).str.split("|").str[1]


def relation_means(per_fact: pd.DataFrame, keys: Sequence[str]) -> pd.DataFrame:
    """Macro average (steps 2-3): the mean of ``value`` per ``keys`` × relation, then the mean of
    those over relations. Returns ``keys``, ``value``, ``n_facts`` (distinct facts), ``n_relations``.
    """
    keys = list(keys)
    rows = per_fact.assign(_relation=relation_of(per_fact["fact_id"]))
    # A fact's value per keys first (it may have several prompts in a group), then per relation.
    per_rel = (
        rows.groupby([*keys, "_relation"], sort=True)
        .agg(value=("value", "mean"), n_facts=("fact_id", "nunique"))
        .reset_index()
    )
    out = (
        per_rel.groupby(keys, sort=True)
        .agg(value=("value", "mean"), n_facts=("n_facts", "sum"), n_relations=("_relation", "nunique"))
        .reset_index()
    )
    return out


def fact_means(per_fact: pd.DataFrame, keys: Sequence[str]) -> pd.DataFrame:
    """Micro average (``ranking_average: facts``): the mean over all facts of ``keys``."""
    return (
        per_fact.groupby(list(keys), sort=True)
        .agg(value=("value", "mean"), n_facts=("fact_id", "nunique"))
        .reset_index()
    )


def ranking_summary(per_fact: pd.DataFrame, keys: Sequence[str], average: str = "relation") -> pd.DataFrame:
    """R@n and mean-rank rows of a per-fact table (``measure`` among ``keys``) averaged as
    ``average`` says: ``relation`` (the paper) or ``facts``; other measures are ignored."""
    if average not in RANKING_AVERAGES:
        raise ValueError(f"metrics.ranking_average {average!r}: use one of {list(RANKING_AVERAGES)}")
    rows = per_fact[per_fact["measure"].isin(RANKING_MEASURES)]
    means = relation_means(rows, keys) if average == "relation" else fact_means(rows, keys)
    return means.drop(columns=["n_relations"], errors="ignore")


def replace_ranking_rows(
    means: pd.DataFrame, per_fact: pd.DataFrame, keys: Sequence[str], average: str
) -> pd.DataFrame:
    """Per-``keys`` means (columns ``keys``, ``value``, ``n_facts``: the mean over facts of every
    measure) with the R@n / mean-rank rows recomputed by :func:`ranking_summary`; unchanged for
    ``average: facts``."""
    if average == "facts" or not per_fact["measure"].isin(RANKING_MEASURES).any():
        return means
    macro = ranking_summary(per_fact, keys, average)
    rest = means[~means["measure"].isin(RANKING_MEASURES)]
    out = pd.concat([rest, macro[list(means.columns)]], ignore_index=True)
    return out.sort_values(list(keys), ignore_index=True)
