"""``extract.exclude: [scholarly]`` on the hand-written fixture (tests/data/mul_dumps/) plus the
items below: the WDQS graph split's rule (factprobe.wikidata.exclude) decides per item, and the
items it names are neither subjects nor objects. Every expected row is worked out by hand."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
import yaml
from factprobe.wikidata.exclude import SCHOLARLY_TYPES, Exclusion
from factprobe.wikidata.reader import extract_dump
from jsonschema import Draft202012Validator

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "data" / "mul_dumps" / "20260105.json"


def st(pid: str, qid: int, rank: str = "normal") -> dict:
    value = {"entity-type": "item", "numeric-id": qid, "id": f"Q{qid}"}
    snak = {"snaktype": "value", "property": pid, "datatype": "wikibase-item"}
    snak["datavalue"] = {"value": value, "type": "wikibase-entityid"}
    return {"mainsnak": snak, "type": "statement", "rank": rank}


def item(num: int, label: str, *statements: dict) -> str:
    claims: dict[str, list] = {}
    for s in statements:
        claims.setdefault(s["mainsnak"]["property"], []).append(s)
    labels = {"en": {"language": "en", "value": label}}
    return json.dumps({"type": "item", "id": f"Q{num}", "labels": labels, "claims": claims, "sitelinks": {}})


# Q990011 comes first and points at Q990010, which the rule excludes further down the file.
BEFORE = [item(990011, "Brinmoor Society", st("P31", 43229), st("P1343", 990010), st("P1343", 990009))]
AFTER = [
    # P31 scholarly article: excluded (as Q990006 of the fixture)
    item(990007, "Notes on Kerrow", st("P31", 13442814), st("P50", 990002), st("P2860", 990006)),
    # preferred P31 doctoral thesis (Q1266946 is on the split's list) beside a normal P31 book: excluded
    item(990008, "A Kerrow thesis", st("P31", 1266946, "preferred"), st("P31", 571), st("P921", 990002)),
    # deprecated P31 scholarly article is not truthy: kept; its P1343 -> Q990007 is dropped
    item(
        990009,
        "Vellmark atlas",
        st("P31", 13442814, "deprecated"),
        st("P31", 571),
        st("P921", 990001),
        st("P1343", 990007),
    ),
    # a book with P13046 (publication type of scholarly work): excluded
    item(990010, "Talsen review", st("P31", 571), st("P13046", 7318358)),
    # normal P31 scholarly article beside a preferred P31 scientific journal: only the journal is truthy
    item(990012, "Kerrow Quarterly", st("P31", 5633421, "preferred"), st("P31", 13442814), st("P17", 990001)),
]
FIXTURE_CLAIMS = {
    (990001, 31, 6256),
    (990001, 36, 990002),
    (990002, 31, 515),
    (990002, 17, 990001),
    (990003, 36, 990005),
    (990005, 31, 515),
}
KEPT_EXTRA_CLAIMS = {
    (990011, 31, 43229),
    (990011, 1343, 990009),
    (990009, 31, 13442814),
    (990009, 31, 571),
    (990009, 921, 990001),
    (990012, 31, 5633421),
    (990012, 31, 13442814),
    (990012, 17, 990001),
}
DROPPED_AS_SUBJECT = {
    (990006, 31, 13442814),
    (990007, 31, 13442814),
    (990007, 50, 990002),
    (990007, 2860, 990006),
    (990008, 31, 1266946),
    (990008, 31, 571),
    (990008, 921, 990002),
    (990010, 31, 571),
    (990010, 13046, 7318358),
}
DROPPED_AS_OBJECT = {(990011, 1343, 990010), (990009, 1343, 990007)}


@pytest.fixture(scope="module")
def dump(tmp_path_factory) -> Path:
    lines = [line.rstrip(",") for line in FIXTURE.read_text().splitlines() if line not in ("[", "]")]
    path = tmp_path_factory.mktemp("scholarly") / "20260105.json"
    path.write_text("[\n" + ",\n".join(BEFORE + lines + AFTER) + "\n]\n")
    return path


def extract(dump: Path, out: Path, exclude: list[str]) -> tuple[dict, dict[str, pd.DataFrame]]:
    # Small chunks in two workers and small row groups: excluded items and the statements pointing
    # at them fall in different chunks, and the second pass rewrites several row groups.
    stats = extract_dump(
        dump,
        out,
        ["en", "de"],
        progress=False,
        exclude=exclude,
        workers=2,
        chunk_bytes=1024,
        min_parallel_bytes=0,
        flush_rows=3,
    )
    names = ("entities", "labels", "claims", "types")
    return stats.summary_record(), {n: pd.read_parquet(out / f"{n}.parquet") for n in names}


def triples(claims: pd.DataFrame) -> set[tuple]:
    return {tuple(r) for r in claims[["subject", "property", "object"]].itertuples(index=False)}


def test_exclude_off_keeps_every_item(dump, tmp_path):
    record, tables = extract(dump, tmp_path, [])
    assert (
        triples(tables["claims"])
        == FIXTURE_CLAIMS | KEPT_EXTRA_CLAIMS | DROPPED_AS_SUBJECT | DROPPED_AS_OBJECT
    )
    items = set(tables["entities"].query("kind == 'item'")["id"])
    assert items == {
        990001,
        990002,
        990003,
        990004,
        990005,
        990006,
        990007,
        990008,
        990009,
        990010,
        990011,
        990012,
    }
    assert record["excluded"] == {} and record["entities"] == 13  # 12 items, P36
    # en: own Q990002-12 (11), only mul Q990001
    assert record["label_coverage"]["en"] == {"own": 11, "default": 1, "none": 0}


def test_exclude_scholarly_drops_the_items_as_subjects_and_objects(dump, tmp_path):
    record, tables = extract(dump, tmp_path, ["scholarly"])
    assert triples(tables["claims"]) == FIXTURE_CLAIMS | KEPT_EXTRA_CLAIMS
    entities = tables["entities"]
    assert set(entities.query("kind == 'item'")["id"]) == {
        990001,
        990002,
        990003,
        990004,
        990005,
        990009,
        990011,
        990012,
    }
    assert set(entities.query("kind == 'property'")["id"]) == {36}
    excluded = {990006, 990007, 990008, 990010}
    assert not excluded & set(tables["labels"]["id"])
    types = {tuple(r) for r in tables["types"][["id", "type"]].itertuples(index=False)}
    assert types == {
        (990001, 6256),
        (990002, 515),
        (990005, 515),
        (990011, 43229),
        (990009, 571),  # the deprecated P31 is no type row
        (990012, 5633421),
        (990012, 13442814),
    }
    assert record["excluded"] == {
        "scholarly": {
            "items": 4,
            "labels": 4,
            "claims_as_subject": 9,
            "types_as_subject": 5,  # Q990006, Q990007, Q990008 (two), Q990010
            "claims_as_object": 2,
            "types_as_object": 0,
        }
    }
    assert record["entities"] == 9  # 8 items, P36
    assert record["entities_by_kind"] == {"item": 12, "lexeme": 1, "property": 1}  # as read
    # kept items 8; en own Q990002-5, Q990009, Q990011, Q990012; de own Q990003, only mul Q990001-2
    assert record["label_coverage"] == {
        "en": {"own": 7, "default": 1, "none": 0},
        "de": {"own": 1, "default": 2, "none": 5},
    }


def test_console_line_counts_what_was_left_out(dump, tmp_path):
    stats = extract_dump(dump, tmp_path, ["en"], progress=False, exclude=["scholarly"])
    line = stats.shapes_summary("d.json")
    assert "\n" not in line
    assert line.endswith(
        "excluded: scholarly 4 items (9 item statements as subject, 2 as object, 0 type rows as class) left out"
    )


def test_the_rule_is_the_published_list():
    # wdqs-subgraph-definitions-v2.yaml lists 49 classes, scholarly article first
    assert len(SCHOLARLY_TYPES) == len(set(SCHOLARLY_TYPES)) == 49 and SCHOLARLY_TYPES[0] == 13442814
    with pytest.raises(ValueError, match="unknown class 'students'.*scholarly"):
        Exclusion("students")


def test_schema_accepts_scholarly_only():
    schema = yaml.safe_load((ROOT / "workflow/schemas/config.extract.schema.yaml").read_text())
    items = schema["properties"]["exclude"]
    Draft202012Validator(items).validate(["scholarly"])
    assert list(Draft202012Validator(items).iter_errors(["students"]))
    assert list(Draft202012Validator(items).iter_errors(["scholarly", "scholarly"]))
