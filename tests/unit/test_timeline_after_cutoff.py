"""Each model's contamination-free suite (after_cutoff.csv, factprobe.metrics.timeline): the facts
of the slices starting on or after its declared cut-off, on hand-made slices and values."""

from __future__ import annotations

import numpy as np
import pandas as pd
from factprobe import contracts
from factprobe.metrics import timeline as mt
from factprobe.report.html import Figures, timeline_section

BOUNDS = {
    "static": (None, None),
    "20200201": (20200101, 20200201),
    "20200301": (20200201, 20200301),
    "20200401": (20200301, 20200401),
}


def _inputs():
    # two facts per slice; k_min: 1, 0 in slice 20200301, 1, 1 in 20200401, 5 elsewhere (a value
    # that would show if those facts leaked in); k_avg: 1 everywhere
    facts = pd.DataFrame(
        [(f"{lab}-{i}", lab, *BOUNDS[lab]) for lab in BOUNDS for i in range(2)],
        columns=["fact_id", "slice", "slice_start", "slice_end"],
    )
    k_min = {"20200301-0": 1.0, "20200301-1": 0.0, "20200401-0": 1.0, "20200401-1": 1.0}
    rows = [(f, "k_min", k_min.get(f, 5.0)) for f in facts["fact_id"]]
    rows += [(f, "k_avg", 1.0) for f in facts["fact_id"]]
    table = pd.DataFrame(rows, columns=["fact_id", "measure", "value"]).assign(
        strategy="random", n=3, lang="en", verbalization="", style="statement", shots=""
    )
    return facts, table


def test_slices_after_a_cutoff_start_on_or_after_it():
    facts, _ = _inputs()
    assert mt.slices_after(facts, "20200201") == ["20200301", "20200401"]
    assert mt.slices_after(facts, "20200101") == ["20200201", "20200301", "20200401"]
    # 20200401 starts at 20200301, before 20200315: partly before the cut-off, not taken
    assert mt.slices_after(facts, "20200315") == []


def test_after_cutoff_table_measures_each_model_on_its_own_facts(tmp_path):
    facts, table = _inputs()
    per_fact = {"mid": table, "late": table, "undeclared": table}
    declared = {"mid": "2020-02-01", "late": "20200315", "undeclared": None}
    out = mt.after_cutoff_table(per_fact, facts, declared, ["k_min", "k_avg"], samples=200, seed=1)
    assert list(out.columns) == mt.AFTER_CUTOFF_COLUMNS
    # no row for the model without a declared cut-off
    assert sorted(set(out["model"])) == ["late", "mid"]
    mid = out[out["model"] == "mid"].set_index("measure")
    assert set(mid["slices"]) == {"20200301;20200401"} and set(mid["declared_cutoff"]) == {"20200201"}
    # k_min over the 4 facts after 20200201: (1 + 0 + 1 + 1) / 4; k_avg constant 1, interval [1, 1]
    assert mid.loc["k_min", "value"] == 0.75 and mid.loc["k_min", "n_facts"] == 4
    assert 0.0 <= mid.loc["k_min", "ci_low"] < 0.75 <= mid.loc["k_min", "ci_high"] <= 1.0
    assert mid.loc["k_avg", ["value", "ci_low", "ci_high"]].tolist() == [1.0, 1.0, 1.0]
    # no slice starts after 20200315 yet: one empty row, waiting for the next dump
    late = out[out["model"] == "late"]
    assert len(late) == 1 and late["measure"].iloc[0] == "" and late["n_facts"].iloc[0] == 0
    assert late["slices"].iloc[0] == "" and np.isnan(late["value"].iloc[0])
    # through the contract's CSV round trip, and into the report's timeline section
    path = tmp_path / "after_cutoff.csv"
    contracts.write_text("after_cutoff", out, path)
    back = contracts.read_text("after_cutoff", path)
    assert back["n_facts"].tolist() == out["n_facts"].tolist()
    assert back.loc[back["model"] == "late", "measure"].tolist() == [""]
    timeline = mt.timeline_table(
        {"mid": table}, facts, {"measure": "k_min"}, {"mid": "2020-02-01"}, samples=20
    )
    page = timeline_section({"tl": timeline}, Figures(dpi=30), None, {"tl": back})
    assert "contamination-free" in page and "20200301;20200401" in page and "<td>0.750</td>" in page


def test_a_new_slice_joins_the_suites_of_the_models_it_is_after():
    # a dump 20200501 adds slice (20200401, 20200501]: late's suite (cut-off 20200315) is not
    # filled yet by 20200401 (it starts 20200301) but it is by the new slice
    facts, table = _inputs()
    new = pd.DataFrame(
        {"fact_id": ["20200501-0", "20200501-1"], "slice": "20200501"}
        | {"slice_start": 20200401, "slice_end": 20200501}
    )
    extra = table[table["fact_id"].isin(["20200401-0", "20200401-1"])].assign(
        fact_id=lambda f: f["fact_id"].str.replace("0401", "0501")
    )
    out = mt.after_cutoff_table(
        {"late": pd.concat([table, extra])}, pd.concat([facts, new]), {"late": "20200315"}, ["k_min"], 50
    )
    assert out[["slices", "value", "n_facts"]].values.tolist() == [["20200501", 1.0, 2]]
