"""Hand-built cases for every rule of the WikiFactDiff decision table (factprobe.diff.rules).

Dates: old dump 2015-01-01, new dump 2019-01-01; P6 is the single-value property. Each
subject below exercises one rule; the expected (status, rule, is_replace) of every triple was
worked out by hand from anchors.md §3.1 and the rule list in rules.py.
"""

from __future__ import annotations

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from factprobe import contracts
from factprobe.contracts import SCHEMAS
from factprobe.diff.engine import DiffInputs, diff_claims
from factprobe.diff.rules import RULE_NAMES, RULES, STATUSES, new_since
from factprobe.diff.single_value import read_list, single_value_properties

T_OLD, T_NEW = 20150101, 20190101
SV = {6}
N = None

# (subject, property, object, rank, start, end, point_in_time)
OLD = [
    (1, 31, 5, 1, N, N, N),  # kept
    (2, 31, 5, 1, N, N, N),  # subject_gone
    (3, 39, 7, 1, N, N, N),  # start_after_end (new version's dates decide)
    (4, 39, 7, 1, N, 20100101, N),  # ended_before_old
    (7, 6, 10, 1, N, N, N),  # sv pattern, replaced by a point-in-time statement
    (8, 6, 10, 1, N, N, N),  # sv pattern, replaced by a start-dated statement
    (10, 31, 5, 1, N, N, N),  # removed
    (10, 17, 5, 1, N, N, N),  # keeps subject 10 in the new dump
    (11, 39, 7, 1, 20000101, N, N),  # start_before_old_open
    (13, 39, 7, 1, 20000101, N, N),  # end_between (end added by the new dump)
    (14, 39, 7, 1, N, N, N),  # end_after_new
    (15, 17, 5, 1, N, N, N),
    (16, 17, 5, 1, N, N, N),
    (17, 6, 10, 1, N, N, N),  # sv_conflict
    (18, 31, 5, 1, N, N, N),  # deprecated in the new dump -> removed
    (19, 6, 10, 1, N, N, N),  # truthy: outranked in the new dump -> replaced
    (20, 39, 7, 1, 20000101, N, N),  # duplicate statements in the new dump
    (21, 6, 10, 1, N, N, N),  # single-value, unchanged -> kept
    (22, 39, 7, 1, N, N, N),  # replacement of a multi-valued relation
    (23, 39, 7, 1, N, N, N),  # corrected_before_old: the new dump ends it before the old dump
    (24, 39, 7, 1, 20000101, N, N),  # corrected_before_old: the new dump moves its start after t_new
    (25, 39, 7, 1, N, N, N),  # corrected_before_old: the new dump says valid only between the dumps
]
NEW = [
    (1, 31, 5, 1, N, N, N),
    (3, 39, 7, 1, 20200101, 20100101, N),
    (4, 39, 7, 1, N, 20100101, N),
    (5, 39, 7, 1, 20200101, N, N),  # starts_after_new
    (6, 39, 7, 1, 20160101, 20170101, N),  # valid_only_between
    (7, 6, 11, 1, N, N, 20170101),
    (8, 6, 11, 1, 20160101, N, N),
    (9, 166, 12, 1, N, N, 20160101),  # added_pit_between
    (10, 17, 5, 1, N, N, N),
    (11, 39, 7, 1, 20000101, N, N),
    (12, 39, 7, 1, 20160101, N, N),  # start_between
    (13, 39, 7, 1, 20000101, 20170101, N),
    (14, 39, 7, 1, N, 20200101, N),
    (15, 17, 5, 1, N, N, N),
    (15, 31, 200, 1, N, N, N),  # object_new: 200 created 2018
    (16, 17, 5, 1, N, N, N),
    (16, 31, 201, 1, N, N, N),  # added_undated: 201 is old
    (17, 6, 10, 1, N, N, N),
    (17, 6, 11, 1, N, N, N),
    (18, 31, 5, 0, N, N, N),
    (19, 6, 10, 1, N, N, N),
    (19, 6, 11, 2, 20160101, N, N),
    (20, 39, 7, 1, 20000101, 20100101, N),
    (20, 39, 7, 1, 20160101, N, N),
    (21, 6, 10, 1, N, N, N),
    (22, 39, 7, 1, N, 20170101, N),
    (22, 39, 8, 1, 20170101, N, N),
    (23, 39, 7, 1, N, 20100101, N),
    (24, 39, 7, 1, 20200101, N, N),
    (25, 39, 7, 1, 20160101, 20170101, N),
    (100, 31, 5, 1, N, N, N),  # subject_new: 100 created 2017
    (101, 31, 5, 1, N, N, N),  # subject_absent_old: 101 created 2010, missing from the old sample
]
OLD_ITEMS = {i: 19900101 for i in [*range(1, 26), 201]}
NEW_ITEMS = {i: 19900101 for i in [*range(1, 26), 201] if i != 2} | {
    100: 20170101,
    101: 20100101,
    200: 20180101,
}

# (subject, property, object) -> (status, rule, is_replace); every other triple is absent.
EXPECTED = {
    (1, 31, 5): ("static", "kept", False),
    (2, 31, 5): ("unknown", "subject_gone", False),
    (3, 39, 7): ("unknown", "start_after_end", False),
    (7, 6, 10): ("obsolete", "sv_replaced", True),
    (7, 6, 11): ("new", "sv_added_pit_between", True),
    (8, 6, 10): ("obsolete", "sv_replaced", True),
    (8, 6, 11): ("new", "sv_added_start_between", True),
    (9, 166, 12): ("new", "added_pit_between", False),
    (10, 31, 5): ("unknown", "removed", False),
    (10, 17, 5): ("static", "kept", False),
    (11, 39, 7): ("static", "start_before_old_open", False),
    (12, 39, 7): ("new", "start_between", False),
    (13, 39, 7): ("obsolete", "end_between", False),
    (14, 39, 7): ("static", "end_after_new", False),
    (15, 17, 5): ("static", "kept", False),
    (15, 31, 200): ("new", "object_new", False),
    (16, 17, 5): ("static", "kept", False),
    (16, 31, 201): ("unknown", "added_undated", False),
    (17, 6, 10): ("unknown", "sv_conflict", False),
    (17, 6, 11): ("unknown", "added_undated", False),
    (18, 31, 5): ("unknown", "removed", False),
    (19, 6, 10): ("obsolete", "sv_replaced", True),
    (19, 6, 11): ("new", "sv_added_start_between", True),
    # the statement valid at the new dump speaks: absent in 2015, valid again since 2016
    (20, 39, 7): ("new", "start_between", False),
    (21, 6, 10): ("static", "kept", False),
    (22, 39, 7): ("obsolete", "end_between", True),
    (22, 39, 8): ("new", "start_between", True),
    # valid in the old dump by its own dates: a row, though the new dates make it true at neither
    (23, 39, 7): ("unknown", "corrected_before_old", False),
    (24, 39, 7): ("unknown", "corrected_before_old", False),
    (25, 39, 7): ("unknown", "corrected_before_old", False),
    (100, 31, 5): ("new", "subject_new", False),
    (101, 31, 5): ("unknown", "subject_absent_old", False),
}
IGNORED = {(4, 39, 7): "ended_before_old", (5, 39, 7): "starts_after_new", (6, 39, 7): "valid_only_between"}

CLAIMS = SCHEMAS["claims"]  # the extraction contract


def _write(tmp_path, name, rows, items, created=True, row_group_size=None):
    pq.write_table(
        pa.Table.from_pylist([dict(zip(CLAIMS.names, r, strict=False)) for r in rows], schema=CLAIMS),
        tmp_path / f"{name}_claims.parquet",
        row_group_size=row_group_size,
    )
    ents = [{"id": i, "kind": "item", "created": c} for i, c in items.items()]
    ents.append({"id": 3, "kind": "property", "created": None})  # P3 shares the id space with Q3
    table = pa.Table.from_pylist(
        ents, schema=pa.schema([("id", pa.int64()), ("kind", pa.string()), ("created", pa.int32())])
    )
    if not created:
        table = table.drop_columns(["created"])
    pq.write_table(table, tmp_path / f"{name}_entities.parquet")


def run_diff(tmp_path, created=True, sort_rows=False, row_group_size=None, **kw):
    # sort_rows: claims in subject order, as extracted (the diff may then cut subject ranges)
    old, new = (sorted(OLD, key=lambda r: r[0]), sorted(NEW, key=lambda r: r[0])) if sort_rows else (OLD, NEW)
    _write(tmp_path, "old", old, OLD_ITEMS, created, row_group_size)
    _write(tmp_path, "new", new, NEW_ITEMS, created, row_group_size)
    inputs = DiffInputs(
        *(tmp_path / f"{s}_{t}.parquet" for s in ("old", "new") for t in ("claims",)),
        tmp_path / "old_entities.parquet",
        tmp_path / "new_entities.parquet",
        T_OLD,
        T_NEW,
    )
    res = diff_claims(inputs, SV, tmp_path / "changes.parquet", tmp_path / "stats.tsv", **kw)
    return (
        res,
        pd.read_parquet(tmp_path / "changes.parquet"),
        contracts.read_text("diff_stats", tmp_path / "stats.tsv"),
    )


def as_dict(changes):
    return {
        (r.subject, r.property, r.object): (r.status, r.rule, bool(r.is_replace))
        for r in changes.itertuples()
    }


def test_every_rule_on_hand_built_cases(tmp_path):
    res, changes, _ = run_diff(tmp_path)
    assert as_dict(changes) == EXPECTED
    assert len(changes) == len(EXPECTED)  # one row per triple, P3 does not duplicate Q3
    assert (
        res.rules["ended_before_old"] == res.rules["starts_after_new"] == res.rules["valid_only_between"] == 1
    )
    covered = {v[1] for v in EXPECTED.values()} | set(IGNORED.values())
    assert covered == set(RULE_NAMES), "every rule of the table has a hand-built case"


def _valid_facts(rows, t):
    """Triples valid at ``t`` by their own dump's statements, computed apart from the engine:
    non-deprecated, ``start <= t < end``, ``point_in_time <= t``; single-value properties keep
    the best rank of each (subject, property) (the diff's "fix single-value errors")."""
    live = [r for r in rows if r[3] > 0]
    best = {}
    for s, prop, _, rank, *_ in live:
        best[(s, prop)] = max(best.get((s, prop), 0), rank)
    out = set()
    for s, prop, o, rank, start, end, pit in live:
        if prop in SV and rank < best[(s, prop)]:
            continue
        if (start is None or start <= t) and (end is None or t < end) and (pit is None or pit <= t):
            out.add((s, prop, o))
    return out


def test_rows_cover_every_fact_valid_in_either_dump(tmp_path):
    """README: every fact of either dump is labelled; none valid in a dump is silently dropped."""
    _, changes, _ = run_diff(tmp_path)
    rows = set(as_dict(changes))
    valid = _valid_facts(OLD, T_OLD) | _valid_facts(NEW, T_NEW)
    assert {(23, 39, 7), (24, 39, 7), (25, 39, 7)} <= valid
    assert valid - rows == set()
    # and the rows dropped as `ignored` are exactly facts valid in neither dump
    assert set(IGNORED) & valid == set()


def test_deciding_statement_dates(tmp_path):
    _, changes, _ = run_diff(tmp_path)
    rows = changes.set_index(["subject", "property", "object"])
    assert rows.loc[(20, 39, 7), "start"] == 20160101 and pd.isna(rows.loc[(20, 39, 7), "end"])
    assert rows.loc[(13, 39, 7), ["start", "end"]].tolist() == [20000101, 20170101]
    assert rows.loc[(7, 6, 11), "point_in_time"] == 20170101
    assert rows.loc[(7, 6, 10), "flag"] == "removed" and bool(rows.loc[(7, 6, 10), "single_value"])


def test_without_creation_dates_new_entities_are_unknown(tmp_path):
    _, changes, _ = run_diff(tmp_path, created=False)
    got = as_dict(changes)
    assert got[(100, 31, 5)] == ("unknown", "subject_absent_old", False)
    assert got[(15, 31, 200)] == ("unknown", "added_undated", False)
    rest = {k: v for k, v in got.items() if k not in {(100, 31, 5), (15, 31, 200)}}
    assert rest == {k: v for k, v in EXPECTED.items() if k in rest}


def test_partitioned_diff_equals_single_pass(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    one = run_diff(tmp_path / "a")
    many = run_diff(tmp_path / "b", rows_per_partition=7)
    assert one[0].partitions == 1
    # one row group per file: subject ranges would read it per bucket, so a hash split
    assert many[0].partitions == -(-(len(OLD) + len(NEW)) // 7) and many[0].bucketing == "hash"
    cols = ["subject", "property", "object"]
    a = one[1].sort_values(cols).reset_index(drop=True)
    b = many[1].sort_values(cols).reset_index(drop=True)
    pd.testing.assert_frame_equal(a, b)
    pd.testing.assert_frame_equal(one[2], many[2])


@pytest.mark.parametrize("rows_per_partition", [20, 9, 4])
def test_subject_range_buckets_equal_single_pass(tmp_path, rows_per_partition):
    """Claims in subject order in small row groups (as extracted): the diff cuts subject
    ranges, reads each through row-group pruning, and writes the rows of one pass."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    one = run_diff(tmp_path / "a")
    many = run_diff(tmp_path / "b", sort_rows=True, row_group_size=2, rows_per_partition=rows_per_partition)
    assert many[0].bucketing == "range" and many[0].partitions > 1
    cols = ["subject", "property", "object"]
    a = one[1].sort_values(cols).reset_index(drop=True)
    b = many[1].sort_values(cols).reset_index(drop=True)
    pd.testing.assert_frame_equal(a, b)
    pd.testing.assert_frame_equal(one[2], many[2])
    assert as_dict(many[1]) == EXPECTED


def test_stats_counts_per_property_and_status(tmp_path):
    _, changes, stats = run_diff(tmp_path)
    stats = stats.set_index("property")
    # independent count from the hand-written expectations
    exp = pd.DataFrame(
        [(f"P{p}", st) for (_, p, _), (st, _, _) in EXPECTED.items()], columns=["property", "status"]
    )
    exp = pd.crosstab(exp["property"], exp["status"])
    for prop in exp.index:
        for status in exp.columns:
            assert stats.loc[prop, status] == exp.loc[prop, status], (prop, status)
    assert stats.loc["P39", "ignored"] == 3
    assert stats.loc["P6", "replace"] == 6 and stats.loc["P39", "replace"] == 2
    assert (stats["total"] == stats[list(STATUSES)].sum(axis=1)).all()


def test_rule_table_is_consistent():
    assert len(set(RULE_NAMES)) == len(RULES)
    assert {r.status for r in RULES} <= set(STATUSES)
    assert RULES[-1].condition == "TRUE"  # every triple gets a rule


def test_single_value_list_and_sources(tmp_path):
    good = tmp_path / "sv.tsv"
    good.write_text("property\tconstraint\nP6\tsingle_best_value\nP19\tsingle_value\n")
    assert read_list(good) == {6, 19}
    bad = tmp_path / "bad.tsv"
    bad.write_text("property\nP6\nQ5\n")
    with pytest.raises(ValueError, match=r"bad.tsv: line 3: property 'Q5'"):
        read_list(bad)
    props = tmp_path / "properties.parquet"
    pq.write_table(
        pa.table(
            {
                "id": [6, 17],
                "datatype": ["wikibase-item"] * 2,
                "single_value": [False, True],
                "label": ["a", "b"],
            }
        ),
        props,
    )
    assert single_value_properties("constraints", None, [props]) == {17}
    assert single_value_properties("both", good, [props]) == {6, 17, 19}
    with pytest.raises(ValueError, match="must be one of"):
        single_value_properties("guess", good, [props])


def test_bundled_list_is_readable():
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "resources" / "properties" / "single_value.tsv"
    assert {6, 35, 19, 20, 22, 25}.issubset(read_list(path))


def test_missing_column_names_the_file(tmp_path):
    _write(tmp_path, "old", OLD, OLD_ITEMS)
    _write(tmp_path, "new", NEW, NEW_ITEMS)
    broken = tmp_path / "broken.parquet"
    pq.write_table(pa.table({"subject": [1], "property": [31]}), broken)
    inputs = DiffInputs(
        broken,
        tmp_path / "new_claims.parquet",
        tmp_path / "old_entities.parquet",
        tmp_path / "new_entities.parquet",
        T_OLD,
        T_NEW,
    )
    with pytest.raises(ValueError, match="broken.parquet: claims table lacks column"):
        diff_claims(inputs, SV, tmp_path / "c.parquet")
    assert not (tmp_path / "c.parquet").exists()


def test_missing_table_names_the_file_and_the_rule(tmp_path):
    inputs = DiffInputs(
        tmp_path / "nope.parquet",
        tmp_path / "new_claims.parquet",
        tmp_path / "old_entities.parquet",
        tmp_path / "new_entities.parquet",
        T_OLD,
        T_NEW,
    )
    with pytest.raises(
        FileNotFoundError, match=r"nope.parquet: missing extraction table; run the extract_dump"
    ):
        diff_claims(inputs, SV, tmp_path / "c.parquet")


NaN = float("nan")


def test_new_since_cutoff():
    changes = pd.DataFrame(
        {
            "subject": [1, 2, 3, 4, 5],
            "property": [36, 36, 36, 36, 36],
            "object": [10, 20, 30, 40, 50],
            "status": ["new", "new", "new", "static", "new"],
            "start": [NaN, 20100101, 20170301, NaN, NaN],
            "end": [NaN] * 5,
            "point_in_time": [NaN, NaN, NaN, NaN, 20150000],
        }
    )
    got = new_since(changes, 20160101)
    assert sorted(got["subject"]) == [1, 3]


def test_new_since_admits_rules():
    changes = pd.DataFrame(
        {
            "subject": [1, 2, 3],
            "property": [530, 530, 530],
            "object": [10, 20, 30],
            "status": ["new", "unknown", "unknown"],
            "rule": ["start_between", "added_undated", "removed"],
            "start": [20170101, NaN, NaN],
            "end": [NaN] * 3,
            "point_in_time": [NaN] * 3,
        }
    )
    assert sorted(new_since(changes, 20160101)["subject"]) == [1]
    assert sorted(new_since(changes, 20160101, rules=("added_undated",))["subject"]) == [1, 2]
    assert sorted(new_since(changes, 20160101, statuses=("unknown",))["subject"]) == [2, 3]


def test_new_since_keeps_scenarios_dated_between_model_cutoff_and_older_dump():
    """PROBELM §3.1 / App. A: Pythia's data end in March 2020, the diff is
    2020-10-05 -> 2020-11-02. Five additions between the dumps (rule start_between or
    added_undated) and the date each carries:

    subject 1: start 2020-02-10  -> on or before both cut-offs: seen, dropped by both.
    subject 2: start 2020-06-15  -> after March, before the older dump: a PROBELM scenario.
    subject 3: undated           -> kept by both (added at an unknown time between the dumps).
    subject 4: point 2020-10-20  -> after both cut-offs: kept by both.
    subject 5: start 2020-10-05  -> on the older dump's date: dropped at 20201005, kept at 20200301.

    With the older dump's date as the suite's cut-off (the config before the fix) subjects 2 and
    5 are lost before any per-model filter; with the models' cut-off 2020-03-01 they stay, and
    the per-model filter (facts_new_to_model, cut-off 2020-03-01) keeps all four.
    """
    from factprobe.diff.rules import statement_date
    from factprobe.metrics.plausibility import facts_new_to_model

    changes = pd.DataFrame(
        {
            "subject": [1, 2, 3, 4, 5],
            "property": [27] * 5,
            "object": [10, 20, 30, 40, 50],
            "status": ["new", "new", "unknown", "new", "new"],
            "rule": ["start_between", "start_between", "added_undated", "point_between", "start_between"],
            "start": [20200210, 20200615, NaN, NaN, 20201005],
            "end": [NaN] * 5,
            "point_in_time": [NaN, NaN, NaN, 20201020, NaN],
        }
    )
    picks = (("new",), ("added_undated",))
    assert sorted(new_since(changes, 20201005, *picks)["subject"]) == [3, 4]
    kept = new_since(changes, 20200301, *picks)
    assert sorted(kept["subject"]) == [2, 3, 4, 5]
    rows = changes.merge(kept, on=["subject", "property", "object"])
    facts = pd.DataFrame({"fact_id": rows["subject"].astype(str), "date": statement_date(rows)})
    model = {"cutoff": "20200301", "dump": "20201102"}
    out, counts = facts_new_to_model(facts, model)
    assert sorted(out["fact_id"]) == ["2", "3", "4", "5"] and counts["facts_seen_by_model"] == 0
