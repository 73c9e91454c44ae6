"""Distractor strategy names are checked where they are written: the distractors defaults,
``distractors.by_kind.<kind>`` and ``suites.<s>.distractors``, whether or not a suite uses them;
the error names the file, the key and every valid name (``appropt`` included)."""

import copy
from pathlib import Path

import pytest
import yaml
from factprobe.config_check import read_config
from factprobe.settings import ConfigError, Retrieve

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = ROOT / "workflow/schemas/config.schema.yaml"
BASE = yaml.safe_load((ROOT / "config/config.yaml").read_text())
VALID = "['random', 'sem', 'temp+sem', 'cooccur', 'pool', 'appropt']"


def with_strategies(path, names):
    config = copy.deepcopy(BASE)
    block = config
    for key in path:
        block = block.setdefault(key, {})
    block["strategies"] = names
    return config


@pytest.mark.parametrize(
    "path",
    [
        ("distractors",),
        ("distractors", "by_kind", "plausibility"),
        ("suites", "knowledge", "distractors"),
    ],
)
def test_unknown_strategy_name_refused_where_written(path):
    config = with_strategies(path, ["random", "semantic"])
    with pytest.raises(ConfigError) as err:
        read_config(config, SCHEMA, "config/mine.yaml")
    key = ".".join(path)
    assert str(err.value) == (
        f"config/mine.yaml.{key}.strategies: unknown distractor strategy name(s) ['semantic']; "
        f"valid names: {VALID} (temp is the former name of temp+sem)"
    )


def test_unused_default_strategy_refused():
    # every suite of the demo config names its own strategies or its kind's: the defaults are unused
    config = with_strategies(("distractors",), ["random", "bogus"])
    for block in config["suites"].values():
        block.setdefault("distractors", {}).setdefault("strategies", ["random"])
    with pytest.raises(
        ConfigError, match=r"distractors\.strategies: unknown distractor strategy name\(s\) \['bogus'\]"
    ):
        read_config(config, SCHEMA, "config/config.yaml")


def test_valid_names_and_the_former_temp_pass():
    config = with_strategies(("distractors",), ["random", "temp", "appropt"])
    assert read_config(config, SCHEMA, "config/config.yaml").distractors.strategies == [
        "random",
        "temp",
        "appropt",
    ]


def test_retrieval_message_lists_the_per_model_strategies_too():
    with pytest.raises(
        ConfigError, match=r"retrieval runs \[.*'pool'\], and the per-model ones \['appropt'\]"
    ):
        Retrieve(["sem", "nearest"], 10, 50, "exact", ["en"], "20190201", 90, "truthy", 200)
