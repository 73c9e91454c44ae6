"""Temporal view (factprobe.diff.temporal): hand-built cases and the real demo dumps."""

from __future__ import annotations

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
from factprobe.contracts import SCHEMAS
from factprobe.diff.temporal import temporal_view

N = None
CLAIMS = SCHEMAS["claims"]  # the extraction contract
ENT = pa.schema([("id", pa.int64()), ("kind", pa.string())])


def _claims(path, rows, row_group_size=None):
    pq.write_table(
        pa.Table.from_pylist([dict(zip(CLAIMS.names, r, strict=False)) for r in rows], schema=CLAIMS),
        path,
        row_group_size=row_group_size,
    )


def test_hand_built(tmp_path):
    # dump 2019-01-01, earlier dump 2015-01-01
    _claims(
        tmp_path / "now.parquet",
        [
            (1, 6, 10, 2, 20160101, N, N),  # current, preferred -> truthy
            (1, 6, 11, 1, 20100101, 20160101, N),  # ended by qualifier -> past
            (1, 6, 12, 1, N, N, N),  # current without dates, outranked -> not truthy
            (1, 6, 13, 1, 20200101, N, N),  # starts after the dump: left out
            (1, 6, 14, 0, N, N, N),  # deprecated: left out
            (1, 6, 15, 1, N, 20190101, N),  # ends on the dump date: past (half-open)
            (1, 166, 16, 1, N, N, 20170101),  # point in time before the dump: current
            (1, 166, 17, 1, N, N, 20200101),  # point in time after the dump: left out
            (2, 31, 5, 1, 19900101, 19950101, N),  # two statements, one valid -> current
            (2, 31, 5, 1, 20000101, N, N),
        ],
    )
    _claims(
        tmp_path / "before.parquet",
        [
            (1, 6, 20, 1, N, N, N),  # gone from the later dump -> past / earlier_dump
            (1, 6, 10, 1, N, N, N),  # still there -> only the current row
            (1, 6, 14, 1, N, N, N),  # deprecated now: absent now -> past / earlier_dump
            (3, 31, 5, 1, N, N, N),  # subject 3 absent now (sampled dump): says nothing
            (2, 31, 6, 0, N, N, N),  # deprecated before: never valid
        ],
    )
    pq.write_table(
        pa.Table.from_pylist(
            [{"id": 1, "kind": "item"}, {"id": 2, "kind": "item"}, {"id": 3, "kind": "property"}], schema=ENT
        ),
        tmp_path / "ent.parquet",
    )
    counts = temporal_view(
        "20190101",
        tmp_path / "now.parquet",
        tmp_path / "ent.parquet",
        {"20150101": tmp_path / "before.parquet"},
        tmp_path / "t.parquet",
    )
    t = pd.read_parquet(tmp_path / "t.parquet")
    got = {
        (r.subject, r.property, r.object): (r.status, r.source, r.truthy, r.last_seen) for r in t.itertuples()
    }
    assert got == {
        (1, 6, 10): ("current", "qualifier", True, "20190101"),
        (1, 6, 11): ("past", "qualifier", None, "20190101"),
        (1, 6, 12): ("current", "qualifier", False, "20190101"),
        (1, 6, 15): ("past", "qualifier", None, "20190101"),
        (1, 166, 16): ("current", "qualifier", True, "20190101"),
        (2, 31, 5): ("current", "qualifier", True, "20190101"),
        (1, 6, 20): ("past", "earlier_dump", None, "20150101"),
        (1, 6, 14): ("past", "earlier_dump", None, "20150101"),
    }
    assert counts == {"current/qualifier": 4, "past/earlier_dump": 2, "past/qualifier": 2}
    row = t.set_index(["subject", "property", "object"]).loc[(2, 31, 5)]
    assert row["start"] == 20000101 and pd.isna(row["end"])


def test_demo_brazil(demo_tables, tmp_path):
    new, old = demo_tables["20190201"], demo_tables["20141201"]
    temporal_view(
        "20190201",
        new / "claims.parquet",
        new / "entities.parquet",
        {"20141201": old / "claims.parquet"},
        tmp_path / "t.parquet",
    )
    t = pd.read_parquet(tmp_path / "t.parquet").set_index(["subject", "property", "object"])
    # Brazil head of state: Michel Temer (Q463533) current since 2016-08-31 (preferred);
    # Dilma Rousseff (Q40722) ended 2016-08-31 by qualifier.
    assert t.loc[(155, 35, 463533), ["status", "source", "start"]].tolist() == [
        "current",
        "qualifier",
        20160831,
    ]
    assert bool(t.loc[(155, 35, 463533), "truthy"])
    assert t.loc[(155, 35, 40722), ["status", "source", "end"]].tolist() == ["past", "qualifier", 20160831]
    # Head of government: Dilma is only in the 2014 dump -> past from the earlier dump.
    assert t.loc[(155, 6, 40722), ["status", "source", "last_seen"]].tolist() == [
        "past",
        "earlier_dump",
        "20141201",
    ]
    assert t.loc[(155, 6, 463533), "status"] == "current"
    # Capital: Brasília current since 1960-04-22, Rio de Janeiro (Q8678) ended then.
    assert t.loc[(155, 36, 2844), "status"] == "current"
    assert t.loc[(155, 36, 8678), ["status", "end"]].tolist() == ["past", 19600422]
    # Independent check: current rows = non-deprecated triples of the dump valid on 2019-02-01.
    c = pd.read_parquet(new / "claims.parquet")
    c = c[c["rank"] > 0]
    d = 20190201
    valid = (
        (c["start"].isna() | (c["start"] <= d))
        & (c["end"].isna() | (c["end"] > d))
        & (c["point_in_time"].isna() | (c["point_in_time"] <= d))
    )
    expected = set(map(tuple, c.loc[valid, ["subject", "property", "object"]].drop_duplicates().to_numpy()))
    cur = t[t["status"] == "current"]
    assert set(cur.index) == expected


def test_subject_range_buckets_equal_one_pass(demo_tables, tmp_path, caplog):
    """Claims in subject order in small row groups (as extracted), cut into subject ranges:
    the same rows as one pass over the demo dumps."""
    new, old = demo_tables["20190201"], demo_tables["20141201"]
    claims = pq.read_table(new / "claims.parquet").sort_by("subject")
    pq.write_table(claims, tmp_path / "sorted.parquet", row_group_size=max(1, claims.num_rows // 40))
    args = (new / "entities.parquet", {"20141201": old / "claims.parquet"})
    one = temporal_view("20190201", new / "claims.parquet", *args, tmp_path / "one.parquet")
    with caplog.at_level("INFO", logger="factprobe.diff.temporal"):
        many = temporal_view(
            "20190201",
            tmp_path / "sorted.parquet",
            *args,
            tmp_path / "many.parquet",
            rows_per_partition=claims.num_rows // 5,
        )
    assert "temporal bucket 5/" in caplog.text  # at least 5 buckets
    assert one == many
    cols = ["subject", "property", "object", "status", "source"]
    a = pd.read_parquet(tmp_path / "one.parquet").sort_values(cols).reset_index(drop=True)
    b = pd.read_parquet(tmp_path / "many.parquet").sort_values(cols).reset_index(drop=True)
    pd.testing.assert_frame_equal(a, b)
