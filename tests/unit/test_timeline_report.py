"""The report's timeline section draws timeline.csv: one figure per suite and each model's cut-off row."""

from __future__ import annotations

import base64

import pandas as pd
from factprobe import contracts
from factprobe.metrics import timeline as mt
from factprobe.report.html import Figures, timeline_section
from test_timeline_cutoff import _timeline_inputs


def test_timeline_section_draws_the_figure(tmp_path):
    per_fact, facts = _timeline_inputs()
    block = {"measure": "k_avg", "strategy": "random", "n": 3}
    table = mt.timeline_table(per_fact, facts, block, {"early": "2020-02-15", "all": ""}, samples=20)
    # through the contract's CSV round trip, as render_report reads it
    path = tmp_path / "timeline.csv"
    contracts.write_text("timeline", table, path)
    back = contracts.read_text("timeline", path)
    assert back.set_index("model")["cutoff"].to_dict() == {"all": "", "early": "20200201"}
    figs = Figures(dpi=40)
    profile = pd.DataFrame(
        {"slice": ["a", "a", "b", "b"], "stratum": [0, 1, 0, 1], "n": [2, 1, 2, 1]}
        | {"mean_popularity": [3.0, 50.0, 4.0, 60.0], "median_popularity": [3.0, 50.0, 4.0, 60.0]}
    )
    page = timeline_section({"tl": back}, figs, {"tl": profile})
    assert list(figs.drawn) == ["timeline-tl"]
    png = base64.b64decode(figs.drawn["timeline-tl"].split(",", 1)[1])
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    # one row per model: early's cut-off and declared date, "none" for the model that knows all
    assert "20200201" in page and "20200215" in page and ">none<" in page
    # the cut-off table (header + 2 models) and the profile table (header + 2 slices, 3 facts each)
    assert page.count("<tr") == 6 and "bin 1: median sitelinks" in page and "<td>60.000</td>" in page
