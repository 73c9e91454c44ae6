"""Put the measures together: per-fact and suite-level tables, summaries, leaderboard.

``compute_suite_metrics`` is what rule ``compute_metrics`` runs for one (suite, model); which
measure families run is chosen per suite kind (config ``metrics.families``).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

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
    entity_scores,
    object_slot_only,
    prompt_frame,
    require_columns,
)
from .knowledge import dropped_fact_counts, knowledge_per_fact
from .meta import configuration_grid, verbalization_robustness
from .plausibility import plausibility_per_fact, plausibility_score
from .ranking import ranking_per_fact

log = logging.getLogger(__name__)

FAMILIES = ("knowledge", "ranking", "plausibility", "belief", "belief_icl")

DEFAULT_FAMILIES = {
    "knowledge": ["knowledge", "ranking", "belief"],
    "multiprompt": ["belief", "belief_icl", "knowledge"],
    "plausibility": ["plausibility"],
    "multilingual": ["ranking", "knowledge"],
}


@dataclass
class Settings:
    """Measure settings (config ``metrics``; see config/README.md, section metrics)."""

    ns: Sequence[int] = (1, 2, 3, 5, 10)
    precision_ns: Sequence[int] = (1, 5, 10)
    recall_ns: Sequence[int] = (1, 2, 3, 4, 5)
    # Retrieval writes Temp+Sem as strategy temp+sem already (§3.3); extra concatenations only on request.
    combined_strategies: Mapping[str, Sequence[str]] = field(default_factory=dict)
    plausibility_strategies: Sequence[str] = ("cooccur",)
    ndcg_gain: str = "exponential"
    # BELIEF §5.1: N = 50,000 samplings; the demo config sets a small N.
    belief_samplings: int = 50_000
    belief_bins: int = 10
    robustness_pair: Sequence[str] = ("template", "sentence")
    # Fewer than n distractors: K at n undefined (reference implementation) or "available".
    short_lists: str = "undefined"

    @classmethod
    def from_config(cls, section: Mapping | None) -> Settings:
        """Settings from the config section (absent keys keep their defaults)."""
        section = dict(section or {})
        known = {k: section[k] for k in cls.__dataclass_fields__ if k in section}
        return cls(**known)


@dataclass
class SuiteInputs:
    """The tables one (suite, model) job reads; ``generations`` and ``forms`` may be None."""

    scores: pd.DataFrame
    prompts: pd.DataFrame
    candidates: pd.DataFrame
    facts: pd.DataFrame
    generations: pd.DataFrame | None = None
    forms: pd.DataFrame | None = None
    split: pd.DataFrame | None = None
    topk: pd.DataFrame | None = None


def read_inputs(paths: Mapping[str, str | Path | Iterable[str | Path] | None]) -> SuiteInputs:
    """Read the Parquet inputs named in ``paths`` (keys as in ``SuiteInputs``; lists are concatenated).

    ``candidates`` may be a list (e.g. the suite's candidates plus the model's ApprOpt list).
    """
    from ..io import read_table

    def load(value):
        if value is None or (isinstance(value, (list, tuple)) and not value):
            return None
        items = [value] if isinstance(value, (str, Path)) else list(value)
        return pd.concat([read_table(p).to_pandas() for p in items], ignore_index=True)

    tables = {key: load(paths.get(key)) for key in SuiteInputs.__dataclass_fields__}
    for key in ("scores", "prompts", "candidates", "facts"):
        if tables[key] is None:
            raise ValueError(f"metrics: input {key!r} is required")
    require_columns(tables["candidates"], ["fact_id", "entity", "role", "strategy", "rank"], "candidates")
    require_columns(tables["facts"], ["fact_id", "subject", "property", "object"], "facts")
    return SuiteInputs(**tables)


def attach_split(per_fact: pd.DataFrame, facts: pd.DataFrame, split: pd.DataFrame | None) -> pd.DataFrame:
    """Add the fact's ``split`` (taught/untaught): the control model's own split file first (it
    records what was really taught), else the suite's ``facts.split``, else ""."""
    table = per_fact.drop(columns=["split"], errors="ignore")
    keyed = pd.Series(dtype=str)
    if facts is not None and "split" in facts.columns:
        keyed = facts.astype({"fact_id": str}).set_index("fact_id")["split"].astype(str)
    if split is not None and not split.empty:
        s = split.astype(str)
        own = pd.Series(s["split"].to_numpy(), index=s["subject"] + "|" + s["property"] + "|" + s["object"])
        own = own[~own.index.duplicated()]
        keyed = pd.concat([own, keyed[~keyed.index.isin(own.index)]])
    table["split"] = (
        table["fact_id"]
        .map(keyed.astype(object))
        .astype(object)
        .where(table["fact_id"].isin(keyed.index), "")
        .astype(str)
    )
    return table


def compute_suite_metrics(
    inputs: SuiteInputs, settings: Settings, families: Sequence[str]
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(per-fact table, suite-level table) for one suite and model.

    Per-fact: FACT_COLUMNS + ``split``; suite-level: DATASET_COLUMNS (BELIEF fluctuation,
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
    ent = entity_scores(inputs.scores)
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
                scores=inputs.scores,
                short_lists=settings.short_lists,
            )
        )
        dataset.append(dropped_fact_counts(per_fact[-1]))
    if "ranking" in families:
        per_fact.append(ranking_per_fact(ent, prompts, cands, correct, settings.recall_ns))
    if "plausibility" in families:
        plaus = plausibility_per_fact(
            ent, prompts, cands, facts, settings.plausibility_strategies, settings.ndcg_gain
        )
        per_fact.append(plaus)
        means = plaus.groupby([*GROUP_KEYS, "measure"])["value"].mean().reset_index()
        score = plausibility_score(means)
        if not score.empty:
            dataset.append(score.drop(columns="n_parts").assign(measure="plausibility", style=""))
    if "belief" in families:
        # §2.1: argmax over the vocabulary (needs the top-k table); belief_cand_*: the closed-set variant.
        pp = vocabulary_predictions(inputs.topk, inputs.scores, prompts, facts, correct)
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
    table = attach_split(table, facts, inputs.split)
    dataset.append(_robustness_rows(table, settings.robustness_pair))
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


def summarize(model: str, per_fact: pd.DataFrame, suite: pd.DataFrame) -> pd.DataFrame:
    """One model's summary rows: mean over facts of each per-fact measure, plus suite-level rows.

    Columns: model, measure, value, strategy, n, lang, verbalization, style, shots, bin,
    n_facts, level ("fact" or "suite").
    """
    means = (
        per_fact.groupby(SUMMARY_KEYS, sort=True)
        .agg(value=("value", "mean"), n_facts=("fact_id", "nunique"))
        .reset_index()
        .assign(bin=-1, level="fact")
    )
    suite_rows = suite.assign(n_facts=0, level="suite")
    out = pd.concat([means, suite_rows], ignore_index=True)
    out.insert(0, "model", model)
    return out[["model", "measure", "value", "strategy", "n", *GROUP_KEYS, "bin", "n_facts", "level"]]


def read_summary(path: str | Path) -> pd.DataFrame:
    """Read a summary.csv / leaderboard.csv: empty key cells stay "" (not NaN), values are floats."""
    frame = pd.read_csv(path, keep_default_na=False, dtype=str)
    for col in ("value",):
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


def leaderboard(summaries: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """Models side by side: headline measures per suite, pooled over languages and prompt groups.

    Input ``{suite: summary}``; output columns suite, measure, strategy, n, model, value, rank
    (1 = best; for ``mean_rank`` and ``|belief_ovconf|`` lower is better).
    """
    rows = []
    for suite, summary in summaries.items():
        sub = summary[(summary["measure"].isin(HEADLINE)) & (summary["bin"] == -1)]
        if sub.empty:
            continue
        agg = (
            sub.groupby(["measure", "strategy", "n", "model"], sort=True, dropna=False)["value"]
            .mean()
            .reset_index()
        )
        agg.insert(0, "suite", suite)
        rows.append(agg)
    if not rows:
        return pd.DataFrame(columns=["suite", "measure", "strategy", "n", "model", "value", "rank"])
    board = pd.concat(rows, ignore_index=True)
    key = board["value"].where(~board["measure"].isin(["mean_rank"]), -board["value"])
    key = key.where(board["measure"] != "belief_ovconf", -board["value"].abs())
    board["rank"] = (
        key.groupby([board["suite"], board["measure"], board["strategy"], board["n"]])
        .rank(ascending=False, method="min")
        .astype("Int64")
    )
    return board.sort_values(["suite", "measure", "strategy", "n", "rank", "model"], ignore_index=True)


# --------------------------------------------------------------------------- control check


def control_avg_by_split(
    metrics_path: str | Path,
    split_path: str | Path | None = None,
    n: int | None = None,
    strategy: str | None = "random",
    measure: str = "k_avg",
) -> dict[str, float]:
    """Avg@n of the control model on taught vs untaught facts, for the end-to-end workflow test.

    Reads ``results/metrics/<knowledge suite>/control.parquet``. ``n`` defaults to the largest n
    present; ``strategy`` to ``random`` when present (else all strategies pooled). The split comes
    from the table's ``split`` column, or from ``split_path`` (results/models/control/split.parquet)
    when given. Per-fact values are averaged over the fact's prompt groups first, so each fact
    weighs once. Returns ``{"taught": x, "untaught": y, "n": n, "facts_taught": ., "facts_untaught": .}``.
    The target (issue 7): taught >= 0.9, untaught within 0.5 ± 0.15.
    """
    from ..io import read_table

    table = read_table(metrics_path).to_pandas()
    sub = table[table["measure"] == measure]
    if sub.empty:
        raise ValueError(f"{metrics_path}: no {measure!r} rows; is 'knowledge' among metrics.families?")
    if strategy is not None and strategy in set(sub["strategy"]):
        sub = sub[sub["strategy"] == strategy]
    n = int(sub["n"].max()) if n is None else int(n)
    sub = sub[sub["n"] == n]
    if split_path is not None:
        split = read_table(split_path).to_pandas()
        sub = attach_split(sub, None, split)
    per_fact = sub.groupby(["fact_id", "split"])["value"].mean().reset_index()
    out: dict[str, float] = {"n": float(n)}
    for name in ("taught", "untaught"):
        part = per_fact[per_fact["split"] == name]["value"]
        out[name] = float(part.mean()) if len(part) else float("nan")
        out[f"facts_{name}"] = float(len(part))
    return out
