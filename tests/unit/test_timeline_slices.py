"""Timeline slices and their popularity-matched sampling (factprobe.probes.timeline), on
hand-made diffs, dates and popularities whose answers are worked out in the comments."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from factprobe.probes import timeline as tl


def _changes(rows):
    return pd.DataFrame(rows, columns=["subject", "property", "object", "status"])


def test_diff_slices_follow_the_rules():
    # dumps t0=20200101 < t1=20200201 < t2=20200301: two diffs
    d1 = _changes(
        [
            (1, 10, 100, "new"),  # A: new in (t0, t1], static after -> slice t1
            (2, 10, 100, "static"),  # B: static in both -> static slice
            (4, 10, 100, "new"),  # D: new then obsolete -> no slice
            (5, 10, 100, "static"),  # E: known before, "new" again later -> no slice
            (6, 10, 100, "new"),  # F: new, absent from the later diff -> no slice
        ]
    )
    d2 = _changes(
        [
            (1, 10, 100, "static"),
            (2, 10, 100, "static"),
            (3, 10, 100, "new"),  # C: new in (t1, t2] -> slice t2
            (4, 10, 100, "obsolete"),
            (5, 10, 100, "new"),
        ]
    )
    out = tl.diff_slices({(20200101, 20200201): d1, (20200201, 20200301): d2})
    got = dict(zip(out["subject"], out["slice"], strict=True))
    assert got == {1: "20200201", 2: "static", 3: "20200301"}


def test_diff_slices_need_a_chain():
    d = _changes([(1, 10, 100, "new")])
    with pytest.raises(ValueError, match="do not chain"):
        tl.diff_slices({(1, 2): d, (3, 4): d})


def test_date_slices_are_right_closed():
    edges = [20100101, 20120101, 20140101]
    dates = pd.Series([20110505, 20120101, 20120102, 20100101, None, 20150000, 20120000, 20140101])
    got = tl.date_slices(dates, edges).tolist()
    # (20100101, 20120101] and (20120101, 20140101]; a year-precision date sorts before its days
    assert got == ["20120101", "20120101", "20140101", None, "static", None, "20120101", "20140101"]


def test_series_slices():
    s = tl.series_slices([1, 5, 9])
    assert [(x.label, x.start, x.end) for x in s] == [("5", 1, 5), ("9", 5, 9), ("static", None, None)]
    with pytest.raises(ValueError):
        tl.series_slices([5, 1])


def test_popularity_bins_are_quantile_bins_of_log_popularity():
    # ln(1 + p) = 0, 1, 2, 3: two bins split at the median 1.5
    pop = np.expm1(np.array([0.0, 1.0, 2.0, 3.0]))
    assert tl.popularity_bins(pop, 2).tolist() == [0, 0, 1, 1]
    # four bins: edges 0.75, 1.5, 2.25
    assert tl.popularity_bins(pop, 4).tolist() == [0, 1, 2, 3]


def test_quotas_largest_remainder():
    # minima 3, 1, 4 (sum 8) scaled to 5: 1.875, 0.625, 2.5 -> floors 1, 0, 2, two more to the
    # largest remainders (0.875, 0.625)
    assert tl.quotas(np.array([3, 1, 4]), 5).tolist() == [2, 1, 2]
    # common support smaller than n: taken whole
    assert tl.quotas(np.array([1, 1]), 5).tolist() == [1, 1]


def test_matched_sample_equal_size_and_profile():
    # slice a: 6 low, 2 high; slice b: 2 low, 6 high; static: 4 and 4 (popularity 0 or 99)
    rows = []
    for label, low, high in (("a", 6, 2), ("b", 2, 6), ("static", 4, 4)):
        rows += [(f"{label}{i}", label, 0) for i in range(low)]
        rows += [(f"{label}h{i}", label, 99) for i in range(high)]
    cand = pd.DataFrame(rows, columns=["fact_id", "slice", "popularity"])
    out = tl.matched_sample(cand, n=10, bins=2, seed=1)
    counts = pd.crosstab(out["slice"], out["stratum"])
    # bin minima 2 and 2: sum 4 <= 10, every slice gets 2 + 2
    assert counts.to_numpy().tolist() == [[2, 2], [2, 2], [2, 2]]
    prof = tl.popularity_profile(out)
    assert prof.groupby("slice")["n"].sum().tolist() == [4, 4, 4]
    # deterministic: the lowest hashes are taken, the same call gives the same rows
    again = tl.matched_sample(cand.sample(frac=1, random_state=3), n=10, bins=2, seed=1)
    assert sorted(again["fact_id"]) == sorted(out["fact_id"])


def test_check_slices_names_the_empty_one():
    cand = pd.DataFrame({"fact_id": ["x"], "slice": ["a"], "popularity": [1]})
    with pytest.raises(ValueError, match=r"\['b'\]"):
        tl.check_slices(cand, [tl.Slice("a", 0, 1), tl.Slice("b", 1, 2)])


def test_slice_table_by_statement_date_reads_the_dump(tmp_path):
    import duckdb
    from factprobe.settings import Timeline

    claims = pd.DataFrame(
        {
            "subject": [1, 1, 2, 3, 4, 5, 6],
            "property": [17, 17, 17, 17, 17, 17, 36],
            "object": [10, 10, 11, 12, 13, 14, 15],
            "rank": [1, 1, 1, 1, 0, 1, 1],
            # fact 1 has two statements: the earliest start (20050101) dates it; fact 3 ended
            # before the dump (not valid: left out); fact 4 is deprecated; fact 6 is of P36
            "start": [20050101, 20080101, None, 20010101, 20120101, None, 20120101],
            "end": [None, None, None, 20020101, None, None, None],
            "point_in_time": [None, None, 20150606, None, None, None, None],
        }
    ).astype(
        {"start": "Int32", "end": "Int32", "point_in_time": "Int32", "rank": "int8", "property": "int32"}
    )
    path = tmp_path / "claims.parquet"
    claims.to_parquet(path)
    block = Timeline(by="statement_date", edges=[20000101, 20100101, 20190101])
    table, slices = tl.slice_table(block, "20190201", ["P17"], str(path), [], duckdb.connect())
    got = table.set_index("fact_id")[["slice", "slice_end", "date"]].astype(object).to_dict("index")
    assert got == {
        "Q1|P17|Q10": {"slice": "20100101", "slice_end": 20100101, "date": 20050101},
        "Q2|P17|Q11": {"slice": "20190101", "slice_end": 20190101, "date": 20150606},
        "Q5|P17|Q14": {"slice": "static", "slice_end": None, "date": None},
    }
    assert [s.label for s in slices] == ["20100101", "20190101", "static"]


def test_timeline_sampler_draws_matched_slices():
    table = pd.DataFrame({"fact_id": [f"f{i}" for i in range(9)], "slice": ["a", "b", "static"] * 3})
    slices = [tl.Slice("a", 1, 2), tl.Slice("b", 2, 3), tl.Slice("static", None, None)]
    sampler = tl.TimelineSampler(table, slices, n_facts=2, bins=1, seed=0)
    cand = pd.DataFrame({"fact_id": [f"f{i}" for i in range(9)] + ["other"], "popularity": [1] * 10})
    sampler.add(cand.iloc[:5])
    sampler.add(cand.iloc[5:])
    (out,) = sampler.finish()
    # one bin, 3 candidates per slice, 2 drawn from each; "other" is in no slice
    assert out.groupby("slice").size().tolist() == [2, 2, 2]
    assert "other" not in set(out["fact_id"])


def test_timeline_sampler_with_fixed_quotas_draws_per_bin_per_slice():
    table = pd.DataFrame({"fact_id": [f"f{i}" for i in range(12)], "slice": ["a", "static"] * 6})
    slices = [tl.Slice("a", 1, 2), tl.Slice("static", None, None)]
    # n_facts and bins are unused with fixed quotas: 1 fact below popularity 5 and 1 above per slice
    sampler = tl.TimelineSampler(table, slices, n_facts=99, bins=7, seed=0, fixed=(1, [5]))
    sampler.add(pd.DataFrame({"fact_id": table["fact_id"], "popularity": [1, 1, 1, 1, 9, 9] * 2}))
    (out,) = sampler.finish()
    assert pd.crosstab(out["slice"], out["stratum"]).to_numpy().tolist() == [[1, 1], [1, 1]]


def test_taught_until_teaches_static_and_slices_up_to_the_date():
    facts = pd.DataFrame(
        {
            "fact_id": ["s", "a", "b", "c"],
            "slice": ["static", "20190301", "20190401", "20190501"],
            "slice_end": pd.array([None, 20190301, 20190401, 20190501], dtype="Int32"),
        }
    )
    got = tl.taught_until(facts, "20190401")["split"].tolist()
    assert got == ["taught", "taught", "taught", "untaught"]


def test_fixed_sample_takes_per_bin_lowest_hashes_per_slice():
    # edges [10]: popularity 3 -> bin 0, 10 (on the edge) and 50 -> bin 1
    rows = [(f"a{i}", "a", p) for i, p in enumerate([3, 3, 3, 10, 50])]
    rows += [(f"b{i}", "b", p) for i, p in enumerate([3, 3, 10, 50, 50])]
    cand = pd.DataFrame(rows, columns=["fact_id", "slice", "popularity"])
    out = tl.fixed_sample(cand, per_bin=2, edges=[10], seed=4)
    assert pd.crosstab(out["slice"], out["stratum"]).to_numpy().tolist() == [[2, 2], [2, 2]]
    # slice a bin 1 and slice b bin 0 have exactly 2 facts: all taken; the others the 2 of lowest hash
    hashes = dict(zip(cand["fact_id"], tl.stable_hashes((4, "timeline"), cand["fact_id"]), strict=True))
    a_low = sorted(["a0", "a1", "a2"], key=hashes.get)[:2]
    assert sorted(out.loc[(out["slice"] == "a") & (out["stratum"] == 0), "fact_id"]) == sorted(a_low)
    assert sorted(out.loc[(out["slice"] == "a") & (out["stratum"] == 1), "fact_id"]) == ["a3", "a4"]
    assert sorted(out.loc[(out["slice"] == "b") & (out["stratum"] == 0), "fact_id"]) == ["b0", "b1"]
    b_high = sorted(["b2", "b3", "b4"], key=hashes.get)[:2]
    assert sorted(out.loc[(out["slice"] == "b") & (out["stratum"] == 1), "fact_id"]) == sorted(b_high)


def test_fixed_sample_names_a_short_bin():
    cand = pd.DataFrame({"fact_id": ["x", "y", "z"], "slice": ["a", "a", "b"], "popularity": [1, 99, 1]})
    with pytest.raises(ValueError, match=r"b bin 1: 0.*lower timeline.per_bin"):
        tl.fixed_sample(cand, per_bin=1, edges=[10])


def _series_candidates(n_diffs: int) -> pd.DataFrame:
    """Candidates of the diff slices of dumps t_0..t_{n_diffs}: diff i adds 8 triples (subject
    100 (i + 1) + j, popularity 4 j: 4 below 14 and 4 above) that stay static afterwards, but the
    third month's new entities are mostly unpopular (6 at popularity 0, 2 above 14); 8 triples
    (subjects 0..7, popularity 4 j too) are static throughout."""
    dates = [20200101, 20200201, 20200301, 20200401]
    changes = {}
    for i in range(n_diffs):
        rows = [(s, 10, 1, "static") for s in range(8)]
        for k in range(i + 1):
            rows += [(100 * (k + 1) + j, 10, 1, "new" if k == i else "static") for j in range(8)]
        changes[(dates[i], dates[i + 1])] = _changes(rows)
    table = tl.diff_slices(changes)
    j = table["subject"] % 100
    popularity = np.where((table["subject"] >= 300) & (j < 6), 0, 4 * j)
    return pd.DataFrame(
        {"fact_id": [f"Q{s}" for s in table["subject"]], "slice": table["slice"], "popularity": popularity}
    )


def test_a_new_slice_leaves_older_slices_unchanged_with_fixed_quotas():
    old, new = _series_candidates(2), _series_candidates(3)
    assert sorted(set(new["slice"])) == ["20200201", "20200301", "20200401", "static"]
    before = tl.fixed_sample(old, per_bin=2, edges=[14], seed=0)
    after = tl.fixed_sample(new, per_bin=2, edges=[14], seed=0)
    kept = after[after["slice"].isin(set(before["slice"]))].reset_index(drop=True)
    pd.testing.assert_frame_equal(kept, before)
    # every slice, the new one included, has >= 2 facts per bin: 2 + 2 each
    assert after.groupby("slice").size().to_dict() == dict.fromkeys(sorted(set(new["slice"])), 4)
    # the joint sampler re-cuts the pooled quantiles: the older slices' samples change
    joint_before = tl.matched_sample(old, n=4, bins=2, seed=0)
    joint_after = tl.matched_sample(new, n=4, bins=2, seed=0)
    old_slices = joint_after["slice"].isin(set(joint_before["slice"]))
    assert set(joint_after.loc[old_slices, "fact_id"]) != set(joint_before["fact_id"])
