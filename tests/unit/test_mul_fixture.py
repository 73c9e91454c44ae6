"""Today's dump format on a hand-written fixture (tests/data/mul_dumps/, described in its README).

Default labels and aliases (``mul``) reach every reader of labels; unknown datatypes, snak types
and entity kinds are counted, never fatal; extraction, diff, suite building and forms give the
rows worked out by hand below.
"""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import numpy as np
import pandas as pd
import pytest
from factprobe.diff.engine import DiffInputs, diff_claims
from factprobe.diff.single_value import single_value_properties
from factprobe.probes.build import DumpTables, build_suite
from factprobe.probes.released import match_entities
from factprobe.wikidata.labels import label_table, resolved_labels
from factprobe.wikidata.parse import new_columns, new_rows, new_skips, rows_from_object
from factprobe.wikidata.parse_typed import LineDecoder
from factprobe.wikidata.reader import extract_dump

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "data" / "mul_dumps"
OLD, NEW = "20250601", "20260105"
SETS = {"team": {"format": "yaml", "path": str(ROOT / "tests" / "data" / "templates")}}


@pytest.fixture(scope="module")
def tables(tmp_path_factory) -> dict[str, Path]:
    """Both fixture dumps extracted with ``extract.languages: [en, de]``."""
    out = tmp_path_factory.mktemp("mul")
    for dump in (OLD, NEW):
        stats = extract_dump(FIXTURE / f"{dump}.json", out / dump, ["en", "de"], progress=False)
        (out / dump / "extract_stats.json").write_text(json.dumps(stats.summary_record()))
    return {dump: out / dump for dump in (OLD, NEW)}


def stats_of(tables: dict[str, Path], dump: str) -> dict:
    return json.loads((tables[dump] / "extract_stats.json").read_text())


def rows(frame: pd.DataFrame) -> list[tuple]:
    return [tuple(r) for r in frame.itertuples(index=False)]


# --- extraction -----------------------------------------------------------------------------


def test_mul_labels_and_aliases_are_extracted_whatever_the_languages(tables, tmp_path):
    labels = pd.read_parquet(tables[NEW] / "labels.parquet")
    assert rows(labels) == [
        (990001, "mul", "Vellmark", False),
        (990001, "mul", "Vellmark Republic", True),
        (990001, "mul", "VMK", True),
        (990002, "en", "Kerrow City", False),
        (990002, "mul", "Kerrow", False),
        (990002, "en", "Old Kerrow", True),
        (990002, "mul", "Kerrowburg", True),
        (990003, "en", "Talsen", False),
        (990003, "de", "Talsen", False),
        (990003, "mul", "Talsenland", True),
        (990004, "en", "Nadir Isles", False),
        (990005, "en", "Brinmoor", False),
        (990006, "en", "A survey of Vellmark capitals", False),
    ]
    # only French configured: every mul row is still there, no en or de one
    extract_dump(FIXTURE / f"{NEW}.json", tmp_path, ["fr"], progress=False)
    fr = pd.read_parquet(tmp_path / "labels.parquet")
    assert set(fr["lang"]) == {"mul"} and len(fr) == 6


def test_claims_keep_item_values_only(tables):
    claims = pd.read_parquet(tables[NEW] / "claims.parquet")
    got = {(s, p, o) for s, p, o in claims[["subject", "property", "object"]].itertuples(index=False)}
    # Not here: Q990004's P36 novalue, Q990006's P50 somevalue, Q990003's entity-schema (P9990001)
    # and future-datatype (P9990002, whose value even names an item) statements, P214, P1476.
    assert got == {
        (990001, 31, 6256),
        (990001, 36, 990002),
        (990002, 31, 515),
        (990002, 17, 990001),
        (990003, 36, 990005),
        (990005, 31, 515),
        (990006, 31, 13442814),
    }
    entities = pd.read_parquet(tables[NEW] / "entities.parquet").set_index("id")
    assert entities.loc[990006, "created"] == 20251120  # P577 of the scholarly article
    assert "L990001" not in entities.index.astype(str)


def test_extract_stats_count_kinds_skipped_statements_and_label_coverage(tables):
    record = stats_of(tables, NEW)
    assert record["lines"] == 8 and record["entities"] == 7 and record["malformed"] == 0
    assert record["entities_by_kind"] == {"item": 6, "lexeme": 1, "property": 1}
    assert record["statements_skipped"] == {
        "datatype": {"entity-schema": 1, "external-id": 1, "monolingualtext": 1, "wikibase-future-link": 1},
        "snaktype": {"novalue": 1, "somevalue": 1},
    }
    assert record["default_labels"] == 2  # Q990001, Q990002
    # en: own Q990002-6, only mul Q990001; de: own Q990003, only mul Q990001-2, none Q990004-6
    assert record["label_coverage"] == {
        "en": {"own": 5, "default": 1, "none": 0},
        "de": {"own": 1, "default": 2, "none": 3},
    }
    old = stats_of(tables, OLD)
    assert old["entities_by_kind"] == {"item": 3, "property": 1} and old["default_labels"] == 0
    assert old["statements_skipped"] == {"datatype": {}, "snaktype": {}}


def test_counts_do_not_depend_on_workers_or_chunks(tables, tmp_path):
    """Counts are summed over chunks (one entity is always within one chunk) in dump order."""
    stats = extract_dump(
        FIXTURE / f"{NEW}.json",
        tmp_path,
        ["en", "de"],
        progress=False,
        workers=2,
        chunk_bytes=2048,
        min_parallel_bytes=0,
    )
    assert stats.summary_record() == stats_of(tables, NEW)


def test_console_line_names_every_unknown_shape(tmp_path):
    stats = extract_dump(FIXTURE / f"{NEW}.json", tmp_path, ["en"], progress=False)
    line = stats.shapes_summary("new.json")
    assert "\n" not in line
    for part in ("lexeme 1", "entity-schema 1", "wikibase-future-link 1", "novalue 1", "somevalue 1"):
        assert part in line
    assert line.endswith("labels: en 5 own + 1 mul, 0 none")


def test_fast_and_generic_decoders_agree_on_rows_and_skips():
    lines = [
        line.rstrip(",").encode()
        for line in (FIXTURE / f"{NEW}.json").read_text().splitlines()
        if line not in ("[", "]")
    ]
    for languages in (["en", "de"], None):
        fast = LineDecoder(languages)
        cols = new_columns()
        generic, skips = new_rows(), new_skips()
        for line in lines:
            fast.decode(line, cols)
            rows_from_object(msgspec.json.decode(line), languages, generic, skips)
        for name, got in cols.items():
            assert list(zip(*got, strict=True)) == generic[name], name
        assert fast.skips == skips


# --- diff -----------------------------------------------------------------------------------


def test_diff_over_the_fixture(tables, tmp_path):
    old, new = tables[OLD], tables[NEW]
    sv = single_value_properties(
        "constraints", None, [old / "properties.parquet", new / "properties.parquet"]
    )
    assert sv == {36}  # P36's single-value constraint (Q19474404)
    inputs = DiffInputs(
        old / "claims.parquet",
        new / "claims.parquet",
        old / "entities.parquet",
        new / "entities.parquet",
        int(OLD),
        int(NEW),
    )
    diff_claims(inputs, sv, tmp_path / "changes.parquet", tmp_path / "stats.tsv")
    changes = pd.read_parquet(tmp_path / "changes.parquet")
    got = {
        (r.subject, r.property, r.object): (r.status, r.rule)
        for r in changes[["subject", "property", "object", "status", "rule"]].itertuples(index=False)
    }
    # Q990001's capital moved from Brinmoor to Kerrow on a P580 date between the dumps; the
    # article appeared after the old dump (P577); Q990003 is not in the old dump. Nothing of the
    # skipped statements (novalue, somevalue, entity-schema, future datatype) is a row.
    assert got == {
        (990001, 31, 6256): ("static", "kept"),
        (990002, 31, 515): ("static", "kept"),
        (990005, 31, 515): ("static", "kept"),
        (990001, 36, 990005): ("obsolete", "sv_replaced"),
        (990001, 36, 990002): ("new", "sv_added_start_between"),
        (990002, 17, 990001): ("unknown", "added_undated"),
        (990003, 36, 990005): ("unknown", "subject_absent_old"),
        (990006, 31, 13442814): ("new", "subject_new"),
    }


# --- forms and suites -----------------------------------------------------------------------


def test_forms_fall_back_to_mul_per_language(tables):
    forms = label_table([tables[NEW] / "labels.parquet"], ["en", "de"])
    assert rows(forms) == [
        ("Q990001", "de", "Vellmark", "label"),
        ("Q990001", "de", "Vellmark Republic", "alias"),
        ("Q990001", "de", "VMK", "alias"),
        ("Q990001", "en", "Vellmark", "label"),
        ("Q990001", "en", "Vellmark Republic", "alias"),
        ("Q990001", "en", "VMK", "alias"),
        ("Q990002", "de", "Kerrow", "label"),
        ("Q990002", "de", "Kerrowburg", "alias"),
        # an own en label wins over mul's; aliases are en's then mul's; mul's label is no alias
        ("Q990002", "en", "Kerrow City", "label"),
        ("Q990002", "en", "Old Kerrow", "alias"),
        ("Q990002", "en", "Kerrowburg", "alias"),
        ("Q990003", "de", "Talsen", "label"),
        ("Q990003", "de", "Talsenland", "alias"),
        ("Q990003", "en", "Talsen", "label"),
        ("Q990003", "en", "Talsenland", "alias"),
        ("Q990004", "en", "Nadir Isles", "label"),
        ("Q990005", "en", "Brinmoor", "label"),
        ("Q990006", "en", "A survey of Vellmark capitals", "label"),
    ]


def test_the_fallback_applies_within_each_dump(tables):
    files = [tables[d] / "labels.parquet" for d in (OLD, NEW)]
    en = label_table(files, ["en"])
    # The old dump's own en label lost to the newest dump's mul one: the editors removed the en
    # label, they did not make the old name current.
    assert rows(en[en.entity == "Q990001"]) == [
        ("Q990001", "en", "Vellmark", "label"),
        ("Q990001", "en", "Vellmark Republic", "alias"),
        ("Q990001", "en", "VMK", "alias"),
    ]
    assert rows(label_table(files[:1], ["en"]).query("entity == 'Q990001'")) == [
        ("Q990001", "en", "Kingdom of Vellmark", "label")
    ]
    # The released-benchmark import matches names against every dump's forms, each resolved.
    released = resolved_labels(files, ["en"])
    assert sorted(rows(released[released.id == 990001])) == [
        (990001, "en", "Kingdom of Vellmark", False),
        (990001, "en", "VMK", True),
        (990001, "en", "Vellmark", False),
        (990001, "en", "Vellmark Republic", True),
    ]
    matches = match_entities(["Vellmark", "Kerrowburg", "Kerrow"], released).set_index("text")
    # Kerrow: an en label in the old dump only (the new one says Kerrow City; mul's Kerrow is no
    # en form of the new dump); Kerrowburg: the new dump's mul alias
    assert matches.loc["Vellmark", ["id", "matched_by"]].tolist() == ["Q990001", "label"]
    assert matches.loc["Kerrowburg", ["id", "matched_by"]].tolist() == ["Q990002", "alias"]
    assert matches.loc["Kerrow", ["id", "matched_by"]].tolist() == ["Q990002", "label"]


def suite_of(tables, languages: list[str], label_dumps: tuple[str, ...] = (OLD, NEW)):
    suite = {
        "kind": "knowledge",
        "dump": NEW,
        "relations": ["P36"],
        "subject_aliases": 2,
        "languages": languages,
    }
    return build_suite(
        "mul",
        suite,
        SETS,
        DumpTables(
            str(tables[NEW] / "claims.parquet"),
            str(tables[NEW] / "entities.parquet"),
            [str(tables[d] / "labels.parquet") for d in label_dumps],
        ),
    )


def test_a_fact_about_a_mul_only_item_is_in_the_knowledge_suite(tables):
    """The key case: Q990001 has no label but ``mul``'s in the newest dump."""
    facts, prompts, forms = suite_of(tables, ["en"])
    # Q990004's P36 is novalue: no fact; both others have labelled subjects and objects.
    assert sorted(facts.fact_id) == ["Q990001|P36|Q990002", "Q990003|P36|Q990005"]
    fact = facts.set_index("fact_id").loc["Q990001|P36|Q990002"]
    assert list(fact.objects) == ["Q990002"] and fact.popularity == 3
    mine = prompts[prompts.fact_id == "Q990001|P36|Q990002"]
    # its mul label and both mul aliases (subject_aliases: 2) as subject forms, 4 object-final
    # templates each (P36.en.s3 is not object-final)
    assert list(dict.fromkeys(mine.subject_form)) == ["Vellmark", "Vellmark Republic", "VMK"]
    assert len(mine) == 12
    got = dict(zip(mine.template_id + "/" + mine.subject_form, mine.text, strict=True))
    assert got["P36.en.s1/Vellmark"] == "The capital of Vellmark is"
    assert got["P36.en.q1/VMK"] == "Question: Which city is the capital of VMK? Answer:"
    # Talsen: its own label and the alias it has only in mul
    talsen = prompts[prompts.fact_id == "Q990003|P36|Q990005"]
    assert list(dict.fromkeys(talsen.subject_form)) == ["Talsen", "Talsenland"] and len(talsen) == 8
    # the object's forms (answers, distractor names): Kerrow City, then en's and mul's aliases
    kerrow = forms[(forms.entity == "Q990002") & (forms.lang == "en")]
    assert rows(kerrow) == [
        ("Q990002", "en", "Kerrow City", "label"),
        ("Q990002", "en", "Old Kerrow", "alias"),
        ("Q990002", "en", "Kerrowburg", "alias"),
    ]
    # the newest dump's labels alone (no older own en label to fall back on) give the same suite
    alone, alone_prompts, _ = suite_of(tables, ["en"], (NEW,))
    assert sorted(alone.fact_id) == sorted(facts.fact_id)
    assert alone_prompts.text.tolist() == prompts.text.tolist()


def test_a_german_suite_labels_through_mul(tables):
    facts, prompts, forms = suite_of(tables, ["en", "de"])
    # Q990001 and Q990002 are labelled in de only through mul; Brinmoor has no de label, so
    # Talsen's capital cannot be asked in German.
    assert list(facts.fact_id) == ["Q990001|P36|Q990002"]
    de = prompts[prompts.lang == "de"]
    assert set(de.subject_form) == {"Vellmark", "Vellmark Republic", "VMK"}
    assert rows(forms[(forms.entity == "Q990002") & (forms.lang == "de")]) == [
        ("Q990002", "de", "Kerrow", "label"),
        ("Q990002", "de", "Kerrowburg", "alias"),
    ]


def test_omega_sees_mul_forms(tables):
    """Ω's form clauses (a candidate needs a form; it must share none with the answer) read the
    suite's entity_forms, so a mul-only entity has forms and they are its mul ones."""
    from factprobe.distractors.omega import Omega, load_types, valid_objects

    forms = label_table([tables[NEW] / "labels.parquet"], ["en"])
    claims = pd.read_parquet(tables[NEW] / "claims.parquet")
    omega = Omega.from_tables(
        load_types([tables[NEW] / "types.parquet"]), forms, valid_objects(claims, int(NEW))
    )
    assert omega.forms_of(990001) == ("vellmark", "vellmark republic", "vmk")
    assert omega.has_form(np.array([990001, 990002, 990004, 990007])).tolist() == [True, True, True, False]
    # Brinmoor is a city like Kerrow City and shares no form with it: a distractor for Vellmark's capital
    assert omega.filter(990001, 36, 990002, [990005, 990004, 990003]) == [990005]
