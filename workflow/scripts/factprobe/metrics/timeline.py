"""Per-slice curves of a timeline suite and a model's effective cut-off from them.

**Curve.** A slice's value is the mean over its facts of the per-fact value (a fact's rows of
the measure averaged first, so every fact weighs the same), with the percentile bootstrap
interval over the slice's facts (:mod:`factprobe.metrics.uncertainty`, facts resampled).

**Effective cut-off.** The segments, in time order, are the static control slice (when given:
facts the model should know whatever its cut-off) and the dated slices 1..N, slice i covering
``(t_{i-1}, t_i]``. A model with cut-off inside the series knows the segments up to some slice
k and fewer facts after it: a single drop in the mean of the per-fact values. The fit
(ruptures' ``CostL2``, the least-squares cost of a piecewise-constant mean) tries one break at
every segment boundary and keeps the cheapest (with equal segment sizes this is
``ruptures.Dynp(model="l2", jump=size, min_size=size).predict(n_bkps=1)``; here segments may
differ in size, so the admissible breaks are listed instead). The break is accepted when

* the mean after it is lower than before it (a model does not un-learn old facts), and
* the cost it saves exceeds ``penalty * sigma2 * ln(T)``, the BIC-type penalty of one extra
  mean (``sigma2`` = the residual variance of the one-break fit, ``T`` facts in all).

The estimate is the index ``k`` of the last known slice (0 = only the static slice, that is
none of the dated slices: a cut-off at or before ``t_0``) and its date ``t_k``. When no break
is accepted the estimator returns ``k = N``, status ``none``, date empty: **no cut-off within the
series** (the model knows the newest slice as well as the older ones; its cut-off is after
``t_N`` or it does not depend on time). The interval resamples facts within each segment
(``samples`` replicates), refits, and takes the 2.5 % and 97.5 % quantiles of ``k`` (lower and
higher order statistics, so they are slice indices; ``N`` for "none").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from factprobe.metrics.uncertainty import percentile_interval, resample_counts

#: Label of the undated control slice (the probes stage's ``timeline.STATIC``).
STATIC = "static"
#: Label of the anchors, static facts about the dated facts' subjects that only decide which
#: subjects a model knows (the probes stage's ``timeline.ANCHOR``): no curve holds them.
ANCHOR = "anchor"
UNDATED = (STATIC, ANCHOR)

#: Status of an estimate: a break inside the series, or none (see the module docstring); a
#: dated slice without any fact with a value (a model with no scores there) gets no estimate.
WITHIN, NONE, INSUFFICIENT = "within", "none", "insufficient"


@dataclass(frozen=True)
class Cutoff:
    """An effective cut-off: ``index`` k (slices known), its ``date`` (None for ``none``), the
    interval ``low``..``high`` (indices) and the share of replicates with no break."""

    index: int
    date: int | None
    status: str
    low: int
    high: int
    low_date: int | None
    high_date: int | None
    share_none: float
    means: tuple[float, float] | None = None


def fact_values(
    per_fact: pd.DataFrame, measure: str, strategy: str | None = None, n: int | None = None
) -> pd.Series:
    """One value per fact: the mean of its rows of ``measure`` (and ``strategy``/``n`` if given)."""
    rows = per_fact[per_fact["measure"] == measure]
    if strategy is not None:
        rows = rows[rows["strategy"].astype(str) == str(strategy)]
    if n is not None:
        rows = rows[pd.to_numeric(rows["n"], errors="coerce") == n]
    rows = rows[np.isfinite(pd.to_numeric(rows["value"], errors="coerce"))]
    return rows.groupby("fact_id")["value"].mean()


def slice_curve(
    values: pd.Series, slices: pd.Series, samples: int = 1000, seed: int = 0, level: float = 0.95
) -> pd.DataFrame:
    """``slice, value, ci_low, ci_high, n_facts`` per slice label of ``slices`` (fact_id -> label)
    over the facts with a value; the interval resamples the slice's facts."""
    joined = pd.DataFrame({"value": values}).join(slices.rename("slice"), how="inner")
    rows = []
    for label, group in joined.groupby("slice", sort=True):
        v = group["value"].to_numpy(dtype=np.float64)
        reps = np.concatenate([w @ v / len(v) for w in resample_counts(len(v), samples, seed)])
        low, high = percentile_interval(reps, level)
        rows.append((label, float(v.mean()), low, high, len(v)))
    return pd.DataFrame(rows, columns=["slice", "value", "ci_low", "ci_high", "n_facts"])


def _l2(signal: np.ndarray):
    import ruptures as rpt

    return rpt.costs.CostL2().fit(signal.reshape(-1, 1))


def fit_break(
    segments: Sequence[np.ndarray], first: int, penalty: float = 2.0
) -> tuple[int, tuple[float, float] | None]:
    """One-break fit over ``segments`` (module docstring): the number of segments before the
    accepted break, counted from ``first`` (the index of ``segments[0]``), or ``first +
    len(segments) - 1`` when none is accepted; with the means before/after the break."""
    sizes = np.array([len(s) for s in segments])
    last = first + len(segments) - 1
    if (sizes == 0).any():
        raise ValueError("timeline: a slice has no fact with a value")
    signal = np.concatenate(segments).astype(np.float64)
    total = len(signal)
    cost = _l2(signal)
    flat = cost.error(0, total)
    bounds = np.cumsum(sizes)[:-1]
    best, best_cost = None, np.inf
    for b in bounds:
        c = cost.error(0, int(b)) + cost.error(int(b), total)
        if c < best_cost - 1e-12:
            best, best_cost = int(b), c
    if best is None:
        return last, None
    before, after = float(signal[:best].mean()), float(signal[best:].mean())
    sigma2 = best_cost / total
    gain = flat - best_cost
    if after >= before or gain <= penalty * max(sigma2, 1e-12) * np.log(total):
        return last, None
    k = first + int(np.searchsorted(bounds, best))
    return k, (before, after)


def estimate_cutoff(
    dated: Sequence[np.ndarray],
    edges: Sequence[int],
    static: np.ndarray | None = None,
    penalty: float = 2.0,
    samples: int = 200,
    seed: int = 0,
    level: float = 0.95,
) -> Cutoff:
    """The effective cut-off from per-fact values of the dated slices 1..N (in time order) and
    of the static slice; ``edges`` = t_0..t_N (module docstring)."""
    n = len(dated)
    if len(edges) != n + 1:
        raise ValueError(f"timeline: {n} dated slices need {n + 1} dates, got {len(edges)}")
    segments = ([np.asarray(static, dtype=np.float64)] if static is not None else []) + [
        np.asarray(d, dtype=np.float64) for d in dated
    ]
    first = 0 if static is not None else 1
    k, means = fit_break(segments, first, penalty)
    rng = np.random.default_rng(seed)
    reps = np.empty(samples, dtype=np.int64)
    for r in range(samples):
        drawn = [s[rng.integers(0, len(s), len(s))] for s in segments]
        reps[r] = fit_break(drawn, first, penalty)[0]
    alpha = (1 - level) / 2
    low = int(np.quantile(reps, alpha, method="lower"))
    high = int(np.quantile(reps, 1 - alpha, method="higher"))

    def date(i: int) -> int | None:
        return None if i >= n else int(edges[i])

    return Cutoff(
        index=k,
        date=date(k),
        status=NONE if k >= n else WITHIN,
        low=low,
        high=high,
        low_date=date(low),
        high_date=date(high),
        share_none=float(np.mean(reps >= n)),
        means=means,
    )


#: Columns of ``results/metrics/{suite}/timeline.csv`` (docs/contracts.md).
TIMELINE_COLUMNS = [
    "model",
    "measure",
    "strategy",
    "n",
    "slice",
    "slice_start",
    "slice_end",
    "value",
    "ci_low",
    "ci_high",
    "n_facts",
    "cutoff",
    "cutoff_low",
    "cutoff_high",
    "cutoff_status",
    "cutoff_index",
    "cutoff_index_low",
    "cutoff_index_high",
    "share_none",
    "declared_cutoff",
    "after_declared",
    "known_value",
    "known_ci_low",
    "known_ci_high",
    "known_n_facts",
]


def series_edges(facts: pd.DataFrame) -> list[int]:
    """t_0..t_N of a timeline suite's facts: the first dated slice's start, then every end."""
    dated = facts[~facts["slice"].isin(UNDATED)][["slice_start", "slice_end"]].drop_duplicates()
    dated = dated.astype("int64").sort_values("slice_end")
    return [int(dated["slice_start"].iloc[0]), *(int(e) for e in dated["slice_end"])]


def model_timeline(
    per_fact: pd.DataFrame,
    facts: pd.DataFrame,
    measure: str,
    strategy: str | None = None,
    n: int | None = None,
    penalty: float = 2.0,
    samples: int = 1000,
    seed: int = 0,
    level: float = 0.95,
) -> tuple[pd.DataFrame, Cutoff]:
    """One model's curve (a row per slice, static last; the anchors in none) and its effective
    cut-off."""
    facts = facts[facts["slice"] != ANCHOR]
    values = fact_values(per_fact, measure, strategy, n)
    slices = facts.set_index("fact_id")["slice"]
    curve = slice_curve(values, slices, samples, seed, level)
    bounds = facts.drop_duplicates("slice").set_index("slice")[["slice_start", "slice_end"]]
    curve = curve.join(bounds, on="slice")
    edges = series_edges(facts)
    joined = pd.DataFrame({"value": values}).join(slices.rename("slice"), how="inner")
    by_slice = {label: g["value"].to_numpy() for label, g in joined.groupby("slice")}
    dated = [by_slice.get(str(e), np.zeros(0)) for e in edges[1:]]
    if any(len(d) == 0 for d in dated):
        cut = Cutoff(-1, None, INSUFFICIENT, -1, -1, None, None, float("nan"))
    else:
        # the fit is refitted per replicate: at most 200 of them
        cut = estimate_cutoff(dated, edges, by_slice.get(STATIC), penalty, min(samples, 200), seed, level)
    order = {str(e): i for i, e in enumerate(edges[1:])} | {STATIC: len(edges)}
    curve = curve.sort_values("slice", key=lambda s: s.map(order)).reset_index(drop=True)
    return curve, cut


def after_declared(curve: pd.DataFrame, declared: str) -> np.ndarray:
    """Whether each slice lies wholly after a declared cut-off (YYYYMMDD; empty: none): its facts
    became true after the model's data ends, a contamination-free subset for that model, which
    grows with each new dump. The static slice never is."""
    if not declared:
        return np.zeros(len(curve), dtype=bool)
    start = pd.to_numeric(curve["slice_start"], errors="coerce")
    return (start >= int(declared)).fillna(False).to_numpy(dtype=bool)


def known_curve(
    curve: pd.DataFrame,
    per_fact: pd.DataFrame,
    facts: pd.DataFrame,
    block: dict,
    samples: int = 1000,
    seed: int = 0,
    level: float = 0.95,
) -> pd.DataFrame:
    """``curve`` with the known-subject curve beside it (``known_*``): each dated slice's facts
    whose subject the model knows (:func:`factprobe.metrics.cutoff_profile.subject_known`); the
    static slice, which decides what is known, gets none (NaN, 0 facts)."""
    from factprobe.metrics.cutoff_profile import subject_known

    values = fact_values(per_fact, block["measure"], block.get("strategy"), block.get("n"))
    values.index = values.index.astype(str)
    known = subject_known(
        values, facts, float(block.get("subject_threshold", 0.75)), int(block.get("subject_min_facts", 1))
    )
    kept = values[values.index.isin(known.index[known.to_numpy()])]
    slices = facts.astype({"fact_id": str}).set_index("fact_id")["slice"]
    empty = pd.DataFrame(columns=["slice", "value", "ci_low", "ci_high", "n_facts"])
    sub = slice_curve(kept, slices, samples, seed, level) if len(kept) else empty
    sub = sub.rename(
        columns={
            "value": "known_value",
            "ci_low": "known_ci_low",
            "ci_high": "known_ci_high",
            "n_facts": "known_n_facts",
        }
    ).set_index("slice")
    out = curve.join(sub[["known_value", "known_ci_low", "known_ci_high", "known_n_facts"]], on="slice")
    out["known_n_facts"] = out["known_n_facts"].fillna(0).astype("int64")
    return out


def timeline_table(
    per_fact: dict[str, pd.DataFrame],
    facts: pd.DataFrame,
    block: dict,
    declared: dict[str, str | None],
    samples: int = 1000,
    seed: int = 0,
    level: float = 0.95,
) -> pd.DataFrame:
    """``timeline.csv``: every model's curve rows with its cut-off estimate, its interval and
    its declared cut-off (models.tsv ``cutoff``, YYYYMMDD; empty when none) on each row.
    ``cutoff_index`` k counts the dated slices known (N: none within the series, and then the
    ``cutoff`` date is empty); likewise the interval's ends. ``known_*``: the known-subject
    curve beside it (:func:`known_curve`)."""
    rows = []
    for model in sorted(per_fact):
        curve, cut = model_timeline(
            per_fact[model],
            facts,
            block["measure"],
            block.get("strategy"),
            block.get("n"),
            block.get("penalty", 2.0),
            samples,
            seed,
            level,
        )
        curve.insert(0, "model", model)
        curve["measure"] = block["measure"]
        curve["strategy"] = block.get("strategy") or ""
        curve["n"] = block.get("n") or 0
        curve["cutoff"] = cut.date
        curve["cutoff_low"] = cut.low_date
        curve["cutoff_high"] = cut.high_date
        curve["cutoff_status"] = cut.status
        curve["cutoff_index"] = cut.index
        curve["cutoff_index_low"] = cut.low
        curve["cutoff_index_high"] = cut.high
        curve["share_none"] = cut.share_none
        curve["declared_cutoff"] = (declared.get(model) or "").replace("-", "")
        curve["after_declared"] = after_declared(curve, curve["declared_cutoff"].iloc[0])
        rows.append(known_curve(curve, per_fact[model], facts, block, samples, seed, level))
    table = pd.concat(rows, ignore_index=True) if rows else pd.DataFrame(columns=TIMELINE_COLUMNS)
    # dates as YYYYMMDD text, empty where there is none (static slice, no cut-off)
    for col in ("slice_start", "slice_end", "cutoff", "cutoff_low", "cutoff_high"):
        table[col] = [("" if pd.isna(v) else str(int(v))) for v in table[col]]
    return table[TIMELINE_COLUMNS]


#: Columns of ``results/metrics/{suite}/after_cutoff.csv`` (docs/contracts.md).
AFTER_CUTOFF_COLUMNS = [
    "model",
    "declared_cutoff",
    "measure",
    "strategy",
    "n",
    "value",
    "ci_low",
    "ci_high",
    "n_facts",
    "slices",
]


def declared_date(declared: str | None) -> str:
    """models.tsv ``cutoff`` (YYYY-MM-DD or YYYYMMDD; empty or None: none) as YYYYMMDD text."""
    return (declared or "").replace("-", "")


def slices_after(facts: pd.DataFrame, declared: str) -> list[str]:
    """The dated slices of a timeline suite's ``facts`` that start on or after ``declared``
    (YYYYMMDD), in time order: every one of their facts became true after the model's data ends."""
    dated = facts[~facts["slice"].isin(UNDATED)].drop_duplicates("slice")
    start = pd.to_numeric(dated["slice_start"], errors="coerce")
    chosen = dated[(start >= int(declared)).fillna(False).to_numpy(dtype=bool)]
    return [str(s) for s in chosen.sort_values("slice_end")["slice"]]


def after_cutoff_table(
    per_fact: dict[str, pd.DataFrame],
    facts: pd.DataFrame,
    declared: dict[str, str | None],
    measures: Sequence[str],
    samples: int = 1000,
    seed: int = 0,
    level: float = 0.95,
) -> pd.DataFrame:
    """``after_cutoff.csv``: each model's own contamination-free suite. For every model with a
    declared cut-off (models.tsv ``cutoff``), the facts of the timeline suite's slices starting on
    or after it (:func:`slices_after`) measured for that model: per (measure, strategy, n) of
    ``measures`` (the fact-level headline measures) the value pooled over prompt groups as the
    leaderboard pools it, its percentile bootstrap interval over exactly those facts
    (:func:`factprobe.metrics.uncertainty.interval_table`), ``n_facts`` and the slices used
    (``;``-joined). A model whose cut-off no slice starts after yet gets one row with an empty
    measure, ``n_facts`` 0: its suite fills as later dumps add slices. Models without a declared
    cut-off get no row."""
    from factprobe.metrics.common import GROUP_KEYS
    from factprobe.metrics.uncertainty import interval_table

    rows = []
    for model in sorted(per_fact):
        date = declared_date(declared.get(model))
        if not date:
            continue
        used = slices_after(facts, date)
        ids = facts.loc[facts["slice"].isin(used), "fact_id"]
        table = per_fact[model]
        found = interval_table(table[table["fact_id"].isin(ids)], measures, GROUP_KEYS, samples, seed, level)
        if found.empty:
            found = pd.DataFrame([{"measure": "", "strategy": "", "n": 0, "n_facts": 0}])
        found.insert(0, "model", model)
        found.insert(1, "declared_cutoff", date)
        found["slices"] = ";".join(used)
        rows.append(found)
    if not rows:
        return pd.DataFrame(columns=AFTER_CUTOFF_COLUMNS)
    out = pd.concat(rows, ignore_index=True).reindex(columns=AFTER_CUTOFF_COLUMNS)
    return out.astype({"strategy": str, "n": "int64", "n_facts": "int64"})
