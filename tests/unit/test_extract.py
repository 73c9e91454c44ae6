"""Dump file -> Parquet tables (factprobe.wikidata.reader) on the real demo dumps and test files.

Expected values come from an independent plain-``json`` reading written here (no code shared
with the extractor), or were read off the raw files by hand.
"""

import atexit
import bz2
import functools
import gzip
import json
import logging
import re
import shutil
import tempfile
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from conftest import DATA, DEMO_NEW, DEMO_OLD, unique_stream
from factprobe.contracts import EXTRACT_TABLES as TABLES
from factprobe.wikidata.reader import DumpError, extract_dump

LANGS = ["en", "de", "fr", "ru", "cs"]


STREAM = unique_stream(Path(tempfile.mkdtemp(prefix="factprobe-stream-")))
atexit.register(shutil.rmtree, STREAM.parent, True)
TIME = re.compile(r"^([+-])0*(\d+)-(\d\d)-(\d\d)T")


@functools.cache
def raw_bytes(path):
    """Decompressed bytes of a bundled .bz2 file (cached: several tests derive files from it)."""
    return bz2.decompress(path.read_bytes())


@functools.cache
def read_plain(path):
    """Every entity of a dump file, with the json module (array layout or JSON lines)."""
    opener = bz2.open if str(path).endswith(".bz2") else open
    with opener(path, "rt", encoding="utf-8") as fh:
        lines = [line.strip() for line in fh]
    return [json.loads(line.rstrip(",")) for line in lines if line not in ("", "[", "]")]


def plain_date(statement, pid):
    for snak in (statement.get("qualifiers") or {}).get(pid, []):
        if snak["snaktype"] == "value":
            sign, year, month, day = TIME.match(snak["datavalue"]["value"]["time"]).groups()
            return (-1 if sign == "-" else 1) * int(f"{year}{month}{day}")
    return None


CREATION = ("P571", "P569", "P580", "P575", "P1619", "P6949", "P585", "P577")


def plain_created(entity):
    """Earliest non-deprecated creation-like main-snak date, or None."""
    dates = []
    for pid in CREATION:
        for st in (entity.get("claims") or {}).get(pid, []):
            snak = st["mainsnak"]
            if st["rank"] != "deprecated" and snak["snaktype"] == "value":
                match = TIME.match(snak["datavalue"]["value"]["time"])
                # Years beyond int32 YYYYMMDD (the universe's inception) are no validity dates.
                if match and int(match.group(2)) <= 214747:
                    sign, year, month, day = match.groups()
                    dates.append((-1 if sign == "-" else 1) * int(f"{year}{month}{day}"))
    return min(dates, default=None)


def expected_tables(entities, languages):
    """What the five tables must hold, computed the straightforward way."""
    kinds = Counter(e["type"] for e in entities)
    labels = Counter()
    claims, types, properties = [], [], {}
    for e in entities:
        num = int(e["id"][1:])
        if e["type"] == "property":
            properties[num] = e["datatype"]
            continue
        for lang in languages:
            if lang in (e.get("labels") or {}):
                labels[(lang, False)] += 1
            labels[(lang, True)] += len((e.get("aliases") or {}).get(lang, []))
        for pid, statements in (e.get("claims") or {}).items():
            for st in statements:
                snak = st["mainsnak"]
                if snak["snaktype"] != "value" or snak["datavalue"]["type"] != "wikibase-entityid":
                    continue
                value = snak["datavalue"]["value"]
                if value["entity-type"] != "item":
                    continue
                rank = {"deprecated": 0, "normal": 1, "preferred": 2}[st["rank"]]
                dates = tuple(plain_date(st, q) for q in ("P580", "P582", "P585"))
                claims.append((num, int(pid[1:]), value["numeric-id"], rank, *dates))
                if pid in ("P31", "P279") and rank > 0:
                    types.append((num, value["numeric-id"], pid))
    return kinds, labels, sorted(claims, key=str), sorted(types), properties


def table_rows(folder, name):
    return pq.read_table(folder / f"{name}.parquet").to_pylist()


@pytest.mark.parametrize("dump", ["20141201", "20190201"])
def test_demo_dump_tables_match_independent_reading(demo_tables, dump):
    folder = demo_tables[dump]
    entities = read_plain(DEMO_OLD if dump == "20141201" else DEMO_NEW)
    kinds, labels, claims, types, properties = expected_tables(entities, LANGS)

    got_entities = table_rows(folder, "entities")
    assert Counter(r["kind"] for r in got_entities) == kinds
    # Items and properties share the integer id space (Q1 and P1 are both 1).
    assert sorted((r["kind"], r["id"]) for r in got_entities) == sorted(
        (e["type"], int(e["id"][1:])) for e in entities
    )
    assert Counter((r["lang"], r["is_alias"]) for r in table_rows(folder, "labels")) == +labels
    got_claims = [tuple(r.values()) for r in table_rows(folder, "claims")]
    assert sorted(got_claims, key=str) == claims
    assert sorted(tuple(r.values()) for r in table_rows(folder, "types")) == types
    assert {r["id"]: r["datatype"] for r in table_rows(folder, "properties")} == properties
    created = {int(e["id"][1:]): plain_created(e) for e in entities if e["type"] == "item"}
    assert {r["id"]: r["created"] for r in got_entities if r["kind"] == "item"} == created
    assert sum(v is not None for v in created.values()) > 10
    # Sanity of the independent reading itself (figures from shared/data/SOURCES.md).
    if dump == "20141201":
        assert kinds == {"item": 400, "property": 1304}
    else:
        assert kinds == {"item": 100}
        assert sum(1 for c in claims if c[4] is not None or c[5] is not None) > 100


def test_specific_facts(demo_tables):
    old = demo_tables["20141201"]
    # Q42 (Douglas Adams) is an instance of (P31) human (Q5) in the 2014 dump.
    assert {"id": 42, "type": 5, "via": "P31"} in table_rows(old, "types")
    q42 = [r for r in table_rows(old, "claims") if r["subject"] == 42 and r["property"] == 31]
    assert q42 == [
        {
            "subject": 42,
            "property": 31,
            "object": 5,
            "rank": 1,
            "start": None,
            "end": None,
            "point_in_time": None,
        }
    ]
    assert {"id": 42, "lang": "en", "text": "Douglas Adams", "is_alias": False} in table_rows(old, "labels")
    # Q31 Belgium: currency (P38) Belgian franc (Q232415) from 1830-01-01 to 2002-01-01, written
    # with the 2014 dump's 11-digit years ("+00000001830-01-01T00:00:00Z").
    assert {
        "subject": 31,
        "property": 38,
        "object": 232415,
        "rank": 1,
        "start": 18300101,
        "end": 20020101,
        "point_in_time": None,
    } in table_rows(old, "claims")
    # P31 is a wikibase-item property; its English label is "instance of".
    props = {r["id"]: r for r in table_rows(old, "properties")}
    assert props[31]["datatype"] == "wikibase-item" and props[31]["label"] == "instance of"
    # 2019: Q31 head of state (P35) Albert II (Q3911) from 1993-08-09 to 2013-07-21.
    new_claims = table_rows(demo_tables["20190201"], "claims")
    assert {
        "subject": 31,
        "property": 35,
        "object": 3911,
        "rank": 1,
        "start": 19930809,
        "end": 20130721,
        "point_in_time": None,
    } in new_claims


def test_json_lines_stream_file(tmp_path):
    stats = extract_dump(STREAM, tmp_path, LANGS, progress=False)
    entities = read_plain(STREAM)
    kinds, labels, claims, types, _ = expected_tables(entities, LANGS)
    assert stats.kinds == kinds == {"item": 635}
    assert stats.lines == 635 and stats.bad == 0
    assert sorted((tuple(r.values()) for r in table_rows(tmp_path, "claims")), key=str) == claims
    assert Counter((r["lang"], r["is_alias"]) for r in table_rows(tmp_path, "labels")) == +labels
    # The stream carries `modified`; every entity keeps it.
    modified = {int(e["id"][1:]): e["modified"] for e in entities}
    assert {r["id"]: r["modified"] for r in table_rows(tmp_path, "entities")} == modified


def test_gzip_plain_and_bz2_give_identical_tables(tmp_path):
    raw = raw_bytes(DEMO_NEW)
    (tmp_path / "d.json").write_bytes(raw)
    (tmp_path / "d.json.gz").write_bytes(gzip.compress(raw, compresslevel=1))
    outs = {}
    for name, src in (("bz2", DEMO_NEW), ("gz", tmp_path / "d.json.gz"), ("json", tmp_path / "d.json")):
        extract_dump(src, tmp_path / name, LANGS, progress=False)
        outs[name] = {t: pq.read_table(tmp_path / name / f"{t}.parquet") for t in TABLES}
    for t in TABLES:
        assert outs["gz"][t].equals(outs["bz2"][t]) and outs["json"][t].equals(outs["bz2"][t]), t


@pytest.mark.parametrize(("lines", "chunk_bytes"), [(635, 1 << 19), (120, 4096)], ids=["512KiB", "4KiB"])
def test_two_workers_give_the_same_tables_in_the_same_order(tmp_path, lines, chunk_bytes):
    """Chunks reach the workers through the shared ring; chunks larger than a ring slot (4 KiB
    blocks are shorter than most lines, which then pile up) go through the pool's pipe."""
    path = tmp_path / "stream.json"
    path.write_bytes(b"\n".join(raw_bytes(STREAM).splitlines()[:lines]) + b"\n")
    extract_dump(path, tmp_path / "one", LANGS, progress=False, chunk_bytes=chunk_bytes)
    stats = extract_dump(
        path,
        tmp_path / "two",
        LANGS,
        progress=False,
        workers=2,
        chunk_bytes=chunk_bytes,
        min_parallel_bytes=0,
    )
    assert stats.kinds == {"item": lines} and stats.lines == lines
    for t in TABLES:
        one, two = (pq.read_table(tmp_path / d / f"{t}.parquet") for d in ("one", "two"))
        assert two.equals(one), t


def test_small_row_groups_and_chunks_change_nothing(tmp_path, demo_tables):
    extract_dump(DEMO_OLD, tmp_path, LANGS, progress=False, chunk_bytes=1 << 18, flush_rows=1000)
    assert pq.ParquetFile(tmp_path / "claims.parquet").num_row_groups > 5
    for t in TABLES:
        assert pq.read_table(tmp_path / f"{t}.parquet").equals(
            pq.read_table(demo_tables["20141201"] / f"{t}.parquet")
        )


@pytest.mark.parametrize(
    ("name", "kinds", "entities"),
    [
        ("wd_Q42.json", {"item": 1}, 1),  # pretty-printed single entity
        ("Q31.json", {"item": 1}, 1),  # single entity on one line
        ("wbgetentities_response.json", {"item": 2, "missing": 1}, 2),  # API response
        ("wd_P279.json", {"property": 1}, 1),
    ],
)
def test_single_document_files(tmp_path, name, kinds, entities):
    stats = extract_dump(DATA / name, tmp_path, LANGS, progress=False)
    assert stats.kinds == kinds and stats.entities == entities and stats.bad == 0
    assert len(table_rows(tmp_path, "entities")) == entities


def test_q42_pretty_printed_matches_raw_values(tmp_path):
    extract_dump(DATA / "wd_Q42.json", tmp_path, LANGS, progress=False)
    raw = json.loads((DATA / "wd_Q42.json").read_text())
    claims = table_rows(tmp_path, "claims")
    n_item = sum(
        1
        for sts in raw["claims"].values()
        for s in sts
        if s["mainsnak"]["snaktype"] == "value" and s["mainsnak"]["datatype"] == "wikibase-item"
    )
    assert len(claims) == n_item
    assert table_rows(tmp_path, "entities") == [
        {
            "id": 42,
            "kind": "item",
            "sitelinks": len(raw["sitelinks"]),
            "modified": raw["modified"],
            "created": 19520311,  # P569: Douglas Adams was born on 11 March 1952
        }
    ]
    en_aliases = {a["value"] for a in raw["aliases"]["en"]}
    assert {
        r["text"] for r in table_rows(tmp_path, "labels") if r["lang"] == "en" and r["is_alias"]
    } == en_aliases


def test_lexemes_and_mediainfo_are_skipped_and_counted(tmp_path):
    lines = raw_bytes(STREAM).splitlines()[:20]
    lexeme = json.dumps(json.loads((DATA / "wd_L3354.json").read_text())).encode()
    mediainfo = b'{"type":"mediainfo","id":"M76","labels":{},"descriptions":{},"statements":[]}'
    path = tmp_path / "mixed.json"
    path.write_bytes(b"\n".join([*lines[:10], lexeme, mediainfo, *lines[10:]]) + b"\n")
    stats = extract_dump(path, tmp_path / "out", LANGS, progress=False)
    assert stats.kinds == {"item": 20, "lexeme": 1, "mediainfo": 1}
    assert stats.skipped == {"lexeme": 1, "mediainfo": 1} and stats.bad == 0
    assert len(table_rows(tmp_path / "out", "entities")) == 20


def test_languages_come_from_the_argument(tmp_path):
    extract_dump(DEMO_NEW, tmp_path, ["ja", "zh-hans"], progress=False)
    langs = Counter(r["lang"] for r in table_rows(tmp_path, "labels"))
    entities = read_plain(DEMO_NEW)
    assert langs["ja"] == sum(1 for e in entities if "ja" in e["labels"]) + sum(
        len(e["aliases"].get("ja", [])) for e in entities
    )
    assert set(langs) == {"ja", "zh-hans"}


# --- bad input ---------------------------------------------------------------------------


def assert_no_output(folder):
    assert not folder.exists() or list(folder.iterdir()) == [], sorted(folder.iterdir())


def corrupt_bz2(tmp_path):
    data = bytearray(DEMO_NEW.read_bytes())
    for i in range(len(data) // 2, len(data) // 2 + 64):
        data[i] ^= 0xFF
    path = tmp_path / "corrupt.json.bz2"
    path.write_bytes(bytes(data))
    return path


def corrupt_gz(tmp_path):
    data = bytearray(gzip.compress(raw_bytes(DEMO_NEW), compresslevel=1))
    for i in range(len(data) // 2, len(data) // 2 + 64):
        data[i] ^= 0xFF
    path = tmp_path / "corrupt.json.gz"
    path.write_bytes(bytes(data))
    return path


def truncated(tmp_path, suffix):
    raw = raw_bytes(DEMO_NEW)
    data = (
        DEMO_NEW.read_bytes()
        if suffix == "bz2"
        else gzip.compress(raw, compresslevel=1)
        if suffix == "gz"
        else raw
    )
    path = tmp_path / f"cut.json.{suffix}".replace(".json.json", ".json")
    path.write_bytes(data[: len(data) * 2 // 3])
    return path


@pytest.mark.parametrize(
    "make",
    [
        corrupt_bz2,
        corrupt_gz,
        lambda p: truncated(p, "bz2"),
        lambda p: truncated(p, "gz"),
        lambda p: truncated(p, "json"),
    ],
    ids=["corrupt-bz2", "corrupt-gz", "truncated-bz2", "truncated-gz", "truncated-json"],
)
def test_broken_archive_fails_with_file_and_offset_and_leaves_nothing(tmp_path, make):
    path = make(tmp_path)
    out = tmp_path / "out"
    with pytest.raises(DumpError) as err:
        extract_dump(path, out, LANGS, progress=False)
    message = str(err.value)
    assert str(path) in message
    assert re.search(r"near file byte \d+ of \d+ \(decompressed byte \d+, after line \d+\)", message), message
    assert "download it again" in message
    assert_no_output(out)


def test_broken_archive_with_two_workers_fails_cleanly(tmp_path):
    path = corrupt_bz2(tmp_path)
    with pytest.raises(DumpError, match=re.escape(str(path))):
        extract_dump(path, tmp_path / "out", LANGS, progress=False, workers=2, min_parallel_bytes=0)
    assert_no_output(tmp_path / "out")


def test_broken_archive_leaves_an_earlier_complete_set_alone(tmp_path):
    out = tmp_path / "out"
    extract_dump(STREAM, out, LANGS, progress=False)
    before = {t: (out / f"{t}.parquet").read_bytes() for t in TABLES}
    with pytest.raises(DumpError):
        extract_dump(corrupt_bz2(tmp_path), out, LANGS, progress=False)
    assert {t: (out / f"{t}.parquet").read_bytes() for t in TABLES} == before
    assert sorted(p.name for p in out.iterdir()) == sorted(f"{t}.parquet" for t in TABLES)


def malformed_stream(tmp_path, bad_lines):
    lines = raw_bytes(STREAM).splitlines()
    for n in bad_lines:
        lines[n - 1] = lines[n - 1][: len(lines[n - 1]) // 2]  # a line cut in half
    path = tmp_path / "stream.json"
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


@pytest.mark.parametrize("workers", [1, 2])
def test_malformed_lines_are_skipped_and_reported_with_line_numbers(tmp_path, caplog, workers):
    path = malformed_stream(tmp_path, [7, 300, 501])
    with caplog.at_level(logging.WARNING, logger="factprobe.wikidata.reader"):
        # Small chunks: line numbers must stay right across chunk boundaries and workers.
        stats = extract_dump(
            path,
            tmp_path / "out",
            LANGS,
            progress=False,
            max_bad_fraction=0.01,
            workers=workers,
            chunk_bytes=100_000,
            min_parallel_bytes=0,
        )
    assert stats.bad == 3 and [n for n, _ in stats.bad_lines] == [7, 300, 501]
    assert stats.kinds == {"item": 632} and stats.lines == 635
    for n in (7, 300, 501):
        assert f"line {n}: malformed entity skipped" in caplog.text
    assert len(table_rows(tmp_path / "out", "entities")) == 632
    # the rule prints this one line on the console: count and the first line number
    summary = stats.malformed_summary(path, "logs/extract_dump/x.log")
    assert summary.startswith(f"factprobe: {path}: skipped 3 malformed line(s) of 635 ")
    assert "the first at line 7: " in summary and summary.endswith("(all in logs/extract_dump/x.log)")
    assert "\n" not in summary
    record = stats.summary_record()  # extract_stats.json
    assert record["malformed"] == 3 and record["lines"] == 635 and record["entities"] == 632
    assert record["first_malformed_line"] == 7 and record["first_malformed_reason"] == stats.bad_lines[0][1]


def test_too_many_malformed_lines_fail_and_leave_nothing(tmp_path):
    path = malformed_stream(tmp_path, range(10, 200, 19))  # 10 of 635 lines: 1.6 % > 1 %
    out = tmp_path / "out"
    with pytest.raises(DumpError, match=r"10 of 635 entity lines are malformed .* first at lines 10, 29, 48"):
        extract_dump(path, out, LANGS, progress=False, max_bad_fraction=0.01)
    assert_no_output(out)
    # Raising the threshold accepts the same file.
    assert extract_dump(path, out, LANGS, progress=False, max_bad_fraction=0.02).bad == 10


def test_not_a_dump_fails(tmp_path):
    path = tmp_path / "page.json"
    path.write_text("<html>\n<body>Not found</body>\n</html>\n")
    with pytest.raises(DumpError, match="3 of 3 entity lines are malformed"):
        extract_dump(path, tmp_path / "out", LANGS, progress=False)
    assert_no_output(tmp_path / "out")


def test_missing_file_names_the_registry(tmp_path):
    with pytest.raises(DumpError, match="no such dump file"):
        extract_dump(tmp_path / "nope.json.gz", tmp_path / "out", LANGS, progress=False)
