"""Distractors paper §4.3 Table 4: robustness τ averaged over the configurations Table 3's folds
chose (the reference's optimize.ipynb loops over its per-fold best configurations). Values are
worked out by hand from the tables below."""

import math

import pandas as pd
import pytest
from factprobe.metrics.meta import fold_best_robustness, robustness_for_models


def rows(measure, strategy, n, flawed, corrected):
    out = []
    for verbalization, values in (("flawed", flawed), ("corrected", corrected)):
        for i, v in enumerate(values, start=1):
            out.append(
                {
                    "fact_id": f"f{i}",
                    "measure": measure,
                    "strategy": strategy,
                    "n": n,
                    "value": v,
                    "verbalization": verbalization,
                }
            )
    return out


PER_FACT = pd.DataFrame(
    rows("probability", "", 0, [0.1, 0.2, 0.3, 0.4], [0.1, 0.3, 0.2, 0.4])
    + rows("k_min", "random", 1, [1, 2, 3, 4], [4, 3, 2, 1])
    + rows("k_min", "random", 2, [1, 2, 3, 4], [1, 2, 3, float("nan")])
)


def alignment(model="m"):
    """A human_alignment.csv: probability chosen by every fold; dist:random Min@1 by fold 0 and
    Min@2 by folds 1 and 2; fold -1 rows are summaries, not configurations."""
    folds = [
        ("probability", 0, "probability", "", 0),
        ("probability", 1, "probability", "", 0),
        ("probability", 2, "probability", "", 0),
        ("probability", -1, "", "", 0),
        ("dist:random", 0, "k_min", "random", 1),
        ("dist:random", 1, "k_min", "random", 2),
        ("dist:random", 2, "k_min", "random", 2),
        ("dist:random", -1, "", "", 0),
    ]
    return pd.DataFrame(
        [
            {"model": model, "family": f, "fold": k, "measure": m, "strategy": s, "n": n}
            for f, k, m, s, n in folds
        ]
    )


def test_fold_best_robustness_by_hand():
    table = fold_best_robustness(PER_FACT, alignment()).set_index("family")
    # probability: one discordant pair (f2, f3) of 6: τ = (5 - 1) / 6, the same in every fold.
    assert table.loc["probability", "robustness_tau"] == pytest.approx(2 / 3)
    assert table.loc["probability", "n_facts"] == 4 and table.loc["probability", "folds"] == 3
    # dist:random: f4 has no corrected Min@2, so the facts are f1..f3; Min@1 reverses their
    # order (τ = -1), Min@2 keeps it (τ = 1), chosen twice: (-1 + 1 + 1) / 3.
    assert table.loc["dist:random", "robustness_tau"] == pytest.approx(1 / 3)
    assert table.loc["dist:random", "n_facts"] == 3


def test_robustness_per_model_uses_that_models_folds():
    other = alignment("other")
    other.loc[other["family"] == "dist:random", "n"] = [1, 1, 1, 0]
    table = robustness_for_models({"m": PER_FACT, "other": PER_FACT}, pd.concat([alignment(), other]))
    got = table.set_index(["model", "family"])["robustness_tau"]
    assert got["m", "dist:random"] == pytest.approx(1 / 3)
    # Min@1 in every fold on f1..f4: the order reversed, τ = -1
    assert got["other", "dist:random"] == pytest.approx(-1.0)
    assert list(table.columns) == ["model", "family", "folds", "robustness_tau", "n_facts"]


def test_no_defined_tau_is_nan():
    flat = PER_FACT.assign(value=1.0)
    table = fold_best_robustness(flat, alignment()).set_index("family")
    assert math.isnan(table.loc["probability", "robustness_tau"])
