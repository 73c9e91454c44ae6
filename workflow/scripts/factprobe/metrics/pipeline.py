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
from factprobe.measures import MEASURES, chance_measures, fact_headline, headline
from factprobe.registries import FAMILIES, unknown_families
from factprobe.settings import Metrics

from . import fluent, uncertainty
from .common import (
    GROUP_KEYS,
    conform_dataset_table,
    conform_fact_table,
    correct_entities,
    correct_form_scores,
    entity_scores,
    object_slot_only,
    own_form_table,
    prompt_frame,
)
from .meta import configuration_grid, verbalization_robustness
from .plausibility import PARTS as PLAUSIBILITY_PARTS
from .uncertainty import interval_table, paired_table, percentile_interval, resample_counts

log = logging.getLogger(__name__)


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
    subject_swaps: pd.DataFrame | None = None
    #: The model's prepared folder, for its tokenizer (a masked LM's BELIEF matching, §2.1).
    tokenizer: str | None = None


def read_inputs(inputs: Mapping) -> SuiteInputs:
    """Read a compute_metrics job's named inputs (``snakemake.input`` or a dict of paths).

    ``scores`` and ``facts`` are single tables, ``generations``, ``topk`` and ``subject_swaps`` (sentence-mode
    suites) are optional, as is ``tokenizer`` (a masked LM's folder); the suite's merged
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
        subject_swaps=read_concat(inputs.get("subject_swaps"), "subject_swaps"),
        tokenizer=str(inputs["tokenizer"]) if "tokenizer" in inputs.keys() else None,
    )
    contracts.check(
        out.candidates, "candidates", "candidates", ["fact_id", "entity", "role", "strategy", "rank"]
    )
    contracts.check(out.facts, "facts", "facts", ["fact_id", "subject", "property", "object"])
    return out


def fact_splits(fact_ids: pd.Series, facts: pd.DataFrame) -> pd.Series:
    """The taught/untaught split of each fact id, from ``facts.split`` (the one source: the
    control model is trained on exactly these values, see scoring/control.fact_split); "" when
    the id is not in it."""
    keyed = facts.astype({"fact_id": str}).drop_duplicates("fact_id").set_index("fact_id")["split"]
    return fact_ids.map(keyed.astype(str)).fillna("").astype(str)


@dataclass
class SuiteFrame:
    """What a measure family reads (:data:`factprobe.registries.FAMILIES`): the job's inputs and
    settings, and the tables every family shares (prompts of the suite's facts, object-slot
    candidates, correct objects, form scores and per-entity scores)."""

    inputs: SuiteInputs
    settings: Metrics
    prompts: pd.DataFrame
    facts: pd.DataFrame
    candidates: pd.DataFrame
    correct: pd.DataFrame
    scores: pd.DataFrame
    entity_scores: pd.DataFrame


def suite_frame(inputs: SuiteInputs, settings: Metrics, correct_set: str = "wide") -> SuiteFrame:
    """The shared tables of one (suite, model) job."""
    prompts = prompt_frame(inputs.prompts)
    facts = inputs.facts.copy()
    facts["fact_id"] = facts["fact_id"].astype(str)
    prompts = prompts[prompts["fact_id"].isin(facts["fact_id"])]
    cands = object_slot_only(inputs.candidates).copy()
    cands["rank"] = pd.to_numeric(cands["rank"], errors="coerce").fillna(0)
    correct = correct_entities(facts)
    # fluent-mLAMA Table 1 vs §5.2: which forms of a correct object count (suites.<s>.correct_set).
    scores = correct_form_scores(inputs.scores, correct, inputs.forms, correct_set, own_form_table(facts))
    ent = entity_scores(scores)
    log.info("%d scored (prompt, entity) pairs over %d prompts", len(ent), ent["prompt_id"].nunique())
    return SuiteFrame(inputs, settings, prompts, facts, cands, correct, scores, ent)


def compute_suite_metrics(
    inputs: SuiteInputs, settings: Metrics, families: Sequence[str], correct_set: str = "wide"
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(per-fact table, suite-level table) for one suite and model.

    The suite's ``families`` run in :data:`factprobe.registries.FAMILIES` order. Per-fact:
    FACT_COLUMNS + ``split`` (from ``facts.split``), with the random-ranker chance of K as
    measures ``k_avg_chance``/``k_min_chance`` over the facts and sentences K averages
    (:func:`factprobe.metrics.knowledge.chance_per_prompt`); suite-level:
    DATASET_COLUMNS (BELIEF fluctuation, coverage, Ovconf and calibration bins; PLAUSIBILITY;
    robustness τ between verbalizations).
    """
    unknown = unknown_families(list(families))
    if unknown:
        raise ValueError(f"metrics.families: unknown family {unknown}; choose from {list(FAMILIES)}")
    frame = suite_frame(inputs, settings, correct_set)
    per_fact, dataset = [], []
    for name, entry in FAMILIES.items():
        if name in families:
            fact_parts, suite_parts = entry.code()(frame)
            per_fact += fact_parts
            dataset += suite_parts
    table = conform_fact_table(pd.concat(per_fact, ignore_index=True) if per_fact else pd.DataFrame())
    # §4.3 (Table 4): flawed vs hand-corrected verbalization of the same facts (robustness_tau:);
    # the configured pair (template vs MT sentence by default) is the project's variant (verbalization_tau:).
    dataset.append(_robustness_rows(table, ARTIFACT_PAIR, "robustness_tau"))
    dataset.append(_robustness_rows(table, settings.robustness_pair, "verbalization_tau"))
    table["split"] = fact_splits(table["fact_id"], frame.facts)
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


#: §4.3: the verbalizations of a ``source: verbalization-pairs`` suite (probes/listed.py).
ARTIFACT_PAIR = ("flawed", "corrected")


def _robustness_rows(table: pd.DataFrame, pair: Sequence[str], name: str) -> pd.DataFrame:
    """Kendall τ per measure and configuration between two verbalizations of the same facts,
    where both are present (§4.3; :func:`~factprobe.metrics.meta.verbalization_robustness`):
    measure ``<name>:<measure>``."""
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
                rows.append({"measure": f"{name}:{measure}", "value": tau, **config})
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
    """Read a summary.csv through its contract (:func:`factprobe.contracts.read_csv`)."""
    return contracts.read_csv("summary", path)


def coinciding_strategies(summary: pd.DataFrame) -> dict[str, str]:
    """Strategies whose every summary value equals an earlier strategy's (in sorted order), on
    the rows both have when one has a subset of the other's measures.

    Returns ``{strategy: earlier strategy}``, e.g. ``{"temp": "sem", "temp+sem": "sem"}`` when no
    fact has a temporal distractor and Temp falls back to Sem: their distractor lists coincide, so
    the report must not present them as independent results.
    """
    rows = summary[summary["strategy"].astype(str) != ""]
    keys = ["model", "measure", "n", *GROUP_KEYS, "bin"]
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


#: A suite's headline rows (contract ``headline``): the leaderboard's one source of values and intervals.
HEADLINE_COLUMNS = contracts.columns("headline")
BOARD_COLUMNS = contracts.columns("leaderboard")


@dataclass(frozen=True)
class Bootstrap:
    """Percentile bootstrap over facts: replicates, seed, coverage (config ``report``)."""

    samples: int = 1000
    seed: int = 0
    level: float = 0.95


def headline_per_fact(per_fact: pd.DataFrame) -> pd.DataFrame:
    """The rows of a per-fact table that feed the intervals (a smaller frame): the
    fact-level headline measures of :data:`factprobe.measures.MEASURES` and PLAUSIBILITY's parts
    (Acc., MRR, NDCG per fact and style)."""
    return per_fact[per_fact["measure"].isin([*fact_headline(), *PLAUSIBILITY_PARTS])]


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
    parts = [interval_table(table, fact_headline(), GROUP_KEYS, *args)]
    plaus = plausibility_rows(table)
    if not plaus.empty:
        parts.append(
            interval_table(plaus, ["plausibility"], PLAUSIBILITY_GROUPS, *args, outer_keys=PLAUSIBILITY_OUTER)
        )
    return pd.concat(parts, ignore_index=True)


def headline_table(
    summary: pd.DataFrame,
    per_model: Mapping[str, pd.DataFrame] | None = None,
    bootstrap: Bootstrap = Bootstrap(),
) -> pd.DataFrame:
    """One suite's headline rows (contract ``headline``, ``HEADLINE_COLUMNS``): each value next to
    its interval, the one table the leaderboard reads.

    ``value`` is the summary's mean over prompt groups (languages, verbalizations, styles, shots)
    of each headline measure; for K (``k_min``/``k_avg``) ``n_used`` is the mean number of
    distractors actually compared (below n when a strategy found fewer) and ``chance`` the value a
    random ranker gets (:func:`factprobe.metrics.knowledge.chance_per_prompt`), both over the
    facts the value averages; ``same_as`` names a strategy with identical values
    (:func:`coinciding_strategies`). With ``per_model`` (``{model: per-fact table}``) the
    fact-level headline rows get the percentile bootstrap interval over facts
    (``ci_low``/``ci_high``) and ``n_facts``, and so does PLAUSIBILITY (recomputed from its
    per-fact parts in every replicate); the BELIEF measures over sampled prompt sets (Acc mean,
    Consist, Ovconf) keep empty intervals.
    """
    sub = summary[(summary["measure"].isin(headline())) & (summary["bin"] == -1)]
    if sub.empty:
        return contracts.empty("headline")
    keys = ["measure", "strategy", "n", "model"]
    agg = sub.groupby(keys, sort=True, dropna=False)["value"].mean().reset_index()
    extra = summary[summary["bin"] == -1].groupby(keys, sort=True)["value"].mean()
    # Measures with a per-fact chance level (K): chance and distractors used per row.
    chance_of = chance_measures()
    is_k = agg["measure"].isin(list(chance_of))
    lookup = agg[["strategy", "n", "model"]]
    agg["n_used"] = extra.reindex(pd.MultiIndex.from_frame(lookup.assign(measure="n_used")[keys])).to_numpy()
    chance_keys = lookup.assign(measure=agg["measure"].map(chance_of).fillna(""))[keys]
    agg["chance"] = extra.reindex(pd.MultiIndex.from_frame(chance_keys)).to_numpy()
    agg.loc[~is_k, ["n_used", "chance"]] = np.nan
    same = coinciding_strategies(summary)
    agg["same_as"] = [same.get(name, "") for name in agg["strategy"]]
    board = agg.merge(_intervals(per_model or {}, bootstrap), on=keys, how="left")
    return board[HEADLINE_COLUMNS]


def leaderboard(headlines: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """Models side by side: every suite's :func:`headline_table` rows, ranked.

    Input ``{suite: headline table}``; output ``BOARD_COLUMNS``: the headline rows as they are
    (value and interval from the one table) with rank 1 = best, in the direction of each
    measure's :data:`factprobe.measures.MEASURES` entry.
    """
    rows = [table.assign(suite=suite) for suite, table in headlines.items() if len(table)]
    if not rows:
        return pd.DataFrame(columns=BOARD_COLUMNS)
    board = pd.concat(rows, ignore_index=True)
    # Rank 1 = best, in each measure's direction (factprobe.metrics.Measure.better_key).
    key = pd.Series(
        [MEASURES[m].better_key(v) for m, v in zip(board["measure"], board["value"], strict=True)],
        index=board.index,
        dtype=float,
    )
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
    """Every pair of models on every suite and fact-level headline (measure, strategy, n): the
    difference a - b on the facts both were scored on, its paired percentile bootstrap interval
    and two-sided p-value (:func:`factprobe.metrics.uncertainty.paired_difference`). Which sign
    favours model a: :meth:`factprobe.metrics.Measure.a_better` of the measure."""
    parts = []
    for suite, per_model in per_fact.items():
        if len(per_model) < 2:
            continue
        tables = {m: headline_per_fact(t) for m, t in per_model.items()}
        args = (bootstrap.samples, bootstrap.seed, bootstrap.level)
        found = paired_table(tables, fact_headline(), GROUP_KEYS, *args)
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
    boot = (bootstrap_samples, bootstrap_seed, confidence_level)
    table = _check_curves(wide, ["strategy", "n", "split"], boot).assign(low=np.nan, high=np.nan, verdict="")
    verdict = _check_verdict(wide, control_strategy, taught_target, chance_band, boot)
    out = pd.concat([table, verdict], ignore_index=True)
    out["facts"] = out["facts"].astype("int64")
    out["n"] = out["n"].astype("int64")
    return out[CHECK_COLUMNS]


def _check_curves(frame: pd.DataFrame, by: list[str], boot: tuple[int, int, float]) -> pd.DataFrame:
    """Mean over facts of each :data:`CHECK_MEASURES` per ``by`` group, with facts counted,
    distractors used, chance and the bootstrap interval of the mean."""
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
            key: _mean_interval(group[measure].to_numpy(float), *boot)
            for key, group in sub.groupby(by, sort=True)
        }
        agg["ci_low"] = [bounds[k][0] for k in agg.index]
        agg["ci_high"] = [bounds[k][1] for k in agg.index]
        parts.append(agg.reset_index().assign(measure=measure))
    return pd.concat(parts, ignore_index=True)


def _mean_interval(values: np.ndarray, samples: int, seed: int, level: float) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean of ``values``."""
    reps = np.concatenate([w @ values / len(values) for w in resample_counts(len(values), samples, seed)])
    return percentile_interval(reps, level)


def _check_verdict(
    wide: pd.DataFrame,
    control_strategy: str,
    taught_target: float,
    chance_band: float,
    boot: tuple[int, int, float],
) -> pd.DataFrame:
    """The two verdict rows: Avg@n at the largest n of ``control_strategy`` (every strategy pooled
    when the suite has none) on taught facts against ``taught_target``, on untaught facts against
    chance ± ``chance_band``."""
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
    verdict = _check_curves(one.assign(strategy=strategy, n=largest), ["strategy", "n", "split"], boot)
    verdict = verdict[verdict["measure"] == "k_avg"]
    untaught = verdict["split"] == "untaught"
    verdict["low"] = np.where(untaught, verdict["chance"] - chance_band, taught_target)
    verdict["high"] = np.where(untaught, verdict["chance"] + chance_band, 1.0)
    ok = (verdict["value"] >= verdict["low"] - 1e-12) & (verdict["value"] <= verdict["high"] + 1e-12)
    verdict["verdict"] = np.where(ok, "pass", "FAIL")
    return verdict


def read_control_check(path: str | Path) -> pd.DataFrame:
    """Read control_check.csv through its contract (empty verdict cells stay "")."""
    return contracts.read_csv("control_check", path)
