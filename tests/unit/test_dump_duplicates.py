"""An entity id twice in a dump fails the extraction naming both lines, and nothing is written
(factprobe.wikidata.duplicates)."""

import json

import pyarrow as pa
import pytest
from factprobe.wikidata.duplicates import SeenIds
from factprobe.wikidata.reader import DumpError, extract_dump


def item(qid, label, target=None, kind="item"):
    entity = {"type": kind, "id": qid, "labels": {"en": {"language": "en", "value": label}}, "claims": {}}
    if kind == "property":
        entity["datatype"] = "wikibase-item"
    if target:
        value = {"entity-type": "item", "numeric-id": int(target[1:]), "id": target}
        snak = {
            "snaktype": "value",
            "property": "P31",
            "datavalue": {"value": value, "type": "wikibase-entityid"},
        }
        entity["claims"]["P31"] = [
            {"mainsnak": snak, "type": "statement", "rank": "normal", "id": f"{qid}$1"}
        ]
    return json.dumps(entity)


def dump(tmp_path, entities, name="d.json"):
    path = tmp_path / name
    path.write_text("[\n" + "".join(e + ",\n" for e in entities) + "]\n")
    return path


@pytest.mark.parametrize(("chunk_bytes", "workers"), [(8 << 20, 1), (200, 1), (200, 2)])
def test_an_entity_twice_fails_naming_both_lines(tmp_path, chunk_bytes, workers):
    # line 1 is "["; Q2 (line 3) and Q5 (line 5) point at Q1 in a claim: not the entity itself
    entities = [
        item("Q1", "universe"),
        item("Q2", "Earth", target="Q1"),
        item("P31", "instance of", kind="property"),
        item("Q5", "human", target="Q1"),
        item("Q1", "cosmos", target="Q5"),
    ]
    path = dump(tmp_path, entities)
    out = tmp_path / "out"
    with pytest.raises(DumpError) as err:
        extract_dump(
            path, out, ["en"], progress=False, chunk_bytes=chunk_bytes, workers=workers, min_parallel_bytes=0
        )
    assert str(err.value) == (
        f"{path}: entity Q1 occurs at lines 2 and 6; a dump holds each entity once, and two versions "
        "would both reach the tables. Remove one of the two lines (or download the dump again)."
    )
    assert not out.exists() or not any(out.iterdir())


def test_a_property_twice_and_same_numbers_of_other_kinds(tmp_path):
    # Q31 and P31 share a number but not a kind: no repeat until P31 comes again on line 5
    entities = [item("P31", "instance of", kind="property"), item("Q31", "Belgium"), item("Q1", "universe")]
    entities.append(item("P31", "is a", kind="property"))
    with pytest.raises(DumpError, match=r"entity P31 occurs at lines 2 and 5"):
        extract_dump(dump(tmp_path, entities), tmp_path / "out", ["en"], progress=False)
    stats = extract_dump(dump(tmp_path, entities[:3], "ok.json"), tmp_path / "ok", ["en"], progress=False)
    assert stats.kinds == {"property": 1, "item": 2}


def test_seen_ids_across_and_within_tables():
    def table(ids, kind="item"):
        return pa.table({"id": pa.array(ids, pa.int64()), "kind": [kind] * len(ids)})

    seen = SeenIds()
    assert seen.add(table([3, 9, 1000])) is None
    assert seen.add(table([3], "property")) is None
    assert seen.add(table([4, 7, 4])) == ("item", 4)  # twice within one table
    assert seen.add(table([8, 1000])) == ("item", 1000)  # against an earlier table
