"""factprobe.metrics.uncertainty: percentile bootstrap over facts and the paired comparison,
checked against hand-computed cases and a naive one-replicate-at-a-time loop."""

import numpy as np
import pandas as pd
import pytest
from factprobe.metrics.uncertainty import (
    bootstrap_interval,
    fact_matrices,
    interval_table,
    paired_difference,
    paired_table,
    resample_counts,
)


def naive_interval(values_by_fact, samples, seed, level=0.95):
    """Independent reference: draw fact indices one replicate at a time, average each drawn fact's
    values group by group with plain Python lists, average over groups, take the quantiles."""
    rng = np.random.default_rng(seed)
    facts = list(values_by_fact)
    reps = []
    for _ in range(samples):
        drawn = rng.integers(0, len(facts), size=len(facts))
        groups = {}
        for i in drawn:
            for group, value in values_by_fact[facts[i]]:
                groups.setdefault(group, []).append(value)
        reps.append(sum(sum(v) / len(v) for v in groups.values()) / len(groups))
    return np.quantile(reps, [(1 - level) / 2, (1 + level) / 2])


def tidy(values_by_fact):
    return pd.DataFrame(
        [(f, g, v) for f, rows in values_by_fact.items() for g, v in rows],
        columns=["fact_id", "lang", "value"],
    )


def test_counts_are_draws_with_replacement_independent_of_chunking():
    whole = np.concatenate(list(resample_counts(7, 50, seed=3, chunk=50)))
    pieces = np.concatenate(list(resample_counts(7, 50, seed=3, chunk=8)))
    assert whole.shape == (50, 7) and (whole.sum(axis=1) == 7).all()
    np.testing.assert_array_equal(whole, pieces)
    rng = np.random.default_rng(3)
    first = np.bincount(rng.integers(0, 7, size=7), minlength=7)
    np.testing.assert_array_equal(whole[0], first)


def test_interval_matches_a_naive_loop_with_groups_and_repeated_rows():
    rng = np.random.default_rng(0)
    # 15 facts, two languages, some facts absent from a language, some with two rows in one.
    values = {}
    for f in range(15):
        rows = [("en", float(rng.random()))]
        if f % 3:
            rows.append(("cs", float(rng.random() < 0.4)))
        if f % 5 == 0:
            rows.append(("en", 0.0))
        values[f"Q{f}"] = rows
    facts, sums, counts = fact_matrices(tidy(values), ["lang"])
    assert facts == sorted(values)
    ci = bootstrap_interval(sums, counts, samples=400, seed=11)
    low, high = naive_interval({f: values[f] for f in facts}, samples=400, seed=11)
    assert ci.low == pytest.approx(low, abs=1e-12) and ci.high == pytest.approx(high, abs=1e-12)
    # Point value = mean over languages of the mean over rows, as the leaderboard pools.
    frame = tidy(values)
    expected = frame.groupby("lang")["value"].mean().mean()
    assert ci.value == pytest.approx(expected) and ci.n_facts == 15
    assert ci.low < ci.value < ci.high


def test_hand_computed_cases():
    # Every fact the same value: every replicate equals it, the interval has width 0.
    ci = bootstrap_interval(np.full((4, 1), 0.7), np.ones((4, 1)), samples=200, seed=0)
    assert (ci.value, ci.low, ci.high) == pytest.approx((0.7, 0.7, 0.7))
    # Two facts, values 0 and 1: a replicate is 0, 1/2 or 1 with probability 1/4, 1/2, 1/4, so
    # the 2.5 % and 97.5 % quantiles are 0 and 1: a verdict on 2 facts spans the whole range.
    ci = bootstrap_interval(np.array([[0.0], [1.0]]), np.ones((2, 1)), samples=2000, seed=1)
    assert (ci.value, ci.low, ci.high, ci.n_facts) == (0.5, 0.0, 1.0, 2)


def test_interval_narrows_with_more_facts():
    rng = np.random.default_rng(5)
    widths = []
    for n in (20, 2000):
        x = (rng.random((n, 1)) < 0.5).astype(float)
        ci = bootstrap_interval(x, np.ones_like(x), samples=500, seed=0)
        widths.append(ci.high - ci.low)
    # Width ~ 2 * 1.96 * sqrt(p(1-p)/n): 0.44 at n=20, 0.044 at n=2000.
    assert widths[0] == pytest.approx(0.44, abs=0.12) and widths[1] == pytest.approx(0.044, abs=0.01)


def test_paired_difference_sign_width_and_p_value():
    rng = np.random.default_rng(2)
    base = rng.random((200, 1))
    ones = np.ones_like(base)
    # A is B shifted by 0.1 on every fact: the difference is exactly 0.1 in every replicate.
    r = paired_difference((base + 0.1, ones), (base, ones), samples=300, seed=0)
    assert r.diff == pytest.approx(0.1) and r.low == pytest.approx(0.1) and r.high == pytest.approx(0.1)
    assert r.excludes_zero and r.p_value == pytest.approx(2 / 301)
    # Swapping the models flips the sign.
    r2 = paired_difference((base, ones), (base + 0.1, ones), samples=300, seed=0)
    assert r2.diff == pytest.approx(-0.1) and r2.high == pytest.approx(-0.1)
    # Identical models: difference 0, interval [0, 0], p = 1.
    same = paired_difference((base, ones), (base, ones), samples=300, seed=0)
    assert (same.diff, same.low, same.high, same.p_value) == (0.0, 0.0, 0.0, 1.0)
    assert not same.excludes_zero
    # Small noisy difference on correlated facts: the paired interval is far narrower than the
    # unpaired intervals of the two models (which overlap), and still excludes 0.
    a = base + 0.02 + 0.01 * rng.standard_normal(base.shape)
    r = paired_difference((a, ones), (base, ones), samples=500, seed=0)
    ca = bootstrap_interval(a, ones, samples=500, seed=0)
    cb = bootstrap_interval(base, ones, samples=500, seed=1)
    assert ca.low < cb.high  # unpaired intervals overlap
    assert r.low > 0 and r.high - r.low < 0.2 * (ca.high - ca.low) and r.p_value < 0.01


def test_tables_pool_groups_and_pair_on_shared_facts():
    rows = []
    for f in range(30):
        for lang in ("en", "de"):
            rows.append(("m1", f"Q{f}", "k_avg", "random", 5, lang, float(f % 2)))
            if f < 20:
                rows.append(("m2", f"Q{f}", "k_avg", "random", 5, lang, float(f % 2) * 0.5))
    frame = pd.DataFrame(rows, columns=["model", "fact_id", "measure", "strategy", "n", "lang", "value"])
    per_model = {m: part.drop(columns="model") for m, part in frame.groupby("model")}
    table = interval_table(per_model["m1"], ["k_avg"], ["lang"], samples=200, seed=0)
    assert table[["measure", "strategy", "n", "n_facts"]].values.tolist() == [["k_avg", "random", 5, 30]]
    assert (
        table["value"].iloc[0] == pytest.approx(0.5)
        and table["ci_low"].iloc[0] < 0.5 < table["ci_high"].iloc[0]
    )
    paired = paired_table(per_model, ["k_avg"], ["lang"], samples=200, seed=0)
    row = paired.iloc[0]
    # Shared facts Q0..Q19: m1 = 0.5, m2 = 0.25 there; m1 better by 0.25 on every replicate's pair
    # of odd facts (diff = half the share of odd facts drawn).
    assert (row["model_a"], row["model_b"], row["n_facts"]) == ("m1", "m2", 20)
    assert row["value_a"] == pytest.approx(0.5) and row["value_b"] == pytest.approx(0.25)
    assert row["diff"] == pytest.approx(0.25) and 0 < row["ci_low"] < 0.25 < row["ci_high"] <= 0.5


def test_nested_groups_average_within_outer_groups_first():
    """PLAUSIBILITY-style pooling: groups g1, g2 in outer o1 and g3 in o2 with means 0.2, 0.4, 1.0
    give (0.3 + 1.0) / 2 = 0.65 (a flat mean would be 0.533); replicates agree with a naive loop."""
    from factprobe.metrics.uncertainty import grouped_mean, outer_codes

    rows = pd.DataFrame(
        [
            ("Q1", "statement", "acc", 0.2),
            ("Q1", "statement", "rr", 0.4),
            ("Q1", "question", "acc", 1.0),
            ("Q2", "statement", "acc", 0.2),
            ("Q2", "statement", "rr", 0.4),
            ("Q2", "question", "acc", 1.0),
            ("Q3", "statement", "acc", 0.8),
        ],
        columns=["fact_id", "style", "part", "value"],
    )
    facts, sums, counts = fact_matrices(rows[rows["fact_id"] != "Q3"], ["style", "part"])
    outer = outer_codes(rows[rows["fact_id"] != "Q3"], ["style", "part"], ["style"])
    assert float(grouped_mean(sums, counts, outer=outer)) == pytest.approx(0.65)
    assert float(grouped_mean(sums, counts)) == pytest.approx(1.6 / 3)
    facts, sums, counts = fact_matrices(rows, ["style", "part"])
    outer = outer_codes(rows, ["style", "part"], ["style"])
    ci = bootstrap_interval(sums, counts, samples=300, seed=4, outer=outer)
    rng = np.random.default_rng(4)
    reps = []
    for _ in range(300):
        drawn = rows.set_index("fact_id").loc[[facts[i] for i in rng.integers(0, 3, size=3)]]
        inner = drawn.groupby(["style", "part"])["value"].mean()
        reps.append(inner.groupby(level="style").mean().mean())
    low, high = np.quantile(reps, [0.025, 0.975])
    assert (ci.low, ci.high) == pytest.approx((low, high), abs=1e-12)
