"""Temp+Sem (distractors paper §3.3, §4.1 Fig. 2): one strategy ``temp+sem``, temporal distractors
in the reference order, objects missing from a later dump only on request, S′ selection."""

import numpy as np
import pandas as pd
import pytest
from factprobe.diff.temporal import with_temporal_distractors
from factprobe.distractors.temporal import day_number, past_objects
from factprobe.settings import ConfigError, Metrics, Retrieve


def view(rows):
    cols = ["subject", "property", "object", "status", "start", "end", "point_in_time", "source", "last_seen"]
    frame = pd.DataFrame(rows, columns=cols)
    for c in ("start", "end", "point_in_time"):
        frame[c] = frame[c].astype("Float64")
    return frame


# (USA, head of government) at dump 2014-12-01; hand-computed interval midpoints:
#   A 2001-01-20..2009-01-20 -> 2005-01-20, 9.9 years before the dump
#   B 1993-01-20..2001-01-20 -> 1997-01-19, 17.9 years
#   C 2009-01-20..2009-06-01 -> 2009-03-27, 5.7 years  -> closest: first
#   D 1950 alone (point in time)            -> not a temporal distractor (a point)
#   E open start, end 2012-05-01             -> no midpoint: after the dated ones
#   F absent from this dump, seen in 2010     -> only with earlier_dump=True, last
#   G 2012-01-01..2012-01-01 (start == end)   -> a point: left out
TEMPORAL = view(
    [
        (30, 6, 1, "past", 20010120, 20090120, None, "qualifier", 20141201),
        (30, 6, 2, "past", 19930120, 20010120, None, "qualifier", 20141201),
        (30, 6, 3, "past", 20090120, 20090601, None, "qualifier", 20141201),
        (30, 6, 4, "past", None, None, 19500101, "qualifier", 20141201),
        (30, 6, 5, "past", None, 20120501, None, "qualifier", 20141201),
        (30, 6, 6, "past", None, None, None, "earlier_dump", 20100101),
        (30, 6, 7, "past", 20120101, 20120101, None, "qualifier", 20141201),
        (30, 6, 9, "current", 20090120, None, None, "qualifier", 20141201),
        (31, 6, 8, "past", None, None, None, "earlier_dump", 20100101),
    ]
)


def test_reference_order_by_distance_to_the_validity_interval():
    assert day_number(20141201) - day_number(20141101) == 30
    got = past_objects(TEMPORAL, "20141201")
    assert got[(30, 6)] == [3, 1, 2, 5]
    assert (31, 6) not in got  # only missing from this dump: not "ended"
    with_missing = past_objects(TEMPORAL, "20141201", earlier_dump=True)
    assert with_missing[(30, 6)] == [3, 1, 2, 5, 6]
    assert with_missing[(31, 6)] == [8]


def test_past_objects_of_the_probed_pairs_only():
    # (31, 6) is probed too, (30, 6) is not; (30, 7) is probed but has no past row.
    facts = pd.DataFrame({"subject": ["Q31", "Q30"], "property": ["P6", "P7"]})
    got = past_objects(TEMPORAL, "20141201", earlier_dump=True, facts=facts)
    assert got == {(31, 6): [8]}
    probed = pd.DataFrame({"subject": ["Q30", "Q31"], "property": ["P6", "P6"]})
    assert past_objects(TEMPORAL, "20141201", True, probed) == past_objects(TEMPORAL, "20141201", True)


def test_distance_not_recency_decides():
    # Ended 2013 but started 1950 (midpoint 1981) is farther than 2005-2007 (midpoint 2006).
    rows = view(
        [
            (1, 2, 10, "past", 19500101, 20130101, None, "qualifier", 20141201),
            (1, 2, 11, "past", 20050101, 20070101, None, "qualifier", 20141201),
        ]
    )
    assert past_objects(rows, "20141201")[(1, 2)] == [11, 10]


def test_temp_is_one_strategy_named_as_in_the_paper():
    def settings(strategies):
        return Retrieve(strategies, 10, 50, "exact", ["en"], "20190201", 90, "truthy", 200)

    assert settings(["random", "sem", "temp"]).strategies == ["random", "sem", "temp+sem"]
    assert settings(["temp", "temp+sem"]).strategies == ["temp+sem"]
    with pytest.raises(ConfigError, match="unknown distractor strategies"):
        settings(["tempsem"])
    assert (
        Metrics(families={}).own("knowledge")["combined_strategies"] == {}
    )  # no second, identical Temp+Sem curve


def test_s_prime_keeps_facts_with_a_temporal_distractor():
    candidates = pd.DataFrame(
        {
            "fact_id": ["Q30|P6|Q9", "Q31|P6|Q7", "Q32|P6|Q1"],
            "subject": ["Q30", "Q31", "Q32"],
            "property": ["P6", "P6", "P6"],
            "object": ["Q9", "Q7", "Q1"],
        }
    )
    kept = with_temporal_distractors(candidates, TEMPORAL)
    assert kept["fact_id"].tolist() == ["Q30|P6|Q9"]
    both = with_temporal_distractors(candidates, TEMPORAL, earlier_dump=True)
    assert both["fact_id"].tolist() == ["Q30|P6|Q9", "Q31|P6|Q7"]
    # A part without candidates keeps its columns (popularity_bins reads "object" of every part).
    none = with_temporal_distractors(candidates.iloc[0:0], TEMPORAL)
    assert none.empty and none.columns.tolist() == candidates.columns.tolist()
    assert np.isnan(day_number(float("nan")))
