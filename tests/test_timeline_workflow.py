"""config/timeline.yaml: it validates, its cross-key checks refuse a short series, and (``full``)
the whole workflow on the monthly series finds the control model's known cut-off."""

from __future__ import annotations

import copy
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml
from factprobe.registry import read_config
from factprobe.settings import ConfigError, check_cross_keys

ROOT = Path(__file__).resolve().parents[1]
SCHEMAS = ROOT / "workflow" / "schemas"
CONFIG = ROOT / "config" / "timeline.yaml"
SERIES = ["20190201", "20190301", "20190401", "20190501", "20190601"]


def _checked(config: dict, enabled=SERIES):
    cfg = read_config(config, SCHEMAS / "config.schema.yaml", source="timeline.yaml")
    check_cross_keys(cfg, enabled, source="timeline.yaml")
    return cfg


def test_timeline_config_validates():
    cfg = _checked(yaml.safe_load(CONFIG.read_text()))
    block = cfg.suites["timeline"].timeline
    assert (block.by, block.bins, block.measure, block.n) == ("diff", 3, "k_avg", 3)
    assert cfg.suites["timeline_dated"].timeline.edges[0] == 20190201


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda s: s["timeline"].update(dump="20190301"), "by diff needs >= 3 enabled dumps"),
        (lambda s: s["timeline_dated"]["timeline"].update(edges=[20190201, 20190101, 20190301]), "ascending"),
        (lambda s: s["timeline_dated"]["timeline"].update(edges=[20190201, 20190301, 20190701]), "after"),
    ],
)
def test_short_or_unordered_series_fail_at_start_up(edit, message):
    config = copy.deepcopy(yaml.safe_load(CONFIG.read_text()))
    edit(config["suites"])
    with pytest.raises(ConfigError, match=message):
        _checked(config)


@pytest.mark.full
def test_series_run_finds_the_taught_cutoff(tmp_path):
    """About 4.5 minutes on 2 busy cores: 5 dumps, 2 timeline suites, the control model taught
    up to 20190401 (benchmarks/RESULTS.md, "Series run end to end")."""
    for name in ("workflow", "config", "profiles"):
        shutil.copytree(ROOT / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "environment.yml", tmp_path / "environment.yml")
    (tmp_path / "resources").mkdir()
    for name in ("demo", "templates", "properties"):
        (tmp_path / "resources" / name).symlink_to(ROOT / "resources" / name)
    run = [sys.executable, str(ROOT / "benchmarks" / "timeline_dumps.py"), "resources/dumps/timeline"]
    subprocess.run(run, cwd=tmp_path, check=True, capture_output=True)
    snake = [sys.executable, "-m", "snakemake", "--configfile", "config/timeline.yaml"]
    proc = subprocess.run(
        [*snake, "--replace-workflow-config", "--cores", "2"], cwd=tmp_path, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    for suite in ("timeline", "timeline_dated"):
        table = pd.read_csv(tmp_path / f"results/metrics/{suite}/timeline.csv", dtype={"cutoff": str})
        assert set(table["cutoff"]) == {"20190401"}, table
        assert set(table["cutoff_status"]) == {"within"}
