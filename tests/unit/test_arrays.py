"""factprobe.arrays: sort-based unique/union give NumPy's answers (sorted, distinct, same dtype)."""

from __future__ import annotations

import numpy as np
from factprobe.arrays import union, unique


def test_unique_and_union_equal_numpy_on_ids():
    rng = np.random.default_rng(3)
    for n in (0, 1, 2, 7, 1_000, 50_000):
        a = rng.integers(-3, 10 * n + 5, n, dtype=np.int64)
        b = rng.integers(0, 9, n // 3 + 1, dtype=np.int64)
        got = unique(a)
        assert got.dtype == np.int64 and np.array_equal(got, np.unique(a))
        assert np.array_equal(union(a, b), np.union1d(a, b))
    assert unique([5, 5, 1]).tolist() == [1, 5]
    assert union(np.empty(0, np.int64), [4, 2, 4]).tolist() == [2, 4]
