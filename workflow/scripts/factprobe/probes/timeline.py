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

**Out of core.** A series of monthly dumps at full size gives billions of diff rows. DuckDB
slices them (:func:`diff_slices_sql`: two aggregations it spills beyond its memory limit) into a
Parquet table of the job's temp folder; candidate parts are spilled with their hash, and DuckDB
joins them to the slices and draws (:mod:`factprobe.probes.timeline_draw`). The job holds one
candidate part, counts per popularity value and per (slice, bin), and the sample.

**Anchors.** Whether a model knows a dated fact's subject is read off older facts of the same
subject (:func:`factprobe.metrics.cutoff_profile.subject_known`), which the popularity-matched
static slice rarely holds: it is drawn independently of the dated facts. So for each subject of
the drawn dated facts the sampler adds its ``anchors`` static candidates (true throughout the
series by ``diff``; undated by ``statement_date``, the facts dated before the series lying
outside its table) of lowest draw hash ``stable_hash(seed, "timeline", fact_id)``, in the
suite's relations, under their own slice label ``anchor`` (no interval, ``stratum`` -1): a
function of the subject's static candidates only, so a new dump adds the anchors of its new
subjects and leaves the others as they were. One already in the static sample stays there (a
fact is in the table once). Kept out of the static slice, they leave its popularity-matched
control curve, the popularity profile and the fits as they were; a control teaches them like
the static slice (:func:`taught_until`).
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import numpy as np
import pandas as pd

from factprobe.hashing import stable_hashes

from .timeline_draw import (  # noqa: F401  (the sampler's draw, re-exported)
    Draw,
    drawn,
    fixed_draw,
    fixed_sample,
    matched_sample,
    plain_text,
    popularity_bins,
    quantile_edges,
    quotas,
)

#: Label of the undated control slice.
STATIC = "static"
#: Label of the anchors: static facts about the dated facts' subjects (module docstring).
ANCHOR = "anchor"
#: The slices of facts true before and throughout the series: what a control always teaches.
UNDATED = (STATIC, ANCHOR)
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


def _text(value: str) -> str:
    """``value`` as a DuckDB string literal."""
    return "'" + str(value).replace("'", "''") + "'"


def chain_edges(intervals: Sequence[tuple[int, int]]) -> list[int]:
    """The dumps ``t_0 < ... < t_N`` of the diff intervals ``(t_old, t_new)`` (sorted), which must
    chain: each one starts where the previous ended."""
    for (_, a), (b, _) in zip(intervals, intervals[1:], strict=False):
        if a != b:
            raise ValueError(f"timeline: diffs do not chain: ...{a}) then ({b}...")
    return [intervals[0][0], *(new for _, new in intervals)] if intervals else []


def diff_slices_sql(source: str, ends: Sequence[int]) -> str:
    """Query of ``subject, property, object, slice`` (module docstring, ``by: diff``), in triple
    order, over ``source``: a query of the rows of every diff, ``subject, property, object,
    status, i`` (``i``: the diff's place in the chain; a diff has one row per triple, as the
    diff engine writes it, docs/contracts.md). ``ends[i]``: diff i's newer dump.

    One aggregation per triple, which DuckDB spills to disk, so the job holds no diff: its count
    of ``static`` and its first diff saying ``new`` or ``static``. A triple is static when all
    ``N`` diffs say ``static``; it belongs to slice i when its first such diff is i, says
    ``new``, and the ``N - 1 - i`` later ones all say ``static``. One scan feeds it (a union of
    scans, one per diff, does not spill).
    """
    n = len(ends)
    labels = "[" + ", ".join(_text(str(int(e))) for e in ends) + "]"
    return f"""
        WITH tri AS (
            SELECT subject, property, object,
                   count(*) FILTER (WHERE status = 'static') AS n_static,
                   min(i) FILTER (WHERE status IN ('new', 'static')) AS first_known,
                   arg_min(status, i) FILTER (WHERE status IN ('new', 'static')) AS first_status
            FROM ({source}) GROUP BY subject, property, object
        )
        SELECT * FROM (
            SELECT subject, property, object, CASE
                WHEN n_static = {n} THEN {_text(STATIC)}
                WHEN first_status = 'new' AND n_static = {n} - 1 - first_known
                    THEN {labels}[first_known + 1]
            END AS slice
            FROM tri
        ) WHERE slice IS NOT NULL ORDER BY subject, property, object
    """


def diff_slices(changes: Mapping[tuple[int, int], pd.DataFrame]) -> pd.DataFrame:
    """``subject, property, object, slice`` from the diffs of consecutive dumps (module docstring),
    in triple order: :func:`diff_slices_sql` over in-memory tables.

    ``changes`` maps each interval ``(t_old, t_new)`` to its ``changes`` table (at least the triple
    and ``status``, one row per triple); the intervals must chain (each one starts where the
    previous ended).
    """
    from factprobe import scan

    intervals = sorted(changes)
    edges = chain_edges(intervals)
    if not intervals:
        return pd.DataFrame(columns=[*TRIPLE, "slice"])
    rows = [changes[key][[*TRIPLE, "status"]].assign(i=i) for i, key in enumerate(intervals)]
    con = scan.connect()
    con.register("_diffs", pd.concat(rows, ignore_index=True))
    return plain_text(con.sql(diff_slices_sql("SELECT * FROM _diffs", edges[1:])).to_df(), ["slice"])


def date_label_sql(column: str, edges: Sequence[int]) -> str:
    """SQL of the slice label of the date in ``column`` (module docstring): ``static`` when NULL,
    NULL outside ``(edges[0], edges[-1]]``, else the first edge on or after it."""
    ends = [s.end for s in series_slices(edges)[:-1]]
    whens = " ".join(f"WHEN {column} <= {e} THEN {_text(str(e))}" for e in ends)
    return (
        f"CASE WHEN {column} IS NULL THEN {_text(STATIC)} "
        f"WHEN {column} <= {int(edges[0])} OR {column} > {int(edges[-1])} THEN NULL {whens} END"
    )


def date_slices(dates: pd.Series, edges: Sequence[int]) -> pd.Series:
    """Slice label of each fact by its date (``<NA>``/NaN = undated -> ``static``); None outside
    ``(edges[0], edges[-1]]`` (module docstring): :func:`date_label_sql` over ``dates``."""
    from factprobe import scan

    con = scan.connect()
    con.register("_dates", pd.DataFrame({"d": pd.to_numeric(dates, errors="coerce").astype("Int64")}))
    got = plain_text(con.sql(f"SELECT {date_label_sql('d', edges)} AS label FROM _dates").to_df(), ["label"])
    return pd.Series(got["label"].to_numpy(dtype=object), index=dates.index, dtype=object)


def check_slices(candidates: pd.DataFrame, slices: Sequence[Slice]) -> None:
    """Fail, naming them, when some slices have no candidate fact."""
    missing_slices(set(candidates["slice"]), slices)


def missing_slices(present: set, slices: Sequence[Slice]) -> None:
    """Fail, naming them, when some of ``slices`` are not among the labels ``present``."""
    empty = [s.label for s in slices if s.label not in present]
    if empty:
        raise ValueError(
            f"timeline: no candidate fact in slice(s) {empty}; widen the intervals or the relations"
        )


def popularity_profile(sample: pd.DataFrame) -> pd.DataFrame:
    """Per slice: ``slice, stratum, n, mean_popularity, median_popularity`` (raw popularity) of
    the popularity-matched sample (the anchors, not drawn by popularity, left out)."""
    sample = sample[sample["slice"] != ANCHOR]
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


def _bounds_sql(slices: Sequence[Slice]) -> str:
    """A VALUES table ``slice, slice_start, slice_end`` of ``slices``."""
    rows = ", ".join(
        f"({_text(s.label)}, {'NULL' if s.start is None else int(s.start)}::INTEGER, "
        f"{'NULL' if s.end is None else int(s.end)}::INTEGER)"
        for s in slices
    )
    return f"(VALUES {rows}) AS _bounds(slice, slice_start, slice_end)"


_FACT_ID_SQL = (
    "'Q' || CAST(subject AS VARCHAR) || '|P' || CAST(property AS VARCHAR) || '|Q' || CAST(object AS VARCHAR)"
)


def slice_query(
    block, dump: str, relations: Sequence[str], claims: str, changes: Sequence[str], con
) -> tuple[str, list[Slice]]:
    """The slices and the query of ``fact_id, slice, slice_start, slice_end`` (+ ``date`` by
    statement date) of every fact of ``relations`` in a slice of the timeline ``block`` (settings
    ``Timeline``), in triple order: by statement date from the dump's ``claims``
    (:func:`date_label_sql`), or by the ``changes`` files of the diffs ``results/diff/{old}_{new}/``
    chaining up to ``dump`` (:func:`diff_slices_sql`, the diffs read by DuckDB, not the job)."""
    from factprobe import contracts, scan

    rel_ids = [contracts.id_int(r) for r in relations]
    rels = ", ".join(str(int(r)) for r in rel_ids) or "NULL"
    if block.by == "statement_date":
        edges = [int(e) for e in block.edges]
        dated = f"""
            SELECT subject, property, object, {date_label_sql("date", edges)} AS slice, CAST(date AS INTEGER) AS date
            FROM ({statement_dates_sql(claims, int(dump), rel_ids)})
        """
        cols = "slice_start, slice_end, date"
    else:
        by_interval = {}
        for path in changes:
            old, new = (int(x) for x in Path(path).parent.name.split("_"))
            by_interval[(old, new)] = path
        intervals = sorted(by_interval)
        edges = chain_edges(intervals)
        files = [by_interval[key] for key in intervals]
        for path in files:
            scan.check_columns(con, "changes", path, [*TRIPLE, "status"])
        listed = "[" + ", ".join(scan.quote(p) for p in files) + "]"
        source = f"""
            SELECT subject, property, object, status, list_position({listed}, filename) - 1 AS i
            FROM read_parquet({listed}, filename = true)
            WHERE property IN ({rels})
        """
        dated = diff_slices_sql(source, edges[1:])
        cols = "slice_start, slice_end"
    slices = series_slices(edges)
    query = f"""
        SELECT {_FACT_ID_SQL} AS fact_id, slice, {cols}
        FROM ({dated}) d JOIN {_bounds_sql(slices)} USING (slice)
        ORDER BY subject, property, object
    """
    return query, slices


def slice_table(
    block, dump: str, relations: Sequence[str], claims: str, changes: Sequence[str], con
) -> tuple[pd.DataFrame, list[Slice]]:
    """The slices and :func:`slice_query`'s table in memory (``slice_start``, ``slice_end``,
    ``date`` as Int32)."""
    query, slices = slice_query(block, dump, relations, claims, changes, con)
    return _slice_columns(con.sql(query).to_df()), slices


def _slice_columns(frame: pd.DataFrame) -> pd.DataFrame:
    """``slice`` as text the way a table built from an array of labels holds it, the bounds and
    ``date`` as Int32: the types of the facts table."""
    frame["slice"] = _label_column(frame["slice"])
    for col in ("slice_start", "slice_end", "date"):
        if col in frame:
            frame[col] = frame[col].astype("Int32")
    return frame


def _label_column(labels: pd.Series) -> pd.Series:
    """Slice labels (no missing one) as the column that pandas makes of an array of them."""
    values = labels.to_numpy(dtype=object)
    return pd.DataFrame({"slice": values}, index=labels.index)["slice"]


def timeline_sampler(
    suite, relations: Sequence[str], claims: str, changes: Sequence[str], con
) -> TimelineSampler:
    """The sampler of timeline suite ``suite`` (settings ``Suite`` with a ``timeline`` block)."""
    if suite.timeline.by == "diff" and len(changes) < 2:
        raise ValueError("timeline by diff: need at least three enabled dumps up to the suite's dump")
    query, slices = slice_query(suite.timeline, str(suite.dump), relations, claims, changes, con)
    block = suite.timeline
    fixed = None if block.per_bin is None else (block.per_bin, list(block.popularity_edges))
    return TimelineSampler(query, slices, suite.n_facts, block.bins, suite.seed, fixed, con, block.anchors)


def spill_timeline(candidates: pd.DataFrame, object_sitelinks, path: str, seed: object) -> int:
    """:class:`TimelineSampler`'s per-part work: the part with its draw hash ``_h`` to ``path``
    (nothing for an empty part); returns its rows."""
    if candidates.empty:
        return 0
    candidates.assign(_h=stable_hashes((seed, "timeline"), candidates["fact_id"])).to_parquet(
        path, index=False
    )
    return len(candidates)


class TimelineSampler:
    """The sampler of a timeline suite (``probes/sample.py``'s interface: ``reserve``,
    ``spiller``, ``register``, ``add``, ``finish``), out of core like the others: candidate parts
    are spilled with their hash as they come, and the slice table (a DataFrame, or the query of
    :func:`slice_query`, which DuckDB writes to a file) lies beside them; :meth:`finish` lets
    DuckDB join the parts to the table, check that every one of ``slices`` has some, and draw
    (:func:`drawn`) :func:`matched_sample`'s ``n_facts`` per slice, or with ``fixed`` =
    ``(per_bin, popularity_edges)`` :func:`fixed_sample`'s (``n_facts`` and ``bins`` unused),
    then up to ``anchors`` anchors per subject of the drawn dated facts (:func:`anchor_sql`); it
    reads the drawn rows back one part at a time. ``popularity`` is the subject's sitelinks, the
    facts table's own. The job holds one part and the sample."""

    def __init__(
        self,
        table: pd.DataFrame | str,
        slices: list[Slice],
        n_facts: int | None,
        bins: int,
        seed: object,
        fixed: tuple[int, list[float]] | None = None,
        con=None,
        anchors: int = 0,
    ):
        from factprobe import scan

        self.slices, self.seed, self.anchors = slices, seed, int(anchors)
        self.con = con if con is not None else scan.connect()
        self.draw = Draw(n=n_facts, bins=bins) if fixed is None else fixed_draw(*fixed)
        self.tmp = tempfile.TemporaryDirectory(prefix="factprobe-timeline-")
        self.table = str(Path(self.tmp.name) / "slices.parquet")
        if isinstance(table, str):
            self.con.execute(f"COPY ({table}) TO {scan.quote(self.table)} (FORMAT parquet)")
        else:
            table.to_parquet(self.table, index=False)
        self.files: list[str] = []
        self._n = 0

    def reserve(self) -> str:
        self._n += 1
        return str(Path(self.tmp.name) / f"{self._n}.parquet")

    def spiller(self) -> partial:
        return partial(spill_timeline, seed=self.seed)

    def register(self, prop: str, path: str, rows: int) -> None:
        if rows:
            self.files.append(path)

    def add(self, candidates: pd.DataFrame, object_sitelinks: pd.Series | None = None) -> None:
        path = self.reserve()
        self.register("", path, spill_timeline(candidates, None, path, self.seed))

    def finish(self) -> list[pd.DataFrame]:
        try:
            return self._finish() if self.files else []
        finally:
            self.con.execute("DROP VIEW IF EXISTS _timeline_cands")
            self.tmp.cleanup()

    def _finish(self) -> list[pd.DataFrame]:
        from factprobe import scan

        con = self.con
        files = "[" + ", ".join(scan.quote(f) for f in self.files) + "]"
        extra = [c for c in scan.parquet_columns(con, self.table) if c not in ("fact_id", "slice")]
        con.execute(
            f"""
            CREATE OR REPLACE TEMP VIEW _timeline_cands AS
            SELECT p.fact_id, p.popularity, p._h, list_position({files}, p.filename) - 1 AS _file,
                   p.file_row_number AS _row, t.slice, {", ".join(f"t.{c}" for c in extra)}
            FROM read_parquet({files}, filename = true, file_row_number = true) p
            JOIN read_parquet({scan.quote(self.table)}) t ON p.fact_id = t.fact_id
            """
        )
        present = {row[0] for row in con.execute("SELECT DISTINCT slice FROM _timeline_cands").fetchall()}
        missing_slices(present, self.slices)
        keys = drawn(con, "_timeline_cands", self.draw, extra, ["_file", "_row"])
        if self.anchors > 0 and len(keys):
            con.register("_timeline_drawn", keys[["_file", "_row", "slice"]])
            try:
                got = con.sql(anchor_sql("_timeline_cands", "_timeline_drawn", self.anchors, extra)).to_df()
            finally:
                con.unregister("_timeline_drawn")
            if len(got):
                keys = pd.concat([keys, plain_text(got, ["slice"])], ignore_index=True)
        return [self._rows(_slice_columns(keys), extra)]

    def _rows(self, keys: pd.DataFrame, extra: list[str]) -> pd.DataFrame:
        """The drawn candidates, read back a part at a time, in ``keys``' order, with the slice
        columns and ``stratum``: the columns of the candidates, then those of the slice table."""
        rows = keys["_row"].to_numpy(dtype=np.int64)
        parts = [
            pd.read_parquet(self.files[int(f)]).iloc[rows[at]].set_axis(at)
            for f, at in keys.groupby("_file").indices.items()
        ]
        if not parts:
            parts = [pd.read_parquet(self.files[0]).iloc[:0]]
        out = pd.concat(parts).sort_index().drop(columns="_h").reset_index(drop=True)
        out["slice"] = keys["slice"].to_numpy()
        for col in extra:
            out[col] = keys[col].array
        out["stratum"] = keys["stratum"].to_numpy(dtype=np.int64)
        return out


def anchor_sql(view: str, picked: str, most: int, extra: Sequence[str]) -> str:
    """Query of the anchors (module docstring) among the candidates ``view`` (``fact_id, slice,
    _h, _file, _row`` and ``extra``) for the drawn rows ``picked`` (``_file, _row, slice``):
    per subject of a drawn dated fact (the first ``|`` field of the fact id, the facts' own
    ``subject``), its ``most`` static candidates of lowest (hash, fact_id), less those drawn
    into the static slice; ``_file, _row, slice`` (``anchor``), ``extra``, ``stratum`` (-1), in
    (subject, hash, fact_id) order."""
    cols = ", ".join(["_file", "_row", f"{_text(ANCHOR)} AS slice", *extra, "-1::BIGINT AS stratum"])
    return f"""
        WITH drawn AS (
            SELECT c.fact_id, p.slice FROM {picked} p JOIN {view} c USING (_file, _row)
        ), subjects AS (
            SELECT DISTINCT split_part(fact_id, '|', 1) AS _subject FROM drawn
            WHERE slice <> {_text(STATIC)}
        ), ranked AS (
            SELECT c.*, split_part(c.fact_id, '|', 1) AS _subject, row_number() OVER (
                PARTITION BY split_part(c.fact_id, '|', 1) ORDER BY c._h, c.fact_id, c._file, c._row
            ) AS _rank
            FROM {view} c SEMI JOIN subjects s ON split_part(c.fact_id, '|', 1) = s._subject
            WHERE c.slice = {_text(STATIC)}
        )
        SELECT {cols} FROM ranked
        WHERE _rank <= {int(most)} AND fact_id NOT IN (SELECT fact_id FROM drawn)
        ORDER BY _subject, _h, fact_id, _file, _row
    """


def taught_until(facts: pd.DataFrame, until: str | int) -> pd.DataFrame:
    """``facts`` of a timeline suite with ``split`` = taught for the static slice, its anchors and
    the slices ending on or before ``until`` (YYYYMMDD), untaught after: a control model with a
    known cut-off."""
    end = pd.to_numeric(facts["slice_end"], errors="coerce")
    known = facts["slice"].isin(UNDATED).to_numpy() | (end <= int(until)).fillna(False).to_numpy()
    return facts.assign(split=np.where(known, "taught", "untaught"))
