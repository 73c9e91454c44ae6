"""Co-occurrence alternatives: PROBELM Algorithm 1 (§3.2, Appendix B; docs/references.md).

Object side: the parents P of s are its declared classes (P279, and P31 because most subjects
are instances; Appendix B names "subclass of"); the siblings S are the other entities declaring a
parent in P; every object of (sib, r, ·) for sib ∈ S is counted, and objects are ranked by that
frequency. Subject side ("repeat with o fixed"): siblings of o through o's parents, the subjects
of (·, r, sib) ranked by frequency. Ties break by ``stable_hash(fact_id, side, entity)``. The
alternative ranked i of n gets relevance ``n + 1 - i`` and the true triple ``n + 1``, the graded
ranks 1..n+1 of the PROBELM data turned into NDCG gains.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from factprobe.distractors.omega import Omega, in_sorted
from factprobe.hashing import stable_hash


class Cooccurrence:
    """Statements grouped by property for fast sibling counts.

    Counts over a sibling set are memoised per (relation, side, declared types of the anchor):
    facts whose anchors share their types (most subjects of a relation) count once, and a fact
    only takes its anchor's own statements off (Algorithm 1 excludes the anchor from its
    siblings). Ranking is lazy, one frequency level at a time, so a fact hashes the ties of
    the levels Ω reaches, not every alternative of a hub (issue 15).
    """

    def __init__(self, statements: pd.DataFrame) -> None:
        st = (
            statements[["subject", "property", "object"]]
            .drop_duplicates()
            .sort_values(["property", "subject"])
        )
        self.by_property = {
            int(p): (g["subject"].to_numpy(np.int64), g["object"].to_numpy(np.int64))
            for p, g in st.groupby("property")
        }
        self._counts: dict[tuple, tuple[np.ndarray, np.ndarray]] = {}
        self._by_object: dict[int, tuple[np.ndarray, np.ndarray]] = {}

    def _columns(self, r: int, side: str) -> tuple[np.ndarray, np.ndarray]:
        """``(anchor column, found column)`` of relation ``r``, the anchor column sorted."""
        if side not in ("object", "subject"):
            raise ValueError(f"side must be 'object' or 'subject', not {side!r}")
        subj, obj = self.by_property.get(r, (np.empty(0, np.int64), np.empty(0, np.int64)))
        if side == "object":
            return subj, obj
        if r not in self._by_object:
            order = np.argsort(obj, kind="stable")
            self._by_object[r] = (obj[order], subj[order])
        return self._by_object[r]

    def counts(self, omega: Omega, s: int, r: int, o: int, side: str) -> tuple[np.ndarray, np.ndarray]:
        """``(entities, frequencies)`` of Algorithm 1 for one fact (sorted ids, frequency ≥ 1)."""
        key_col, found_col = self._columns(r, side)
        anchor = s if side == "object" else o
        types = omega.types_of(anchor)
        key = (r, side, tuple(types.tolist()))
        if key not in self._counts:
            if len(self._counts) > 4096:
                self._counts.clear()
            hit = in_sorted(omega.members(types), key_col)
            self._counts[key] = np.unique(found_col[hit], return_counts=True)
        ents, counts = self._counts[key]
        lo, hi = np.searchsorted(key_col, anchor, "left"), np.searchsorted(key_col, anchor, "right")
        # A typed anchor is one of its own siblings' set: take its statements off.
        if hi > lo and len(types):
            own = found_col[lo:hi]
            counts = counts.copy()
            np.subtract.at(counts, np.searchsorted(ents, own), 1)
            keep = counts > 0
            ents, counts = ents[keep], counts[keep]
        return ents, counts

    def levels(self, omega: Omega, fact_id: str, s: int, r: int, o: int, side: str):
        """The ranking of one side as lists of ``(entity, frequency)``, one per frequency level,
        most frequent first; ties by ``stable_hash(fact_id, side, entity)`` (no Ω yet)."""
        ents, counts = self.counts(omega, s, r, o, side)
        for level in np.unique(counts)[::-1]:
            tied = ents[counts == level].tolist()
            tied.sort(key=lambda e: stable_hash(fact_id, side, e))
            yield [(e, int(level)) for e in tied]

    def ranked(self, omega: Omega, fact_id: str, s: int, r: int, o: int, side: str) -> list[tuple[int, int]]:
        """All ``(entity, frequency)`` alternatives of one side, most frequent first (no Ω yet)."""
        return [pair for level in self.levels(omega, fact_id, s, r, o, side) for pair in level]

    def alternatives(
        self, omega: Omega, fact_id: str, s: int, r: int, o: int, n: int = 10, side: str = "object"
    ) -> list[tuple[int, int, float]]:
        """Top ``n`` Ω-valid alternatives ``(entity, frequency, relevance)``."""
        admit = omega.filter if side == "object" else omega.filter_subjects
        found: list[tuple[int, int]] = []
        for level in self.levels(omega, fact_id, s, r, o, side):
            if len(found) >= n:
                break
            freq = dict(level)
            found += [(e, freq[e]) for e in admit(s, r, o, [e for e, _ in level], n - len(found))]
        return [(e, f, float(n + 1 - i)) for i, (e, f) in enumerate(found, start=1)]
