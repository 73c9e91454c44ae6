"""The cut-off profile (factprobe.metrics.cutoff_profile): the ramp fit on hand-worked curves, and
shapes recovered from simulated per-fact values (Bernoulli draws) with known truth."""

from __future__ import annotations

import numpy as np
import pytest
from factprobe.metrics import cutoff_profile as cp

#: t_0..t_8: monthly, 2020-01-01 .. 2020-09-01 (slice i = month i).
EDGES = [20200101, 20200201, 20200301, 20200401, 20200501, 20200601, 20200701, 20200801, 20200901]


def _draw(probs, seed, n=40, static=0.9):
    rng = np.random.default_rng(seed)
    dated = [(rng.random(n) < p).astype(float) for p in probs]
    return dated, (rng.random(n) < static).astype(float)


def _exact(fractions, n=30):
    """Per-fact 0/1 values with exactly round(f * n) ones per slice."""
    return [np.r_[np.ones(round(f * n)), np.zeros(n - round(f * n))] for f in fractions]


def test_ramp_fit_hand_worked():
    pos = np.arange(5, dtype=float)
    a, b, lv, fl = cp.fit_ramps(np.array([[1.0, 1, 1, 0, 0]]), np.ones(5), pos)
    assert (a[0], b[0], lv[0], fl[0]) == pytest.approx((2, 3, 1, 0))
    # 1, 1, 2/3, 1/3, 0 (and 0): the ramp from position 1 to 4 fits exactly
    pos = np.arange(6, dtype=float)
    a, b, lv, fl = cp.fit_ramps(np.array([[1.0, 1, 2 / 3, 1 / 3, 0, 0]]), np.ones(6), pos)
    assert (a[0], b[0], lv[0], fl[0]) == pytest.approx((1, 4, 1, 0))
    # a rising curve has no falling ramp
    assert np.isnan(cp.fit_ramps(np.array([[0.0, 0, 1, 1]]), np.ones(4), np.arange(4.0))[0][0])


def test_gradual_exact_width_in_slices_and_days():
    """Slices known 100 %, 100 %, 100 %, 66.7 %, 33.3 %, 0 %, 0 %, 0 % (static 100 %): the ramp
    falls from position a = 3 (t_3 = 2020-04-01) to b = 6 (t_6 = 2020-07-01). 10 % of the way
    down at a + 0.3 = 2020-04-01 + 0.3 * 30 days = 2020-04-10, 90 % at a + 2.7 = 2020-06-01 +
    0.7 * 30 days = 2020-06-22: width 0.8 * 3 = 2.4 slices, 20 + 31 + 22 = 73 days. The one
    break falls between 2/3 and 1/3 (k = 4)."""
    dated = _exact([1, 1, 1, 2 / 3, 1 / 3, 0, 0, 0])
    p = cp.fit_profile(dated, EDGES, np.ones(30), samples=50)
    assert p.shape == "gradual" and p.status == "within"
    assert p.decay_slices == pytest.approx(2.4) and p.decay_days == pytest.approx(73.0)
    assert (p.decay_start_date, p.decay_end_date) == (20200410, 20200622)
    assert (p.level_before, p.level_after) == pytest.approx((1.0, 0.0))
    assert (p.index, p.date) == (4, 20200501)
    assert p.counts == (30,) * 9


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_sharp_drop_is_sharp_and_covered(seed):
    # known (90 %) up to slice 3, then 10 %: the ramp falls between positions 3 and 4 (0.8 slices)
    dated, static = _draw([0.9] * 3 + [0.1] * 5, seed)
    p = cp.fit_profile(dated, EDGES, static, samples=100, seed=seed)
    assert p.shape == "sharp" and p.decay_slices == pytest.approx(0.8) and p.decay_slices <= 1
    assert p.low <= 3 <= p.high and p.date == EDGES[3]
    # 0.8 of April (30 days)
    assert p.decay_days == pytest.approx(24.0)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_gradual_bernoulli_within_one_slice(seed):
    """Each fact known with probability 1, 1, 1, 2/3, 1/3, 0, 0, 0: the exact curve's width is
    2.4 slices (test above); the estimate lies within one slice of it."""
    dated, static = _draw([1, 1, 1, 2 / 3, 1 / 3, 0, 0, 0], seed, static=1.0)
    p = cp.fit_profile(dated, EDGES, static, samples=100, seed=seed)
    assert p.shape == "gradual"
    assert abs(p.decay_slices - 2.4) <= 1.0
    assert p.decay_slices_low <= 2.4 + 1e-9 <= p.decay_slices_high + 2e-9


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_gap_is_not_monotone_without_a_date(seed):
    # knows slices 1-2 and 4, not 3 (nor 5-8)
    dated, static = _draw([0.9, 0.9, 0.1, 0.9, 0.1, 0.1, 0.1, 0.1], seed)
    p = cp.fit_profile(dated, EDGES, static, samples=100, seed=seed)
    assert p.shape == "not monotone" and p.status == "not monotone"
    assert p.date is None and p.index is None
    assert (p.low, p.high) == (0, 8) and p.high_date is None
    # slice 4 (label: its end t_4) above slice 3 (t_3)
    assert "slice 20200501 is known better" in p.reason and "earlier slice 20200401" in p.reason
    assert np.isnan(p.decay_slices)


def test_flat_is_none():
    dated, static = _draw([0.8] * 8, 3)
    p = cp.fit_profile(dated, EDGES, static, samples=100)
    assert (p.shape, p.status, p.date) == ("none", "none", None)
    assert np.isnan(p.decay_slices)


def test_insufficient_series_and_slices():
    dated, static = _draw([0.9, 0.1], 0)
    p = cp.fit_profile(dated, EDGES[:3], static)
    assert p.shape == "insufficient" and p.date is None and p.low is None
    assert "2 dated slice(s)" in p.reason
    dated, static = _draw([0.9] * 3 + [0.1] * 5, 0)
    dated[5] = dated[5][:7]
    p = cp.fit_profile(dated, EDGES, static, min_facts=20)
    assert (p.shape, p.index, p.date) == ("insufficient", None, None)
    assert "slice 20200701 has 7 facts" in p.reason and "min_facts=20" in p.reason
    p = cp.fit_profile(dated, EDGES, static[:5], min_facts=5)
    assert p.shape == "sharp"
    with pytest.raises(ValueError, match="dates"):
        cp.fit_profile(dated, EDGES[:-1])


def test_monotone_intervals_hand_worked():
    # two slices of 4 facts: means 0.5 and 0.25, pooled sd sqrt((1 + 0.75) / 6), z at 1 - 0.05/4
    lows, highs = cp.monotone_intervals([np.array([1.0, 1, 0, 0]), np.array([1.0, 0, 0, 0])], 0.95)
    half = 2.2414027 * np.sqrt(1.75 / 6) / 2
    assert lows == pytest.approx([0.5 - half, 0.25 - half], abs=1e-6)
    assert highs == pytest.approx([0.5 + half, 0.25 + half], abs=1e-6)


def test_known_subject_mask_hand_worked():
    static_subjects = ["Q1", "Q1", "Q2", "Q2", "Q3", "Q4", "Q4"]
    static_values = [1.0, 0.5, 0.2, 0.4, 1.0, 0.6, np.nan]
    # Q1: mean 0.75 over 2; Q2: 0.3 over 2; Q3: 1.0 over 1; Q4: 0.6 over 1 (the NaN is no value)
    got = cp.known_subject_mask(["Q1", "Q2", "Q3", "Q4", "Q5", "Q1"], static_subjects, static_values, 0.5, 2)
    assert got.tolist() == [True, False, False, False, False, True]
    got = cp.known_subject_mask(["Q1", "Q2", "Q3", "Q4", "Q5"], static_subjects, static_values, 0.6, 1)
    assert got.tolist() == [True, False, True, True, False]
