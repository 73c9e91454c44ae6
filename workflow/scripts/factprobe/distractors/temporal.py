"""Temporal distractors and Temp+Sem (distractors paper §3.3, "Temporal+Semantic Distractors").

Temporal distractors of (s, r) are the objects valid for (s, r) in the past but not at the dump
date: rows with ``status == "past"`` of ``results/temporal/{dump}/temporal.parquet``. They are
placed before the semantic list; most recent first (latest end, then latest start), which is
the reference implementation's "closest to the dump date" order (anchors.md §3.3).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from factprobe.distractors.omega import Omega


def past_objects(temporal: pd.DataFrame) -> dict[tuple[int, int], list[int]]:
    """``(subject, property) -> past objects``, most recent first, from the temporal view."""
    past = temporal[temporal["status"] == "past"].copy()
    if past.empty:
        return {}
    # Unknown dates sort last; among equal dates the object id breaks the tie.
    past["_end"] = (
        past["end"].astype("Float64").fillna(past["point_in_time"].astype("Float64")).fillna(-np.inf)
    )
    past["_start"] = past["start"].astype("Float64").fillna(-np.inf)
    past = past.sort_values(
        ["subject", "property", "_end", "_start", "object"], ascending=[True, True, False, False, True]
    )
    past = past.drop_duplicates(["subject", "property", "object"])
    return {
        (int(s), int(p)): g.astype("int64").tolist()
        for (s, p), g in past.groupby(["subject", "property"], sort=False)["object"]
    }


def temp_sem(
    omega: Omega, past: list[int], sem: list[int], s: int, r: int, o: int, n: int
) -> list[tuple[int, str]]:
    """Temp+Sem: Ω-valid past objects first, then semantic ones, ``(entity, source)`` pairs."""
    first = omega.filter(s, r, o, past, n)
    rest = [e for e in sem if e not in set(first)]
    return [(e, "temporal") for e in first] + [
        (e, "sem") for e in omega.filter(s, r, o, rest, n - len(first))
    ]
