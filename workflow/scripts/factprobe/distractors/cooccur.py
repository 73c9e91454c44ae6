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

from factprobe.distractors.omega import Omega
from factprobe.hashing import stable_hash


class Cooccurrence:
    """Statements grouped by property for fast sibling counts."""

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

    def ranked(self, omega: Omega, fact_id: str, s: int, r: int, o: int, side: str) -> list[tuple[int, int]]:
        """All ``(entity, frequency)`` alternatives of one side, most frequent first (no Ω yet)."""
        subj, obj = self.by_property.get(r, (np.empty(0, np.int64), np.empty(0, np.int64)))
        anchor = s if side == "object" else o
        siblings = omega.members(omega.types_of(anchor))
        siblings = siblings[siblings != anchor]
        if side == "object":
            found = obj[np.isin(subj, siblings)]
        elif side == "subject":
            found = subj[np.isin(obj, siblings)]
        else:
            raise ValueError(f"side must be 'object' or 'subject', not {side!r}")
        ents, counts = np.unique(found, return_counts=True)
        order = sorted(range(len(ents)), key=lambda i: (-counts[i], stable_hash(fact_id, side, int(ents[i]))))
        return [(int(ents[i]), int(counts[i])) for i in order]

    def alternatives(
        self, omega: Omega, fact_id: str, s: int, r: int, o: int, n: int = 10, side: str = "object"
    ) -> list[tuple[int, int, float]]:
        """Top ``n`` Ω-valid alternatives ``(entity, frequency, relevance)``."""
        ranked = self.ranked(omega, fact_id, s, r, o, side)
        freq = dict(ranked)
        cands = [e for e, _ in ranked]
        keep = (
            omega.filter(s, r, o, cands, n) if side == "object" else omega.filter_subjects(s, r, o, cands, n)
        )
        return [(e, freq[e], float(n + 1 - i)) for i, e in enumerate(keep, start=1)]
