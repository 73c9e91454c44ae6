"""The one rule for "statement valid at date t", in a pandas form and a DuckDB SQL form.

A statement is valid at ``t`` (a ``YYYYMMDD`` int, e.g. a dump date) when it is not deprecated
(``rank >= 1``) and its qualifiers allow it::

    start <= t < end      (P580 start time, P582 end time; half-open)
    point_in_time <= t    (P585)

A missing (null) qualifier does not constrain. Dates compare as the integers of
docs/contracts.md, so an unknown month/day (``00``) sorts before every day of its year: a
statement that ended in "2019" (``20190000``) is no longer valid on 2019-02-01, one that starts
in "2019" already is.

This is WikiFactDiff's validity (Ammar Khodja et al., LREC-COLING 2024; its decision table,
Orange-OpenSource/WikiFactDiff ``build/utils/ku.py`` ``classify_algorithm_full``, reads "start <
T_old & no end -> keep", "end between -> forget", "end > T_new -> keep": an end at or before ``t``
means the fact no longer holds, a point in time after ``t`` that it does not hold yet). The diff
decision table (:mod:`factprobe.diff.rules`) uses it, and so do the probe
selection (truthy facts at the dump date) and Ω (objects that must not serve as distractors,
distractors-knowledge-measure §3.1) use the same rule, so the three stages agree on what holds
at a dump date.
"""

from __future__ import annotations

import pandas as pd


def valid_at(claims: pd.DataFrame, t: int) -> pd.Series:
    """Boolean mask of the rows of ``claims`` (``rank, start, end, point_in_time``) valid at ``t``."""
    t = int(t)
    start, end, pit = (claims[c].astype("Int64") for c in ("start", "end", "point_in_time"))
    ok = (
        (claims["rank"] >= 1)
        & (start.isna() | (start <= t))
        & (end.isna() | (end > t))
        & (pit.isna() | (pit <= t))
    )
    return ok.fillna(False).astype(bool)


def valid_sql(
    t: int, start: str = "start", end: str = '"end"', pit: str = "point_in_time", rank: str | None = "rank"
) -> str:
    """SQL boolean of :func:`valid_at` over the given column expressions (``rank=None``: the
    caller has dropped deprecated statements already)."""
    t = int(t)
    dates = f"({start} IS NULL OR {start} <= {t}) AND ({end} IS NULL OR {end} > {t}) AND ({pit} IS NULL OR {pit} <= {t})"
    return f"({dates})" if rank is None else f"({rank} >= 1 AND {dates})"
