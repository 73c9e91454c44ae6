"""What a control model of a timeline suite is taught: ``control.taught_until``,
``control.taught_fractions`` and ``control.untaught_subjects`` (scoring/control.py
``timeline_split``), and the config check of the fractions' keys."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
import yaml
from factprobe.config_check import ConfigError
from factprobe.hashing import stable_hash
from factprobe.probes import timeline as tl
from factprobe.scoring.control import timeline_split

ROOT = Path(__file__).resolve().parents[2]
ENDS = [20190301, 20190401, 20190501, 20190601]


def series(per_slice: int = 50) -> pd.DataFrame:
    """``per_slice`` facts in the static slice and in each of four monthly slices, subjects
    shared across slices (subject i has a fact in every slice)."""
    rows = []
    for k, end in enumerate([None, *ENDS]):
        for i in range(per_slice):
            rows.append(
                (f"Q{i}", f"P{k}", f"Q{1000 + i}", "static" if end is None else str(end), end, "untaught")
            )
    facts = pd.DataFrame(rows, columns=["subject", "property", "object", "slice", "slice_end", "split"])
    facts["slice_end"] = pd.array(facts["slice_end"], dtype="Int32")
    facts["fact_id"] = facts["subject"] + "|" + facts["property"] + "|" + facts["object"]
    return facts


def draw(row) -> float:
    """The teaching draw worked out from its definition: the triple's hash over 2**64."""
    return stable_hash("control-taught", row.subject, row.property, row.object) / 2.0**64


def test_taught_until_alone_is_the_known_cutoff_split():
    facts = series()
    got = timeline_split(facts, until="20190401")
    assert got["split"].tolist() == tl.taught_until(facts, "20190401")["split"].tolist()
    # the static slice and slices ending 0301 and 0401: 3 x 50 taught
    assert (got["split"] == "taught").sum() == 150


def test_a_fraction_teaches_the_facts_whose_draw_is_below_it():
    facts = series()
    got = timeline_split(facts, fractions={"20190301": 1, "20190401": 0.66, "20190501": 0.33, "20190601": 0})
    for row in got.itertuples():
        want = {"static": 1.0, "20190301": 1.0, "20190401": 0.66, "20190501": 0.33, "20190601": 0.0}[
            row.slice
        ]
        assert (row.split == "taught") == (draw(row) < want), row
    counts = (got["split"] == "taught").groupby(got["slice"]).sum()
    assert counts["20190301"] == 50 and counts["20190601"] == 0 and counts["static"] == 50
    # 50 facts at 0.66 and 0.33: binomial counts, well within 4 standard deviations
    assert abs(counts["20190401"] - 33) <= 13 and abs(counts["20190501"] - 16.5) <= 13


def test_a_gap_is_a_zero_fraction_between_known_slices():
    """taught_until 0501 with 0401 at 0: slices 1 and 3 known, 2 and 4 not."""
    got = timeline_split(series(), until="20190501", fractions={"20190401": 0.0})
    taught = (got["split"] == "taught").groupby(got["slice"]).mean()
    assert taught.to_dict() == {
        "20190301": 1.0,
        "20190401": 0.0,
        "20190501": 1.0,
        "20190601": 0.0,
        "static": 1.0,
    }


def test_untaught_subjects_lose_every_fact_static_ones_included():
    facts = series()
    got = timeline_split(facts, until="20190601", untaught_subjects=0.3)
    hidden = {s for s in facts["subject"] if stable_hash("control-unknown-subject", s) / 2.0**64 < 0.3}
    assert 0 < len(hidden) < 50
    for row in got.itertuples():
        assert (row.split == "untaught") == (row.subject in hidden), row


def test_untaught_subjects_alone_keep_the_hash_chosen_half():
    facts = series().assign(split=lambda f: ["taught" if i % 2 else "untaught" for i in range(len(f))])
    got = timeline_split(facts, untaught_subjects=0.3)
    hidden = got["subject"].map(lambda s: stable_hash("control-unknown-subject", s) / 2.0**64 < 0.3)
    assert (got.loc[hidden, "split"] == "untaught").all()
    assert got.loc[~hidden, "split"].tolist() == facts.loc[~hidden, "split"].tolist()


def _timeline_config() -> dict:
    with open(ROOT / "config" / "config.yaml") as fh:
        config = yaml.safe_load(fh)
    with open(ROOT / "config" / "timeline.yaml") as fh:
        timeline = yaml.safe_load(fh)
    config["suites"] = timeline["suites"]
    config["control"] = dict(timeline["control"])
    return config


@pytest.mark.parametrize(
    ("fractions", "message"),
    [
        ({"20190501": 0.5}, None),  # a slice end of timeline_dated (edges) and of timeline (dumps)
        ({20190501: 0.5}, r"key 20190501 is not a quoted YYYYMMDD date"),
        ({"20190431": 0.5}, r"key '20190431' is not a quoted YYYYMMDD date"),
        ({"20190415": 0.5}, r"20190415 ends no dated slice .* slice ends: \['20190301'"),
    ],
)
def test_taught_fractions_keys_must_end_a_slice(fractions, message):
    from factprobe.config_rules import check_cross_keys
    from factprobe.settings import Config, load_settings

    config = _timeline_config()
    config["control"]["taught_fractions"] = fractions
    enabled = ["20190201", "20190301", "20190401", "20190501", "20190601"]
    if message is None:
        check_cross_keys(load_settings(Config, config), enabled)
    else:
        with pytest.raises(ConfigError, match=message):
            check_cross_keys(load_settings(Config, config), enabled)


def test_anchor_facts_are_taught_like_the_static_slice():
    """Anchors (facts of a dated fact's subject, true throughout the series) judge whether the
    model knows the subject: the control is taught them whatever its cut-off or fractions."""
    from factprobe.scoring.control import slice_fractions

    facts = pd.DataFrame(
        {
            "slice": ["static", "anchor", "20190201", "20190301"],
            "slice_end": [None, None, "20190201", "20190301"],
        }
    )
    assert slice_fractions(facts, until="20190201").tolist() == [1.0, 1.0, 1.0, 0.0]
    assert slice_fractions(facts, fractions={"20190201": 0.0}).tolist() == [1.0, 1.0, 0.0, 0.0]
