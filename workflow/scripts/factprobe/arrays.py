"""Set operations on int64 id arrays, sort-based.

NumPy 2.3+ answers ``np.unique(x)`` (no ``return_*``) with a hash table that is an order of
magnitude slower than sorting for millions of distinct ids (benchmarks/RESULTS.md, "Unique ids"),
and ``np.union1d`` goes through it. Ω, retrieval and the semantic index take unions
of type members and relation objects at dump scale, so they use these instead:
same results (sorted, distinct), sort cost.
"""

from __future__ import annotations

import numpy as np


def unique(values) -> np.ndarray:
    """Sorted distinct values of ``values`` (``np.unique`` without its hash path)."""
    s = np.sort(np.asarray(values).ravel())
    if len(s) < 2:
        return s
    keep = np.empty(len(s), dtype=bool)
    keep[0] = True
    np.not_equal(s[1:], s[:-1], out=keep[1:])
    return s[keep]


def union(a, b) -> np.ndarray:
    """Sorted distinct values of ``a`` and ``b`` together (``np.union1d``)."""
    return unique(np.concatenate([np.asarray(a).ravel(), np.asarray(b).ravel()]))


def ranges(lo: np.ndarray, width: np.ndarray) -> np.ndarray:
    """Positions ``lo[i] .. lo[i] + width[i] - 1`` of every ``i``, one range after the other:
    the rows of many binary-searched runs of a sorted column, without a Python loop."""
    lo, width = np.asarray(lo, np.int64), np.asarray(width, np.int64)
    return np.arange(width.sum()) + np.repeat(lo - np.cumsum(width) + width, width)


def first_of_pairs(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Mask of the first row of each distinct ``(a, b)`` pair, the rows sorted by (a, b)."""
    keep = np.ones(len(a), dtype=bool)
    keep[1:] = (a[1:] != a[:-1]) | (b[1:] != b[:-1])
    return keep
