"""The report's Table 4 section (distractors paper §4.3) draws robustness.csv: per suite one row per
measure family, per model the τ and its facts; the section appears only when the file exists."""

from __future__ import annotations

import re

import pandas as pd
from factprobe import contracts
from factprobe.metrics.meta import robustness_for_models
from factprobe.report.html import ReportTables, build_report, robustness_section
from factprobe.settings import Report
from test_table4 import PER_FACT, alignment


def _table4(tmp_path) -> pd.DataFrame:
    """Table 4 of two models as the rule writes it and render_report reads it back (model
    "other" chose Min@1 in every fold: order reversed, τ = -1 on all four facts)."""
    other = alignment("other")
    other.loc[other["family"] == "dist:random", "n"] = [1, 1, 1, 0]
    table = robustness_for_models({"m": PER_FACT, "other": PER_FACT}, pd.concat([alignment(), other]))
    path = tmp_path / "robustness.csv"
    contracts.write_text("robustness", table, path)
    return contracts.read_text("robustness", path)


def _cells(page: str, family: str) -> list[str]:
    row = re.search(rf"<tr>\s*<td>{re.escape(family)}</td>(.*?)</tr>", page, re.S).group(1)
    return re.findall(r"<td>(.*?)</td>", row)


def test_robustness_section_family_by_model(tmp_path):
    page = robustness_section({"pairs": _table4(tmp_path)})
    assert "<h3>suite pairs</h3>" in page
    header = re.findall(r"<th>(.*?)</th>", page)
    assert header == ["family", "folds", "m τ", "m facts", "other τ", "other facts"]
    # by hand (tests/unit/test_table4.py): m's dist:random (-1 + 1 + 1) / 3 on f1..f3; other's
    # Min@1 in all three folds; probability one discordant pair of six, τ = 2/3, on f1..f4.
    assert _cells(page, "dist:random") == ["3", "0.333", "3", "-1.000", "4"]
    assert _cells(page, "probability") == ["3", "0.667", "4", "0.667", "4"]


def test_robustness_section_only_with_the_file(tmp_path):
    settings = Report()
    board = pd.DataFrame(columns=contracts.columns("leaderboard"))
    without = build_report(ReportTables({}, board, {}), settings)
    assert 'id="robustness"' not in without and "Table 4" not in without
    page = build_report(ReportTables({}, board, {}, robustness={"pairs": _table4(tmp_path)}), settings)
    assert '<a href="#robustness">' in page
    body = re.search(r'<section id="robustness">(.*?)</section>', page, re.S).group(1)
    assert _cells(body, "dist:random")[1] == "0.333"
