"""Built-in strategies declare their own knobs as plugins do (``settings=``): the registry holds
them, the config sets them under ``distractors.strategy_settings``, and a config still using a
former key fails at start-up naming the file, the key and its new place."""

import dataclasses
from pathlib import Path

import pytest
import yaml
from factprobe import registries
from factprobe import settings as S
from factprobe.config_check import ConfigError, read_config
from factprobe.registry import RegistryError

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = ROOT / "workflow" / "schemas" / "config.schema.yaml"

#: Each built-in strategy's own knobs and defaults (config/README.md, section distractors).
DECLARED = {
    "temp+sem": {"earlier_dump": False},
    "cooccur": {"n": 10, "sides": ["object", "subject"]},
    "pool": {"source": "relation"},
}


def test_each_built_in_strategy_declares_its_own_knobs():
    declared = {
        name: {k: s.default for k, s in entry.settings.items()}
        for name, entry in registries.STRATEGIES.items()
        if entry.settings and name in ("random", "sem", "temp+sem", "cooccur", "pool", "appropt")
    }
    assert declared == DECLARED
    assert all(s.doc for name in DECLARED for s in registries.STRATEGIES[name].settings.values())
    # No second home: the resolved settings of a suite have no field of their own for them.
    fields = {f.name for f in dataclasses.fields(S.Retrieve)} | {
        f.name for f in dataclasses.fields(S.Distractors)
    }
    assert not fields & {
        "cooccur_n",
        "cooccur_sides",
        "temporal_earlier_dump",
        "pool_source",
        "cooccur",
        "temporal",
    }
    # An empty section resolves to the declared defaults, a copy (a list default is not shared).
    section = S.Distractors()
    assert {k: section.strategy_settings[k] for k in DECLARED} == DECLARED
    section.strategy_settings["cooccur"]["sides"].append("x")
    assert registries.STRATEGIES["cooccur"].settings["sides"].default == ["object", "subject"]


def test_retriever_settings_fill_declared_defaults_and_check_types():
    base = dict(
        n=3,
        pool_size=5,
        search="exact",
        languages=["en"],
        dump="1",
        form_threshold=90,
        valid_ranks="non_deprecated",
        ef_search=200,
    )
    got = S.Retrieve(strategies=["random", "cooccur"], strategy_settings={"cooccur": {"n": 4}}, **base)
    assert got.own("cooccur") == {"n": 4, "sides": ["object", "subject"]}
    assert registries.strategy_setting(S.plain(got), "cooccur", "n") == 4
    assert registries.strategy_setting({"strategies": ["pool"]}, "pool", "source") == "relation"
    with pytest.raises(RegistryError, match=r"setting 'n' is int \(alternatives per fact"):
        S.Retrieve(strategies=["cooccur"], strategy_settings={"cooccur": {"n": "4"}}, **base)


OLD_KEYS = [
    (
        ["distractors", "cooccur"],
        {"n": 5},
        "distractors.cooccur.n",
        "distractors.strategy_settings.cooccur.n",
    ),
    (
        ["distractors", "temporal"],
        {"earlier_dump": True},
        "distractors.temporal.earlier_dump",
        "distractors.strategy_settings.temp+sem.earlier_dump",
    ),
    (
        ["distractors", "pool_source"],
        "suite",
        "distractors.pool_source",
        "distractors.strategy_settings.pool.source",
    ),
    (
        ["distractors", "by_kind", "multilingual", "pool_source"],
        "dataset",
        "distractors.by_kind.multilingual.pool_source",
        "distractors.by_kind.multilingual.strategy_settings.pool.source",
    ),
    (
        ["suites", "multilingual", "distractors", "pool_source"],
        "suite",
        "suites.multilingual.distractors.pool_source",
        "suites.multilingual.distractors.strategy_settings.pool.source",
    ),
]


@pytest.mark.parametrize(("path", "value", "old", "new"), OLD_KEYS, ids=[k[2] for k in OLD_KEYS])
def test_a_former_key_fails_naming_the_file_the_key_and_its_new_place(path, value, old, new):
    config = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    block = config
    for part in path[:-1]:
        block = block.setdefault(part, {})
    block[path[-1]] = value
    with pytest.raises(ConfigError) as err:
        read_config(config, SCHEMA, "config/mine.yaml")
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith(f"config/mine.yaml: {old} is now {new} ")


def test_a_wrong_keyword_at_registration_names_settings():
    with pytest.raises(RegistryError, match=r"no keyword knobs=; its own knobs are declared with settings="):
        registries.register_strategy("mine", len, knobs={"k": 1})
    with pytest.raises(RegistryError, match=r"no keyword params=; its own knobs are declared with settings="):
        registries.register_family("mine", len, params={"k": 1})
    assert "mine" not in registries.STRATEGIES and "mine" not in registries.FAMILIES
