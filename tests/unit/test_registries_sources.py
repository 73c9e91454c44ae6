"""The source- and template-format registries are the only places that know a format: what a
suite of a format allows (leaving out ``relations``, ``diff_old`` and ``cutoff``) and which files
a template set reads are read from its entry, built-in or plugin, and no module of the workflow
compares a format's name."""

import copy
import re
from pathlib import Path

import pytest
import yaml
from factprobe import registries
from factprobe import settings as S
from factprobe.config_rules import check_cross_keys
from factprobe.registry import RegistryError, Setting

ROOT = Path(__file__).resolve().parents[2]
LIBRARY = ROOT / "workflow"
CONFIG = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())


def _load(suite: dict) -> S.Config:
    config = copy.deepcopy(CONFIG)
    config["suites"] = {"s": suite}
    config["metrics"]["human_alignment"]["suites"] = []
    config["control"]["suites"] = []
    config["metrics"]["families"] = {}
    cfg = S.load_settings(S.Config, config)
    check_cross_keys(cfg, ["20141201", "20190201"], "c.yaml")
    return cfg


@pytest.mark.parametrize("fmt", ["triples", "verbalization-pairs", "myriadlama", "probelm"])
def test_a_listed_or_imported_format_may_leave_out_relations(fmt):
    kind = "plausibility" if fmt == "probelm" else "knowledge"
    cfg = _load({"kind": kind, "dump": "20190201", "source": {"format": fmt, "path": "x"}})
    assert cfg.suites["s"].relations == []


def test_a_sampled_format_needs_relations_naming_the_key():
    with pytest.raises(
        S.ConfigError, match=r"c\.yaml: suites\.s\.relations: required for source format 'dump'"
    ):
        _load({"kind": "knowledge", "dump": "20190201"})
    with pytest.raises(
        S.ConfigError, match=r"c\.yaml: suites\.s\.relations: required for source format 'fluent-mlama'"
    ):
        _load({"kind": "multilingual", "dump": "20190201", "source": {"format": "fluent-mlama", "path": "x"}})


def test_a_plausibility_suite_from_the_dump_needs_its_dates():
    suite = {"kind": "plausibility", "dump": "20190201", "relations": ["P17"], "diff_old": "20141201"}
    with pytest.raises(S.ConfigError, match=r"suites\.s\.cutoff: a plausibility suite built from a dump"):
        _load(suite)
    assert _load({**suite, "cutoff": "20160101"}).suites["s"].cutoff == "20160101"


def test_a_new_listed_format_may_leave_out_relations():
    entry = registries.register_source("test_listed_only", listed=True)
    try:
        cfg = _load(
            {"kind": "knowledge", "dump": "20190201", "source": {"format": "test_listed_only", "path": "x"}}
        )
        assert cfg.suites["s"].source.entry is entry
    finally:
        registries.SOURCES._entries.pop("test_listed_only")
        registries.SOURCES._sources.pop("test_listed_only")


def _comparisons(text: str, names: list[str]) -> list[str]:
    """Places where one of ``names`` is compared or enumerated as a format."""
    quoted = "|".join(re.escape(n) for n in names)
    patterns = [
        rf"(==|!=)\s*[\"']({quoted})[\"']",
        rf"[\"']({quoted})[\"']\s*(==|!=)",
        rf"\bin\s*[\(\[{{][^)\]}}]*[\"']({quoted})[\"']",
        rf"(enum|const):\s*\[?[^\]\n]*\b({quoted})\b",
    ]
    return [m.group(0) for p in patterns for m in re.finditer(p, text)]


def test_the_grep_sees_each_way_of_comparing_a_name():
    names = ["triples", "fluent-mlama"]
    found = [
        'if fmt == "triples":',
        "x = 'fluent-mlama' != y",
        'if fmt in ("dump", "triples"):',
        "format: {enum: [probelm, triples]}",
    ]
    assert [bool(_comparisons(line, names)) for line in found] == [True, True, True, True]
    assert _comparisons('register_source("triples", listed=True)', names) == []


def test_no_source_format_name_is_compared_outside_the_registry():
    names = [n for n in [*registries.SOURCES, *registries.TEMPLATE_FORMATS] if n != "dump"]
    files = [
        p for p in LIBRARY.rglob("*") if p.suffix in {".py", ".smk", ".yaml"} and p.name != "registries.py"
    ]
    found = {str(p.relative_to(ROOT)): _comparisons(p.read_text(), names) for p in files}
    # "dump" is also a config key and a column: only its comparisons with a format are searched
    dump = re.compile(r"(source\.format|fmt|format)\s*(==|!=)\s*[\"']dump[\"']")
    found.update({k: v + dump.findall((ROOT / k).read_text()) for k, v in found.items()})
    assert {k: v for k, v in found.items() if v} == {}


def test_an_unknown_template_format_is_refused_with_the_choices():
    config = copy.deepcopy(CONFIG)
    config["templates"]["sets"]["team"]["format"] = "yml"
    cfg = S.load_settings(S.Config, config)
    with pytest.raises(
        S.ConfigError,
        match=r"c\.yaml: templates\.sets\.team\.format: unknown template format 'yml'; choose from \['yaml'",
    ):
        check_cross_keys(cfg, ["20141201", "20190201"], "c.yaml")


def test_template_sets_read_the_files_their_format_declares(tmp_path):
    """The entry's layout, not the format's name, decides the inputs and the languages."""
    (tmp_path / "de").mkdir()
    (tmp_path / "de" / "P36.jsonl").write_text("")
    (tmp_path / "fr.yaml").write_text("")
    mpararel = S.TemplateSet(format="mpararel", path=str(tmp_path))
    assert mpararel.files(["de", "en"]) == [str(tmp_path / "de" / "P36.jsonl")]
    assert mpararel.languages() == ["de"]
    team = S.TemplateSet(format="yaml", path=str(tmp_path))
    assert team.files(["fr"]) == [str(tmp_path / "fr.yaml")] and team.languages() == ["fr"]
    lama = S.TemplateSet(format="lama", path=str(tmp_path / "relations.jsonl"), language="en")
    assert lama.files(["en"]) == [str(tmp_path / "relations.jsonl")] and lama.languages() == ["en"]


def test_a_wrong_keyword_is_refused_at_registration_naming_the_right_one():
    """Strategies and families declare their own knobs with the same keyword, ``settings=``."""
    knob = {"k": Setting(1, "a knob")}
    with pytest.raises(RegistryError, match=r"no keyword own=; its own knobs are declared with settings="):
        registries.family("test_wrong", own=knob)
    with pytest.raises(RegistryError, match=r"no keyword own=; its own knobs are declared with settings="):
        registries.strategy("test_wrong", own=knob)
    with pytest.raises(RegistryError, match=r"the metrics keys it reads, \['ns'\], go in reads="):
        registries.register_family("test_wrong", "m:f", settings=("ns",))
    assert "test_wrong" not in registries.FAMILIES and "test_wrong" not in registries.STRATEGIES
    assert registries.FAMILIES["knowledge"].reads == ("ns", "short_lists")


def test_an_unknown_measure_name_is_refused():
    from factprobe.measures import MEASURES, measure_of

    first = next(iter(MEASURES))
    assert measure_of(first) is MEASURES[first]
    with pytest.raises(RegistryError, match=r"unknown measure 'not_a_measure': no family registers it"):
        measure_of("not_a_measure")
