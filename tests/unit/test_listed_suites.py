"""Suites over a given list of triples (distractors paper §4.2) and the §4.3 verbalization
pairs: importers, suite tables on the real demo dumps, counted drops and clear errors."""

import json
import math
from pathlib import Path

import pytest
from factprobe.probes.build import DumpTables, build_suite
from factprobe.probes.importers import TriplesError, pair_from_row, read_triples

ROOT = Path(__file__).resolve().parents[2]
SETS = {"team": {"format": "yaml", "path": str(ROOT / "tests" / "data" / "templates")}}


def test_read_triples_json_as_the_reference_file(tmp_path):
    path = tmp_path / "judged.json"
    path.write_text(json.dumps([[["Q45", "P47", "Q29"], 0.33], [["Q45", "P36", "Q597"], 1]]))
    got = read_triples(path)
    assert got[["subject", "property", "object"]].values.tolist() == [
        ["Q45", "P47", "Q29"],
        ["Q45", "P36", "Q597"],
    ]
    assert got["score"].tolist() == [0.33, 1.0] and got["line"].tolist() == [0, 1]


def test_read_triples_tsv_optional_score_and_header(tmp_path):
    path = tmp_path / "t.tsv"
    path.write_text("subject\tproperty\tobject\tscore\nQ45\tP47\tQ29\t0.5\nQ45\tP36\tQ597\n")
    got = read_triples(path)
    assert got["score"].iloc[0] == 0.5 and math.isnan(got["score"].iloc[1])
    assert got["line"].tolist() == [2, 3]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("Q45\tP47\tQ29\nQ45\tP47\tQ29\n", "line 2: (Q45, P47, Q29) is listed twice"),
        ("Q45\tP47\n", "line 1: expected 3 or 4"),
        ("Q45\tP47\tQ29\tyes\n", "line 1: score 'yes' is not a number"),
        ("Q45\tX47\tQ29\n", "line 1: ('Q45', 'X47', 'Q29') is not a Wikidata triple"),
    ],
)
def test_read_triples_errors_name_file_and_line(tmp_path, text, message):
    path = tmp_path / "bad.tsv"
    path.write_text(text)
    with pytest.raises(
        TriplesError, match=str(path) + ".*" + message.replace("(", r"\(").replace(")", r"\)")
    ):
        read_triples(path)


def build(demo_tables, path, **extra):
    suite = {"kind": "knowledge", "dump": "20190201", "source": {"format": "triples", "path": str(path)}}
    suite.update(extra)
    return build_suite(
        "listed",
        suite,
        SETS,
        DumpTables(
            str(demo_tables["20190201"] / "claims.parquet"),
            str(demo_tables["20190201"] / "entities.parquet"),
            [str(demo_tables[d] / "labels.parquet") for d in sorted(demo_tables)],
        ),
    )


def test_triples_suite_keeps_every_listed_object(demo_tables, tmp_path, caplog):
    """China (Q148) borders Laos (Q819) and Tajikistan (Q863) in the demo dump: the N-M pair
    (China, P47) listed with both objects gives two facts (a dump-built suite keeps one)."""
    path = tmp_path / "judged.tsv"
    path.write_text(
        "Q148\tP47\tQ863\t0.9\nQ148\tP47\tQ819\t0.2\nQ45\tP36\tQ597\t1\nQ999999999\tP36\tQ597\t0\n"
    )
    caplog.set_level("INFO")
    facts, prompts, forms = build(
        demo_tables, path, templates={"styles": ["statement"], "max_per_relation": 5}
    )
    assert sorted(facts["fact_id"]) == ["Q148|P47|Q819", "Q148|P47|Q863", "Q45|P36|Q597"]
    china = facts.set_index("fact_id").loc["Q148|P47|Q863"]
    # objects: the listed ones and every truthy border of China in the dump (labelled or not, as
    # for a dump-built suite), ascending by id
    assert {"Q819", "Q863"} <= set(china.objects) and len(china.objects) == 16
    assert list(china.objects) == sorted(china.objects, key=lambda q: int(q[1:]))
    # every fact gets each statement template of its relation: P36 s1, s2 and P47's one (tests/data/templates)
    per_fact = prompts.groupby("fact_id")["template_id"].nunique().to_dict()
    assert per_fact["Q45|P36|Q597"] == 2 and per_fact["Q148|P47|Q863"] == per_fact["Q148|P47|Q819"] == 1
    assert set(prompts[prompts.fact_id == "Q45|P36|Q597"]["text"]) == {
        "The capital of Portugal is",
        "Portugal has its seat of government in",
    }
    # the unknown subject is a counted drop, logged
    assert "'entity_not_in_dump': 1" in caplog.text and "'facts': 3" in caplog.text


def test_triples_suite_k_caps_cloze_sentences(demo_tables, tmp_path):
    path = tmp_path / "t.json"
    path.write_text(json.dumps([[["Q45", "P36", "Q597"], 1]]))
    _, prompts, _ = build(demo_tables, path, templates={"styles": ["statement"], "max_per_relation": 1})
    assert prompts["template_id"].tolist() == ["P36.en.s1"]


def test_triples_suite_none_labelled_is_an_error(demo_tables, tmp_path):
    path = tmp_path / "t.tsv"
    path.write_text("Q999999999\tP36\tQ597\n")
    with pytest.raises(ValueError, match="none of the 1 listed triples"):
        build(demo_tables, path)


ROW = {
    "triples_raw": "('Q1', 'P17', 'Q2')",
    "triples": "(Tokyo, Japan, country, Japan, start=None, end=None)",
    "context": "present",
    "verbalization": "Tokyo, Japan is located in the Japan.",
    "errors": "obj_deter",
    "correction": "“Tokyo, Japan” is located in Japan",
}


def test_pair_from_row_cuts_both_sentences_before_the_object():
    """§4.3 / the reference's notebook: labels from the `triples` cell (the split whose object ends
    both sentences), correction's “ read as «, closing ” dropped; cloze = text before the object."""
    record, why = pair_from_row(ROW, 0, "f: line 2")
    assert why == "kept"
    assert (record["subject"], record["property"], record["object"]) == ("Q1", "P17", "Q2")
    assert record["subject_label"] == "Tokyo, Japan" and record["object_label"] == "Japan"
    assert record["flawed"] == "Tokyo, Japan is located in the"
    # only a closing ” at the end is dropped (the reference's rstrip), an inner one stays
    assert record["corrected"] == "« Tokyo, Japan” is located in"


def test_pair_from_row_reverses_a_subject_final_pair():
    """The reference reverses a sentence ending with the subject into (o, r, s), s the answer."""
    row = {
        **ROW,
        "verbalization": "Japan is the country of Tokyo, Japan",
        "correction": "Japan is home to Tokyo, Japan",
    }
    record, why = pair_from_row(row, 5, "f")
    assert why == "reversed" and record["reversed"] is True
    assert (record["subject"], record["property"], record["object"]) == ("Q2", "P17", "Q1")
    assert (record["subject_label"], record["object_label"]) == ("Japan", "Tokyo, Japan")
    assert (record["flawed"], record["corrected"]) == ("Japan is the country of", "Japan is home to")


@pytest.mark.parametrize(
    ("change", "why"),
    [
        ({"errors": "-"}, "perfect"),
        ({"errors": "ignore"}, "not_annotated"),
        ({"errors": ""}, "not_annotated"),
        ({"context": "past"}, "past_context"),
        ({"verbalization": "Japan is the country of Tokyo"}, "not_object_final"),
    ],
)
def test_pair_from_row_filters_as_the_reference(change, why):
    assert pair_from_row({**ROW, **change}, 3, "f") == (None, why)
    assert pair_from_row(ROW, 152, "f") == (None, "beyond_row_152")
