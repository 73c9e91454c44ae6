"""Config and registry validation: errors name the key or the row, before any job runs."""

from pathlib import Path

import pytest
import yaml
from factprobe.config_check import ConfigError, check_dumps, read_registry, validate_config

ROOT = Path(__file__).resolve().parents[2]
SCHEMAS = ROOT / "workflow" / "schemas"


def _config():
    with open(ROOT / "config" / "config.yaml") as fh:
        return yaml.safe_load(fh)


def test_shipped_config_and_registries_are_valid():
    validate_config(_config(), SCHEMAS / "config.schema.yaml")
    rows = check_dumps(
        read_registry(ROOT / "config/dumps.tsv", SCHEMAS / "dumps.schema.yaml", "dump"),
        "config/dumps.tsv",
        ROOT,
    )
    assert [r["dump"] for r in rows] == ["20141201", "20190201"]
    assert all(r["enabled"] is True for r in rows)
    models = read_registry(ROOT / "config/models.tsv", SCHEMAS / "models.schema.yaml", "name")
    assert any(m["source"] == "builtin:control" for m in models)


def test_unknown_key_is_named():
    config = _config()
    config["extract"]["langauges"] = ["en"]
    with pytest.raises(ConfigError, match=r"extract: Additional properties .*'langauges'"):
        validate_config(config, SCHEMAS / "config.schema.yaml")


def test_wrong_type_is_named_with_its_path():
    config = _config()
    config["extract"]["max_bad_fraction"] = 2
    with pytest.raises(ConfigError, match=r"extract\.max_bad_fraction"):
        validate_config(config, SCHEMAS / "config.schema.yaml")


def _write(tmp_path, text):
    path = tmp_path / "dumps.tsv"
    path.write_text(text)
    return path


def test_unquoted_or_malformed_date_names_line(tmp_path):
    path = _write(tmp_path, "dump\tenabled\tpath\n2019-02-01\ttrue\tx.json\n")
    with pytest.raises(ConfigError, match=r"line 2, column dump: '2019-02-01' does not match"):
        read_registry(path, SCHEMAS / "dumps.schema.yaml", "dump")


def test_missing_file_names_row(tmp_path):
    path = _write(tmp_path, "dump\tenabled\tpath\n20190201\ttrue\tnowhere/dump.json.bz2\n")
    rows = read_registry(path, SCHEMAS / "dumps.schema.yaml", "dump")
    with pytest.raises(ConfigError, match=r"line 2 \(dump 20190201\): file nowhere/dump.json.bz2 not found"):
        check_dumps(rows, path, tmp_path)


def test_duplicate_and_both_sources_rejected(tmp_path):
    path = _write(tmp_path, "dump\tenabled\tpath\n20190201\ttrue\ta.json\n20190201\tfalse\tb.json\n")
    with pytest.raises(ConfigError, match=r"line 3: dump '20190201' already on line 2"):
        read_registry(path, SCHEMAS / "dumps.schema.yaml", "dump")
    path = _write(tmp_path, "dump\tenabled\tpath\turl\n20190201\ttrue\ta.json\thttp://h/a.json\n")
    rows = read_registry(path, SCHEMAS / "dumps.schema.yaml", "dump")
    with pytest.raises(ConfigError, match="exactly one of 'path' or 'url'"):
        check_dumps(rows, path, tmp_path)


def test_unknown_column_and_bad_boolean(tmp_path):
    path = _write(tmp_path, "dump\tenabeld\tpath\n20190201\ttrue\ta.json\n")
    with pytest.raises(ConfigError, match=r"unknown column\(s\) \['enabeld'\]"):
        read_registry(path, SCHEMAS / "dumps.schema.yaml", "dump")
    path = _write(tmp_path, "dump\tenabled\tpath\n20190201\tmaybe\ta.json\n")
    with pytest.raises(ConfigError, match=r"line 2, column enabled: 'maybe' is not of type 'boolean'"):
        read_registry(path, SCHEMAS / "dumps.schema.yaml", "dump")


def test_precision_beyond_topk_is_rejected():
    from factprobe.config_rules import check_cross_keys
    from factprobe.settings import Config, load_settings

    config = _config()
    enabled = ["20141201", "20190201"]
    check_cross_keys(load_settings(Config, config), enabled)
    config["metrics"]["family_settings"]["knowledge"]["precision_ns"] = [1, 150]
    with pytest.raises(ConfigError, match=r"Precision@150 but scoring.topk is 100"):
        check_cross_keys(load_settings(Config, config), enabled)


def test_dump_date_must_be_a_calendar_date(tmp_path):
    path = _write(tmp_path, "dump\tenabled\tpath\n20141201\tfalse\ta.json\n20141301\tfalse\tb.json\n")
    rows = read_registry(path, SCHEMAS / "dumps.schema.yaml", "dump")
    with pytest.raises(ConfigError) as err:
        check_dumps(rows, path, tmp_path)
    assert str(err.value) == (
        f"{path}: line 3 (dump 20141301): 20141301 is not a calendar date; write the dump date as YYYYMMDD"
    )


@pytest.mark.parametrize(
    "given, loaded, expected",
    [
        ([], ["config/config.yaml"], "config/config.yaml"),
        (["other.yaml"], ["other.yaml", "config/config.yaml"], "other.yaml (merged over config/config.yaml)"),
        (["other.yaml"], ["other.yaml"], "other.yaml"),
        ([], [], "config/config.yaml"),
    ],
)
def test_config_source_names_the_files_given(tmp_path, given, loaded, expected):
    from factprobe.config_check import config_source

    # Snakemake keeps --configfile paths absolute and the Snakefile's configfile as written.
    given = [tmp_path / f for f in given]
    assert config_source(given, [*given, *loaded[len(given) :]], tmp_path) == expected
    if given:  # --replace-workflow-config: the Snakefile's own configfile no longer counts
        assert config_source(given, [*given, *loaded[len(given) :]], tmp_path, replaced=True) == "other.yaml"
    outside = tmp_path.parent / "elsewhere.yaml"
    assert config_source([outside], [outside], tmp_path) == str(outside)
