"""Per-slice curves and the effective cut-off estimator (factprobe.metrics.timeline): hand-worked
fits, the ruptures search it restricts, and the known-answer simulation of issue item 3."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import ruptures as rpt
from factprobe.metrics import timeline as mt

EDGES = [20200101, 20200201, 20200301, 20200401, 20200501, 20200601, 20200701]


def test_fit_break_hand_worked():
    # static + 3 dated slices, known up to slice 1: means 1, 1, 0, 0 -> k = 1
    seg = [np.ones(4), np.ones(4), np.zeros(4), np.zeros(4)]
    k, means = mt.fit_break(seg, first=0)
    assert k == 1 and means == (1.0, 0.0)
    # flat: no break -> the last index (3 dated slices: k = 3 = "none")
    assert mt.fit_break([np.ones(4)] * 4, first=0) == (3, None)
    # a rise is not a cut-off
    assert mt.fit_break([np.zeros(4), np.zeros(4), np.ones(4), np.ones(4)], first=0) == (3, None)
    # without the static slice the first segment is slice 1: a drop after it -> k = 1
    assert mt.fit_break([np.ones(4), np.zeros(4), np.zeros(4)], first=1)[0] == 1


def test_penalty_hand_worked():
    # signal 1,1,1,0 | 1,0,0,0 (two segments of 4, T = 8): flat cost = 8 * 0.25 = 2; break cost =
    # 4 * 3/16 + 4 * 3/16 = 1.5; gain 0.5; sigma2 = 1.5 / 8; penalty 2 * sigma2 * ln 8 = 0.78 > 0.5
    seg = [np.array([1.0, 1, 1, 0]), np.array([1.0, 0, 0, 0])]
    assert mt.fit_break(seg, first=0, penalty=2.0) == (1, None)
    # penalty 1: 0.39 < 0.5 -> accepted, k = 0
    assert mt.fit_break(seg, first=0, penalty=1.0)[0] == 0


def test_search_equals_ruptures_dynp_on_equal_segments():
    rng = np.random.default_rng(5)
    size = 7
    compared = 0
    for trial in range(20):
        level = np.repeat(rng.uniform(0, 1, 5), size)
        signal = level + rng.normal(0, 0.3, level.size)
        dynp = rpt.Dynp(model="l2", jump=size, min_size=size).fit(signal.reshape(-1, 1))
        bkp = dynp.predict(n_bkps=1)[0]
        k, means = mt.fit_break(list(signal.reshape(5, size)), first=0, penalty=0.0)
        if means is not None:  # a drop: the break is ruptures' one
            assert (k + 1) * size == bkp, trial
            compared += 1
    assert compared >= 5


def test_estimate_cutoff_dates_and_none():
    known = [np.ones(20)] * 2 + [np.zeros(20)] * 4
    cut = mt.estimate_cutoff(known, EDGES, static=np.ones(20), samples=50)
    # slices 1, 2 known: k = 2, date t_2; every replicate agrees
    assert (cut.index, cut.date, cut.status) == (2, 20200301, "within")
    assert (cut.low, cut.high, cut.share_none) == (2, 2, 0.0)
    flat = mt.estimate_cutoff([np.ones(20)] * 6, EDGES, static=np.ones(20), samples=50)
    assert (flat.index, flat.date, flat.status, flat.low_date) == (6, None, "none", None)
    none_known = mt.estimate_cutoff([np.zeros(20)] * 6, EDGES, static=np.ones(20), samples=50)
    # only the static slice known: k = 0, a cut-off at or before t_0
    assert (none_known.index, none_known.date) == (0, 20200101)
    with pytest.raises(ValueError, match="dates"):
        mt.estimate_cutoff(known, EDGES[:-1])


def _simulate(t_index: int | None, seed: int, n: int = 30, p_known: float = 0.7, p_unknown: float = 0.25):
    rng = np.random.default_rng(seed)
    dated = []
    for i in range(1, len(EDGES)):
        p = p_known if t_index is None or i <= t_index else p_unknown
        dated.append((rng.random(n) < p).astype(float))
    static = (rng.random(n) < p_known).astype(float)
    return mt.estimate_cutoff(dated, EDGES, static=static, samples=100, seed=seed)


@pytest.mark.parametrize("t_index", [2, 4])
def test_known_answer_simulation_recovers_t(t_index):
    # per-fact correctness of a model that knows 70 % of the facts up to slice T and 25 % (the
    # chance of a 4-way choice) after: the estimate is within one slice of T in >= 9 of 10 seeds
    hits = sum(abs(_simulate(t_index, seed).index - t_index) <= 1 for seed in range(10))
    assert hits >= 9


def test_known_answer_simulation_knows_everything():
    # a model that knows every slice: "no cut-off within the series" (k = N) in >= 9 of 10 seeds
    nones = sum(_simulate(None, seed).status == "none" for seed in range(10))
    assert nones >= 9


def test_slice_curve_and_fact_values():
    per_fact = pd.DataFrame(
        {
            "fact_id": ["a", "a", "b", "c", "c", "d"],
            "measure": ["K", "K", "K", "K", "other", "K"],
            "strategy": ["random"] * 6,
            "n": [3] * 6,
            "value": [1.0, 0.0, 1.0, 0.0, 5.0, 1.0],
        }
    )
    v = mt.fact_values(per_fact, "K", "random", 3)
    assert v.to_dict() == {"a": 0.5, "b": 1.0, "c": 0.0, "d": 1.0}
    slices = pd.Series({"a": "s1", "b": "s1", "c": "s2", "d": "s2"})
    curve = mt.slice_curve(v, slices, samples=200)
    assert curve["slice"].tolist() == ["s1", "s2"]
    assert curve["value"].tolist() == [0.75, 0.5]
    assert curve["n_facts"].tolist() == [2, 2]
    # two facts: every replicate mean is one of 0.5, 0.75, 1.0 (s1) / 0, 0.5, 1 (s2)
    assert 0.5 <= curve["ci_low"][0] <= 0.75 <= curve["ci_high"][0] <= 1.0
    assert 0.0 <= curve["ci_low"][1] <= 0.5 <= curve["ci_high"][1] <= 1.0


def _timeline_inputs():
    # static + three dated slices (20200101, 20200201], (.., 20200301], (.., 20200401], 6 facts each
    labels = ["static", "20200201", "20200301", "20200401"]
    bounds = {"static": (None, None), "20200201": (20200101, 20200201), "20200301": (20200201, 20200301)}
    bounds["20200401"] = (20200301, 20200401)
    facts = pd.DataFrame(
        [(f"{lab}-{i}", lab, *bounds[lab]) for lab in labels for i in range(6)],
        columns=["fact_id", "slice", "slice_start", "slice_end"],
    )
    known_to = {"early": {"static", "20200201"}, "all": set(labels)}
    per_fact = {
        model: pd.DataFrame(
            {
                "fact_id": facts["fact_id"],
                "measure": "k_avg",
                "strategy": "random",
                "n": 3,
                "value": [1.0 if s in known else 0.0 for s in facts["slice"]],
            }
        )
        for model, known in known_to.items()
    }
    return per_fact, facts


def test_timeline_table_per_model():
    per_fact, facts = _timeline_inputs()
    block = {"measure": "k_avg", "strategy": "random", "n": 3, "penalty": 2.0}
    table = mt.timeline_table(per_fact, facts, block, {"early": "2020-02-15", "all": None}, samples=50)
    assert list(table.columns) == mt.TIMELINE_COLUMNS
    early = table[table["model"] == "early"]
    # slices in time order, static last; values 1, 0, 0 and static 1
    assert early["slice"].tolist() == ["20200201", "20200301", "20200401", "static"]
    assert early["value"].tolist() == [1.0, 0.0, 0.0, 1.0]
    # known: static + slice 1 -> k = 1, cut-off t_1 = 20200201, declared beside it
    row = early.iloc[0]
    assert (row["cutoff"], row["cutoff_index"], row["cutoff_status"]) == ("20200201", 1, "within")
    assert row["declared_cutoff"] == "20200215"
    # declared 2020-02-15: only the slices starting on or after it are new to the model
    assert early["after_declared"].tolist() == [False, False, True, False]
    everything = table[table["model"] == "all"].iloc[0]
    assert everything["cutoff_status"] == "none" and everything["cutoff"] == ""
    assert everything["cutoff_index"] == 3 and everything["declared_cutoff"] == ""
    assert not table.loc[table["model"] == "all", "after_declared"].any()
