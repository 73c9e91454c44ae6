"""Built-in measure families declare their own knobs as plugins do (``settings=``): the registry
holds them, the config sets them under ``metrics.family_settings``, a suite's params carry those
of its own families, and a config still using a former ``metrics`` key fails at start-up naming
the file, the key and its new place."""

import dataclasses
from pathlib import Path

import pytest
import yaml
from factprobe import config_rules, registries
from factprobe import settings as S
from factprobe.config_check import ConfigError, load_config_schema, read_config
from factprobe.metrics.jobs import metrics_settings
from factprobe.plumbing.run_inputs import needs_encoder

ROOT = Path(__file__).resolve().parents[2]
SCHEMAS = ROOT / "workflow" / "schemas"
SCHEMA = SCHEMAS / "config.schema.yaml"

#: Each built-in family's own knobs and defaults (config/README.md, section metrics).
DECLARED = {
    "knowledge": {"precision_ns": [1, 5, 10], "combined_strategies": {}},
    "ranking": {"recall_ns": [1, 2, 3, 4, 5], "ties": "fail"},
    "plausibility": {"strategies": ["cooccur"]},
    "overlap": {"rouge_units": "words", "encoder": "", "layer": None, "idf": False},
}
#: What each built-in family reads of the metrics section: the keys other families or rules share.
READS = {
    "knowledge": ("ns", "short_lists"),
    "ranking": ("ranking_average",),
    "plausibility": (),
    "belief": ("belief_samplings", "belief_bins"),
    "belief_icl": ("belief_samplings", "belief_bins"),
    "overlap": (),
}


def _demo() -> dict:
    return yaml.safe_load((ROOT / "config" / "config.yaml").read_text())


def test_each_built_in_family_declares_its_own_knobs_and_reads_only_shared_keys():
    families = {name: registries.FAMILIES[name] for name in READS}
    assert {
        n: {k: s.default for k, s in f.settings.items()} for n, f in families.items() if f.settings
    } == DECLARED
    assert {n: f.reads for n, f in families.items()} == READS
    assert all(s.doc for name in DECLARED for s in registries.FAMILIES[name].settings.values())
    # No second home: the metrics section has no field of its own for them.
    fields = {f.name for f in dataclasses.fields(S.Metrics)}
    assert not fields & {"precision_ns", "recall_ns", "ranking_ties", "combined_strategies"}
    assert not fields & {"plausibility_strategies", "overlap"}
    # An empty section resolves to the declared defaults, a copy (a list default is not shared).
    section = S.Metrics(families={})
    assert {k: section.own(k) for k in DECLARED} == DECLARED
    section.own("knowledge")["precision_ns"].append(99)
    assert registries.FAMILIES["knowledge"].settings["precision_ns"].default == [1, 5, 10]


def test_schema_documents_the_declared_defaults():
    schema = load_config_schema(SCHEMA)["properties"]["metrics"]["properties"]["family_settings"]
    documented = {
        name: {key: spec["default"] for key, spec in entry["properties"].items()}
        for name, entry in schema["properties"].items()
    }
    assert documented == DECLARED


def test_settings_key_by_key_and_type_checked():
    got = S.Metrics(families={}, family_settings={"ranking": {"ties": "correct_first"}})
    assert got.own("ranking") == {"recall_ns": [1, 2, 3, 4, 5], "ties": "correct_first"}
    with pytest.raises(ConfigError, match=r"setting 'recall_ns' is list \(n of R@n"):
        S.Metrics(families={}, family_settings={"ranking": {"recall_ns": 5}})
    with pytest.raises(ConfigError, match=r"measure family 'belief' declares no settings"):
        S.Metrics(families={}, family_settings={"belief": {"bins": 5}})


def test_a_suite_carries_its_families_settings_and_the_encoder_stays_a_rule_input():
    raw = _demo()
    raw["metrics"]["family_settings"]["overlap"]["encoder"] = "smollm2"
    raw["metrics"]["family_settings"]["ranking"]["ties"] = "correct_first"
    cfg = read_config(raw, SCHEMA)
    params = config_rules.suite_metrics(cfg, "knowledge")  # knowledge, ranking, belief, overlap
    assert params["family_settings"]["overlap"]["encoder"] == "smollm2"
    assert params["family_settings"]["ranking"] == {"recall_ns": [1, 2, 3, 4, 5], "ties": "correct_first"}
    assert set(params["family_settings"]) == {"knowledge", "ranking", "overlap"}
    # The plausibility suite runs family plausibility alone: the others' settings are no params.
    assert config_rules.suite_metrics(cfg, "plausibility")["family_settings"] == {
        "plausibility": {"strategies": ["cooccur"]}
    }
    assert needs_encoder(cfg, ["overlap"], {"smollm2": {}}) == "smollm2"
    assert needs_encoder(cfg, ["knowledge"], {"smollm2": {}}) is None
    # Rule compute_metrics reads the prepared folder in its place, the family's other settings kept.
    settings, families = metrics_settings(params, encoder="resources/models/smollm2")
    assert settings.own("overlap") == {
        "rouge_units": "words",
        "encoder": "resources/models/smollm2",
        "layer": None,
        "idf": False,
    }
    assert settings.own("ranking")["ties"] == "correct_first" and families[-1] == "overlap"


OLD_KEYS = [
    ("precision_ns", [1, 5], "metrics.precision_ns", "metrics.family_settings.knowledge.precision_ns"),
    (
        "combined_strategies",
        {"a": ["sem"]},
        "metrics.combined_strategies",
        "metrics.family_settings.knowledge.combined_strategies",
    ),
    ("recall_ns", [1], "metrics.recall_ns", "metrics.family_settings.ranking.recall_ns"),
    ("ranking_ties", "correct_first", "metrics.ranking_ties", "metrics.family_settings.ranking.ties"),
    (
        "plausibility_strategies",
        ["cooccur"],
        "metrics.plausibility_strategies",
        "metrics.family_settings.plausibility.strategies",
    ),
    ("overlap", {"encoder": "x"}, "metrics.overlap.encoder", "metrics.family_settings.overlap.encoder"),
]


@pytest.mark.parametrize(("key", "value", "old", "new"), OLD_KEYS, ids=[k[2] for k in OLD_KEYS])
def test_a_former_key_fails_naming_the_file_the_key_and_its_new_place(key, value, old, new):
    config = _demo()
    config["metrics"][key] = value
    with pytest.raises(ConfigError) as err:
        read_config(config, SCHEMA, "config/mine.yaml")
    message = str(err.value)
    assert "\n" not in message
    assert (
        message
        == f"config/mine.yaml: {old} is now {new} (a family's own setting; config/README.md, section metrics)"
    )
