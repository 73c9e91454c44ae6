"""Timeline suites: facts cut into dated slices, each sampled to one size and popularity profile.

A slice is the set of facts that became true in one interval ``(start, end]`` of YYYYMMDD dates.
Two readings of "became true" (``by``):

* ``diff``: a dump series t_0 < t_1 < ... < t_N; slice i holds the triples the diff
  (t_{i-1}, t_i] labels ``new`` and every later diff labels ``static`` (they stayed true up to
  t_N, so the newest dump can serve as their answer key), and that no earlier diff labelled
  ``new`` or ``static`` (a triple that was already true and came back is not new knowledge).
  The static control slice holds the triples every diff labels ``static``: true throughout.
* ``statement_date``: one dump; a fact's date is its statement's start, else its point in time
  (the diff's dates, :mod:`factprobe.validity`); slice i holds the facts dated in
  ``(edges[i-1], edges[i]]`` and the static slice the undated ones. Dates of year or month
  precision (``YYYY0000``, ``YYYYMM00``) sort before every day of their year or month and are
  sliced where they sort. Facts dated on or before ``edges[0]`` or after ``edges[-1]`` are left out.

Popularity confounds recency: new facts are mostly about obscure, recently created entities,
and a model knows popular entities better, so a raw slice curve falls with recency even for a
model that saw every slice. The sampler therefore matches the popularity profile exactly at the
resolution of ``bins`` popularity bins: the bins are equal-count quantile bins of ln(1 +
popularity) over the candidates of every slice (static included) pooled; bin b gets the same
quota q_b in every slice, with q_b proportional to m_b, the smallest count of bin b over the
slices (largest remainder rounding, so sum q_b = ``n`` exactly when sum m_b >= n, else the
common support sum m_b is taken whole). Within a (slice, bin) the facts with the lowest
``stable_hash(seed, "timeline", fact_id)`` are taken. Every slice thus has the same size and the
same count per popularity bin; :func:`popularity_profile` shows what is left within the bins.

**Fixed quotas (refresh).** With joint quotas one new slice can change every older slice's
sample (it moves the pooled quantiles and may lower a bin's minimum). With ``per_bin`` set the
bins are instead fixed by ``popularity_edges`` (inner edges on raw popularity, a value on an
edge in the upper bin; none = one bin) and every slice takes the ``per_bin`` facts of lowest
hash in each bin, so a slice's sample depends on its own candidates only: adding dump N+1 adds
slice N+1 and leaves every older slice's facts unchanged, as long as their candidates are (a
fact that a later diff removes or that changes bin drops out, and the next in hash order takes
its place). A slice short of ``per_bin`` facts in a bin is an error naming it
(:func:`fixed_sample`): an equal profile is the point of the sample.
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from factprobe.hashing import stable_hashes

#: Label of the undated control slice.
STATIC = "static"
TRIPLE = ["subject", "property", "object"]


@dataclass(frozen=True)
class Slice:
    """One slice: its label (the end date as text, or ``static``) and interval ``(start, end]``."""

    label: str
    start: int | None
    end: int | None


def series_slices(edges: Sequence[int]) -> list[Slice]:
    """The dated slices of a series of dates (ascending, at least two), then the static slice."""
    edges = [int(e) for e in edges]
    if len(edges) < 2 or any(b <= a for a, b in zip(edges, edges[1:], strict=False)):
        raise ValueError(f"timeline: need at least two ascending dates, got {edges}")
    dated = [Slice(str(b), a, b) for a, b in zip(edges, edges[1:], strict=False)]
    return [*dated, Slice(STATIC, None, None)]


def diff_slices(changes: Mapping[tuple[int, int], pd.DataFrame]) -> pd.DataFrame:
    """``subject, property, object, slice`` from the diffs of consecutive dumps (module docstring).

    ``changes`` maps each interval ``(t_old, t_new)`` to its ``changes`` table (at least the triple
    and ``status``); the intervals must chain (each one starts where the previous ended).
    """
    intervals = sorted(changes)
    for (_, a), (b, _) in zip(intervals, intervals[1:], strict=False):
        if a != b:
            raise ValueError(f"timeline: diffs do not chain: ...{a}) then ({b}...")
    n = len(intervals)
    parts = []
    for i, key in enumerate(intervals):
        part = changes[key][[*TRIPLE, "status"]].copy()
        part["i"] = i
        parts.append(part)
    long = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=[*TRIPLE, "status", "i"])
    wide = long.pivot_table(index=TRIPLE, columns="i", values="status", aggfunc="first").reindex(
        columns=range(n)
    )
    status = wide.to_numpy(dtype=object)
    is_static = status == "static"
    is_new = status == "new"
    labels = np.full(len(wide), None, dtype=object)
    labels[is_static.all(axis=1)] = STATIC
    known_before = np.zeros(len(wide), dtype=bool)
    for i, (_, t_new) in enumerate(intervals):
        later_static = is_static[:, i + 1 :].all(axis=1)
        labels[is_new[:, i] & later_static & ~known_before] = str(t_new)
        known_before |= is_new[:, i] | is_static[:, i]
    out = wide.index.to_frame(index=False)
    out["slice"] = labels
    return out[out["slice"].notna()].reset_index(drop=True)


def date_slices(dates: pd.Series, edges: Sequence[int]) -> pd.Series:
    """Slice label of each fact by its date (``<NA>``/NaN = undated -> ``static``); None outside
    ``(edges[0], edges[-1]]`` (module docstring)."""
    slices = series_slices(edges)
    ends = np.array([s.end for s in slices[:-1]], dtype=np.int64)
    d = pd.to_numeric(dates, errors="coerce")
    undated = d.isna().to_numpy()
    values = d.fillna(0).to_numpy(dtype=np.int64)
    # slice i is (ends[i-1], ends[i]]: the first end >= date
    pos = np.searchsorted(ends, values, side="left")
    inside = (values > int(edges[0])) & (values <= int(edges[-1]))
    labels = np.where(
        inside, np.array([s.label for s in slices[:-1]], dtype=object)[np.minimum(pos, len(ends) - 1)], None
    )
    labels = np.where(undated, STATIC, labels)
    return pd.Series(labels, index=dates.index, dtype=object)


def popularity_bins(popularity: np.ndarray, bins: int) -> np.ndarray:
    """Equal-count bin of ln(1 + popularity): the number of inner quantile edges of the pooled
    values (``bins - 1`` of them, linear interpolation, duplicates merged) at or below the value,
    so equal values share a bin and the top value is in the last bin."""
    x = np.log1p(np.asarray(popularity, dtype=np.float64))
    if x.size == 0 or bins <= 1:
        return np.zeros(x.size, dtype=np.int64)
    edges = np.unique(np.quantile(x, np.arange(1, bins) / bins))
    return np.searchsorted(edges, x, side="right").astype(np.int64)


def quotas(minima: np.ndarray, n: int) -> np.ndarray:
    """Per-bin quota: ``minima`` (smallest count of each bin over the slices) scaled to sum to
    ``n`` by largest remainder (ties to the lower bin), or ``minima`` itself when it sums to <= n."""
    minima = np.asarray(minima, dtype=np.int64)
    total = int(minima.sum())
    if total <= n:
        return minima.copy()
    exact = minima * n / total
    q = np.floor(exact).astype(np.int64)
    rest = n - int(q.sum())
    order = np.lexsort((np.arange(len(exact)), -(exact - q)))
    q[order[:rest]] += 1
    return q


def matched_sample(candidates: pd.DataFrame, n: int, bins: int = 5, seed: object = 0) -> pd.DataFrame:
    """Equal-size, popularity-matched sample of every slice (module docstring).

    ``candidates``: ``fact_id, slice, popularity`` (+ any columns, kept). Returns the chosen rows
    with ``stratum`` (the popularity bin, 0 = least popular), in (slice, stratum, hash) order.
    Slices with no candidate are absent from the result and, having no count, set every quota
    to 0: callers check that every slice they need has candidates (:func:`check_slices`).
    """
    c = candidates.reset_index(drop=True).copy()
    c["stratum"] = popularity_bins(c["popularity"].to_numpy(), bins)
    c["_h"] = stable_hashes((seed, "timeline"), c["fact_id"])
    counts = pd.crosstab(c["slice"], c["stratum"]).reindex(
        columns=range(int(c["stratum"].max()) + 1 if len(c) else 0), fill_value=0
    )
    q = quotas(counts.min(axis=0).to_numpy() if len(counts) else np.zeros(0, np.int64), n)
    quota = pd.Series(q, index=counts.columns)
    c = c.sort_values(["slice", "stratum", "_h", "fact_id"])
    c["_rank"] = c.groupby(["slice", "stratum"]).cumcount()
    keep = c["_rank"] < c["stratum"].map(quota).fillna(0).to_numpy()
    return c[keep].drop(columns=["_h", "_rank"]).reset_index(drop=True)


def fixed_sample(
    candidates: pd.DataFrame, per_bin: int, edges: Sequence[float] = (), seed: object = 0
) -> pd.DataFrame:
    """Each slice's ``per_bin`` facts of lowest hash in each popularity bin of the fixed ``edges``
    (module docstring, fixed quotas); same columns and order as :func:`matched_sample`."""
    edges = np.asarray(edges, dtype=np.float64)
    if (np.diff(edges) <= 0).any():
        raise ValueError(f"timeline.popularity_edges: need ascending values, got {edges.tolist()}")
    c = candidates.reset_index(drop=True).copy()
    c["stratum"] = np.searchsorted(edges, c["popularity"].to_numpy(dtype=np.float64), side="right")
    c["_h"] = stable_hashes((seed, "timeline"), c["fact_id"])
    counts = pd.crosstab(c["slice"], c["stratum"]).reindex(columns=range(len(edges) + 1), fill_value=0)
    short = [
        f"{label} bin {b}: {int(k)}"
        for label, row in counts.iterrows()
        for b, k in row.items()
        if k < per_bin
    ]
    if short:
        raise ValueError(
            f"timeline: fewer than per_bin={per_bin} candidate facts in {'; '.join(short)}; "
            "lower timeline.per_bin or move timeline.popularity_edges"
        )
    c = c.sort_values(["slice", "stratum", "_h", "fact_id"])
    keep = c.groupby(["slice", "stratum"]).cumcount() < per_bin
    return c[keep.to_numpy()].drop(columns=["_h"]).reset_index(drop=True)


def check_slices(candidates: pd.DataFrame, slices: Sequence[Slice]) -> None:
    """Fail, naming them, when some slices have no candidate fact."""
    empty = [s.label for s in slices if not (candidates["slice"] == s.label).any()]
    if empty:
        raise ValueError(
            f"timeline: no candidate fact in slice(s) {empty}; widen the intervals or the relations"
        )


def popularity_profile(sample: pd.DataFrame) -> pd.DataFrame:
    """Per slice: ``slice, stratum, n, mean_popularity, median_popularity`` (raw popularity)."""
    g = sample.groupby(["slice", "stratum"])["popularity"]
    return (
        pd.DataFrame({"n": g.size(), "mean_popularity": g.mean(), "median_popularity": g.median()})
        .reset_index()
        .astype({"n": "int64"})
    )


def statement_dates_sql(claims: str, dump: int, relations: Sequence[int]) -> str:
    """Query of ``subject, property, object, date`` over the claims file ``claims``: per triple of
    ``relations`` valid at ``dump``, the earliest start, else point in time, of its statements
    valid then (NULL when none is dated)."""
    from factprobe.scan import quote
    from factprobe.validity import valid_sql

    rels = ", ".join(str(int(r)) for r in relations) or "NULL"
    return f"""
        SELECT subject, property, object, min(coalesce(start, point_in_time)) AS date
        FROM read_parquet({quote(str(claims))})
        WHERE property IN ({rels}) AND {valid_sql(int(dump))}
        GROUP BY subject, property, object
    """


def slice_table(
    block, dump: str, relations: Sequence[str], claims: str, changes: Sequence[str], con
) -> tuple[pd.DataFrame, list[Slice]]:
    """The slices and ``fact_id, slice, slice_start, slice_end`` of every fact of ``relations`` in a slice of the
    timeline ``block`` (settings ``Timeline``): by statement date from the dump's ``claims``, or by
    the ``changes`` files of the diffs ``results/diff/{old}_{new}/`` chaining up to ``dump``."""
    from factprobe import contracts, scan

    rel_ids = [contracts.id_int(r) for r in relations]
    if block.by == "statement_date":
        edges = [int(e) for e in block.edges]
        dated = con.sql(statement_dates_sql(claims, int(dump), rel_ids)).to_df()
        dated["slice"] = date_slices(dated["date"], edges).to_numpy()
        dated = dated[dated["slice"].notna()]
    else:
        frames = {}
        for path in changes:
            old, new = (int(x) for x in Path(path).parent.name.split("_"))
            frames[(old, new)] = scan.table_of_relations(
                "changes", path, rel_ids, ["subject", "property", "object", "status"], con
            )
        dated = diff_slices(frames)
        edges = [min(frames)[0], *sorted(new for _, new in frames)]
    bounds = {s.label: (s.start, s.end) for s in series_slices(edges)}
    out = pd.DataFrame(
        {"fact_id": contracts.fact_ids_of(dated).to_numpy(), "slice": dated["slice"].to_numpy()}
    )
    out["slice_start"] = pd.array([bounds[s][0] for s in out["slice"]], dtype="Int32")
    out["slice_end"] = pd.array([bounds[s][1] for s in out["slice"]], dtype="Int32")
    if "date" in dated:
        out["date"] = pd.array(dated["date"].to_numpy(), dtype="Int32")
    return out, series_slices(edges)


def timeline_sampler(
    suite, relations: Sequence[str], claims: str, changes: Sequence[str], con
) -> TimelineSampler:
    """The sampler of timeline suite ``suite`` (settings ``Suite`` with a ``timeline`` block)."""
    if suite.timeline.by == "diff" and len(changes) < 2:
        raise ValueError("timeline by diff: need at least three enabled dumps up to the suite's dump")
    table, slices = slice_table(suite.timeline, str(suite.dump), relations, claims, changes, con)
    block = suite.timeline
    fixed = None if block.per_bin is None else (block.per_bin, list(block.popularity_edges))
    return TimelineSampler(table, slices, suite.n_facts, block.bins, suite.seed, fixed)


def spill_parquet(candidates: pd.DataFrame, object_sitelinks, path: str) -> int:
    """:class:`TimelineSampler`'s per-part work: the part to ``path``; returns its rows."""
    if candidates.empty:
        return 0
    candidates.to_parquet(path, index=False)
    return len(candidates)


class TimelineSampler:
    """The sampler of a timeline suite (``probes/sample.py``'s interface: ``reserve``,
    ``spiller``, ``register``, ``add``, ``finish``): candidate parts are spilled as they come;
    :meth:`finish` keeps those in a slice of ``table`` (:func:`slice_table`), checks that every
    one of ``slices`` has some, and draws
    :func:`matched_sample` with ``n_facts`` per slice. ``popularity`` is the subject's sitelinks,
    the facts table's own. ``fixed`` = ``(per_bin, popularity_edges)`` draws :func:`fixed_sample`
    instead (``n_facts`` and ``bins`` unused)."""

    def __init__(
        self,
        table: pd.DataFrame,
        slices: list[Slice],
        n_facts: int | None,
        bins: int,
        seed: object,
        fixed: tuple[int, list[float]] | None = None,
    ):
        self.table, self.slices, self.n_facts, self.bins, self.seed = table, slices, n_facts, bins, seed
        self.fixed = fixed
        self.tmp = tempfile.TemporaryDirectory(prefix="factprobe-timeline-")
        self.files: list[str] = []
        self._n = 0

    def reserve(self) -> str:
        self._n += 1
        return str(Path(self.tmp.name) / f"{self._n}.parquet")

    def spiller(self):
        return spill_parquet

    def register(self, prop: str, path: str, rows: int) -> None:
        if rows:
            self.files.append(path)

    def add(self, candidates: pd.DataFrame, object_sitelinks: pd.Series | None = None) -> None:
        path = self.reserve()
        self.register("", path, spill_parquet(candidates, None, path))

    def finish(self) -> list[pd.DataFrame]:
        try:
            if not self.files:
                return []
            cands = pd.concat([pd.read_parquet(f) for f in self.files], ignore_index=True)
        finally:
            self.tmp.cleanup()
        cands = cands.merge(self.table, on="fact_id", how="inner")
        check_slices(cands, self.slices)
        if self.fixed is not None:
            return [fixed_sample(cands, self.fixed[0], self.fixed[1], self.seed)]
        n = len(cands) if self.n_facts is None else self.n_facts
        return [matched_sample(cands, n, self.bins, self.seed)]


def taught_until(facts: pd.DataFrame, until: str | int) -> pd.DataFrame:
    """``facts`` of a timeline suite with ``split`` = taught for the static slice and the slices
    ending on or before ``until`` (YYYYMMDD), untaught after: a control model with a known cut-off."""
    end = pd.to_numeric(facts["slice_end"], errors="coerce")
    known = (facts["slice"] == STATIC).to_numpy() | (end <= int(until)).fillna(False).to_numpy()
    return facts.assign(split=np.where(known, "taught", "untaught"))
