"""Meta-evaluation (distractors-knowledge-measure §4.2–4.3): Kendall τ vs human scores, k-fold CV
with a grid, robustness τ. The project has no human annotation file; the TSV below is hand-made."""

import numpy as np
import pandas as pd
import pytest
from factprobe.metrics.meta import (
    configuration_grid,
    cross_validated_tau,
    fold_of,
    kendall_tau,
    read_human_scores,
    robustness_tau,
    verbalization_robustness,
)

# Hand-made human judgement table (subject, relation, object, score), 9 facts.
HUMAN_TSV = "subject\trelation\tobject\tscore\n" + "".join(
    f"Q{i}\tP36\tQ{100 + i}\t{s}\n" for i, s in enumerate([0.0, 0.1, 0.2, 0.3, 0.5, 0.6, 0.7, 0.9, 1.0])
)


def test_kendall_tau_by_hand():
    # pairs (1,2) and (1,3) concordant, (2,3) discordant: (2 - 1) / 3
    assert kendall_tau([1, 2, 3], [1, 3, 2]) == pytest.approx(1 / 3)
    assert kendall_tau([1, 2, 3], [3, 2, 1]) == pytest.approx(-1.0)
    assert np.isnan(kendall_tau([1, 1, 1], [1, 2, 3]))


def test_read_human_scores_and_errors(tmp_path):
    path = tmp_path / "human.tsv"
    path.write_text(HUMAN_TSV)
    human = read_human_scores(path)
    assert len(human) == 9 and human["fact_id"].iloc[1] == "Q1|P36|Q101" and human["score"].iloc[8] == 1.0
    path.write_text(HUMAN_TSV + "Q9\tP36\tQ109\thigh\n")
    with pytest.raises(ValueError, match=r"human.tsv: line 11: score 'high' is not a number"):
        read_human_scores(path)
    path.write_text(HUMAN_TSV + "Q0\tP36\tQ100\t0.4\n")
    with pytest.raises(ValueError, match="line 11: fact Q0|P36|Q100 already scored on line 2"):
        read_human_scores(path)
    path.write_text("subject\trelation\tscore\n")
    with pytest.raises(ValueError, match=r"line 1: header lacks \['object'\]"):
        read_human_scores(path)


def test_folds_are_balanced_and_order_free():
    keys = [f"f{i}" for i in range(10)]
    folds = fold_of(keys, 3)
    assert sorted(np.bincount(folds).tolist()) == [3, 3, 4]
    again = fold_of(keys[::-1], 3)[::-1]
    assert folds.tolist() == again.tolist()


def per_fact_table(human):
    """Two configurations: Avg@5 follows the human order, Min@1 reverses it; one noisy n=2."""
    rows = []
    for i, (fid, score) in enumerate(zip(human["fact_id"], human["score"], strict=True)):
        rows.append((fid, "k_avg", "sem", 5, score, "template"))
        rows.append((fid, "k_min", "sem", 1, 1 - score, "template"))
        rows.append((fid, "k_avg", "sem", 2, float(i % 2), "template"))
        # A second verbalization: Avg@5 keeps the order, Min@1 is shuffled.
        rows.append((fid, "k_avg", "sem", 5, score + 0.01, "sentence"))
        rows.append((fid, "k_min", "sem", 1, [3, 1, 4, 1, 5, 9, 2, 6, 5][i] / 10, "sentence"))
    return pd.DataFrame(rows, columns=["fact_id", "measure", "strategy", "n", "value", "verbalization"])


def test_cross_validated_grid_picks_the_aligned_configuration(tmp_path):
    path = tmp_path / "human.tsv"
    path.write_text(HUMAN_TSV)
    human = read_human_scores(path)
    table = per_fact_table(human)
    template = table[table["verbalization"] == "template"]
    grid = configuration_grid(template)
    assert len(grid) == 3
    result = cross_validated_tau(template, human, grid, k=3)
    assert [f["config"] for f in result["folds"]] == [{"measure": "k_avg", "strategy": "sem", "n": 5}] * 3
    assert result["mean"] == pytest.approx(1.0) and result["std"] == pytest.approx(0.0)
    with pytest.raises(ValueError, match="only 9 facts"):
        cross_validated_tau(template, human, grid, k=5)


def test_robustness_between_verbalizations(tmp_path):
    path = tmp_path / "human.tsv"
    path.write_text(HUMAN_TSV)
    table = per_fact_table(read_human_scores(path))
    avg5 = [{"measure": "k_avg", "strategy": "sem", "n": 5}]
    assert verbalization_robustness(table, "template", "sentence", avg5) == pytest.approx(1.0)
    min1 = [{"measure": "k_min", "strategy": "sem", "n": 1}]
    # template values 1 - score are strictly decreasing in i; sentence values are the digits above.
    digits = [3, 1, 4, 1, 5, 9, 2, 6, 5]
    want = kendall_tau(list(range(9, 0, -1)), digits)
    assert verbalization_robustness(table, "template", "sentence", min1) == pytest.approx(want)
    both = robustness_tau(
        table[table["verbalization"] == "template"], table[table["verbalization"] == "sentence"], avg5 + min1
    )
    assert both == pytest.approx((1.0 + want) / 2)
