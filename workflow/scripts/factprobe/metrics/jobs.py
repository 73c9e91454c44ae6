"""What rules ``compute_metrics`` and ``summarize_metrics`` do, as functions: the one code path
of the workflow and of :func:`factprobe.api.measures` / :func:`factprobe.api.summary`.

Settings arrive as the rules receive them (plain dicts of :mod:`factprobe.plumbing.run_settings`): a
suite's ``metrics`` block (its families and only the keys they read), ``correct_set``, the
(plausibility suite, model) cut-off, and the ``report`` keys of the bootstrap.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence

import pandas as pd

from factprobe.metrics.pipeline import (
    Bootstrap,
    SuiteInputs,
    compute_suite_metrics,
    headline_per_fact,
    headline_table,
    summarize,
)
from factprobe.settings import Metrics, load_settings

log = logging.getLogger(__name__)


def metrics_settings(block: Mapping, encoder: str | None = None) -> tuple[Metrics, list[str]]:
    """(typed metrics settings, families) from a suite's metrics block (``RUN.metrics[suite]``).

    ``encoder``: the folder of BERTScore's encoder when ``metrics.family_settings.overlap.encoder``
    names a models.tsv row (rule ``prepare_model`` made it)."""
    measures = dict(block)
    families = list(measures.pop("families"))
    if encoder is not None:
        own = dict(measures.get("family_settings") or {})
        own["overlap"] = {**own.get("overlap", {}), "encoder": str(encoder)}
        measures["family_settings"] = own
    return load_settings(Metrics, {**measures, "families": {}}, "metrics"), families


def cutoff_facts(inputs: SuiteInputs, cutoff: Mapping, model: str) -> tuple[SuiteInputs, pd.DataFrame | None]:
    """A plausibility suite's facts cut to those new to ``model`` (PROBELM §3.1,
    :func:`factprobe.metrics.plausibility.facts_new_to_model`) and the suite-level rows that
    count them; the inputs unchanged and no rows for other suites (``cutoff`` empty)."""
    if not cutoff:
        return inputs, None
    from factprobe.metrics.plausibility import facts_new_to_model

    inputs.facts, counts = facts_new_to_model(inputs.facts, dict(cutoff))
    if counts["cutoff_after_dump"]:
        log.warning(
            "model %s: cut-off %s is on or after the newer dump %s; only facts dated after it count (%d)",
            model,
            cutoff["cutoff"],
            cutoff["dump"],
            counts["plausible_facts"],
        )
    log.info(
        "model %s: cut-off %s (%s): %d facts new to it, %d left out as seen before its cut-off",
        model,
        cutoff["cutoff"],
        cutoff["source"],
        counts["plausible_facts"],
        counts["facts_seen_by_model"],
    )
    return inputs, pd.DataFrame({"measure": list(counts), "value": list(counts.values())})


def suite_measures(
    inputs: SuiteInputs,
    block: Mapping,
    correct_set: str,
    cutoff: Mapping,
    model: str,
    encoder: str | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(per-fact table, suite-level table) of one (suite, model): rule ``compute_metrics``."""
    settings, families = metrics_settings(block, encoder)
    inputs, extra = cutoff_facts(inputs, cutoff, model)
    per_fact, suite = compute_suite_metrics(inputs, settings, families, correct_set)
    if extra is not None:
        from factprobe.metrics.common import conform_dataset_table

        suite = conform_dataset_table(pd.concat([suite, extra], ignore_index=True))
    return per_fact, suite


def bootstrap_of(report: Mapping) -> Bootstrap:
    """The bootstrap of the intervals from config ``report`` keys (``RUN.bootstrap``)."""
    return Bootstrap(
        int(report["bootstrap_samples"]), int(report["bootstrap_seed"]), float(report["confidence_level"])
    )


def summarize_suite(
    models: Sequence[str],
    per_fact: Sequence[pd.DataFrame],
    suite: Sequence[pd.DataFrame],
    average: str,
    bootstrap: Bootstrap,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(summary: model x measure, headline: each headline value with its bootstrap interval over
    facts) of one suite's models: rule ``summarize_metrics``."""
    parts, per_model = [], {}
    for model, fact, dataset in zip(models, per_fact, suite, strict=True):
        parts.append(summarize(model, fact, dataset, average))
        per_model[model] = headline_per_fact(fact)
    summary = pd.concat(parts, ignore_index=True)
    return summary, headline_table(summary, per_model, bootstrap)
