"""cutoff_profile.csv and the known-subject curve of timeline.csv on a hand-built suite: which
curve the profile is fitted on, the counts, and that facts about unknown subjects do not move it."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from factprobe.metrics import cutoff_profile as cp
from factprobe.metrics.timeline import timeline_table

EDGES = [20200101, 20200201, 20200301, 20200401, 20200501]
BLOCK = {"measure": "k_avg", "strategy": "random", "n": 3, "min_facts": 20, "subject_threshold": 0.75}


def _suite(per_slice_known=25, per_slice_new=25, extra_unknown=0):
    """Static: subjects K* known (value 1), U* not (value 0). Dated slices 1-4: per slice
    ``per_slice_known`` facts about K subjects (known in slices 1-2, value 1, not after: 0) and
    ``per_slice_new`` about subjects without static facts (value 0 throughout); ``extra_unknown``
    more facts about U subjects, valued 1, in slices 3-4."""
    rows, values = [], {}

    def add(fid, subject, label, start, end, value):
        rows.append((fid, subject, label, start, end))
        values[fid] = value

    for i in range(100):
        add(f"sK{i}", f"K{i}", "static", None, None, 1.0)
        add(f"sU{i}", f"U{i}", "static", None, None, 0.0)
    for s in range(1, 5):
        label, start, end = str(EDGES[s]), EDGES[s - 1], EDGES[s]
        for j in range(per_slice_known):
            add(f"d{s}K{j}", f"K{(s * 25 + j) % 100}", label, start, end, 1.0 if s <= 2 else 0.0)
        for j in range(per_slice_new):
            add(f"d{s}N{j}", f"N{s}_{j}", label, start, end, 0.0)
        if s >= 3:
            for j in range(extra_unknown):
                add(f"d{s}U{j}", f"U{j}", label, start, end, 1.0)
    facts = pd.DataFrame(rows, columns=["fact_id", "subject", "slice", "slice_start", "slice_end"])
    facts["slice_start"] = facts["slice_start"].astype("Int64")
    facts["slice_end"] = facts["slice_end"].astype("Int64")
    per_fact = pd.DataFrame(
        {
            "fact_id": list(values),
            "measure": "k_avg",
            "value": list(values.values()),
            "strategy": "random",
            "n": 3,
        }
    )
    return facts, per_fact


def test_profile_on_the_known_subject_curve():
    facts, per_fact = _suite()
    table = cp.profile_table({"m": per_fact}, facts, BLOCK, {"m": "2020-03-15"}, samples=50)
    row = table.iloc[0]
    # known-subject curve 1, 1, 0, 0 (25 facts a slice): cut-off after slice 2 = t_2, a sharp drop
    assert (row["curve"], row["shape"], row["cutoff"], row["cutoff_index"]) == (
        "known_subject",
        "sharp",
        "20200301",
        2,
    )
    assert row["decay_slices"] == pytest.approx(0.8) and (row["level_before"], row["level_after"]) == (
        1.0,
        0.0,
    )
    assert (row["n_slices"], row["n_facts"], row["n_known_subject"]) == (4, 200, 100)
    assert (row["min_slice_facts"], row["min_slice_known"]) == (50, 25)
    assert row["declared_cutoff"] == "20200315"
    assert list(table.columns) == cp.PROFILE_COLUMNS


def test_too_few_known_subject_facts_falls_back_to_all_facts():
    facts, per_fact = _suite()
    block = {**BLOCK, "min_facts": 30}
    row = cp.profile_table({"m": per_fact}, facts, block, {}, samples=50).iloc[0]
    assert row["curve"] == "all"
    assert row["reason"].startswith("all facts: the known-subject curve has 25 facts in slice 20200201")
    # all facts: 0.5, 0.5, 0, 0 after a static slice at 0.5: the same cut-off
    assert (row["cutoff"], row["shape"]) == ("20200301", "sharp")


def test_unknown_subjects_added_late_do_not_move_the_known_profile():
    facts, per_fact = _suite()
    more, more_values = _suite(extra_unknown=40)
    base = cp.profile_table({"m": per_fact}, facts, BLOCK, {}, samples=50).iloc[0]
    added = cp.profile_table({"m": more_values}, more, BLOCK, {}, samples=50).iloc[0]
    same = ["curve", "cutoff", "cutoff_low", "cutoff_high", "shape", "decay_slices", "n_known_subject"]
    assert added[same].tolist() == base[same].tolist()
    assert added["n_facts"] == base["n_facts"] + 80
    # the curve of all facts hides the drop: 0.5, 0.5, then 40 / 90 = 0.44 twice: no break
    on_all = cp.profile_table({"m": more_values}, more, {**BLOCK, "min_facts": 30}, {}, samples=50).iloc[0]
    assert (on_all["curve"], on_all["shape"], on_all["cutoff"]) == ("all", "none", "")


def test_known_curve_beside_the_timeline_curve():
    facts, per_fact = _suite()
    table = timeline_table({"m": per_fact}, facts, BLOCK, {}, samples=50).set_index("slice")
    assert table.loc["20200201", ["value", "known_value", "known_n_facts"]].tolist() == [0.5, 1.0, 25]
    assert table.loc["20200401", ["value", "known_value", "n_facts"]].tolist() == [0.0, 0.0, 50]
    assert np.isnan(table.loc["static", "known_value"]) and table.loc["static", "known_n_facts"] == 0


def test_insufficient_row_has_no_date():
    facts, per_fact = _suite(per_slice_known=5, per_slice_new=5)
    row = cp.profile_table({"m": per_fact}, facts, BLOCK, {}, samples=50).iloc[0]
    assert (row["shape"], row["cutoff_status"], row["cutoff"], row["cutoff_index"]) == (
        "insufficient",
        "insufficient",
        "",
        -1,
    )
    assert "fewer than min_facts=20" in row["reason"]


def test_report_draws_the_profile_figure_and_tables(tmp_path):
    import base64

    from factprobe import contracts
    from factprobe.metrics.slice_calibration import calibration_table
    from factprobe.report.html import Figures, timeline_section

    facts, per_fact = _suite()
    declared = {"m": "2020-03-15"}
    tables = {
        "timeline": timeline_table({"m": per_fact}, facts, BLOCK, declared, samples=20),
        "cutoff_profile": cp.profile_table({"m": per_fact}, facts, BLOCK, declared, samples=20),
    }
    # the model answers right where it knows the fact (confidence 0.9), wrong elsewhere (0.85)
    right = per_fact["value"].to_numpy()
    conf = pd.DataFrame(
        {"prompt_id": per_fact["fact_id"], "fact_id": per_fact["fact_id"], "strategy": "random", "n": 3}
        | {"p_true": np.where(right > 0, 0.9, 0.1), "confidence": np.where(right > 0, 0.9, 0.85)}
        | {"correct": right, "brier": 0.0}
    )
    tables["slice_calibration"] = calibration_table({"m": conf}, facts, BLOCK, tables["cutoff_profile"])
    back = {}
    for name, table in tables.items():
        contracts.write_text(name, table, tmp_path / f"{name}.csv")
        back[name] = contracts.read_text(name, tmp_path / f"{name}.csv")
    after = back["slice_calibration"].set_index("part").loc["after"]
    # after the cut-off (slices 3-4): every fact wrong at 0.85 >= 0.8
    assert (after["n_facts"], after["accuracy"], after["confidently_wrong"]) == (100, 0.0, 1.0)
    figs = Figures(dpi=40)
    page = timeline_section(
        {"tl": back["timeline"]},
        figs,
        cutoff={"tl": back["cutoff_profile"]},
        calibration={"tl": back["slice_calibration"]},
    )
    assert list(figs.drawn) == ["timeline-tl", "cutoff_profile-tl"]
    png = base64.b64decode(figs.drawn["cutoff_profile-tl"].split(",", 1)[1])
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert "<td>known_subject</td>" in page and "<td>sharp</td>" in page and "<td>after</td>" in page


def test_a_slice_without_scores_gives_insufficient_rows_not_a_date():
    facts, per_fact = _suite()
    # the model has no score for any fact of slice 3
    per_fact = per_fact[~per_fact["fact_id"].str.startswith("d3")]
    table = timeline_table({"m": per_fact}, facts, BLOCK, {}, samples=20)
    assert set(table["cutoff_status"]) == {"insufficient"} and set(table["cutoff"]) == {""}
    assert set(table["cutoff_index"]) == {-1}
    row = cp.profile_table({"m": per_fact}, facts, BLOCK, {}, samples=20).iloc[0]
    assert (row["shape"], row["cutoff"]) == ("insufficient", "")
    assert "slice 20200401 has 0 facts" in row["reason"]
