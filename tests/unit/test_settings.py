"""factprobe.settings: the one home of config defaults, its agreement with the JSON schemas,
per-suite resolution (what each rule receives) and the library inputs of rule scripts."""

import copy
import dataclasses
import subprocess
import sys
import typing
from pathlib import Path

import pytest
import yaml
from factprobe import config_rules
from factprobe import settings as S
from factprobe.config_check import ConfigError, library_modules, load_config_schema, read_config

ROOT = Path(__file__).resolve().parents[2]
SCHEMAS = ROOT / "workflow" / "schemas"
SCRIPTS = ROOT / "workflow" / "scripts"


def _demo():
    return yaml.safe_load((ROOT / "config" / "config.yaml").read_text())


def _agree(cls, schema, where):
    """Keys, required keys and defaults of dataclass ``cls`` equal those of object ``schema``."""
    props = schema["properties"]
    names = [f.name for f in dataclasses.fields(cls)]
    assert sorted(props) == sorted(names), where
    required = [
        f.name for f in dataclasses.fields(cls) if f.default is f.default_factory is dataclasses.MISSING
    ]
    assert sorted(schema.get("required", [])) == sorted(required), where
    hints = typing.get_type_hints(cls)
    defaults = cls(**{n: None for n in required}) if required else cls()
    checked = 0
    for name in names:
        hint, spec = hints[name], props[name]
        inner = typing.get_args(hint)[1] if typing.get_origin(hint) is dict else None
        if dataclasses.is_dataclass(hint):
            checked += _agree(hint, spec, f"{where}.{name}")
        elif inner is not None and dataclasses.is_dataclass(inner):
            checked += _agree(inner, spec["additionalProperties"], f"{where}.{name}.*")
        elif name in ("strategy_settings", "family_settings") and "properties" in spec:
            # Entries' own settings (strategies', families'): the schema documents the built-ins'
            # keys and defaults, the settings hold the registry's declared ones.
            value = getattr(defaults, name)
            for entry, sub in spec["properties"].items():
                documented = {k: v.get("default") for k, v in sub["properties"].items()}
                assert documented == value[entry], (
                    f"{where}.{name}.{entry}: schema {documented}, registry {value[entry]}"
                )
                checked += len(documented)
        elif name not in required:
            value = getattr(defaults, name)
            assert spec.get("default") == value, (
                f"{where}.{name}: schema {spec.get('default')!r}, settings {value!r}"
            )
            checked += 1
    return checked


def test_schemas_and_settings_agree_on_keys_and_defaults():
    schema = load_config_schema(SCHEMAS / "config.schema.yaml")
    checked = _agree(S.Config, schema, "config")
    suite = schema["properties"]["suites"]["additionalProperties"]
    checked += _agree(S.Suite, suite, "suites.*")
    assert checked > 100  # every section's leaves, not a vacuous pass


def test_demo_config_loads_with_defaults_filled():
    cfg = read_config(_demo(), SCHEMAS / "config.schema.yaml")
    assert cfg.scoring.samples == 2 and cfg.scoring.topk == 100  # set / default (the paper's largest n)
    assert cfg.distractors.sem.search == "exact"  # one default everywhere
    assert cfg.suites["plausibility"].languages == ["en"]
    assert cfg.suites["knowledge"].templates.sets == ["team"]
    assert cfg.templates.sets["pararel"].language == "en" and cfg.templates.sets["team"].gender == "MASC"


def test_unknown_key_names_its_path():
    config = _demo()
    config["suites"]["knowledge"]["templates"]["sytles"] = ["statement"]
    with pytest.raises(ConfigError, match=r"suites\.knowledge\.templates: unknown key\(s\) \['sytles'\]"):
        S.load_settings(S.Config, config)


CONFIG = {
    "dumps": "d.tsv",
    "models": "m.tsv",
    "extract": {"languages": ["en"], "max_bad_fraction": 0.0, "chunk_mb": 1},
    "diff": {"single_value": "list", "single_value_list": "x.tsv"},
    "templates": {"sets": {"team": {"format": "yaml", "path": "t"}}},
    "distractors": {
        "strategies": ["random", "sem"],
        "n": 7,
        "by_kind": {"plausibility": {"strategies": ["cooccur"]}},
        "sem": {"search": "hnsw", "hnsw": {"ef_search": 64}},
        "appropt": {"width": 12},
        "form_threshold": 85,
    },
    "suites": {
        "k": {"kind": "knowledge", "dump": "20190201", "relations": ["P1"]},
        "p": {"kind": "plausibility", "dump": "20190201", "languages": ["en", "de"], "relations": ["P1"]},
        "own": {
            "kind": "plausibility",
            "dump": "20141201",
            "relations": ["P1"],
            "distractors": {"strategies": ["pool", "appropt"], "n": 3},
        },
    },
    "metrics": {
        "families": {"knowledge": ["knowledge", "belief"], "plausibility": ["plausibility"]},
        "belief_bins": 4,
    },
}


def test_distractor_precedence_suite_over_kind_over_section():
    cfg = S.load_settings(S.Config, CONFIG)
    assert config_rules.suite_distractors(cfg, "k") == {
        "strategies": ["random", "sem"],
        "n": 7,
        "pool_size": 50,
        "search": "hnsw",
        "strategy_settings": {},  # random and sem declare none
        "languages": ["en"],
        "dump": "20190201",
    }
    assert (
        config_rules.suite_distractors(cfg, "p")["strategies"],
        config_rules.suite_distractors(cfg, "p")["n"],
    ) == (
        ["cooccur"],
        7,
    )
    own = config_rules.suite_distractors(cfg, "own")
    assert (own["strategies"], own["n"], own["dump"]) == (["pool", "appropt"], 3, "20141201")


def test_strategy_settings_suite_over_kind_over_section_key_by_key():
    """A strategy's own settings follow the same precedence, key by key: the section's cooccur n,
    the kind's sides, the suite's pool source; defaults fill the rest; retrieval reads them."""
    config = copy.deepcopy(CONFIG)
    section = config["distractors"]
    section["strategy_settings"] = {"cooccur": {"n": 4, "sides": ["subject"]}, "pool": {"source": "suite"}}
    section["by_kind"]["plausibility"]["strategy_settings"] = {"cooccur": {"sides": ["object"]}}
    config["suites"]["own"]["distractors"]["strategies"] = ["pool", "cooccur", "temp+sem"]
    config["suites"]["own"]["distractors"]["strategy_settings"] = {"pool": {"source": "dataset"}}
    cfg = S.load_settings(S.Config, config)
    assert config_rules.suite_distractors(cfg, "p")["strategy_settings"] == {
        "cooccur": {"n": 4, "sides": ["object"]}
    }
    assert config_rules.suite_retrieve(cfg, "own")["strategy_settings"] == {
        "pool": {"source": "dataset"},
        "cooccur": {"n": 4, "sides": ["object"]},
        "temp+sem": {"earlier_dump": False},
    }
    # A release pool needs a fluent-mlama source: this dump suite's pool is its facts' strings.
    assert config_rules.suite_retrieve(cfg, "own")["dataset"] == ""
    assert config_rules.suite_retrieve(cfg, "k")["strategy_settings"] == {}


def test_job_settings_carry_section_values():
    cfg = S.load_settings(S.Config, CONFIG)
    retrieve = config_rules.suite_retrieve(cfg, "p")
    assert (retrieve["form_threshold"], retrieve["ef_search"], retrieve["languages"]) == (
        85,
        64,
        ["en", "de"],
    )
    assert config_rules.suite_retrieve(cfg, "own")["strategies"] == ["pool"]  # appropt has its own rule
    appropt = config_rules.suite_appropt(cfg, "k", {"name": "m", "source": "x", "_line": 2})
    assert (appropt["width"], appropt["n"], appropt["lang"]) == (12, 7, "en")
    assert appropt["model"] == {"name": "m", "source": "x"}


def test_metrics_settings_are_those_of_the_suites_families():
    cfg = S.load_settings(S.Config, CONFIG)
    k = config_rules.suite_metrics(cfg, "k")
    assert k == {
        "families": ["knowledge", "belief"],
        "ns": [1, 2, 3, 5, 10],
        "short_lists": "undefined",
        "belief_samplings": 50_000,
        "belief_bins": 4,
        "robustness_pair": ["template", "sentence"],
        # The knowledge family's own settings, defaults filled in; BELIEF declares none.
        "family_settings": {"knowledge": {"precision_ns": [1, 5, 10], "combined_strategies": {}}},
    }
    # No BELIEF family: belief_bins is not a param of the suite, so changing it reruns nothing there.
    assert config_rules.suite_metrics(cfg, "p") == {
        "families": ["plausibility"],
        "robustness_pair": ["template", "sentence"],
        "family_settings": {"plausibility": {"strategies": ["cooccur"]}},
    }
    assert (
        S.load_settings(S.Metrics, {**config_rules.suite_metrics(cfg, "p"), "families": {}}).belief_bins == 10
    )


def test_library_modules_follow_imports_transitively():
    mods = library_modules(SCRIPTS / "diff_dumps.py", SCRIPTS)
    # diff_dumps.py imports engine and single_value; engine imports rules (the decision table).
    assert {"factprobe/diff/engine.py", "factprobe/diff/rules.py", "factprobe/diff/single_value.py"} <= set(
        mods
    )
    assert not any(m.startswith(("factprobe/scoring", "factprobe/metrics")) for m in mods)
    assert "factprobe/scoring/control.py" not in library_modules(SCRIPTS / "score_shard.py", SCRIPTS)
    assert "factprobe/scoring/control.py" in library_modules(SCRIPTS / "train_control.py", SCRIPTS)
    assert "factprobe/settings.py" not in library_modules(SCRIPTS / "render_report.py", SCRIPTS)


def test_settings_and_registry_import_no_science_stack():
    code = (
        "import sys; import factprobe.settings, factprobe.config_rules, factprobe.config_check, factprobe.wikidata.download, "
        "factprobe.plumbing.diskspace, factprobe.report.provenance; "
        "print(sorted(m for m in ('pandas', 'numpy', 'torch', 'tqdm', 'pyarrow') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "[]"


def test_end_marker_precedence_suite_over_mode_over_section():
    """The end marker is set per suite (Fluent-mLAMA's reference scores the object
    alone, the distractors paper λ + EOS), per scoring mode, then globally."""
    config = copy.deepcopy(CONFIG)
    config["scoring"] = {"end_marker": "eos", "by_mode": {"sentence": {"end_marker": "."}}}
    config["suites"]["k2"] = dict(config["suites"]["k"], scoring={"end_marker": "none"})
    config["suites"]["own"]["scoring"] = {"end_marker": "eos"}
    cfg = S.load_settings(S.Config, config)
    assert [config_rules.suite_scoring_mode(cfg, s) for s in ("k", "p")] == ["continuation", "sentence"]
    markers = {s: config_rules.suite_end_marker(cfg, s) for s in ("k", "k2", "p", "own")}
    assert markers == {"k": "eos", "k2": "none", "p": ".", "own": "eos"}
    cfg = S.load_settings(S.Config, CONFIG)
    assert {config_rules.suite_end_marker(cfg, s) for s in cfg.suites} == {"eos"}  # the section default


def test_sem_index_rows_are_bounded_by_the_searching_suites_relations():
    cfg = S.load_settings(S.Config, CONFIG)
    # Only suite k searches 20190201 with sem; p (cooccur) and own (pool) do not bound any index.
    assert config_rules.sem_index_rows(cfg, "20190201") == {"relations": ["P1"], "type_dumps": ["20190201"]}
    assert config_rules.sem_index_rows(cfg, "20141201") == {"relations": [], "type_dumps": []}
    demo = read_config(_demo(), SCHEMAS / "config.schema.yaml")
    rows = config_rules.sem_index_rows(demo, "20141201")
    assert rows["relations"] == sorted(demo.suites["knowledge"].relations)
    assert rows["type_dumps"] == ["20141201", "20190201"]  # knowledge's label_dumps


def test_sem_index_rows_of_listed_facts_suites():
    """A triples / verbalization-pairs suite with relations bounds the index by them; without,
    its facts may use any relation: every entity (as a released suite)."""
    config = copy.deepcopy(CONFIG)
    listed = dict(config["suites"]["k"], source={"format": "triples", "path": "judged.tsv"}, relations=["P7"])
    config["suites"]["k"] = listed
    assert config_rules.sem_index_rows(S.load_settings(S.Config, config), "20190201")["relations"] == ["P7"]
    config["suites"]["k"] = dict(listed, relations=[])
    assert config_rules.sem_index_rows(S.load_settings(S.Config, config), "20190201")["relations"] is None


# --- languages checked at start-up ------------------------------------------------


def _languages_config(tmp_path, extract, suite_languages, sets=None):
    """A loaded config whose one suite probes ``suite_languages`` with yaml templates en, de."""
    folder = tmp_path / "templates"
    folder.mkdir(exist_ok=True)
    for lang in ("en", "de"):
        (folder / f"{lang}.yaml").write_text(f"language: {lang}\ntemplates: []\n")
    config = {
        **CONFIG,
        "extract": {**CONFIG["extract"], "languages": extract},
        "templates": {"sets": sets or {"team": {"format": "yaml", "path": str(folder)}}},
        "suites": {
            "s": {"kind": "knowledge", "dump": "20190201", "relations": ["P1"], "languages": suite_languages}
        },
    }
    return S.load_settings(S.Config, config), folder


def test_languages_with_templates_and_extracted_pass(tmp_path):
    cfg, _ = _languages_config(tmp_path, ["en", "de"], ["en", "de"])
    config_rules.check_languages(cfg, "my.yaml")
    assert config_rules.known_languages(cfg) == ["de", "en"]


def test_suite_language_not_extracted_names_key_and_fix(tmp_path):
    cfg, _ = _languages_config(tmp_path, ["en"], ["en", "de"])
    with pytest.raises(ConfigError) as err:
        config_rules.check_languages(cfg, "my.yaml")
    assert str(err.value) == (
        "my.yaml: suites.s.languages: ['de'] not in extract.languages ['en']; add them to extract.languages"
    )


def test_suite_language_without_templates_lists_the_supported_ones(tmp_path):
    cfg, folder = _languages_config(tmp_path, ["en", "zz"], ["en", "zz"])
    with pytest.raises(ConfigError) as err:
        config_rules.check_languages(cfg, "my.yaml")
    assert str(err.value) == (
        f"my.yaml: suites.s.languages: template set 'team' ({folder}) has no templates for ['zz']; "
        "supported languages: ['de', 'en']; add templates for them or remove them from the suite"
    )
    # A single-language set (ParaRel, English) cannot serve German alone.
    sets = {"pararel": {"format": "pararel", "path": str(folder), "language": "en"}}
    cfg, _ = _languages_config(tmp_path, ["en", "de"], ["en", "de"], sets)
    cfg = S.load_settings(
        S.Config,
        {**S.plain(cfg), "suites": {"s": {**S.plain(cfg.suites["s"]), "templates": {"sets": ["pararel"]}}}},
    )
    with pytest.raises(
        ConfigError,
        match=r"suites\.s\.languages: no template set .* has templates for \['de'\]; supported languages: \['en'\]",
    ):
        config_rules.check_languages(cfg)


def test_unknown_extraction_language_is_refused_with_the_known_ones(tmp_path):
    cfg, _ = _languages_config(tmp_path, ["en", "de", "xx"], ["en"])
    with pytest.raises(ConfigError) as err:
        config_rules.check_languages(cfg, "my.yaml")
    assert str(err.value) == (
        "my.yaml: extract.languages: unknown language(s) ['xx']; known (with templates, a suite or a "
        "translation target): ['de', 'en']; fix the code or add templates for it"
    )


def test_shipped_configs_pass_the_language_checks():
    for path in (ROOT / "config/config.yaml", ROOT / ".test/config/config.yaml"):
        config_rules.check_languages(
            read_config(yaml.safe_load(path.read_text()), SCHEMAS / "config.schema.yaml"), str(path)
        )
