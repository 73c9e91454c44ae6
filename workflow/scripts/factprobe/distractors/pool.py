"""Same-relation pools (fluent-mLAMA paper §3.1): objects of the other facts of the relation.

The pool of a relation and language is every object of the suite's facts of that relation that
has a form in the language, sorted by ``stable_hash(property, lang, entity)`` ("hash order",
the paper's reproducible sample); a fact takes the first ``n`` (50 by default) that are in Ω(f).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from factprobe.contracts import id_ints
from factprobe.distractors.omega import Omega
from factprobe.hashing import stable_hash


def relation_pools(
    facts: pd.DataFrame, forms: pd.DataFrame, languages: list[str]
) -> dict[tuple[str, str], np.ndarray]:
    """``(property, lang) -> objects in hash order`` from a facts table and its entity forms."""
    have = {lang: set(id_ints(g["entity"].unique())) for lang, g in forms.groupby("lang")}
    pools = {}
    for prop, group in facts.groupby("property", sort=True):
        objects = np.unique(id_ints(group["object"]))
        for lang in languages:
            keep = [e for e in objects.tolist() if e in have.get(lang, ())]
            keep.sort(key=lambda e: stable_hash(prop, lang, f"Q{e}"))
            pools[(prop, lang)] = np.asarray(keep, dtype=np.int64)
    return pools


def pool_distractors(omega: Omega, pool: np.ndarray, s: int, r: int, o: int, n: int = 50) -> list[int]:
    """The first ``n`` Ω-valid objects of the relation's pool, in hash order."""
    return omega.filter(s, r, o, pool, n)
