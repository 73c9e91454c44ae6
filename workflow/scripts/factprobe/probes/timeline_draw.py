"""The timeline sampler's draw (:mod:`factprobe.probes.timeline`, module docstring: equal-count
popularity bins pooled over the slices with quotas from each bin's smallest count, or fixed bins
with ``per_bin`` each; the lowest ``stable_hash(seed, "timeline", fact_id)`` first), computed by
DuckDB over a table of candidates, in memory or spilled Parquet parts alike (:func:`drawn`): the
job holds a count per popularity value and per (slice, bin), and the sample.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from factprobe.hashing import stable_hashes


def plain_text(frame: pd.DataFrame, cols: Sequence[str]) -> pd.DataFrame:
    """``cols`` of ``frame`` as object columns of str and None (DuckDB's text columns)."""
    for col in cols:
        values = frame[col].to_numpy(dtype=object)
        frame[col] = pd.Series(np.where(pd.isna(values), None, values), index=frame.index, dtype=object)
    return frame


def quantile_edges(values: np.ndarray, counts: np.ndarray, bins: int) -> np.ndarray:
    """``np.unique(np.quantile(ln(1 + x), [1/bins, ..., (bins-1)/bins]))`` of the sample in which
    each of the ascending ``values`` occurs ``counts`` times, without forming the sample: NumPy's
    linear method (virtual index (n - 1) q, its floor and the next order statistic, NumPy's lerp)
    on the order statistics that the cumulative counts locate. ln(1 + x) keeps the order, so
    the order statistics of the logs are the logs of those of ``values``."""
    counts = np.asarray(counts, dtype=np.int64)
    n = int(counts.sum())
    if n == 0 or bins <= 1:
        return np.zeros(0, dtype=np.float64)
    x = np.log1p(np.asarray(values, dtype=np.float64))
    virtual = (n - 1) * (np.arange(1, bins) / bins)
    prev = np.floor(virtual)
    nxt = prev + 1
    top = virtual >= n - 1
    prev[top], nxt[top] = -1, -1
    prev, nxt = prev.astype(np.intp), nxt.astype(np.intp)
    ends = np.cumsum(counts)

    def order_stat(k: np.ndarray) -> np.ndarray:
        return x[np.searchsorted(ends, np.where(k < 0, n + k, k), side="right")]

    a, b = order_stat(prev), order_stat(nxt)
    gamma = np.asarray(virtual - prev, dtype=np.float64)
    diff = b - a
    edges = a + diff * gamma
    np.subtract(b, diff * (1 - gamma), out=edges, where=gamma >= 0.5)
    return np.unique(edges)


def popularity_bins(popularity: np.ndarray, bins: int) -> np.ndarray:
    """Equal-count bin of ln(1 + popularity): the number of inner quantile edges of the pooled
    values (``bins - 1`` of them, linear interpolation, duplicates merged, :func:`quantile_edges`)
    at or below the value, so equal values share a bin and the top value is in the last bin."""
    pop = np.asarray(popularity, dtype=np.float64)
    values, counts = np.unique(pop, return_counts=True)
    edges = quantile_edges(values, counts, bins)
    return np.searchsorted(edges, np.log1p(pop), side="right").astype(np.int64)


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


@dataclass(frozen=True)
class Draw:
    """How :func:`draw_sql` draws: ``n`` per slice over ``bins`` pooled quantile bins (joint
    quotas), or ``per_bin`` per fixed bin of ``edges`` (fixed quotas)."""

    n: int | None = None
    bins: int = 5
    per_bin: int | None = None
    edges: tuple[float, ...] = ()


def strata_of(con, view: str, draw: Draw) -> pd.DataFrame:
    """``popularity, stratum`` for each distinct popularity of the candidates ``view``: the
    pooled quantile bin of ln(1 + popularity) (:func:`quantile_edges` of their histogram), or the
    fixed bin of ``draw.edges`` (a value on an edge in the upper bin)."""
    hist = con.sql(
        f"SELECT popularity, count(*) AS n FROM {view} GROUP BY popularity ORDER BY popularity"
    ).fetchnumpy()
    values = np.asarray(hist["popularity"], dtype=np.float64)
    if np.isnan(values).any():
        raise ValueError("timeline: a candidate fact has no popularity; the candidates need one each")
    if draw.per_bin is not None:
        stratum = np.searchsorted(np.asarray(draw.edges, np.float64), values, side="right")
    else:
        edges = quantile_edges(values, np.asarray(hist["n"]), draw.bins)
        stratum = np.searchsorted(edges, np.log1p(values), side="right")
    return pd.DataFrame({"popularity": hist["popularity"], "stratum": stratum.astype(np.int64)})


def stratum_quotas(counts: pd.DataFrame, draw: Draw, total: int) -> pd.DataFrame:
    """``stratum, quota`` from ``counts`` (``slice, stratum, n`` of the candidates): fixed
    ``per_bin``, failing with the short (slice, bin)s named; or :func:`quotas` of each bin's
    smallest count over the slices present, towards ``draw.n`` (all ``total`` when None)."""
    table = counts.pivot_table(index="slice", columns="stratum", values="n", aggfunc="sum", fill_value=0)
    if draw.per_bin is not None:
        table = table.reindex(columns=range(len(draw.edges) + 1), fill_value=0)
        short = [
            f"{label} bin {b}: {int(k)}"
            for label, row in table.iterrows()
            for b, k in row.items()
            if k < draw.per_bin
        ]
        if short:
            raise ValueError(
                f"timeline: fewer than per_bin={draw.per_bin} candidate facts in {'; '.join(short)}; "
                "lower timeline.per_bin or move timeline.popularity_edges"
            )
        return pd.DataFrame({"stratum": table.columns.to_numpy(np.int64), "quota": draw.per_bin})
    top = int(counts["stratum"].max()) + 1 if len(counts) else 0
    table = table.reindex(columns=range(top), fill_value=0)
    minima = table.min(axis=0).to_numpy() if len(table) else np.zeros(0, np.int64)
    n = total if draw.n is None else draw.n
    return pd.DataFrame({"stratum": np.arange(top, dtype=np.int64), "quota": quotas(minima, n)})


def draw_sql(view: str, extra: Sequence[str], ties: Sequence[str], most: int) -> str:
    """Query of the drawn candidates of ``view`` (``fact_id, slice, popularity, _h`` and the
    columns ``extra`` and ``ties``) with the tables ``_strata`` (popularity -> stratum) and
    ``_quota`` (stratum -> quota): per (slice, stratum) the ``quota`` of lowest (hash, fact_id),
    in (slice, stratum, hash, fact_id) order; ``ties`` (the candidates' own order) decide between
    equal keys. ``most``: the largest quota. DuckDB keeps the ``most`` lowest keys of each
    (slice, stratum) as it scans (``min_by`` with a count, its list in key order), so it holds
    about the sample, not the candidates (a window over them does not fit a small memory limit)."""
    key = ", ".join(f"'{c}': {c}" for c in ["_h", "fact_id", *ties])
    row = ", ".join(f"'{c}': {c}" for c in dict.fromkeys([*ties, *extra]))
    cols = ", ".join([*ties, "slice", *extra, "stratum"])
    return f"""
        SELECT {cols} FROM (
            SELECT slice, stratum, rank, unnest(x) FROM (
                SELECT t.slice, t.stratum, unnest(list_slice(t.picked, 1, q.quota)) AS x,
                       generate_subscripts(list_slice(t.picked, 1, q.quota), 1) AS rank
                FROM (
                    SELECT c.slice, s.stratum, min_by({{{row}}}, {{{key}}}, {int(most)}) AS picked
                    FROM {view} c JOIN _strata s USING (popularity)
                    GROUP BY c.slice, s.stratum
                ) t JOIN _quota q ON q.stratum = t.stratum
            )
        ) ORDER BY slice, stratum, rank
    """


def drawn(con, view: str, draw: Draw, extra: Sequence[str], ties: Sequence[str]) -> pd.DataFrame:
    """The drawn rows' ``ties, slice, extra, stratum`` (:func:`draw_sql`) of the candidates
    ``view``: what :func:`matched_sample` and :func:`fixed_sample` draw, computed by DuckDB within
    its memory limit (it spills), the job holding the per-popularity and per-(slice, bin) counts."""
    con.register("_strata", strata_of(con, view, draw))
    counts = con.sql(
        f"SELECT slice, stratum, count(*) AS n FROM {view} JOIN _strata USING (popularity) GROUP BY ALL"
    ).to_df()
    quota = stratum_quotas(counts, draw, int(counts["n"].sum()) if len(counts) else 0)
    con.register("_quota", quota)
    try:
        most = int(quota["quota"].max()) if len(quota) else 0
        if most == 0:
            return pd.DataFrame(columns=[*ties, "slice", *extra, "stratum"])
        return plain_text(con.sql(draw_sql(view, extra, ties, most)).to_df(), ["slice"])
    finally:
        for name in ("_strata", "_quota"):
            con.unregister(name)


def _sample_in_memory(candidates: pd.DataFrame, draw: Draw, seed: object) -> pd.DataFrame:
    """:func:`drawn` over a table in memory: its rows drawn, with ``stratum``, in draw order."""
    from factprobe import scan

    c = candidates.reset_index(drop=True)
    con = scan.connect()
    con.register(
        "_cands",
        pd.DataFrame(
            {
                "fact_id": c["fact_id"].astype(str).to_numpy(dtype=object),
                "slice": c["slice"].to_numpy(dtype=object),
                "popularity": c["popularity"].to_numpy(),
                "_h": stable_hashes((seed, "timeline"), c["fact_id"]),
                "_pos": np.arange(len(c), dtype=np.int64),
            }
        ),
    )
    got = drawn(con, "_cands", draw, [], ["_pos"])
    return c.iloc[got["_pos"].to_numpy()].assign(stratum=got["stratum"].to_numpy()).reset_index(drop=True)


def matched_sample(candidates: pd.DataFrame, n: int, bins: int = 5, seed: object = 0) -> pd.DataFrame:
    """Equal-size, popularity-matched sample of every slice (module docstring).

    ``candidates``: ``fact_id, slice, popularity`` (+ any columns, kept). Returns the chosen rows
    with ``stratum`` (the popularity bin, 0 = least popular), in (slice, stratum, hash) order.
    Slices with no candidate are absent from the result and, having no count, set every quota
    to 0: callers check that every slice they need has candidates (:func:`check_slices`).
    """
    return _sample_in_memory(candidates, Draw(n=n, bins=bins), seed)


def fixed_sample(
    candidates: pd.DataFrame, per_bin: int, edges: Sequence[float] = (), seed: object = 0
) -> pd.DataFrame:
    """Each slice's ``per_bin`` facts of lowest hash in each popularity bin of the fixed ``edges``
    (module docstring, fixed quotas); same columns and order as :func:`matched_sample`."""
    return _sample_in_memory(candidates, fixed_draw(per_bin, edges), seed)


def fixed_draw(per_bin: int, edges: Sequence[float]) -> Draw:
    """The :class:`Draw` of fixed quotas; ``edges`` must ascend."""
    arr = np.asarray(edges, dtype=np.float64)
    if (np.diff(arr) <= 0).any():
        raise ValueError(f"timeline.popularity_edges: need ascending values, got {arr.tolist()}")
    return Draw(per_bin=int(per_bin), edges=tuple(arr.tolist()))
