"""Temporal distractors and Temp+Sem (distractors paper §3.3, "Temporal+Semantic Distractors").

Temporal distractors of (s, r) are the objects valid for (s, r) in the past but not at the dump
date: rows with ``status == "past"`` of ``results/temporal/{dump}/temporal.parquet``. Temp+Sem
(strategy ``temp+sem``) places them before the semantic list. Order and selection follow the
reference implementation (DistFactAssessLM ``SimilarityDistractorFinder.find`` with
``use_temporal_distractors``; anchors.md §3.3):

* only statements whose validity interval is not a point (a ``point_in_time`` alone, or
  start == end, is left out) and that ended before the dump date (``source == "qualifier"``);
* closest first: ascending distance in days between the interval's midpoint and the dump date;
  intervals without a midpoint (an open start) follow, latest end first;
* objects that are merely absent from this dump but present in an earlier one
  (``source == "earlier_dump"``) carry no date and are no evidence that the fact ended (a sampled
  or edited dump drops statements too): they count only with ``earlier_dump=True``, last.
"""

from __future__ import annotations

from datetime import date
from pathlib import Path

import numpy as np
import pandas as pd

from factprobe import arrays, contracts, scan
from factprobe.contracts import id_ints
from factprobe.diff.temporal import counted_past
from factprobe.distractors.omega import Omega, pair_keys


def day_number(yyyymmdd: float) -> float:
    """Days since 0001-01-01 of a YYYYMMDD date (month/day 00 = the middle of the year/month)."""
    if not np.isfinite(yyyymmdd):
        return np.nan
    value = int(yyyymmdd)
    year, month, day = value // 10000, (value // 100) % 100, value % 100
    # Wikidata precision below day is written with zeros: take the middle of the period.
    month = month if 1 <= month <= 12 else 7
    day = day if 1 <= day <= 31 else 15
    try:
        return float(date(max(year, 1), month, day).toordinal())
    except ValueError:
        return float(date(max(year, 1), month, 28).toordinal())


def past_objects(
    temporal: pd.DataFrame,
    dump: str | int | None = None,
    earlier_dump: bool = False,
    facts: pd.DataFrame | None = None,
) -> dict[tuple[int, int], list[int]]:
    """``(subject, property) -> past objects`` in the reference order (module docstring).

    ``dump`` is the present (YYYYMMDD; default: the latest ``last_seen``, else the latest end).
    ``facts`` (``subject, property`` as Q/P ids): keep only their pairs, the only ones a suite
    asks for, so the work follows the probed facts, not the dump's temporal view.
    """
    past = counted_past(temporal, earlier_dump)
    if facts is not None:
        want = arrays.unique(pair_keys(id_ints(facts["subject"]), id_ints(facts["property"])))
        past = past[np.isin(pair_keys(past["subject"], past["property"]), want)]
    if past.empty:
        return {}
    start = past["start"].astype("Float64").astype(float)
    end = past["end"].astype("Float64").astype(float)
    from_earlier = past["source"].astype(str).eq("earlier_dump").to_numpy()
    if dump is None:
        seen = pd.to_numeric(past["last_seen"], errors="coerce")
        dump = seen.max() if seen.notna().any() else np.nanmax(end.to_numpy())
    present = day_number(float(dump))
    s_days = np.array([day_number(v) for v in start])
    e_days = np.array([day_number(v) for v in end])
    mid = (s_days + e_days) / 2
    past = past.assign(
        _group=np.where(from_earlier, 2, np.where(np.isnan(mid), 1, 0)),
        _dist=np.abs(present - mid),
        _end=-np.nan_to_num(e_days, nan=-np.inf),
    )
    past = past.sort_values(
        ["subject", "property", "_group", "_dist", "_end", "object"], na_position="last", kind="stable"
    )
    past = past.drop_duplicates(["subject", "property", "object"])
    subj = past["subject"].to_numpy(np.int64)
    prop = past["property"].to_numpy(np.int64)
    obj = past["object"].to_numpy(np.int64).tolist()
    # Rows are sorted by (subject, property): one slice per pair.
    cuts = np.flatnonzero((subj[1:] != subj[:-1]) | (prop[1:] != prop[:-1])) + 1
    starts, stops = np.r_[0, cuts], np.r_[cuts, len(subj)]
    return {
        (int(subj[a]), int(prop[a])): obj[a:b] for a, b in zip(starts.tolist(), stops.tolist(), strict=True)
    }


def past_of_facts(
    temporal_path: str | Path, facts: pd.DataFrame, dump: str | int | None, earlier_dump: bool = False
) -> dict[tuple[int, int], list[int]]:
    """:func:`past_objects` of the facts' pairs, reading from the dump-sized temporal view only
    the past rows of the facts' subjects and relations (a DuckDB scan)."""
    temporal = scan.table_of_relations(
        "temporal",
        temporal_path,
        id_ints(facts["property"]),
        contracts.columns("temporal"),
        subjects=id_ints(facts["subject"]),
        any_of={"status": ["past"]},
    )
    return past_objects(temporal, dump, earlier_dump, facts)


def temp_sem(
    omega: Omega, past: list[int], sem: list[int], s: int, r: int, o: int, n: int
) -> list[tuple[int, str]]:
    """Temp+Sem: Ω-valid past objects first, then semantic ones, ``(entity, source)`` pairs."""
    first = omega.filter(s, r, o, past, n)
    rest = [e for e in sem if e not in set(first)]
    return [(e, "temporal") for e in first] + [
        (e, "sem") for e in omega.filter(s, r, o, rest, n - len(first))
    ]
