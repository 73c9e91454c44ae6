"""Measures recomputed from the first m cloze sentences of each fact (distractors paper §5.1,
Fig. 4: "we vary the number of cloze sentences from 1 to 5").

The reference shuffles each fact's per-sentence results with a fixed seed and averages the first
m; here each fact's templates are put in ``stable_hash(seed, "cloze", fact_id, template_id)``
order and the suite's measures are computed again, by the same code as rule compute_metrics, on
the prompts of the first m templates: the measure a suite with m cloze sentences would give.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import pandas as pd

from factprobe.hashing import stable_hash

from .pipeline import SuiteInputs, compute_suite_metrics


def cloze_order(prompts: pd.DataFrame, seed: object = 0) -> pd.Series:
    """Rank (1 = first) of each prompt's template among its fact's templates (index of ``prompts``)."""
    pairs = prompts[["fact_id", "template_id"]].drop_duplicates()
    keyed = pairs.assign(
        _h=[
            stable_hash(seed, "cloze", f, t)
            for f, t in zip(pairs["fact_id"], pairs["template_id"], strict=True)
        ]
    )
    keyed["_rank"] = keyed.sort_values("_h").groupby("fact_id").cumcount() + 1
    ranks = prompts.merge(
        keyed[["fact_id", "template_id", "_rank"]], on=["fact_id", "template_id"], how="left"
    )
    return pd.Series(ranks["_rank"].to_numpy(), index=prompts.index)


def subset_inputs(inputs: SuiteInputs, keep: set[str]) -> SuiteInputs:
    """The tables of a (suite, model) job restricted to the prompts ``keep`` (prompt ids)."""

    def only(table: pd.DataFrame | None) -> pd.DataFrame | None:
        if table is None or "prompt_id" not in table.columns:
            return table
        return table[table["prompt_id"].isin(keep)]

    return dataclasses.replace(
        inputs,
        scores=only(inputs.scores),
        prompts=only(inputs.prompts),
        generations=only(inputs.generations),
        topk=only(inputs.topk),
    )


def cloze_tables(
    inputs: SuiteInputs, settings, families: Sequence[str], correct_set: str = "wide", seed: object = 0
) -> pd.DataFrame:
    """The per-fact table (``fact_metrics``) at m = 1 .. the most templates a fact has, with ``n_cloze`` = m."""
    rank = cloze_order(inputs.prompts, seed)
    parts = []
    for m in range(1, int(rank.max()) + 1 if len(rank) else 1):
        keep = set(inputs.prompts.loc[rank <= m, "prompt_id"])
        per_fact, _ = compute_suite_metrics(subset_inputs(inputs, keep), settings, families, correct_set)
        parts.append(per_fact.assign(n_cloze=m))
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()
