"""Subject-range buckets for the diff and the temporal view, and one Parquet output from them.

Why ranges: both jobs only ever group, join and window within one subject, so any split by
subject gives the same rows. The extraction writes claims in dump order, which is (nearly)
subject order, so each Parquet row group covers a narrow range of subjects. A bucket
``lo <= subject < hi`` then reads only its own row groups through DuckDB's min/max pruning: no
repartitioning pass (writing and reading every input once more), and every bucket's hash
tables stay the same size at any dump size (a bigger table costs more per row: cache misses,
then spilling). When the statistics show that the row groups overlap too much (an input not
in subject order), :func:`subject_ranges` says so and the caller falls back to a hash split.

Why one COPY fed by a stream: the output contract is one Parquet file. Writing a file per
bucket and then concatenating them decodes and re-encodes every output row a second time
(≈ as much CPU as the first write). Instead the buckets are computed on a worker connection
and their rows stream, as Arrow batches, into a single ``COPY`` on a second connection, so
each output row is encoded once whatever the number of buckets.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from factprobe.io import atomic_path
from factprobe.scan import connect, quote

#: A range split is used only if its buckets together read at most this many times the rows
#: (a row group that straddles a boundary is read by both buckets).
MAX_READ_FACTOR = 1.5
#: Arrow batch size of the stream between the two connections.
BATCH_ROWS = 1 << 17

Range = tuple[int | None, int | None]


def _row_group_stats(paths: Sequence[str | Path], column: str) -> np.ndarray | None:
    """(min, max, rows) of ``column`` per non-empty row group of ``paths``; None when a row
    group has no usable statistics."""
    rows = []
    for path in paths:
        meta = pq.ParquetFile(path).metadata
        names = [meta.schema.column(i).name for i in range(meta.num_columns)]
        col = names.index(column)
        for i in range(meta.num_row_groups):
            group = meta.row_group(i)
            if group.num_rows == 0:
                continue
            stats = group.column(col).statistics
            if stats is None or not stats.has_min_max:
                if stats is not None and stats.null_count == group.num_rows:
                    continue  # all NULL: read by the first bucket, whatever the ranges
                return None
            rows.append((int(stats.min), int(stats.max), group.num_rows))
    return np.array(rows, dtype=np.float64).reshape(-1, 3)


def _rows_below(stats: np.ndarray, value: float) -> float:
    """Rows estimated below ``value``, each row group spread evenly over its [min, max]."""
    lo, hi, n = stats[:, 0], stats[:, 1], stats[:, 2]
    return float((n * np.clip((value - lo) / (hi - lo + 1), 0.0, 1.0)).sum())


def subject_ranges(paths: Sequence[str | Path], n: int, column: str = "subject") -> list[Range] | None:
    """``n`` contiguous ranges ``[lo, hi)`` of ``column`` holding about equal numbers of rows
    of ``paths`` (estimated from the row-group statistics), the first open below and the last
    open above; None if the statistics are missing or the ranges would read more than
    :data:`MAX_READ_FACTOR` times the rows (row groups not clustered by ``column``)."""
    if n <= 1:
        return [(None, None)]
    stats = _row_group_stats(paths, column)
    if stats is None or len(stats) == 0:
        return None
    total = stats[:, 2].sum()
    bounds: list[int] = []
    for k in range(1, n):
        a, b = int(stats[:, 0].min()), int(stats[:, 1].max()) + 1
        while a < b:  # smallest value with at least k/n of the rows below it
            mid = (a + b) // 2
            if _rows_below(stats, mid) >= total * k / n:
                b = mid
            else:
                a = mid + 1
        bounds.append(a)
    edges = [None, *sorted(set(bounds)), None]
    ranges = list(zip(edges[:-1], edges[1:], strict=True))
    read = 0.0
    for lo, hi in ranges:
        hit = np.ones(len(stats), dtype=bool)
        if lo is not None:
            hit &= stats[:, 1] >= lo
        if hi is not None:
            hit &= stats[:, 0] < hi
        read += stats[hit, 2].sum()
    return ranges if read <= MAX_READ_FACTOR * total else None


def range_sql(column: str, bucket: Range, first: bool) -> str:
    """SQL condition of ``column`` in ``bucket``; the first bucket also takes NULLs, so that
    the buckets together hold every row, as one pass would."""
    lo, hi = bucket
    terms = [
        f"{column} >= {int(lo)}" if lo is not None else "",
        f"{column} < {int(hi)}" if hi is not None else "",
    ]
    cond = " AND ".join(t for t in terms if t) or "TRUE"
    return f"(({cond}) OR {column} IS NULL)" if first else f"({cond})"


def copy_stream(
    readers: Iterator[pa.RecordBatchReader], out_path: str | Path, parquet: str, memory_mb: int
) -> None:
    """Write the rows of ``readers`` (one Arrow stream per bucket, made lazily: a bucket's
    queries run on the worker connection only when the previous bucket is written) to
    ``out_path``, atomically, with one DuckDB ``COPY ... {parquet}`` on a connection of its own."""
    first = next(readers)
    schema = first.schema

    def batches() -> Iterator[pa.RecordBatch]:
        yield from first
        for reader in readers:
            if not reader.schema.equals(schema):
                raise ValueError(f"{out_path}: a bucket's columns differ: {reader.schema} vs {schema}")
            yield from reader

    con = connect(1, max(128, memory_mb), None, keep_order=False)
    try:
        con.register("stream", pa.RecordBatchReader.from_batches(schema, batches()))
        with atomic_path(out_path) as tmp:
            con.execute(f"COPY (SELECT * FROM stream) TO {quote(tmp)} {parquet}")
    finally:
        con.close()


def query_reader(con: duckdb.DuckDBPyConnection, sql: str) -> pa.RecordBatchReader:
    """The rows of ``sql`` on ``con`` as a stream of Arrow record batches (not materialized)."""
    return con.sql(sql).to_arrow_reader(BATCH_ROWS)
