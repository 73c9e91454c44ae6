"""The report's timeline section draws timeline.csv: one figure per suite and each model's cut-off row."""

from __future__ import annotations

import base64

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
    page = timeline_section({"tl": back}, figs)
    assert list(figs.drawn) == ["timeline-tl"]
    png = base64.b64decode(figs.drawn["timeline-tl"].split(",", 1)[1])
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    # one row per model: early's cut-off and declared date, "none" for the model that knows all
    assert page.count("<tr") == 3 and "20200201" in page and "20200215" in page and ">none<" in page
