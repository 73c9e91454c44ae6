"""The two slots of PROBELM Algorithm 1 (§3.2, Appendix B): object swaps and subject swaps.

Object-side alternatives fill the prompt's object slot like any candidate; subject-side ones
("repeat with o fixed") replace the prompt's subject, so their scenarios are other sentences.
Scoring (:func:`factprobe.scoring.suite.subject_swap_pairs`) and the plausibility measures
(:mod:`factprobe.metrics.plausibility`) share the names below; pandas only, no model code.
"""

from __future__ import annotations

import pandas as pd

#: Suffix of the prompt id under which a prompt's subject-swap scenarios are scored.
SUBJECT_SWAP = "#subject-swap"
#: Entity of the true scenario in a subject-swap group: the prompt's own subject, scored with the
#: same object form as the swaps (so only the subject differs between the group's sentences).
TRUE_SUBJECT = "=subject"


def is_subject_side(candidates: pd.DataFrame) -> pd.Series:
    """Rows that are subject-side alternatives (``side == "subject"``, cooccur's swapped subjects)."""
    if "side" not in candidates.columns:
        return pd.Series(False, index=candidates.index)
    return candidates["side"].fillna("object").astype(str) == "subject"
