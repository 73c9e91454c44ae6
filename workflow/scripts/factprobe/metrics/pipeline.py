"""Put the measures together: per-fact and suite-level tables, summaries, leaderboard.

``compute_suite_metrics`` is what rule ``compute_metrics`` runs for one (suite, model); which
measure families run is chosen per suite kind (config ``metrics.families``).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from factprobe import contracts
from factprobe.settings import Metrics

from . import fluent, uncertainty
from .belief import (
    belief_dataset,
    belief_per_fact,
    candidate_predictions,
    generation_predictions,
    vocabulary_predictions,
)
from .common import (
    GROUP_KEYS,
    conform_dataset_table,
    conform_fact_table,
    correct_entities,
    correct_form_scores,
    entity_scores,
    object_slot_only,
    prompt_frame,
)
from .knowledge import dropped_fact_counts, knowledge_per_fact
from .meta import configuration_grid, verbalization_robustness
from .plausibility import MEASURES as PLAUSIBILITY_PARTS
from .plausibility import plausibility_per_fact, plausibility_score
from .ranking import ranking_per_fact
from .uncertainty import interval_table, paired_table, percentile_interval, resample_counts

log = logging.getLogger(__name__)

FAMILIES = ("knowledge", "ranking", "plausibility", "belief", "belief_icl")


@dataclass
class SuiteInputs:
    """The tables one (suite, model) job reads; ``generations`` and ``forms`` may be None."""

    scores: pd.DataFrame
    prompts: pd.DataFrame
    candidates: pd.DataFrame
    facts: pd.DataFrame
    generations: pd.DataFrame | None = None
    forms: pd.DataFrame | None = None
    topk: pd.DataFrame | None = None


def read_inputs(inputs: Mapping) -> SuiteInputs:
    """Read a compute_metrics job's named inputs (``snakemake.input`` or a dict of paths).

    ``scores`` and ``facts`` are single tables, ``generations`` and ``topk`` are optional; the suite's merged
    prompts, candidates and forms come from :func:`factprobe.suite_tables.load_suite_tables`.
    """
    from ..suite_tables import load_suite_tables, read_concat

    for key in ("scores", "facts"):
        if key not in inputs.keys():
            raise ValueError(f"metrics: input {key!r} is required")
    tables = load_suite_tables(inputs)
    generations = inputs["generations"] if "generations" in inputs.keys() else None
    topk = inputs["topk"] if "topk" in inputs.keys() else None
    out = SuiteInputs(
        scores=read_concat(inputs["scores"]),
        prompts=tables.prompts,
        candidates=tables.candidates,
        facts=read_concat(inputs["facts"]),
        generations=read_concat(generations),
        forms=tables.forms,
        topk=read_concat(topk),
    )
    contracts.check(
        out.candidates, "candidates", "candidates", ["fact_id", "entity", "role", "strategy", "rank"]
    )
    contracts.check(out.facts, "facts", "facts", ["fact_id", "subject", "property", "object"])
    return out


def fact_splits(fact_ids: pd.Series, facts: pd.DataFrame) -> pd.Series:
    """The taught/untaught split of each fact id, from ``facts.split`` (the one source: the
    control model is trained on exactly these values, see scoring/control.fact_split); "" when
    the facts table has no split or the id is not in it."""
    if "split" not in facts.columns:
        return pd.Series("", index=fact_ids.index, dtype=object)
    keyed = facts.astype({"fact_id": str}).drop_duplicates("fact_id").set_index("fact_id")["split"]
    return fact_ids.map(keyed.astype(str)).fillna("").astype(str)


def chance_rows(table: pd.DataFrame) -> pd.DataFrame:
    """Expected K of a random ranker per fact row: ``k_avg_chance`` and ``k_min_chance``.

    A random ranker orders the object and its m distractors uniformly, so each comparison
    1[Pl(o|c) > Pl(o*|c)] holds with probability 1/2 and all m hold together with probability
    1/(m + 1) (the object is first among m + 1). Avg@n's chance is therefore 1/2 for every n, and
    Min@n's is 1/(m + 1) with m the distractors actually used (``n_used``: fewer than n when a
    strategy found fewer). Exact when every prompt of the row used the same m (one candidate list
    per fact and language), a lower bound otherwise (Jensen).
    """
    used = table[table["measure"] == "n_used"]
    if used.empty:
        return table.iloc[:0]
    avg = used.assign(measure="k_avg_chance", value=0.5)
    low = used.assign(measure="k_min_chance", value=1.0 / (used["value"] + 1.0))
    return pd.concat([avg, low], ignore_index=True)


def compute_suite_metrics(
    inputs: SuiteInputs, settings: Metrics, families: Sequence[str], correct_set: str = "wide"
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(per-fact table, suite-level table) for one suite and model.

    Per-fact: FACT_COLUMNS + ``split`` (from ``facts.split``), with the random-ranker chance of
    K as measures ``k_avg_chance``/``k_min_chance`` (:func:`chance_rows`); suite-level: DATASET_COLUMNS (BELIEF fluctuation,
    coverage, Ovconf and calibration bins; PLAUSIBILITY; robustness τ between verbalizations).
    """
    unknown = [f for f in families if f not in FAMILIES]
    if unknown:
        raise ValueError(f"metrics.families: unknown family {unknown}; choose from {list(FAMILIES)}")
    prompts = prompt_frame(inputs.prompts)
    facts = inputs.facts.copy()
    facts["fact_id"] = facts["fact_id"].astype(str)
    prompts = prompts[prompts["fact_id"].isin(facts["fact_id"])]
    cands = object_slot_only(inputs.candidates).copy()
    cands["rank"] = pd.to_numeric(cands["rank"], errors="coerce").fillna(0)
    correct = correct_entities(facts)
    # fluent-mLAMA Table 1 vs §5.2: which forms of a correct object count (suites.<s>.correct_set).
    scores = correct_form_scores(inputs.scores, correct, inputs.forms, correct_set)
    ent = entity_scores(scores)
    log.info("%d scored (prompt, entity) pairs over %d prompts", len(ent), ent["prompt_id"].nunique())
    per_fact, dataset = [], []
    if "knowledge" in families:
        per_fact.append(
            knowledge_per_fact(
                ent,
                prompts,
                cands,
                facts,
                correct,
                settings.ns,
                settings.precision_ns,
                settings.combined_strategies,
                topk=inputs.topk,
                scores=scores,
                short_lists=settings.short_lists,
            )
        )
        dataset.append(dropped_fact_counts(per_fact[-1]))
    if "ranking" in families:
        ranks = ranking_per_fact(ent, prompts, cands, correct, settings.recall_ns, settings.ranking_ties)
        # Fluent-mLAMA (metrics/fluent.py): the paper's aggregation leaves short-GT facts out.
        per_fact.append(
            fluent.drop_short_gt(ranks, facts) if settings.ranking_average == "relation" else ranks
        )
    if "plausibility" in families:
        # Both slots of PROBELM Algorithm 1: subject swaps are ranked in their own groups.
        every = inputs.candidates.copy()
        every["rank"] = pd.to_numeric(every["rank"], errors="coerce").fillna(0)
        plaus = plausibility_per_fact(
            ent,
            prompts,
            every,
            facts,
            settings.plausibility_strategies,
            settings.ndcg_gain,
            settings.ndcg_normalization,
        )
        per_fact.append(plaus)
        means = plaus.groupby([*GROUP_KEYS, "measure"])["value"].mean().reset_index()
        score = plausibility_score(means)
        if not score.empty:
            dataset.append(score.drop(columns="n_parts").assign(measure="plausibility", style=""))
    if "belief" in families:
        # §2.1: argmax over the vocabulary (needs the top-k table); belief_cand_*: the closed-set variant.
        pp = vocabulary_predictions(inputs.topk, scores, prompts, facts, correct)
        if pp.empty:
            log.warning("belief: no top-k next-token table (scoring.topk = 0?); only belief_cand_* computed")
        else:
            per_fact.append(belief_per_fact(pp, facts, "belief", "exact"))
            dataset.append(belief_dataset(pp, "belief", settings.belief_samplings, settings.belief_bins))
        pp = candidate_predictions(ent, prompts, cands, facts, correct)
        per_fact.append(belief_per_fact(pp, facts, "belief_cand", "exact"))
        dataset.append(belief_dataset(pp, "belief_cand", settings.belief_samplings, settings.belief_bins))
    if "belief_icl" in families and inputs.generations is None:
        log.warning(
            "belief_icl requested but the suite has no generations (set suites.<suite>.generate: true)"
        )
    if "belief_icl" in families and inputs.generations is not None:
        forms = _answer_forms(inputs)
        pp = generation_predictions(inputs.generations, prompts, facts, correct, forms)
        per_fact.append(belief_per_fact(pp, facts, "belief_icl", "two_way"))
        dataset.append(belief_dataset(pp, "belief_icl", settings.belief_samplings, settings.belief_bins))
    table = (
        conform_fact_table(pd.concat(per_fact, ignore_index=True))
        if per_fact
        else conform_fact_table(pd.DataFrame())
    )
    dataset.append(_robustness_rows(table, settings.robustness_pair))
    table = pd.concat([table, chance_rows(table)], ignore_index=True)
    table["split"] = fact_splits(table["fact_id"], facts)
    suite = conform_dataset_table(
        pd.concat([d for d in dataset if not d.empty] or [pd.DataFrame()], ignore_index=True)
    )
    log.info(
        "%d per-fact rows for %d facts; %d suite-level rows",
        len(table),
        table["fact_id"].nunique(),
        len(suite),
    )
    return table, suite


def _answer_forms(inputs: SuiteInputs) -> pd.DataFrame:
    """Answer strings for BELIEF-ICL: forms table plus every form scored for a prompt's entity."""
    parts = []
    if inputs.forms is not None:
        parts.append(inputs.forms[["entity", "lang", "form"]])
    langs = prompt_frame(inputs.prompts)[["prompt_id", "lang"]]
    scored = inputs.scores[["prompt_id", "entity", "form"]].merge(langs, on="prompt_id")
    parts.append(scored[["entity", "lang", "form"]])
    return pd.concat(parts, ignore_index=True).drop_duplicates()


def _robustness_rows(table: pd.DataFrame, pair: Sequence[str]) -> pd.DataFrame:
    """Robustness τ (§4.3) per measure between two verbalizations, where both are present."""
    first, second = pair
    present = set(table["verbalization"])
    if first not in present or second not in present:
        return pd.DataFrame()
    rows = []
    for measure in sorted(set(table["measure"])):
        sub = table[table["measure"] == measure]
        for config in configuration_grid(sub, ("strategy", "n")):
            tau = verbalization_robustness(sub, first, second, [config])
            if np.isfinite(tau):
                rows.append({"measure": f"robustness_tau:{measure}", "value": tau, **config})
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- summaries


SUMMARY_KEYS = ["measure", "strategy", "n", *GROUP_KEYS]


def summarize(
    model: str, per_fact: pd.DataFrame, suite: pd.DataFrame, ranking_average: str = "facts"
) -> pd.DataFrame:
    """One model's summary rows: mean over facts of each per-fact measure, plus suite-level rows;
    R@n and mean rank averaged as ``metrics.ranking_average`` says (metrics/fluent.py).

    Columns: model, measure, value, strategy, n, lang, verbalization, style, shots, bin,
    n_facts, level ("fact" or "suite").
    """
    means = (
        per_fact.groupby(SUMMARY_KEYS, sort=True)
        .agg(value=("value", "mean"), n_facts=("fact_id", "nunique"))
        .reset_index()
    )
    means = fluent.replace_ranking_rows(means, per_fact, SUMMARY_KEYS, ranking_average).assign(
        bin=-1, level="fact"
    )
    suite_rows = suite.assign(n_facts=0, level="suite")
    out = pd.concat([means, suite_rows], ignore_index=True)
    out.insert(0, "model", model)
    return out[["model", "measure", "value", "strategy", "n", *GROUP_KEYS, "bin", "n_facts", "level"]]


def read_summary(path: str | Path) -> pd.DataFrame:
    """Read a summary.csv / leaderboard.csv: empty key cells stay "" (not NaN), values (and the
    leaderboard's n_used, chance, ci_low, ci_high) are floats; an empty n_facts reads as 0."""
    frame = pd.read_csv(path, keep_default_na=False, dtype=str)
    for col in ("value", "n_used", "chance", "ci_low", "ci_high"):
        if col in frame.columns:
            frame[col] = pd.to_numeric(frame[col].replace("", np.nan), errors="coerce")
    for col in ("n", "bin", "n_facts", "rank"):
        if col in frame.columns:
            frame[col] = (
                pd.to_numeric(frame[col], errors="coerce").fillna(-1 if col == "bin" else 0).astype("int64")
            )
    return frame


#: Headline measures of the leaderboard: (measure, strategy or None for any/"", n or None for largest).
HEADLINE = (
    "k_min",
    "k_avg",
    "probability",
    "recall",
    "mean_rank",
    "plausibility",
    "belief_acc_mean",
    "belief_consist",
    "belief_ovconf",
    "belief_icl_acc_mean",
)


def coinciding_strategies(summary: pd.DataFrame) -> dict[str, str]:
    """Strategies whose every summary value equals an earlier strategy's (in sorted order), on
    the rows both have when one has a subset of the other's measures.

    Returns ``{strategy: earlier strategy}``, e.g. ``{"temp": "sem", "temp+sem": "sem"}`` when no
    fact has a temporal distractor and Temp falls back to Sem: their distractor lists coincide, so
    the report must not present them as independent results.
    """
    rows = summary[summary["strategy"].astype(str) != ""]
    keys = [c for c in ("model", "measure", "n", *GROUP_KEYS, "bin") if c in rows.columns]
    vectors = {name: part.set_index(keys)["value"].sort_index() for name, part in rows.groupby("strategy")}
    names = sorted(vectors)
    same: dict[str, str] = {}
    for i, name in enumerate(names):
        for earlier in names[:i]:
            a, b = vectors[name], vectors[earlier]
            # Combined strategies (temp+sem) have no ranking rows: compare on the rows both have,
            # provided those are all of one of them.
            common = a.index.intersection(b.index)
            if earlier in same or common.empty or len(common) != min(len(a), len(b)):
                continue
            if np.array_equal(a[common].to_numpy(float), b[common].to_numpy(float), equal_nan=True):
                same[name] = earlier
                break
    return same


BOARD_COLUMNS = [
    "suite",
    "measure",
    "strategy",
    "n",
    "model",
    "value",
    "ci_low",
    "ci_high",
    "n_facts",
    "rank",
    "n_used",
    "chance",
    "same_as",
]

#: Headline measures that are means over facts (the others are defined over a whole prompt set):
#: these get bootstrap intervals and paired comparisons (:mod:`factprobe.metrics.uncertainty`).
FACT_HEADLINE = ("k_min", "k_avg", "probability", "recall", "mean_rank")


@dataclass(frozen=True)
class Bootstrap:
    """Percentile bootstrap over facts: replicates, seed, coverage (config ``report``)."""

    samples: int = 1000
    seed: int = 0
    level: float = 0.95


def headline_per_fact(per_fact: pd.DataFrame) -> pd.DataFrame:
    """The rows of a per-fact table that feed the intervals (a smaller frame): the
    :data:`FACT_HEADLINE` measures and PLAUSIBILITY's parts (Acc., MRR, NDCG per fact and style)."""
    return per_fact[per_fact["measure"].isin([*FACT_HEADLINE, *PLAUSIBILITY_PARTS])]


#: PLAUSIBILITY (PROBELM §4.2) pools its parts: mean over (style, part) within each prompt group
#: of the rest of the keys, then over those groups (as plausibility_score and the leaderboard do).
PLAUSIBILITY_GROUPS = [*GROUP_KEYS, "part"]
PLAUSIBILITY_OUTER = [k for k in GROUP_KEYS if k != "style"]


def plausibility_rows(per_fact: pd.DataFrame) -> pd.DataFrame:
    """Per-fact rows of PLAUSIBILITY's parts relabelled as measure ``plausibility`` (strategy "",
    n 0, as in the summary), the part kept in column ``part``: the input of its bootstrap."""
    rows = per_fact[per_fact["measure"].isin(PLAUSIBILITY_PARTS)]
    return rows.assign(part=rows["measure"], measure="plausibility", strategy="", n=0)


def _suite_intervals(table: pd.DataFrame, bootstrap: Bootstrap) -> pd.DataFrame:
    """Intervals of one model's fact-level headline measures and of PLAUSIBILITY."""
    args = (bootstrap.samples, bootstrap.seed, bootstrap.level)
    parts = [interval_table(table, FACT_HEADLINE, GROUP_KEYS, *args)]
    plaus = plausibility_rows(table)
    if not plaus.empty:
        parts.append(
            interval_table(plaus, ["plausibility"], PLAUSIBILITY_GROUPS, *args, outer_keys=PLAUSIBILITY_OUTER)
        )
    return pd.concat(parts, ignore_index=True)


def leaderboard(
    summaries: Mapping[str, pd.DataFrame],
    per_fact: Mapping[str, Mapping[str, pd.DataFrame]] | None = None,
    bootstrap: Bootstrap = Bootstrap(),
) -> pd.DataFrame:
    """Models side by side: headline measures per suite, pooled over languages and prompt groups.

    Input ``{suite: summary}``; output ``BOARD_COLUMNS``: rank 1 = best (for ``mean_rank`` and
    ``|belief_ovconf|`` lower is better); for K (``k_min``/``k_avg``) ``n_used`` is the mean number
    of distractors actually compared (below n when a strategy found fewer) and ``chance`` the value
    a random ranker gets (:func:`chance_rows`); ``same_as`` names a strategy with identical values.
    With ``per_fact`` (``{suite: {model: per-fact table}}``) the :data:`FACT_HEADLINE` rows get the
    percentile bootstrap interval over facts (``ci_low``/``ci_high``) and ``n_facts``, and so does
    PLAUSIBILITY (recomputed from its per-fact parts in every replicate); the BELIEF measures over
    sampled prompt sets (Acc mean, Consist, Ovconf) keep empty intervals.
    """
    rows = []
    for suite, summary in summaries.items():
        sub = summary[(summary["measure"].isin(HEADLINE)) & (summary["bin"] == -1)]
        if sub.empty:
            continue
        keys = ["measure", "strategy", "n", "model"]
        agg = sub.groupby(keys, sort=True, dropna=False)["value"].mean().reset_index()
        extra = summary[summary["bin"] == -1].groupby(keys, sort=True)["value"].mean()
        is_k = agg["measure"].isin(["k_min", "k_avg"])
        lookup = agg[["strategy", "n", "model"]]
        agg["n_used"] = extra.reindex(
            pd.MultiIndex.from_frame(lookup.assign(measure="n_used")[keys])
        ).to_numpy()
        chance_keys = lookup.assign(measure=agg["measure"] + "_chance")[keys]
        agg["chance"] = extra.reindex(pd.MultiIndex.from_frame(chance_keys)).to_numpy()
        agg.loc[~is_k, ["n_used", "chance"]] = np.nan
        same = coinciding_strategies(summary)
        agg["same_as"] = [same.get(name, "") for name in agg["strategy"]]
        agg.insert(0, "suite", suite)
        agg = agg.merge(_intervals((per_fact or {}).get(suite, {}), bootstrap), on=keys, how="left")
        rows.append(agg)
    if not rows:
        return pd.DataFrame(columns=BOARD_COLUMNS)
    board = pd.concat(rows, ignore_index=True)
    key = board["value"].where(~board["measure"].isin(["mean_rank"]), -board["value"])
    key = key.where(board["measure"] != "belief_ovconf", -board["value"].abs())
    board["rank"] = (
        key.groupby([board["suite"], board["measure"], board["strategy"], board["n"]])
        .rank(ascending=False, method="min")
        .astype("Int64")
    )
    board["n_facts"] = board["n_facts"].astype("Int64")
    board[["ci_low", "ci_high"]] = board[["ci_low", "ci_high"]].astype(float)
    board = board.sort_values(["suite", "measure", "strategy", "n", "rank", "model"], ignore_index=True)
    return board[BOARD_COLUMNS]


def _intervals(per_model: Mapping[str, pd.DataFrame], bootstrap: Bootstrap) -> pd.DataFrame:
    """ci_low, ci_high, n_facts per (measure, strategy, n, model) of one suite's per-fact tables."""
    parts = []
    for model, table in per_model.items():
        found = _suite_intervals(headline_per_fact(table), bootstrap)
        parts.append(found.drop(columns="value").assign(model=model))
    columns = ["measure", "strategy", "n", "model", "ci_low", "ci_high", "n_facts"]
    if not parts:
        return pd.DataFrame(columns=columns).astype({"n": "int64", "n_facts": "Int64"})
    out = pd.concat(parts, ignore_index=True)[columns]
    return out.astype({"strategy": str, "n": "int64"})


PAIRED_COLUMNS = ["suite", *uncertainty.PAIRED_COLUMNS]


def paired_comparisons(
    per_fact: Mapping[str, Mapping[str, pd.DataFrame]], bootstrap: Bootstrap = Bootstrap()
) -> pd.DataFrame:
    """Every pair of models on every suite and :data:`FACT_HEADLINE` (measure, strategy, n): the
    difference a - b on the facts both were scored on, its paired percentile bootstrap interval
    and two-sided p-value (:func:`factprobe.metrics.uncertainty.paired_difference`). For
    ``mean_rank`` a negative difference favours model a (lower is better)."""
    parts = []
    for suite, per_model in per_fact.items():
        if len(per_model) < 2:
            continue
        tables = {m: headline_per_fact(t) for m, t in per_model.items()}
        args = (bootstrap.samples, bootstrap.seed, bootstrap.level)
        found = paired_table(tables, FACT_HEADLINE, GROUP_KEYS, *args)
        plaus = {m: plausibility_rows(t) for m, t in tables.items()}
        if all(not t.empty for t in plaus.values()):
            extra = paired_table(
                plaus, ["plausibility"], PLAUSIBILITY_GROUPS, *args, outer_keys=PLAUSIBILITY_OUTER
            )
            found = pd.concat([found, extra], ignore_index=True)
        parts.append(found.assign(suite=suite))
    if not parts:
        return pd.DataFrame(columns=PAIRED_COLUMNS)
    return pd.concat(parts, ignore_index=True)[PAIRED_COLUMNS]


# --------------------------------------------------------------------------- control check

#: Measures of the control check: K per split against n (the verdict uses k_avg at the largest n).
CHECK_MEASURES = ("k_avg", "k_min")
CHECK_COLUMNS = [
    "measure",
    "strategy",
    "n",
    "split",
    "value",
    "facts",
    "n_used",
    "chance",
    "low",
    "high",
    "verdict",
    "ci_low",
    "ci_high",
]


def control_check(
    per_fact: pd.DataFrame,
    control_strategy: str = "random",
    taught_target: float = 0.9,
    chance_band: float = 0.15,
    bootstrap_samples: int = 1000,
    bootstrap_seed: int = 0,
    confidence_level: float = 0.95,
) -> pd.DataFrame:
    """The control model's taught/untaught check on one suite (results/metrics/{suite}/control_check.csv).

    ``per_fact`` is the control model's per-fact table (with ``split``). Rows with an empty
    ``verdict``: Min@n and Avg@n per strategy, n and split, each the mean over facts (a fact's
    prompt groups are averaged first, so each fact weighs once), with ``facts`` counted,
    ``n_used`` the mean distractors compared and ``chance`` the random-ranker value. Two more rows
    hold the verdict, on Avg@n at the largest n of ``control_strategy`` (all strategies pooled when the
    suite has no such strategy): taught facts must reach ``taught_target`` (``low``; ``high`` 1),
    untaught facts must lie within ``chance_band`` of chance, since a model that never saw them
    ranks their object like a random ranker. ``verdict`` is "pass" or "FAIL" there. Every row
    carries the percentile bootstrap interval of its mean over facts (``ci_low``/``ci_high``,
    ``bootstrap_samples`` replicates): a verdict on few facts shows a wide interval.
    """
    wanted = [*CHECK_MEASURES, "n_used", *(f"{m}_chance" for m in CHECK_MEASURES)]
    data = per_fact[per_fact["measure"].isin(wanted) & per_fact["split"].isin(["taught", "untaught"])]
    if not (data["measure"] == "k_avg").any():
        raise ValueError(
            "control check: no k_avg rows on taught/untaught facts; is 'knowledge' among the suite's "
            "metrics.families and does facts.parquet carry the split?"
        )
    per_fact_means = data.groupby(["strategy", "n", "split", "fact_id", "measure"])["value"].mean()
    wide = per_fact_means.unstack("measure").reset_index()

    def curves(frame: pd.DataFrame, by: list[str]) -> pd.DataFrame:
        parts = []
        for measure in CHECK_MEASURES:
            if measure not in frame.columns:
                continue
            sub = frame.dropna(subset=[measure])
            agg = sub.groupby(by, sort=True).agg(
                value=(measure, "mean"),
                facts=("fact_id", "nunique"),
                n_used=("n_used", "mean"),
                chance=(f"{measure}_chance", "mean"),
            )
            bounds = {
                key: _mean_interval(group[measure].to_numpy(float))
                for key, group in sub.groupby(by, sort=True)
            }
            agg["ci_low"] = [bounds[k][0] for k in agg.index]
            agg["ci_high"] = [bounds[k][1] for k in agg.index]
            parts.append(agg.reset_index().assign(measure=measure))
        return pd.concat(parts, ignore_index=True)

    def _mean_interval(values: np.ndarray) -> tuple[float, float]:
        reps = np.concatenate(
            [
                w @ values / len(values)
                for w in resample_counts(len(values), bootstrap_samples, bootstrap_seed)
            ]
        )
        return percentile_interval(reps, confidence_level)

    table = curves(wide, ["strategy", "n", "split"]).assign(low=np.nan, high=np.nan, verdict="")
    avg = wide.dropna(subset=["k_avg"])
    strategy = control_strategy
    if strategy in set(avg["strategy"]):
        avg = avg[avg["strategy"] == strategy]
    else:
        log.warning("control check: no %r distractors; the verdict pools every strategy", strategy)
        strategy = "pooled"
    largest = int(avg["n"].max())
    # A fact's value is the mean over its prompt groups and (when pooled) its strategies.
    one = (
        avg[avg["n"] == largest]
        .groupby(["split", "fact_id"], as_index=False)[["k_avg", "n_used", "k_avg_chance"]]
        .mean()
    )
    verdict = curves(one.assign(strategy=strategy, n=largest), ["strategy", "n", "split"])
    verdict = verdict[verdict["measure"] == "k_avg"]
    untaught = verdict["split"] == "untaught"
    verdict["low"] = np.where(untaught, verdict["chance"] - chance_band, taught_target)
    verdict["high"] = np.where(untaught, verdict["chance"] + chance_band, 1.0)
    ok = (verdict["value"] >= verdict["low"] - 1e-12) & (verdict["value"] <= verdict["high"] + 1e-12)
    verdict["verdict"] = np.where(ok, "pass", "FAIL")
    out = pd.concat([table, verdict], ignore_index=True)
    out["facts"] = out["facts"].astype("int64")
    out["n"] = out["n"].astype("int64")
    return out[CHECK_COLUMNS]


def read_control_check(path: str | Path) -> pd.DataFrame:
    """Read control_check.csv (empty verdict cells stay "")."""
    frame = pd.read_csv(path, dtype={"strategy": str, "split": str, "verdict": str}, keep_default_na=False)
    for col in ("value", "n_used", "chance", "low", "high"):
        frame[col] = pd.to_numeric(frame[col].replace("", np.nan), errors="coerce")
    return frame
