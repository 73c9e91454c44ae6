"""A model's cut-off profile on a timeline suite: where its knowledge stops, how sharply, and
whether the curve falls at all in the way a cut-off makes it fall.

The input is one value per fact (its measure, :func:`factprobe.metrics.timeline.fact_values`)
for the dated slices 1..N in time order (slice i covers ``(t_{i-1}, t_i]``) and, optionally,
for the static control slice. Slices sit at **positions** on one axis: dated slice i at i, the
static slice at 0, so a position is also a cut-off index (k = slices known) and position i maps
to the date t_i (between positions, days are interpolated linearly).

**Change point.** The one-break fit of :func:`factprobe.metrics.timeline.estimate_cutoff`
(ruptures' ``CostL2``, BIC-type penalty, bootstrap interval of the index): ``index`` k, its date
``t_k``, the interval, status ``within`` or ``none`` (no accepted drop: no cut-off within the
series).

**Decay.** A *ramp* is the monotone curve that stays at a level ``L`` up to position ``a``,
falls linearly to ``F < L`` at position ``b > a`` and stays there; ``a`` and ``b`` are slice
positions. The fitted ramp minimises the squared error over the facts (equivalently the
fact-count-weighted squared error of the slice means); for every pair ``(a, b)`` the levels are
the closed-form least-squares solution (``numpy.linalg.solve`` of the 2x2 normal equations) and
the best pair is taken, an exhaustive search like the change point's. ``L`` is the pre-cut-off
level and ``F`` the floor. The curve has fallen 10 % of the way from ``L`` to ``F`` at ``a +
0.1 (b - a)`` and 90 % at ``a + 0.9 (b - a)``: the **decay width** is ``0.8 (b - a)`` slices,
and in days the span between the dates of those two positions. A drop between two adjacent
slices (``b = a + 1``) is 0.8 slices wide; a fall over four slices known 100 %, 66 %, 33 %,
0 % (``b = a + 3``) is 2.4 slices wide. Pooling ``L`` and ``F`` over whole plateaus keeps a
slice's sampling noise from widening the decay, as a curve through the noisy slice means would.
The interval is the percentile interval of the width over bootstrap replicates (the facts of
each slice resampled, the ramp refitted). The series resolves nothing finer than a slice: a drop
inside one slice's span leaves that slice partly known, which reads as ``b = a + 2`` (1.6 slices).

**Shape**, decided in this order:

* ``insufficient``: fewer than 3 dated slices, or a slice (the static one included, when given)
  with fewer than ``min_facts`` facts. No date, no width; ``reason`` names the slice.
* ``not monotone``: a later dated slice is known better than an earlier one beyond the
  intervals: for some ``i < j`` the interval of slice j's mean lies wholly above the interval of
  slice i's mean, so every monotone (decreasing) curve, the ramp included, is rejected. The
  intervals are simultaneous normal intervals ``mean_i +- z sigma / sqrt(n_i)`` with ``sigma``
  the within-slice standard deviation pooled over the dated slices and ``z`` the normal quantile
  at ``1 - (1 - level) / (2N)`` (Bonferroni over the N dated slices): all N cover their slice's
  true mean together with probability >= ``level`` (for large slices), and then, were the truth
  monotone, ``low_j <= mu_j <= mu_i <= high_i`` and no pair is flagged. Under any monotone
  truth the shape is thus called ``not monotone`` with probability <= ``1 - level``; in practice
  far less, since non-overlap of two intervals is a stricter test than their difference's. The
  pooled ``sigma`` keeps a slice whose facts are all known (or all unknown) from getting a
  zero-width interval, as a per-slice bootstrap would give it. (The static slice is left out:
  its facts differ in kind from the dated ones.) A model does not un-learn old facts, so such a
  curve holds more than one cut-off (a gap, a second source of data, a slice of easier facts):
  the change point gets this status, **no date**, and the interval spans the whole series.
* ``none``: the one-break fit accepts no drop. No width.
* ``sharp``: decay width <= ``sharp_width`` slices (default 1: the drop completes between two
  adjacent slices); ``gradual`` otherwise. ``reason`` gives the width's interval and says when
  the interval also admits the other shape.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date as _date

import numpy as np
import pandas as pd

from factprobe.metrics.timeline import NONE, WITHIN, estimate_cutoff

#: Shapes (module docstring).
SHARP, GRADUAL, FLAT, NOT_MONOTONE, INSUFFICIENT = "sharp", "gradual", "none", "not monotone", "insufficient"

#: Dated slices a profile needs (one before a drop, one in it, one after).
MIN_SLICES = 3


@dataclass(frozen=True)
class Profile:
    """A cut-off profile (module docstring). The change point as :class:`~factprobe.metrics.
    timeline.Cutoff` (``index``/``date`` None when there is no single date: ``none``, ``not
    monotone``, ``insufficient``; ``low``/``high`` None when ``insufficient``), the decay width
    in slices and days with its interval (NaN when there is no drop), the ramp's levels and the
    dates where the curve has fallen 10 % and 90 % of the way, the ``shape`` and its ``reason``,
    and the facts per slice in time order (static first when given)."""

    index: int | None
    date: int | None
    status: str
    low: int | None
    high: int | None
    low_date: int | None
    high_date: int | None
    share_none: float
    decay_slices: float
    decay_slices_low: float
    decay_slices_high: float
    decay_days: float
    decay_days_low: float
    decay_days_high: float
    level_before: float
    level_after: float
    decay_start_date: int | None
    decay_end_date: int | None
    shape: str
    reason: str
    counts: tuple[int, ...]


def _ordinal(yyyymmdd: int) -> int:
    d = int(yyyymmdd)
    return _date(d // 10000, d // 100 % 100, d % 100).toordinal()


def _yyyymmdd(ordinal: float) -> int:
    d = _date.fromordinal(int(round(ordinal)))
    return d.year * 10000 + d.month * 100 + d.day


def ramp_candidates(positions: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every ramp ``(a, b)``, ``a < b`` slice positions, and its fall ``r`` (0 before ``a``, 1
    after ``b``, linear between) at each position: ``a``, ``b`` (C,) and ``r`` (C x S)."""
    pairs = [(a, b) for i, a in enumerate(positions) for b in positions[i + 1 :]]
    a = np.array([p[0] for p in pairs], dtype=np.float64)
    b = np.array([p[1] for p in pairs], dtype=np.float64)
    r = np.clip((positions[None, :] - a[:, None]) / (b - a)[:, None], 0.0, 1.0)
    return a, b, r


def fit_ramps(
    means: np.ndarray, weights: np.ndarray, positions: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The least-squares ramp (module docstring) of each row of slice ``means`` (R x S) with
    ``weights`` (facts per slice, S): ``a``, ``b``, ``L``, ``F`` per row (R each), NaN where no
    ramp falls (every least-squares ramp has ``F >= L``)."""
    a, b, r = ramp_candidates(positions)
    design = np.stack([1.0 - r, r], axis=-1)  # C x S x 2
    gram = np.einsum("csi,s,csj->cij", design, weights, design)
    rhs = np.einsum("rs,s,csi->rci", means, weights, design)  # R x C x 2
    beta = np.linalg.solve(gram[None], rhs[..., None])[..., 0]  # R x C x 2
    # weighted SSE up to a constant: sum w m^2 - beta . rhs at the least-squares optimum
    sse = -(beta * rhs).sum(axis=-1)
    sse = np.where(beta[..., 0] > beta[..., 1], sse, np.inf)
    best = np.argmin(sse, axis=1)
    rows = np.arange(len(means))
    ok = np.isfinite(sse[rows, best])
    pick = np.where(ok, 1.0, np.nan)
    return a[best] * pick, b[best] * pick, beta[rows, best, 0] * pick, beta[rows, best, 1] * pick


def monotone_intervals(dated: Sequence[np.ndarray], level: float) -> tuple[np.ndarray, np.ndarray]:
    """The simultaneous intervals of the dated slices' means (module docstring, ``not
    monotone``): pooled within-slice standard deviation, Bonferroni over the slices."""
    from scipy.stats import norm

    means = np.array([d.mean() for d in dated])
    within = sum(float(((d - d.mean()) ** 2).sum()) for d in dated)
    dof = sum(len(d) for d in dated) - len(dated)
    sigma = np.sqrt(within / dof) if dof > 0 else 0.0
    z = norm.ppf(1 - (1 - level) / (2 * len(dated)))
    half = z * sigma / np.sqrt([len(d) for d in dated])
    return means - half, means + half


def _rise(lows: np.ndarray, highs: np.ndarray) -> tuple[int, int] | None:
    """The first pair ``i < j`` (dated slice offsets) whose interval of slice j lies wholly above
    that of slice i, or None."""
    for j in range(1, len(lows)):
        above = np.nonzero(lows[j] > highs[:j])[0]
        if above.size:
            return int(above[0]), j
    return None


def _dateless(
    status: str,
    reason: str,
    counts: Sequence[int],
    low: int | None = None,
    high: int | None = None,
    low_date: int | None = None,
    high_date: int | None = None,
    share_none: float = float("nan"),
) -> Profile:
    """A profile without a date and without a width: ``insufficient``, ``not monotone``, ``none``
    (the shape is the status, ``none`` when no drop)."""
    nan = float("nan")
    return Profile(
        index=None,
        date=None,
        status=status,
        low=low,
        high=high,
        low_date=low_date,
        high_date=high_date,
        share_none=share_none,
        decay_slices=nan,
        decay_slices_low=nan,
        decay_slices_high=nan,
        decay_days=nan,
        decay_days_low=nan,
        decay_days_high=nan,
        level_before=nan,
        level_after=nan,
        decay_start_date=None,
        decay_end_date=None,
        shape=FLAT if status == NONE else status,
        reason=reason,
        counts=tuple(int(c) for c in counts),
    )


def sufficiency(
    dated: Sequence[np.ndarray], edges: Sequence[int], static: np.ndarray | None, min_facts: int
) -> str | None:
    """Why a series cannot be profiled (module docstring, ``insufficient``), or None."""
    if len(dated) < MIN_SLICES:
        return f"{len(dated)} dated slice(s); a profile needs at least {MIN_SLICES}"
    for i, d in enumerate(dated):
        if len(d) < min_facts:
            return f"slice {edges[i + 1]} has {len(d)} facts with a value, fewer than min_facts={min_facts}"
    if static is not None and len(static) < min_facts:
        return f"the static slice has {len(static)} facts with a value, fewer than min_facts={min_facts}"
    return None


def _day_at(position, days: np.ndarray):
    """The day (ordinal) at a slice position, linear between the dates t_0..t_N of positions 0..N."""
    return np.interp(position, np.arange(len(days)), days)


def _interval(reps: np.ndarray, alpha: float) -> tuple[float, float]:
    """The percentile interval of bootstrap replicates, ignoring replicates without a value (NaN
    both ends when none has one)."""
    if not np.isfinite(reps).any():
        return np.nan, np.nan
    low, high = np.nanquantile(reps, [alpha, 1 - alpha])
    return float(low), float(high)


def fit_profile(
    dated: Sequence[np.ndarray],
    edges: Sequence[int],
    static: np.ndarray | None = None,
    *,
    penalty: float = 2.0,
    samples: int = 200,
    seed: int = 0,
    level: float = 0.95,
    min_facts: int = 20,
    sharp_width: float = 1.0,
) -> Profile:
    """The cut-off profile (module docstring) of per-fact values ``dated`` (slices 1..N in time
    order) and ``static`` (the control slice, or None), ``edges`` = t_0..t_N (YYYYMMDD)."""
    n = len(dated)
    if len(edges) != n + 1:
        raise ValueError(f"cutoff profile: {n} dated slices need {n + 1} dates, got {len(edges)}")
    dated = [np.asarray(d, dtype=np.float64) for d in dated]
    static = None if static is None else np.asarray(static, dtype=np.float64)
    segments = ([static] if static is not None else []) + dated
    counts = [len(s) for s in segments]
    why = sufficiency(dated, edges, static, min_facts)
    if why is not None:
        return _dateless(INSUFFICIENT, why, counts)

    first = 0 if static is not None else 1
    positions = np.arange(first, n + 1, dtype=np.float64)
    weights = np.array(counts, dtype=np.float64)
    rng = np.random.default_rng(seed)
    reps = np.stack([s[rng.integers(0, len(s), (samples, len(s)))].mean(axis=1) for s in segments], axis=1)
    alpha = (1 - level) / 2
    lows, highs = monotone_intervals(dated, level)
    cut = estimate_cutoff(dated, edges, static, penalty, samples, seed, level)
    days = np.array([_ordinal(e) for e in edges], dtype=np.float64)

    rise = _rise(lows, highs)
    if rise is not None:
        i, j = rise
        reason = (
            f"slice {edges[j + 1]} is known better ({dated[j].mean():.3f}, interval {lows[j]:.3f}-"
            f"{highs[j]:.3f}) than the earlier slice {edges[i + 1]} ({dated[i].mean():.3f}, interval "
            f"{lows[i]:.3f}-{highs[i]:.3f}): no single cut-off"
        )
        return _dateless(NOT_MONOTONE, reason, counts, first, n, int(edges[first]), None, cut.share_none)

    means = np.array([s.mean() for s in segments])
    a, b, lv, fl = (float(x[0]) for x in fit_ramps(means[None], weights, positions))
    ra, rb, _, _ = fit_ramps(reps, weights, positions)
    w_low, w_high = _interval(0.8 * (rb - ra), alpha)
    d_low, d_high = _interval(
        _day_at(ra + 0.9 * (rb - ra), days) - _day_at(ra + 0.1 * (rb - ra), days), alpha
    )

    if cut.status == NONE or not np.isfinite(a):
        reason = "no drop within the series: the one-break fit accepts no break"
        return _dateless(NONE, reason, counts, cut.low, cut.high, cut.low_date, cut.high_date, cut.share_none)

    width = 0.8 * (b - a)
    start = float(_day_at(a + 0.1 * (b - a), days))
    end = float(_day_at(a + 0.9 * (b - a), days))
    shape = SHARP if width <= sharp_width + 1e-9 else GRADUAL
    reason = f"decay {width:.1f} slices (interval {w_low:.1f}-{w_high:.1f}), {end - start:.0f} days"
    if shape == SHARP and w_high > sharp_width + 1e-9:
        reason += f"; the interval also admits gradual (> {sharp_width:g} slices)"
    if shape == GRADUAL and w_low <= sharp_width + 1e-9:
        reason += f"; the interval also admits sharp (<= {sharp_width:g} slices)"
    return Profile(
        index=cut.index,
        date=cut.date,
        status=WITHIN,
        low=cut.low,
        high=cut.high,
        low_date=cut.low_date,
        high_date=cut.high_date,
        share_none=cut.share_none,
        decay_slices=width,
        decay_slices_low=float(w_low),
        decay_slices_high=float(w_high),
        decay_days=end - start,
        decay_days_low=float(d_low),
        decay_days_high=float(d_high),
        level_before=lv,
        level_after=fl,
        decay_start_date=_yyyymmdd(start),
        decay_end_date=_yyyymmdd(end),
        shape=shape,
        reason=reason,
        counts=tuple(counts),
    )


def known_subject_mask(
    subjects: Sequence[str] | np.ndarray | pd.Series,
    static_subjects: Sequence[str] | np.ndarray | pd.Series,
    static_values: Sequence[float] | np.ndarray | pd.Series,
    threshold: float,
    min_facts: int = 1,
) -> np.ndarray:
    """Whether the model knows the subject of each dated fact (``subjects``, one per fact): the
    mean of its per-fact values on the static facts of the same subject (``static_subjects``,
    ``static_values``: older facts, the same measure) is at least ``threshold`` over at least
    ``min_facts`` such facts. A subject without enough static facts is not known: a new fact
    about an entity the model may never have seen says nothing about its cut-off."""
    table = pd.DataFrame(
        {
            "subject": np.asarray(static_subjects, dtype=object),
            "value": np.asarray(static_values, dtype=np.float64),
        }
    )
    table = table[np.isfinite(table["value"])]
    stats = table.groupby("subject")["value"].agg(["mean", "size"])
    known = stats.index[(stats["size"] >= min_facts) & (stats["mean"] >= threshold)]
    return pd.Series(np.asarray(subjects, dtype=object)).isin(set(known)).to_numpy(dtype=bool)


#: Which curve a profile was fitted on: every dated fact, or those whose subject the model knows.
ALL, KNOWN = "all", "known_subject"


def subject_known(values: pd.Series, facts: pd.DataFrame, threshold: float, min_facts: int = 1) -> pd.Series:
    """fact_id -> whether the model knows the subject of each dated fact of a timeline suite
    (:func:`known_subject_mask` on the facts with a value in ``values`` of the static slice and
    of the anchors, the static facts the probes stage adds about the dated facts' subjects,
    :mod:`factprobe.probes.timeline`). A table without subjects (a hand-made one; the facts
    contract has them) knows none."""
    from factprobe.metrics.timeline import UNDATED

    keyed = facts.astype({"fact_id": str}).drop_duplicates("fact_id")
    if "subject" not in keyed.columns:
        keyed = keyed.assign(subject=keyed["fact_id"])
    older = keyed["slice"].isin(UNDATED)
    static = keyed[older]
    static = static.assign(value=static["fact_id"].map(values)).dropna(subset=["value"])
    dated = keyed[~older]
    mask = known_subject_mask(
        dated["subject"].astype(str), static["subject"].astype(str), static["value"], threshold, min_facts
    )
    return pd.Series(mask, index=dated["fact_id"].to_numpy(), name="known_subject")


def _by_slice(values: pd.Series, facts: pd.DataFrame, labels: Sequence[str]) -> list[np.ndarray]:
    slices = facts.astype({"fact_id": str}).drop_duplicates("fact_id").set_index("fact_id")["slice"]
    joined = pd.DataFrame({"value": values}).join(slices.rename("slice"), how="inner")
    groups = {label: g["value"].to_numpy(dtype=np.float64) for label, g in joined.groupby("slice")}
    return [groups.get(label, np.zeros(0)) for label in labels]


def model_profile(
    values: pd.Series,
    facts: pd.DataFrame,
    block: dict,
    samples: int = 200,
    seed: int = 0,
    level: float = 0.95,
) -> tuple[Profile, str, pd.Series]:
    """One model's profile from its per-fact ``values`` (fact_id -> value) on a timeline suite's
    ``facts``: fitted on the known-subject curve when every dated slice has at least
    ``min_facts`` facts with a value whose subject the model knows (without the static slice,
    whose facts chose the subjects), else on the curve of all facts with the static slice.
    Returns the profile, the curve used (:data:`ALL` / :data:`KNOWN`) and the known mask."""
    from factprobe.metrics.timeline import STATIC, series_edges

    edges = series_edges(facts)
    labels = [str(e) for e in edges[1:]]
    known = subject_known(
        values, facts, float(block.get("subject_threshold", 0.75)), int(block.get("subject_min_facts", 1))
    )
    min_facts = int(block.get("min_facts", 20))
    fit = {
        "penalty": float(block.get("penalty", 2.0)),
        "samples": samples,
        "seed": seed,
        "level": level,
        "min_facts": min_facts,
        "sharp_width": float(block.get("sharp_width", 1.0)),
    }
    known_values = values[values.index.isin(known.index[known.to_numpy()])]
    known_dated = _by_slice(known_values, facts, labels)
    short = [(label, len(v)) for label, v in zip(labels, known_dated, strict=True) if len(v) < min_facts]
    if not short:
        return fit_profile(known_dated, edges, None, **fit), KNOWN, known
    dated = _by_slice(values, facts, labels)
    static = _by_slice(values, facts, [STATIC])[0]
    profile = fit_profile(dated, edges, static if len(static) else None, **fit)
    label, count = short[0]
    note = (
        f"all facts: the known-subject curve has {count} facts in slice {label} (< min_facts={min_facts}); "
    )
    return _with_reason(profile, note + profile.reason), ALL, known


def _with_reason(profile: Profile, reason: str) -> Profile:
    from dataclasses import replace

    return replace(profile, reason=reason)


#: Columns of ``results/metrics/{suite}/cutoff_profile.csv`` (docs/contracts.md).
PROFILE_COLUMNS = [
    "model",
    "measure",
    "strategy",
    "n",
    "curve",
    "cutoff",
    "cutoff_low",
    "cutoff_high",
    "cutoff_status",
    "cutoff_index",
    "cutoff_index_low",
    "cutoff_index_high",
    "share_none",
    "decay_slices",
    "decay_slices_low",
    "decay_slices_high",
    "decay_days",
    "decay_days_low",
    "decay_days_high",
    "decay_start",
    "decay_end",
    "level_before",
    "level_after",
    "shape",
    "reason",
    "declared_cutoff",
    "n_slices",
    "n_facts",
    "n_known_subject",
    "min_slice_facts",
    "min_slice_known",
]


def _date_text(value: int | None) -> str:
    return "" if value is None else str(int(value))


def profile_row(
    model: str, values: pd.Series, facts: pd.DataFrame, block: dict, declared: str | None, **fit
) -> tuple[dict, pd.Series]:
    """One ``cutoff_profile.csv`` row (and the known-subject mask) of a model."""
    from factprobe.metrics.timeline import declared_date, series_edges

    profile, curve, known = model_profile(values, facts, block, **fit)
    labels = [str(e) for e in series_edges(facts)[1:]]
    counts = [len(v) for v in _by_slice(values, facts, labels)]
    known_ids = known.index[known.to_numpy()]
    known_counts = [len(v) for v in _by_slice(values[values.index.isin(known_ids)], facts, labels)]
    row = {
        "model": model,
        "measure": block["measure"],
        "strategy": block.get("strategy") or "",
        "n": block.get("n") or 0,
        "curve": curve,
        "cutoff": _date_text(profile.date),
        "cutoff_low": _date_text(profile.low_date),
        "cutoff_high": _date_text(profile.high_date),
        "cutoff_status": profile.status,
        "cutoff_index": -1 if profile.index is None else profile.index,
        "cutoff_index_low": -1 if profile.low is None else profile.low,
        "cutoff_index_high": -1 if profile.high is None else profile.high,
        "share_none": profile.share_none,
        "decay_slices": profile.decay_slices,
        "decay_slices_low": profile.decay_slices_low,
        "decay_slices_high": profile.decay_slices_high,
        "decay_days": profile.decay_days,
        "decay_days_low": profile.decay_days_low,
        "decay_days_high": profile.decay_days_high,
        "decay_start": _date_text(profile.decay_start_date),
        "decay_end": _date_text(profile.decay_end_date),
        "level_before": profile.level_before,
        "level_after": profile.level_after,
        "shape": profile.shape,
        "reason": profile.reason,
        "declared_cutoff": declared_date(declared),
        "n_slices": len(labels),
        "n_facts": int(sum(counts)),
        "n_known_subject": int(sum(known_counts)),
        "min_slice_facts": int(min(counts, default=0)),
        "min_slice_known": int(min(known_counts, default=0)),
    }
    return row, known


def profile_table(
    per_fact: dict[str, pd.DataFrame],
    facts: pd.DataFrame,
    block: dict,
    declared: dict[str, str | None],
    samples: int = 200,
    seed: int = 0,
    level: float = 0.95,
) -> pd.DataFrame:
    """``cutoff_profile.csv``: one row per model (module docstring; :func:`model_profile`).
    Index columns are -1 and date columns empty where the profile has none."""
    from factprobe.metrics.timeline import fact_values

    rows = []
    for model in sorted(per_fact):
        values = fact_values(per_fact[model], block["measure"], block.get("strategy"), block.get("n"))
        values.index = values.index.astype(str)
        row, _ = profile_row(
            model, values, facts, block, declared.get(model), samples=samples, seed=seed, level=level
        )
        rows.append(row)
    return pd.DataFrame(rows, columns=PROFILE_COLUMNS)
