"""The suites/templates config sections: schema and cross-key checks."""

import copy
from pathlib import Path

import pytest
import yaml
from factprobe.config_check import ConfigError, validate_config
from factprobe.config_rules import check_cross_keys
from factprobe.settings import Config, load_settings

ROOT = Path(__file__).resolve().parents[2]
SCHEMAS = ROOT / "workflow" / "schemas"
ENABLED = ["20141201", "20190201"]
MINE = ("suites", "templates")


@pytest.fixture(scope="module")
def schema(tmp_path_factory):
    """The main schema with only this stage's sections, so other sections' schemas cannot interfere."""
    folder = tmp_path_factory.mktemp("schemas")
    main = yaml.safe_load((SCHEMAS / "config.schema.yaml").read_text())
    main["required"] = list(MINE)
    main["properties"] = {}
    (folder / "config.schema.yaml").write_text(yaml.safe_dump(main))
    for section in MINE:
        name = f"config.{section}.schema.yaml"
        (folder / name).write_text((SCHEMAS / name).read_text())
    return folder / "config.schema.yaml"


@pytest.fixture()
def config():
    full = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    return {key: full[key] for key in MINE}


def check_suites(suites, templates, enabled):
    """The cross-key checks of config_rules.check_cross_keys on the demo config with these sections."""
    full = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    check_cross_keys(load_settings(Config, {**full, "suites": suites, "templates": templates}), enabled)


def test_demo_config_is_valid(config, schema):
    validate_config(config, schema)
    check_suites(config["suites"], config["templates"], ENABLED)
    assert {s["kind"] for s in config["suites"].values()} == {
        "knowledge",
        "multiprompt",
        "plausibility",
        "multilingual",
    }


@pytest.mark.parametrize(
    "change,message",
    [
        (lambda s: s["knowledge"].update(dump=20141201), "suites.knowledge.dump"),
        (lambda s: s["knowledge"].update(kind="trivia"), "suites.knowledge.kind"),
        (lambda s: s["knowledge"].update(relations=["capital"]), "suites.knowledge.relations.0"),
        (
            lambda s: s["knowledge"].update(few_shot={"settings": ["4-shots"]}),
            "suites.knowledge.few_shot.settings.0",
        ),
        (lambda s: s["knowledge"].update(n_fact=3), "suites.knowledge"),
    ],
)
def test_schema_rejects(config, schema, change, message):
    bad = copy.deepcopy(config)
    change(bad["suites"])
    with pytest.raises(ConfigError, match=message.replace(".", r"\.").replace("(", r"\(")):
        validate_config(bad, schema)


@pytest.mark.parametrize(
    "change,message",
    [
        (
            lambda s: s["knowledge"].update(dump="20200101"),
            "suites.knowledge.dump: 20200101 is not an enabled dump",
        ),
        (lambda s: s["plausibility"].update(cutoff="20190301"), "need diff_old < dump and cutoff < dump"),
        (
            lambda s: s["plausibility"].update(cutoff="20161345"),
            "suites.plausibility.cutoff: 20161345 is not a calendar date",
        ),
        (
            lambda s: s["knowledge"].update(templates={"sets": ["nope"]}),
            "'nope' is not defined in templates.sets",
        ),
        (
            lambda s: s["knowledge"].update(label_dumps=["20141201", "20200101"]),
            "suites.knowledge.label_dumps: 20200101 is not an enabled dump",
        ),
    ],
)
def test_cross_checks(config, change, message):
    bad = copy.deepcopy(config)
    change(bad["suites"])
    with pytest.raises(ConfigError, match=message):
        check_suites(bad["suites"], bad["templates"], ENABLED)


def test_cutoff_may_precede_the_older_dump_but_not_a_model(config):
    """PROBELM §3.1: the suite's cut-off is the earliest model's and may precede
    diff_old (2014-12-01 here); a model whose own cut-off is earlier than the suite's (2016-01-01)
    fails at start-up, since the facts new to it were never selected."""
    from factprobe import config_rules

    ok = copy.deepcopy(config)
    ok["suites"]["plausibility"].update(cutoff="20100101")  # before diff_old 20141201: accepted
    check_suites(ok["suites"], ok["templates"], ENABLED)
    full = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    cfg = load_settings(Config, full)
    assert (
        config_rules.suite_model_cutoff(cfg, "plausibility", {"name": "m", "cutoff": "2016-01-01"})["cutoff"]
        == "20160101"
    )
    with pytest.raises(ConfigError, match="set suites.plausibility.cutoff to the earliest model cut-off"):
        config_rules.suite_model_cutoff(cfg, "plausibility", {"name": "m", "cutoff": "2015-06-01"})
