"""A suite on the MyriadLAMA release (belief-myriadlama §4): its facts (every object of a
subject-relation pair its own fact, §4.2 Table 1), its subject expressions and its templates,
in the record layout of HF iszhaoxin/MyriadLAMA (one record per prompt: uuid, rel_uri, sub_ent,
template, is_manual, obj_uris, obj_ents, obj_aliases; sub_uri from LAMA-UHN)."""

import json

import pytest
from factprobe.probes.build import DumpTables, build_suite

RECORDS = [
    {
        "uuid": "u1",
        "sub_uri": "Q1",
        "rel_uri": "P178",
        "obj_uris": ["Q2"],
        "sub_ent": "Windows",
        "obj_ents": ["Microsoft"],
        "obj_aliases": ["Microsoft", "MS"],
        "template": "[X] was developed by [Y] .",
        "is_manual": True,
    },
    {
        "uuid": "u1",
        "sub_uri": "Q1",
        "rel_uri": "P178",
        "obj_uris": ["Q2"],
        "sub_ent": "Microsoft Windows",
        "obj_ents": ["Microsoft"],
        "obj_aliases": ["Microsoft", "MS"],
        "template": "Who developed [X]? [Y].",
        "is_manual": False,
    },
    {
        "uuid": "u2",
        "sub_uri": "Q3",
        "rel_uri": "P178",
        "obj_uris": ["Q4", "Q5"],
        "sub_ent": "Xbox",
        "obj_ents": ["Microsoft", "Nintendo"],
        "obj_aliases": ["Microsoft", "Nintendo"],
        "template": "[X] was developed by [Y] .",
        "is_manual": True,
    },
    {
        "uuid": "u3",
        "sub_uri": "Q6",
        "rel_uri": "P36",
        "obj_uris": ["Q7"],
        "sub_ent": "France",
        "obj_ents": ["Paris"],
        "obj_aliases": ["Paris"],
        "template": "The capital of [X] is [Y] .",
        "is_manual": True,
    },
]


@pytest.fixture
def release(tmp_path):
    path = tmp_path / "myriadlama.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in RECORDS))
    return path


def build(release, demo_tables, **extra):
    suite = {
        "kind": "multiprompt",
        "dump": "20190201",
        "relations": ["P178"],
        "source": {"format": "myriadlama", "path": str(release)},
        "templates": {"sets": []},
        "subject_aliases": 3,
        "layout": "mask_qa",
        **extra,
    }
    tables = demo_tables["20190201"]
    return build_suite(
        "belief",
        suite,
        {},
        DumpTables(
            str(tables / "claims.parquet"), str(tables / "entities.parquet"), [str(tables / "labels.parquet")]
        ),
    )


def test_release_facts_expressions_and_templates(release, demo_tables):
    facts, prompts, forms = build(release, demo_tables)
    # every object of a pair is a fact; P36 left out by `relations`
    assert sorted(facts["fact_id"]) == ["Q1|P178|Q2", "Q3|P178|Q4", "Q3|P178|Q5"]
    assert facts.set_index("fact_id").loc["Q3|P178|Q4", "objects"] == ["Q4", "Q5"]
    # Q1: 2 templates x 2 subject expressions; Q3's two facts: 2 templates x 1 expression each
    assert prompts.groupby("fact_id").size().to_dict() == {"Q1|P178|Q2": 4, "Q3|P178|Q4": 2, "Q3|P178|Q5": 2}
    q1 = set(prompts.loc[prompts["fact_id"] == "Q1|P178|Q2", "text"])
    assert q1 == {
        "Q: Windows was developed by [MASK].\nA:",
        "Q: Microsoft Windows was developed by [MASK].\nA:",
        "Q: Who developed Windows? [MASK].\nA:",
        "Q: Who developed Microsoft Windows? [MASK].\nA:",
    }
    # the release's names are the objects' forms: a flat alias list goes to the object it names
    # ("Nintendo" is Q5's, not the pair's first object's); a name of no object to the first
    by_entity = forms.groupby("entity")["form"].apply(set).to_dict()
    assert by_entity["Q5"] == {"Nintendo"} and by_entity["Q4"] == {"Microsoft"}
    assert by_entity["Q2"] == {"Microsoft", "MS"}


def test_demonstrations_come_from_the_release(release, demo_tables):
    _, prompts, _ = build(release, demo_tables, few_shot={"settings": ["zero-shot", "1-relation"]})
    shots = prompts[prompts["shots"] != "zero-shot"]
    assert len(shots) == 8
    # a demonstration is another fact of the relation, written with the release's label
    assert all(("Windows" in c) or ("Xbox" in c) for c in shots["context"])


def test_missing_release_names_the_file(tmp_path, demo_tables):
    with pytest.raises(ValueError, match="not found; export the MyriadLAMA release"):
        build(tmp_path / "none.jsonl", demo_tables)


def test_records_without_sub_uri_as_the_public_loaders_read_them(tmp_path, demo_tables):
    """The release read as its users' loaders read it (uuid, rel_uri, sub_ent, template, is_manual,
    obj_uris, obj_ents, obj_aliases; no sub_uri): each pair's subject is its own id, Q + 2**38 + the
    rank of its uuid among the file's (u1, u2, u3: ranks 0, 1, 2), the same facts and prompts
    otherwise; a record with neither sub_uri nor uuid is refused naming both."""
    from factprobe.probes.importers import TemplateError

    path = tmp_path / "myriadlama.jsonl"
    path.write_text(
        "".join(json.dumps({k: v for k, v in r.items() if k != "sub_uri"}) + "\n" for r in RECORDS)
    )
    facts, prompts, forms = build(path, demo_tables)
    u1, u2 = f"Q{2**38}", f"Q{2**38 + 1}"
    assert sorted(facts["fact_id"]) == [f"{u1}|P178|Q2", f"{u2}|P178|Q4", f"{u2}|P178|Q5"]
    assert prompts.groupby("fact_id").size().to_dict() == {
        f"{u1}|P178|Q2": 4,
        f"{u2}|P178|Q4": 2,
        f"{u2}|P178|Q5": 2,
    }
    # the prompts are those of the records with sub_uri, subject ids aside
    release = tmp_path / "with_uri.jsonl"
    release.write_text("".join(json.dumps(r) + "\n" for r in RECORDS))
    _, named, _ = build(release, demo_tables)
    assert sorted(prompts["text"]) == sorted(named["text"])
    subject = forms[forms["entity"] == u1]
    assert subject[["form", "source"]].values.tolist() == [
        ["Windows", "label"],
        ["Microsoft Windows", "alias"],
    ]
    bare = tmp_path / "bare.jsonl"
    bare.write_text(json.dumps({k: v for k, v in RECORDS[0].items() if k not in ("sub_uri", "uuid")}) + "\n")
    with pytest.raises(TemplateError, match="record 0: neither sub_uri nor uuid"):
        build(bare, demo_tables)
