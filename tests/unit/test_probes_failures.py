"""build_probes fails early and names the cause.

Two small hand-written dumps, extracted with the real reader: one holds only properties (so
none of the suite's relations has a claim), one holds items whose capitals have no English
label (so the relation is there but no fact survives). Both must stop in ``build_suite`` with
the suite, the dump and the relations in the message, not later with an empty table.
"""

import json
import logging
from pathlib import Path

import pytest
from factprobe.probes.build import DumpTables, build_suite
from factprobe.probes.select import SelectionError
from factprobe.wikidata.reader import extract_dump

ROOT = Path(__file__).resolve().parents[2]
SETS = {"team": {"format": "yaml", "path": str(ROOT / "tests" / "data" / "templates")}}


def item_claim(prop: str, target: str) -> dict:
    value = {"entity-type": "item", "numeric-id": int(target[1:]), "id": target}
    snak = {"snaktype": "value", "property": prop, "datatype": "wikibase-item"}
    snak["datavalue"] = {"value": value, "type": "wikibase-entityid"}
    return {"mainsnak": snak, "type": "statement", "rank": "normal", "id": f"x${prop}{target}"}


def entity(eid: str, labels: dict[str, str], claims: dict[str, list[str]], kind: str = "item") -> dict:
    return {
        "type": kind,
        "id": eid,
        "labels": {lang: {"language": lang, "value": v} for lang, v in labels.items()},
        "descriptions": {},
        "aliases": {},
        "claims": {p: [item_claim(p, t) for t in ts] for p, ts in claims.items()},
        "sitelinks": {},
        **({"datatype": "wikibase-item"} if kind == "property" else {}),
    }


def tables(tmp_path: Path, entities: list[dict]) -> Path:
    dump = tmp_path / "dump.json"
    dump.write_text("[\n" + ",\n".join(json.dumps(e) for e in entities) + "\n]\n")
    out = tmp_path / "tables"
    extract_dump(dump, out, ["en"], progress=False)
    return out


def build(folder: Path, suite: dict):
    return build_suite(
        "tiny",
        {"kind": "knowledge", "dump": "20190201", **suite},
        SETS,
        DumpTables(
            str(folder / "claims.parquet"), str(folder / "entities.parquet"), [str(folder / "labels.parquet")]
        ),
    )


@pytest.fixture(scope="module")
def properties_only(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("props")
    return tables(
        tmp,
        [
            entity("P36", {"en": "capital"}, {"P1629": ["Q5119"]}, kind="property"),
            entity("P47", {"en": "shares border with"}, {"P1629": ["Q12413618"]}, kind="property"),
        ],
    )


@pytest.fixture(scope="module")
def unlabelled_capitals(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("items")
    return tables(
        tmp,
        [
            entity("Q45", {"en": "Portugal"}, {"P36": ["Q597"]}),
            entity("Q597", {"pt": "Lisboa"}, {}),
            entity("Q142", {"en": "France"}, {"P36": ["Q90"]}),
            entity("Q90", {"fr": "Paris"}, {}),
        ],
    )


def test_properties_only_dump_names_suite_dump_and_relations(properties_only):
    with pytest.raises(SelectionError) as err:
        build(properties_only, {"relations": ["P36", "P47"]})
    msg = str(err.value)
    assert "suites.tiny" in msg and "dump 20190201" in msg and "['P36', 'P47']" in msg
    assert str(properties_only / "claims.parquet") in msg
    assert "missing_relations: warn" in msg


def test_one_absent_relation_is_an_error_by_default(unlabelled_capitals):
    with pytest.raises(SelectionError, match=r"relation\(s\) \['P47'\] have no claim in dump 20190201"):
        build(unlabelled_capitals, {"relations": ["P36", "P47"]})


def test_absent_relation_only_warns_when_configured(unlabelled_capitals, caplog):
    caplog.set_level(logging.WARNING)
    # P47 is dropped with a warning; P36 is present but selects nothing: the 0-facts error follows.
    with pytest.raises(SelectionError, match=r"0 facts selected from dump 20190201") as err:
        build(unlabelled_capitals, {"relations": ["P36", "P47"], "missing_relations": "warn"})
    assert "for relations ['P36']" in str(err.value)
    assert any("dropped (missing_relations: warn): ['P47']" in r.getMessage() for r in caplog.records)


def test_zero_facts_says_where_the_facts_were_lost(unlabelled_capitals):
    with pytest.raises(SelectionError) as err:
        build(unlabelled_capitals, {"relations": ["P36"]})
    msg = str(err.value)
    # Two truthy P36 claims, but no capital has an English label.
    assert "suites.tiny: 0 facts selected from dump 20190201" in msg
    assert "at 20190201: 2 {'P36': 2};" in msg
    assert "with subject and object labelled in ['en']: 0." in msg


@pytest.mark.parametrize("value, ok", [("warn", True), ("error", True), ("ignore", False)])
def test_missing_relations_setting_is_validated(value, ok):
    import copy

    import yaml
    from factprobe.config_check import ConfigError, validate_config

    config = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    config = copy.deepcopy(config)
    config["suites"]["knowledge"]["missing_relations"] = value
    schema = ROOT / "workflow" / "schemas" / "config.schema.yaml"
    if ok:
        validate_config(config, schema)
    else:
        with pytest.raises(ConfigError, match="suites.knowledge.missing_relations"):
            validate_config(config, schema)
