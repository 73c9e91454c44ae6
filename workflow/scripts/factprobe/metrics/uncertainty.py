"""Bootstrap confidence intervals of the headline measures, and paired comparisons of models.

Every headline measure of the leaderboard is a mean over *facts* (per prompt group, then averaged
over the groups: languages, verbalizations, styles, few-shot settings). The unit of resampling is
therefore the fact, not the prompt: a fact's prompts (its paraphrases, languages, subject forms)
are strongly correlated, and resampling prompts would treat them as independent and give intervals
that are too narrow. A bootstrap replicate draws the suite's facts with replacement (multinomial
counts ``w_f``) and recomputes the statistic exactly as the point estimate is computed:

    group mean_g = sum_f w_f * S_fg / sum_f w_f * C_fg,      statistic = mean over groups of mean_g

where ``S_fg`` / ``C_fg`` are the sum / count of fact f's per-fact rows in group g. With every
``w_f = 1`` this is the leaderboard value. The interval is the percentile bootstrap interval
(Efron & Tibshirani 1993, ch. 13): the ``(1 - level) / 2`` and ``(1 + level) / 2`` quantiles of the
replicates. A paired comparison of two models resamples the facts both models were scored on, with
the same draws for both, and reports the difference of the statistic, its percentile interval and a
two-sided bootstrap p-value.

The functions are pure and deterministic for a given ``seed``; draws are made in chunks of
replicates so that memory stays ``O(chunk x facts)`` on large suites.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

#: Replicates drawn at once (memory: chunk x facts counts).
CHUNK = 256


@dataclass(frozen=True)
class Interval:
    """A point estimate with its percentile bootstrap interval over ``n_facts`` facts."""

    value: float
    low: float
    high: float
    n_facts: int


@dataclass(frozen=True)
class Paired:
    """Difference ``a - b`` of one measure between two models on their shared facts.

    ``p_value`` is the two-sided bootstrap p-value of "no difference" (see :func:`paired_difference`).
    """

    value_a: float
    value_b: float
    diff: float
    low: float
    high: float
    p_value: float
    n_facts: int

    @property
    def excludes_zero(self) -> bool:
        """Whether the interval of the difference lies entirely on one side of 0."""
        return bool(self.low > 0 or self.high < 0)


def resample_counts(n_items: int, samples: int, seed: int, chunk: int = CHUNK) -> Iterator[np.ndarray]:
    """Bootstrap draws as count matrices, ``chunk`` replicates at a time.

    Each row is one replicate: how often each of ``n_items`` items was drawn when drawing
    ``n_items`` times with replacement (row sums are ``n_items``). Replicate r uses draws
    ``r * n_items .. (r + 1) * n_items - 1`` of ``numpy.random.default_rng(seed).integers``, so the
    stream is the same whatever the chunk size (a naive loop drawing one replicate at a time with
    the same generator gets the same replicates).
    """
    if samples < 1:
        raise ValueError(f"bootstrap: samples must be >= 1, got {samples}")
    rng = np.random.default_rng(seed)
    done = 0
    while done < samples:
        size = min(chunk, samples - done)
        draws = rng.integers(0, n_items, size=(size, n_items)) if n_items else np.zeros((size, 0), int)
        offsets = draws + (np.arange(size)[:, None] * n_items)
        counts = np.bincount(offsets.ravel(), minlength=size * n_items).reshape(size, n_items)
        done += size
        yield counts.astype(np.float64)


def grouped_mean(
    sums: np.ndarray,
    counts: np.ndarray,
    weights: np.ndarray | None = None,
    outer: np.ndarray | None = None,
) -> np.ndarray:
    """Mean over groups of the per-group weighted means (NaN groups skipped).

    ``sums`` / ``counts`` are (facts x groups); ``weights`` (replicates x facts) or None for the
    point estimate (every weight 1). Returns one value per replicate (or a 0-d array). A group no
    drawn fact belongs to has no mean in that replicate and is left out of the average over groups.
    With ``outer`` (one outer-group code per group) the groups are averaged within each outer
    group first, then over the outer groups: PLAUSIBILITY (PROBELM §4.2) is the mean over prompt
    groups of the mean over (style, measure) parts.
    """
    if weights is None:
        num, den = sums.sum(axis=0), counts.sum(axis=0)
    else:
        num, den = weights @ sums, weights @ counts
    with np.errstate(invalid="ignore", divide="ignore"):
        means = np.where(den > 0, num / np.where(den > 0, den, 1), np.nan)
    if outer is not None and means.shape[-1]:
        onehot = np.zeros((means.shape[-1], int(outer.max()) + 1))
        onehot[np.arange(means.shape[-1]), outer] = 1.0
        valid = ~np.isnan(means)
        total, n = np.where(valid, means, 0.0) @ onehot, valid.astype(float) @ onehot
        with np.errstate(invalid="ignore", divide="ignore"):
            means = np.where(n > 0, total / np.maximum(n, 1), np.nan)
    valid = ~np.isnan(means)
    total = np.where(valid, means, 0.0).sum(axis=-1)
    n = valid.sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n > 0, total / np.maximum(n, 1), np.nan)


def percentile_interval(replicates: np.ndarray, level: float = 0.95) -> tuple[float, float]:
    """The percentile bootstrap interval: quantiles ``(1 - level)/2`` and ``(1 + level)/2``
    (numpy's default linear interpolation) of the finite replicates; NaNs if there are none."""
    if not 0 < level < 1:
        raise ValueError(f"bootstrap: level must lie in (0, 1), got {level}")
    finite = replicates[np.isfinite(replicates)]
    if finite.size == 0:
        return float("nan"), float("nan")
    low, high = np.quantile(finite, [(1 - level) / 2, (1 + level) / 2])
    return float(low), float(high)


def bootstrap_interval(
    sums: np.ndarray,
    counts: np.ndarray,
    samples: int = 1000,
    seed: int = 0,
    level: float = 0.95,
    outer: np.ndarray | None = None,
) -> Interval:
    """Percentile bootstrap interval of :func:`grouped_mean` over the rows (facts) of ``sums``."""
    replicates = np.concatenate(
        [grouped_mean(sums, counts, w, outer) for w in resample_counts(sums.shape[0], samples, seed)]
    )
    low, high = percentile_interval(replicates, level)
    return Interval(float(grouped_mean(sums, counts, outer=outer)), low, high, int(sums.shape[0]))


def paired_difference(
    a: tuple[np.ndarray, np.ndarray],
    b: tuple[np.ndarray, np.ndarray],
    samples: int = 1000,
    seed: int = 0,
    level: float = 0.95,
    outer: np.ndarray | None = None,
) -> Paired:
    """Paired bootstrap of ``stat(a) - stat(b)``; ``a`` and ``b`` are (sums, counts) over the
    same facts in the same row order (the facts both models were scored on).

    Each replicate resamples facts once and applies the same counts to both models, so the
    variation the two share (easy and hard facts) cancels in the difference. The p-value is the
    two-sided bootstrap p-value ``min(1, 2 * min(#{d* <= 0} + 1, #{d* >= 0} + 1) / (B + 1))``:
    twice the share of replicates on the far side of 0, with the +1 that keeps it above 0 for a
    finite B (Davison & Hinkley 1997, §4.4).
    """
    if a[0].shape[0] != b[0].shape[0]:
        raise ValueError("paired bootstrap: both models need the same facts (rows)")
    diffs = []
    for w in resample_counts(a[0].shape[0], samples, seed):
        diffs.append(grouped_mean(*a, weights=w, outer=outer) - grouped_mean(*b, weights=w, outer=outer))
    d = np.concatenate(diffs)
    d = d[np.isfinite(d)]
    low, high = percentile_interval(d, level)
    value_a, value_b = float(grouped_mean(*a, outer=outer)), float(grouped_mean(*b, outer=outer))
    if d.size:
        below, above = int((d <= 0).sum()), int((d >= 0).sum())
        p = min(1.0, 2 * (min(below, above) + 1) / (d.size + 1))
    else:
        p = float("nan")
    return Paired(value_a, value_b, value_a - value_b, low, high, p, int(a[0].shape[0]))


# --------------------------------------------------------------------------- tidy tables


def fact_matrices(
    rows: pd.DataFrame, group_keys: Sequence[str], facts: Sequence[str] | None = None
) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Per-fact rows (``fact_id``, ``value``, group columns) -> (fact ids, sums, counts).

    ``sums[f, g]`` / ``counts[f, g]``: sum and number of fact f's finite values in group g (a
    fact may have several rows in a group, e.g. one per strategy when pooled). ``facts`` fixes the
    row order (facts absent from ``rows`` get zero rows); by default the sorted fact ids present.
    """
    rows = rows[np.isfinite(rows["value"].to_numpy(float))]
    if facts is None:
        facts = sorted(rows["fact_id"].astype(str).unique())
    fact_index = pd.Index(list(facts))
    gcodes, _ = _group_codes(rows, group_keys)
    n_groups = int(gcodes.max()) + 1 if len(rows) else 0
    fcodes = fact_index.get_indexer(rows["fact_id"].astype(str))
    keep = fcodes >= 0
    sums = np.zeros((len(fact_index), n_groups))
    counts = np.zeros((len(fact_index), n_groups))
    np.add.at(sums, (fcodes[keep], gcodes[keep]), rows["value"].to_numpy(float)[keep])
    np.add.at(counts, (fcodes[keep], gcodes[keep]), 1.0)
    return list(fact_index), sums, counts


def _group_codes(rows: pd.DataFrame, group_keys: Sequence[str]) -> tuple[np.ndarray, int]:
    """Sorted integer code of each row's group (the combination of ``group_keys``) and the number
    of groups: two tables with the same groups get the same columns (paired use)."""
    keys = list(group_keys)
    if not keys or not len(rows):
        return np.zeros(len(rows), dtype=int), int(len(rows) > 0)
    grouped = rows[keys].astype(str).groupby(keys, sort=True)
    return grouped.ngroup().to_numpy(), int(grouped.ngroups)


def outer_codes(rows: pd.DataFrame, group_keys: Sequence[str], outer_keys: Sequence[str]) -> np.ndarray:
    """For each group column of :func:`fact_matrices` (same ``rows``, same ``group_keys``), the
    code of its outer group (the combination of ``outer_keys``, a subset of ``group_keys``)."""
    rows = rows[np.isfinite(rows["value"].to_numpy(float))]
    gcodes, n_groups = _group_codes(rows, group_keys)
    ocodes, _ = _group_codes(rows, outer_keys)
    out = np.zeros(n_groups, dtype=int)
    out[gcodes] = ocodes
    return out


INTERVAL_COLUMNS = ["measure", "strategy", "n", "value", "ci_low", "ci_high", "n_facts"]
PAIRED_COLUMNS = [
    "measure",
    "strategy",
    "n",
    "model_a",
    "model_b",
    "value_a",
    "value_b",
    "diff",
    "ci_low",
    "ci_high",
    "p_value",
    "n_facts",
]


def interval_table(
    per_fact: pd.DataFrame,
    measures: Sequence[str],
    group_keys: Sequence[str],
    samples: int = 1000,
    seed: int = 0,
    level: float = 0.95,
    outer_keys: Sequence[str] | None = None,
) -> pd.DataFrame:
    """One row per (measure, strategy, n) of ``measures`` in a model's per-fact table: the value
    pooled over ``group_keys`` (mean of group means, as the leaderboard pools; with
    ``outer_keys`` the mean over outer groups of the mean of their groups), its percentile
    bootstrap interval over facts and the number of facts (``INTERVAL_COLUMNS``)."""
    rows = per_fact[per_fact["measure"].isin(list(measures))]
    out = []
    for (measure, strategy, n), part in rows.groupby(["measure", "strategy", "n"], sort=True):
        _, sums, counts = fact_matrices(part, group_keys)
        if not sums.size:
            continue
        outer = outer_codes(part, group_keys, outer_keys) if outer_keys is not None else None
        ci = bootstrap_interval(sums, counts, samples, seed, level, outer)
        out.append((measure, strategy, n, ci.value, ci.low, ci.high, ci.n_facts))
    return pd.DataFrame(out, columns=INTERVAL_COLUMNS)


def paired_table(
    per_fact: Mapping[str, pd.DataFrame],
    measures: Sequence[str],
    group_keys: Sequence[str],
    samples: int = 1000,
    seed: int = 0,
    level: float = 0.95,
    outer_keys: Sequence[str] | None = None,
) -> pd.DataFrame:
    """Every pair of models (in mapping order, a before b) on every (measure, strategy, n) both
    have: the paired bootstrap of the difference over their shared facts (``PAIRED_COLUMNS``)."""
    models = list(per_fact)
    out = []
    for i, model_a in enumerate(models):
        for model_b in models[i + 1 :]:
            a = per_fact[model_a][per_fact[model_a]["measure"].isin(list(measures))]
            b = per_fact[model_b][per_fact[model_b]["measure"].isin(list(measures))]
            parts_b = dict(iter(b.groupby(["measure", "strategy", "n"], sort=True)))
            for key, part_a in a.groupby(["measure", "strategy", "n"], sort=True):
                part_b = parts_b.get(key)
                if part_b is None:
                    continue
                shared = sorted(set(part_a["fact_id"].astype(str)) & set(part_b["fact_id"].astype(str)))
                if not shared:
                    continue
                # The same groups for both models: a group one model lacks is not compared.
                keys = list(group_keys)
                common = part_a[keys].drop_duplicates().merge(part_b[keys].drop_duplicates())
                part_a2, part_b2 = part_a.merge(common), part_b.merge(common)
                _, sa, ca = fact_matrices(part_a2, keys, shared)
                _, sb, cb = fact_matrices(part_b2, keys, shared)
                if sa.shape != sb.shape or not sa.size:
                    continue
                outer = outer_codes(part_a2, keys, outer_keys) if outer_keys is not None else None
                r = paired_difference((sa, ca), (sb, cb), samples, seed, level, outer)
                out.append(
                    (
                        *key,
                        model_a,
                        model_b,
                        r.value_a,
                        r.value_b,
                        r.diff,
                        r.low,
                        r.high,
                        r.p_value,
                        r.n_facts,
                    )
                )
    return pd.DataFrame(out, columns=PAIRED_COLUMNS)
