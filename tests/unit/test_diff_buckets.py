"""Subject-range buckets (factprobe.diff.buckets): ranges from row-group statistics, the
fallback for unclustered claims, the SQL filter, and the one-COPY stream writer."""

from __future__ import annotations

import random

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
from factprobe.diff.buckets import copy_stream, query_reader, range_sql, subject_ranges

PARQUET = "(FORMAT parquet)"


def _subjects(path, subjects, row_group_size):
    table = pa.table(
        {"subject": pa.array(subjects, pa.int64()), "x": pa.array(range(len(subjects)), pa.int64())}
    )
    pq.write_table(table, path, row_group_size=row_group_size)


def _count(path, cond):
    return duckdb.execute(f"SELECT count(*) FROM read_parquet('{path}') WHERE {cond}").fetchone()[0]


def test_clustered_claims_get_ranges_of_about_equal_rows(tmp_path):
    # 1,000 rows in subject order, 10 row groups; subjects 0, 2, 4, ... (gaps as real ids)
    _subjects(tmp_path / "c.parquet", [2 * (i // 3) for i in range(1000)], 100)
    ranges = subject_ranges([tmp_path / "c.parquet"], 4)
    assert len(ranges) == 4 and ranges[0][0] is None and ranges[-1][1] is None
    assert all(a[1] == b[0] for a, b in zip(ranges, ranges[1:], strict=False))  # contiguous
    counts = [_count(tmp_path / "c.parquet", range_sql("subject", r, k == 0)) for k, r in enumerate(ranges)]
    assert sum(counts) == 1000  # every row in exactly one bucket
    assert max(counts) <= 260 and min(counts) >= 240  # about 1000 / 4 each


def test_unclustered_claims_get_no_ranges(tmp_path):
    subjects = [i // 3 for i in range(1000)]
    random.Random(0).shuffle(subjects)  # every row group spans all subjects
    _subjects(tmp_path / "c.parquet", subjects, 100)
    assert subject_ranges([tmp_path / "c.parquet"], 4) is None
    assert subject_ranges([tmp_path / "c.parquet"], 1) == [(None, None)]


def test_the_first_bucket_takes_null_subjects(tmp_path):
    _subjects(tmp_path / "c.parquet", [None, 5, 6, None, 9], 10)
    ranges = [(None, 6), (6, None)]
    first = _count(tmp_path / "c.parquet", range_sql("subject", ranges[0], True))
    second = _count(tmp_path / "c.parquet", range_sql("subject", ranges[1], False))
    assert (first, second) == (3, 2)


def test_copy_stream_writes_every_bucket_once_in_one_file(tmp_path):
    con = duckdb.connect()
    made = []

    def readers():
        for k in range(3):
            made.append(k)  # buckets are made lazily, one after the other
            yield query_reader(con, f"SELECT range AS v, {k} AS bucket FROM range({k * 10}, {k * 10 + 10})")

    copy_stream(readers(), tmp_path / "out.parquet", PARQUET, 128)
    out = pq.read_table(tmp_path / "out.parquet").to_pandas()
    assert sorted(out["v"]) == list(range(30)) and made == [0, 1, 2]
    assert not list(tmp_path.glob("*.tmp*"))
