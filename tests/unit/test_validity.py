"""One rule for "valid at date t": the pandas and the DuckDB form agree on hand-made edge cases,
and the three consumers (diff, probe selection, Ω) use it (WikiFactDiff's half-open validity)."""

from __future__ import annotations

import duckdb
import pandas as pd
from factprobe.diff.engine import valid_dates_sql
from factprobe.distractors.omega import valid_objects
from factprobe.probes.select import truthy_claims
from factprobe.validity import valid_at, valid_sql

T = 20190201
NA = None
# (name, rank, start, end, point_in_time, valid at T) — expectations worked out by hand.
CASES = [
    ("no qualifiers", 1, NA, NA, NA, True),
    ("deprecated", 0, NA, NA, NA, False),
    ("preferred", 2, NA, NA, NA, True),
    ("start == t", 1, T, NA, NA, True),
    ("start after t", 1, T + 1, NA, NA, False),
    ("end == t (half-open: ended)", 1, NA, T, NA, False),
    ("end after t", 1, NA, T + 1, NA, True),
    ("end before t", 1, NA, T - 1, NA, False),
    ("start < t < end", 1, 20100101, 20200101, NA, True),
    ("point_in_time == t", 1, NA, NA, T, True),
    ("point_in_time after t", 1, NA, NA, T + 1, False),
    ("point_in_time before t", 1, NA, NA, 19990101, True),
    ("end year only, same year (20190000 < t)", 1, NA, 20190000, NA, False),
    ("start year only, same year", 1, 20190000, NA, NA, True),
    ("end month only after t (20190300)", 1, NA, 20190300, NA, True),
    ("deprecated but dated validly", 0, 20100101, 20200101, NA, False),
    ("negative (BCE) start", 1, -5000000, NA, NA, True),
]


def frame() -> pd.DataFrame:
    rows = [
        {"subject": i, "property": 6, "object": 100 + i, "rank": r, "start": s, "end": e, "point_in_time": p}
        for i, (_, r, s, e, p, _) in enumerate(CASES)
    ]
    df = pd.DataFrame(rows)
    return df.astype({"rank": "int8", "start": "Int32", "end": "Int32", "point_in_time": "Int32"})


def test_pandas_form_matches_hand_worked_cases():
    got = valid_at(frame(), T).tolist()
    assert got == [c[-1] for c in CASES], [c[0] for c, g in zip(CASES, got, strict=True) if g != c[-1]]


def test_sql_form_agrees_with_pandas_form_on_every_case():
    df = frame()
    con = duckdb.connect()
    con.register("claims", df)
    for t in (T, T - 1, T + 1, 20190000, 20200101):
        sql = f"SELECT subject, {valid_sql(t)} AS ok FROM claims ORDER BY subject"
        got = [bool(x) for x in con.execute(sql).df()["ok"]]
        assert got == valid_at(df, t).tolist(), t
        # The diff's form (deprecated rows already dropped, short column names) is the same rule.
        short = f'SELECT subject, {valid_dates_sql(t)} AS ok FROM (SELECT subject, start AS s, "end" AS e, point_in_time AS p FROM claims WHERE rank >= 1) ORDER BY subject'
        kept = df[df["rank"] >= 1]
        assert [bool(x) for x in con.execute(short).df()["ok"]] == valid_at(kept, t).tolist(), t


def test_probe_selection_and_omega_use_the_rule():
    df = frame()
    expected = {100 + i for i, c in enumerate(CASES) if c[-1]}
    assert set(valid_objects(df, T)["object"]) == expected
    # Every subject has one statement, so the truthy view keeps exactly the valid ones.
    assert set(truthy_claims(df, T)["object"]) == expected


def test_truthy_prefers_the_best_rank_among_valid_statements_only():
    df = pd.DataFrame(
        {
            "subject": [1, 1, 1],
            "property": [6, 6, 6],
            "object": [10, 11, 12],
            "rank": [2, 1, 1],
            "start": [None, None, None],
            # The preferred statement ended at t: the normal-ranked current one speaks for (s, p).
            "end": [T, None, None],
            "point_in_time": [None, None, T + 1],
        }
    ).astype({"start": "Int32", "end": "Int32", "point_in_time": "Int32"})
    assert truthy_claims(df, T)["object"].tolist() == [11]
