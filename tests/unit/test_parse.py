"""Entity -> table rows (factprobe.wikidata.parse) on real Wikidata JSON.

The typed fast path (LineDecoder) and the generic dict path (entity_rows) must agree on every
real entity; single facts are checked against values read off the raw files by hand.
"""

import bz2
import functools
import json

import msgspec
import pytest
from conftest import DATA, DEMO_NEW, DEMO_OLD
from factprobe.contracts import EXTRACT_TABLES
from factprobe.wikidata.parse import (
    BadEntity,
    entity_numeric_id,
    entity_rows,
    new_columns,
    new_rows,
    new_skips,
    parse_time_text,
    rows_from_object,
)
from factprobe.wikidata.parse_typed import LineDecoder

LANGS = ["en", "de", "fr", "ru", "cs"]


@functools.cache
def entity_lines(path):
    """Entity lines of a dump as bytes, layout punctuation removed (a plain reading)."""
    out = []
    for line in bz2.open(path):
        line = line.strip()
        if line in (b"", b"[", b"]"):
            continue
        out.append(line[:-1] if line.endswith(b",") else line)
    return tuple(out)


def as_rows(cols):
    return {name: list(zip(*c, strict=True)) if c[0] else [] for name, c in cols.items()}


@pytest.mark.parametrize(
    ("path", "languages"),
    [
        (DEMO_OLD, LANGS),
        (DEMO_NEW, LANGS),
        (DEMO_NEW, None),  # every language
        (DATA / "short_stream.json.bz2", LANGS),
        (DATA / "short_stream.json.bz2", None),
    ],
    ids=["2014", "2019", "2019-all-languages", "stream", "stream-all-languages"],
)
def test_typed_and_generic_paths_agree_on_every_real_entity(path, languages):
    decoder = LineDecoder(languages)
    cols = new_columns()
    generic = new_rows()
    skips = new_skips()
    kinds = {}
    for line in entity_lines(path):
        decoder.decode(line, cols)
        for kind in rows_from_object(json.loads(line), languages, generic, skips):
            kinds[kind] = kinds.get(kind, 0) + 1
    assert decoder.kinds == kinds
    # the statements without a claims row are counted alike (old dumps: datatypes from the datavalues)
    assert decoder.skips == skips and skips["datatype"]
    typed = as_rows(cols)
    for name in EXTRACT_TABLES:
        assert typed[name] == generic[name], name
    # Items take the fast path; only properties go through the generic decoder.
    assert decoder.generic == kinds.get("property", 0)
    assert typed["claims"], "real dumps have item-valued claims"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("+1830-07-21T00:00:00Z", 18300721),
        ("+00000001830-01-01T00:00:00Z", 18300101),  # 2014 dumps: 11-digit years
        ("+1951-00-00T00:00:00Z", 19510000),  # year precision keeps 00 month/day
        ("-0500-00-00T00:00:00Z", -5000000),  # BCE
        ("+13798000000-00-00T00:00:00Z", None),  # age of the universe: no int32 date
        ("garbage", None),
        (None, None),
    ],
)
def test_parse_time_text(text, expected):
    assert parse_time_text(text) == expected


def test_entity_numeric_id_old_and_new_datavalues():
    assert entity_numeric_id({"entity-type": "item", "numeric-id": 239}) == 239  # 2014 form
    assert entity_numeric_id({"entity-type": "item", "numeric-id": 5, "id": "Q5"}) == 5
    assert entity_numeric_id({"entity-type": "item", "id": "Q42"}) == 42
    assert entity_numeric_id({"entity-type": "lexeme", "id": "L1-F1"}) is None
    assert entity_numeric_id("Q5") is None


def test_belgium_statement_with_start_and_end_dates():
    """Q31 P35 (head of state) Albert II (Q3911), 1993-08-09 .. 2013-07-21, in the 2019 dump."""
    decoder = LineDecoder(LANGS)
    cols = new_columns()
    line = next(line for line in entity_lines(DEMO_NEW) if json.loads(line)["id"] == "Q31")
    decoder.decode(line, cols)
    claims = as_rows(cols)["claims"]
    assert (31, 35, 3911, 1, 19930809, 20130721, None) in claims
    # P463 (member of) Q161549 with year-precision dates 1951 .. 2002.
    assert (31, 463, 161549, 1, 19510000, 20020000, None) in claims


def test_quirk_empty_list_where_object_expected():
    """Old dumps write [] for empty labels/aliases/claims/qualifiers/sitelinks (real Q30264236
    has "sitelinks": []); the other fields here are emptied the same way."""
    entity = json.loads((DATA / "Q30264236.json").read_bytes())
    assert entity["sitelinks"] == []
    decoder = LineDecoder(LANGS)
    cols = new_columns()
    decoder.decode(json.dumps(entity).encode(), cols)
    rows = as_rows(cols)
    assert rows["entities"] == [(30264236, "item", 0, entity["modified"], None)]
    n_item_claims = len(rows["claims"])
    assert n_item_claims > 0
    for key in ("labels", "aliases", "claims"):
        entity[key] = []
    cols = new_columns()
    decoder.decode(json.dumps(entity).encode(), cols)
    rows = as_rows(cols)
    assert rows["entities"] == [(30264236, "item", 0, entity["modified"], None)]
    assert rows["labels"] == [] and rows["claims"] == []
    # Qualifiers as [] keep the statement, without dates.
    entity = json.loads((DATA / "Q30264236.json").read_bytes())
    for statements in entity["claims"].values():
        for st in statements:
            st["qualifiers"] = []
    cols = new_columns()
    decoder.decode(json.dumps(entity).encode(), cols)
    claims = as_rows(cols)["claims"]
    assert len(claims) == n_item_claims and all(c[4:] == (None, None, None) for c in claims)


def test_property_entity_datatype_label_and_constraints():
    entity = json.loads((DATA / "wd_P279.json").read_bytes())
    constraints = {s["mainsnak"]["datavalue"]["value"]["numeric-id"] for s in entity["claims"]["P2302"]}
    rows = entity_rows(entity, LANGS)
    assert rows["entities"] == [(279, "property", 0, entity["modified"], None)]
    assert rows["properties"] == [
        (279, "wikibase-item", bool(constraints & {19474404, 52060874}), "subclass of")
    ]
    # Property statements never become claims (their ids would collide with items).
    assert rows["claims"] == [] and rows["labels"] == []
    # A single-value constraint makes it single-valued.
    entity["claims"]["P2302"][0]["mainsnak"]["datavalue"]["value"] = {
        "entity-type": "item",
        "numeric-id": 19474404,
        "id": "Q19474404",
    }
    assert entity_rows(entity, LANGS)["properties"][0][2] is True


def test_lexeme_and_missing_are_counted_not_parsed():
    decoder = LineDecoder(LANGS)
    cols = new_columns()
    decoder.decode((DATA / "wd_L3354.json").read_bytes(), cols)  # pretty-printed real lexeme
    decoder.decode(b'{"type":"mediainfo","id":"M76","labels":{},"statements":[]}', cols)
    decoder.decode(b'{"id":"Q789","missing":""}', cols)
    assert decoder.kinds == {"lexeme": 1, "mediainfo": 1, "missing": 1}
    assert all(not c[0] for c in cols.values())


def test_api_response_wrapper():
    decoder = LineDecoder(LANGS)
    cols = new_columns()
    decoder.decode((DATA / "wbgetentities_response.json").read_bytes(), cols)
    assert decoder.kinds == {"item": 2, "missing": 1}
    assert sorted(as_rows(cols)["entities"])[0][:2] == (123, "item")


@pytest.mark.parametrize(
    "line",
    [
        b'{"type":"item","id":"Q12","labels":{"en":{"value":"x"}}',  # cut short
        b'{"type":"item","id":"X12"}',  # not an id
        b'{"type":"item","id":"Q12","claims":{"Pxx":[{"mainsnak":{"snaktype":"value","datatype":'
        b'"wikibase-item","datavalue":{"type":"wikibase-entityid","value":{"numeric-id":5}}}}]}}',
        b'{"labels":{}}',  # no id
        b"[1, 2]",
    ],
)
def test_malformed_lines_raise_and_add_no_rows(line):
    decoder = LineDecoder(LANGS)
    cols = new_columns()
    with pytest.raises((msgspec.DecodeError, BadEntity)):
        decoder.decode(line, cols)
    assert all(not c[0] for c in cols.values())


def test_quirk_aliases_keyed_by_index():
    """Very old dumps wrote a language's aliases as {"0": {...}, "1": {...}} instead of a list."""
    entity = json.loads((DATA / "wd_Q42.json").read_bytes())
    listed = [a["value"] for a in entity["aliases"]["en"]]
    entity["aliases"]["en"] = {str(i): a for i, a in enumerate(entity["aliases"]["en"])}
    line = json.dumps(entity).encode()
    decoder = LineDecoder(LANGS)
    cols = new_columns()
    decoder.decode(line, cols)
    typed = as_rows(cols)["labels"]
    assert [text for _, lang, text, alias in typed if lang == "en" and alias] == listed
    assert typed == entity_rows(json.loads(line), LANGS)["labels"]
