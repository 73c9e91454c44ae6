"""Diff of the real demo dumps 2014-12-01 -> 2019-02-01 (WikiFactDiff rules, anchors.md §3.1)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from factprobe import contracts
from factprobe.diff.engine import DiffInputs, diff_claims
from factprobe.diff.single_value import single_value_properties

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def demo_diff(demo_tables, tmp_path_factory):
    old, new = demo_tables["20141201"], demo_tables["20190201"]
    sv = single_value_properties(
        "both",
        ROOT / "resources/properties/single_value.tsv",
        [old / "properties.parquet", new / "properties.parquet"],
    )
    out = tmp_path_factory.mktemp("diff")
    res = diff_claims(
        DiffInputs(
            old / "claims.parquet",
            new / "claims.parquet",
            old / "entities.parquet",
            new / "entities.parquet",
            20141201,
            20190201,
        ),
        sv,
        out / "changes.parquet",
        out / "stats.tsv",
    )
    changes = pd.read_parquet(out / "changes.parquet")
    return (
        res,
        changes,
        contracts.read_text("diff_stats", out / "stats.tsv"),
        changes.set_index(["subject", "property", "object"]),
    )


def test_brazil_head_of_government_is_a_replacement(demo_diff):
    _, _, _, rows = demo_diff
    # 2014: Dilma Rousseff (Q40722), no qualifiers; 2019: Michel Temer (Q463533) from 2016-08-31.
    dilma, temer = rows.loc[(155, 6, 40722)], rows.loc[(155, 6, 463533)]
    assert (dilma["status"], dilma["rule"], bool(dilma["is_replace"])) == ("obsolete", "sv_replaced", True)
    assert (temer["status"], temer["rule"], bool(temer["is_replace"])) == (
        "new",
        "sv_added_start_between",
        True,
    )
    assert temer["start"] == 20160831


def test_static_fact(demo_diff):
    _, _, _, rows = demo_diff
    # Brazil's capital Brasília (Q2844), start 1960-04-22 in both dumps, no end.
    r = rows.loc[(155, 36, 2844)]
    assert (r["status"], r["rule"], r["flag"], r["start"]) == (
        "static",
        "start_before_old_open",
        "kept",
        19600422,
    )
    # Rio de Janeiro (Q8678) ended as capital in 1960: true at neither date, not in the output.
    assert (155, 36, 8678) not in rows.index


def test_statements_decided_by_start_and_end(demo_diff):
    _, _, _, rows = demo_diff
    # Saarland (Q1201) head of government Q71359: start 2011-08-10, end 2018-02-28 (new dump).
    r = rows.loc[(1201, 6, 71359)]
    assert (r["status"], r["rule"], r["start"], r["end"]) == ("obsolete", "end_between", 20110810, 20180228)
    # Israel (Q801) head of state Q455854: 2014-07-24 .. 2021-07-09, valid at both dates.
    r = rows.loc[(801, 35, 455854)]
    assert (r["status"], r["rule"], r["end"]) == ("static", "end_after_new", 20210709)


def test_every_row_has_a_rule_and_counts_match(demo_diff, demo_tables):
    res, changes, stats, _ = demo_diff
    assert (
        changes["rule"].notna().all()
        and changes["status"].isin(["new", "obsolete", "static", "unknown"]).all()
    )
    assert not changes.duplicated(["subject", "property", "object"]).any()
    # Independent count of triples: non-deprecated (subject, property, object) of either dump,
    # single-value groups reduced to their best rank, minus the ignored ones.
    claims = []
    for dump in ("20141201", "20190201"):
        c = pd.read_parquet(demo_tables[dump] / "claims.parquet")
        c = c[c["rank"] > 0]
        sv = c["property"].isin([6, 35, 19, 20, 22, 25, 105])
        best = c.groupby(["subject", "property"])["rank"].transform("max")
        claims.append(c[~sv | (c["rank"] == best)][["subject", "property", "object"]])
    n_triples = len(pd.concat(claims).drop_duplicates())
    assert len(changes) + res.counts["ignored"] == n_triples
    assert stats["total"].sum() == n_triples
    by_status = changes["status"].value_counts()
    for status in ("new", "obsolete", "static", "unknown"):
        assert stats[status].sum() == by_status.get(status, 0) == res.counts[status]
    # Subjects of the 2014 sample missing from the 2019 sample are "unknown", never "obsolete".
    gone = changes[changes["rule"] == "subject_gone"]
    new_ids = set(pd.read_parquet(demo_tables["20190201"] / "entities.parquet")["id"])
    assert len(gone) > 0 and not gone["subject"].isin(new_ids).any()


def _valid_triples(claims: pd.DataFrame, t: int, sv: set[int]) -> set[tuple[int, int, int]]:
    """Triples valid at ``t`` by the dump's own statements, computed in pandas apart from the engine:
    non-deprecated, ``start <= t < end``, ``point_in_time <= t``; best rank only for single-value."""
    live = claims[claims["rank"] > 0]
    best = live.groupby(["subject", "property"])["rank"].transform("max")
    live = live[~live["property"].isin(sv) | (live["rank"] == best)]
    ok = (
        (live["start"].isna() | (live["start"] <= t))
        & (live["end"].isna() | (live["end"] > t))
        & (live["point_in_time"].isna() | (live["point_in_time"] <= t))
    )
    return set(live.loc[ok, ["subject", "property", "object"]].itertuples(index=False, name=None))


def test_rows_cover_every_fact_valid_in_either_real_dump(demo_diff, demo_tables):
    """The union of both dumps' valid facts has rows, retroactive corrections too."""
    _, changes, _, rows = demo_diff
    sv = single_value_properties(
        "both",
        ROOT / "resources/properties/single_value.tsv",
        [demo_tables[d] / "properties.parquet" for d in ("20141201", "20190201")],
    )
    valid = set()
    for dump in ("20141201", "20190201"):
        valid |= _valid_triples(pd.read_parquet(demo_tables[dump] / "claims.parquet"), int(dump), set(sv))
    have = set(changes[["subject", "property", "object"]].itertuples(index=False, name=None))
    assert valid - have == set()
    corrected = changes[changes["rule"] == "corrected_before_old"]
    assert len(corrected) >= 1 and set(corrected["status"]) == {"unknown"}
    assert (corrected["flag"] == "kept").all()
