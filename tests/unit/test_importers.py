"""Importers of external template sets: ParaRel (real MIT files), LAMA and X-FACTR excerpts."""

import json
import re
from pathlib import Path

import pytest
from factprobe.probes.importers import (
    import_lama,
    import_pararel,
    import_xfactr,
    normalise_spacing,
    resolve_xfactr,
)
from factprobe.probes.templates import Template, TemplateError

DATA = Path(__file__).resolve().parents[1] / "data"
PARAREL = (
    Path(__file__).resolve().parents[2] / "resources" / "templates" / "external" / "pararel" / "graphs_json"
)
LAMA = DATA / "lama_relations_excerpt.jsonl"
XFACTR = DATA / "xfactr_TREx_prompts_excerpt.csv"


def test_pararel_real_files():
    templates = import_pararel(PARAREL)
    # Independent count: every non-empty line of every P*.jsonl is one pattern.
    raw = {}
    for path in PARAREL.glob("P*.jsonl"):
        raw[path.stem] = [
            json.loads(line)["pattern"] for line in path.read_text().splitlines() if line.strip()
        ]
    assert len(templates) == sum(len(v) for v in raw.values())
    assert len(raw) == 39 and {t.relation for t in templates} == set(raw)
    assert all(isinstance(t, Template) and t.lang == "en" and t.style == "statement" for t in templates)
    assert len({t.id for t in templates}) == len(templates)
    by_id = {t.id: t for t in templates}
    # P36.jsonl line 1: "The capital of [X] is [Y] ." -> spacing joined, still object-final.
    assert by_id["P36.en.pararel1"].text == "The capital of [X] is [Y]."
    assert by_id["P36.en.pararel1"].object_final
    # line 3: "[Y] is the capital of [X]." is not object-final
    assert by_id["P36.en.pararel3"].text == "[Y] is the capital of [X]."
    assert not by_id["P36.en.pararel3"].object_final
    # object-final agrees with a plain regex on the raw patterns
    finals = sum(bool(re.search(r"\[Y\]\s*\.?\s*$", p)) for v in raw.values() for p in v)
    assert sum(t.object_final for t in templates) == finals


def test_pararel_errors(tmp_path):
    with pytest.raises(TemplateError, match="no ParaRel files"):
        import_pararel(tmp_path)
    (tmp_path / "P36.jsonl").write_text('{"pattern": "The capital of [X] is [Y] ."}\n{"lemma": "x"}\n')
    with pytest.raises(TemplateError, match=r"P36.jsonl: line 2: expected a JSON object with a 'pattern'"):
        import_pararel(tmp_path)


def test_lama_excerpt():
    templates = import_lama(LAMA)
    assert [t.id for t in templates] == [
        "P19.en.lama",
        "P47.en.lama",
        "P530.en.lama",
        "P1412.en.lama",
        "P36.en.lama",
    ]
    assert templates[0].text == "[X] was born in [Y]."
    assert templates[4].text == "The capital of [X] is [Y]."
    assert all(t.object_final for t in templates)


def test_normalise_spacing():
    assert normalise_spacing("  [X]  plays in [Y] position . ") == "[X] plays in [Y] position."
    assert normalise_spacing("[X]的出生地是[Y] 。") == "[X]的出生地是[Y]。"


def test_resolve_xfactr_rules():
    fr = "[X] est [né;X-Gender=MASC|née;X-Gender=FEM] [PREPLOC;Y] [Y] ."
    assert resolve_xfactr(fr) is None  # PREPLOC depends on Y: not importable by default
    assert resolve_xfactr(fr, functions="drop") == "[X] est né  [Y] ."
    assert resolve_xfactr(fr, gender="FEM", functions="drop") == "[X] est née  [Y] ."
    ru = "[X.Nom] [родился;X-Gender=MASC|родилась;X-Gender=FEM|родилось;X-Gender=NEUT] в [Y.Ess] ."
    assert resolve_xfactr(ru) == "[X] родился в [Y] ."
    assert resolve_xfactr(ru, gender="NEUT") == "[X] родилось в [Y] ."
    assert resolve_xfactr("[X] [toca;X-Number=SG|tocan;X-Number=PL] [Y] .") == "[X] toca [Y] ."
    assert resolve_xfactr("[X] [Y.IN+ESS] született .") == "[X] [Y] született ."
    assert resolve_xfactr("[X] [Y;be] .") is None


def test_xfactr_excerpt():
    templates, skipped = import_xfactr(XFACTR, ["en", "ru", "fr", "el"])
    by_id = {t.id: t for t in templates}
    assert by_id["P19.ru.xfactr"].text == "[X] родился в [Y]."
    assert by_id["P36.ru.xfactr"].text == "Столица [X] — [Y]."
    assert by_id["P36.ru.xfactr"].object_final
    assert by_id["P1412.fr.xfactr"].text == "[X] communiquait en [Y]."
    assert by_id["P36.en.xfactr"].text == "The capital of [X] is [Y]."
    assert not by_id["P1923.en.xfactr"].object_final  # "[Y] participated in the [X] ."
    # The 7 excerpt rows hold 7 English cells, all importable.
    assert sum(t.lang == "en" for t in templates) == 7
    # French P19 has [PREPLOC;Y]; Greek P36 has [DEF;Y] -> reported, with file, line and column.
    assert any("line 2, column fr" in s and "PREPLOC" in s for s in skipped)
    assert not any(t.id == "P19.fr.xfactr" for t in templates)
    assert len(templates) + len(skipped) == 7 * 4
    dropped, _ = import_xfactr(XFACTR, ["el"], functions="drop")
    assert {t.id: t.text for t in dropped}["P36.el.xfactr"] == "[Y] είναι η πρωτεύουσα [X]."


def test_xfactr_missing_language():
    with pytest.raises(TemplateError, match=r"no column for language\(s\) \['cs'\]"):
        import_xfactr(XFACTR, ["en", "cs"])


def test_myriadlama_records(tmp_path):
    """MyriadLAMA (belief-myriadlama §4.1): templates repeat on every fact in the release and are
    imported once; manual ones are marked; "Who developed [X]? [Y]." is a question."""
    from factprobe.probes.importers import import_myriadlama, import_myriadlama_facts

    records = [
        {
            "uuid": "u1",
            "sub_uri": "Q1",
            "rel_uri": "P178",
            "obj_uris": ["Q2"],
            "sub_ent": "Windows",
            "obj_ents": ["Microsoft"],
            "obj_aliases": ["MS"],
            "template": "[X] was developed by [Y] .",
            "is_manual": True,
        },
        {
            "uuid": "u1",
            "sub_uri": "Q1",
            "rel_uri": "P178",
            "obj_uris": ["Q2"],
            "sub_ent": "MS Windows",
            "obj_ents": ["Microsoft"],
            "obj_aliases": ["MS"],
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
            "obj_aliases": [],
            "template": "[X] was developed by [Y] .",
            "is_manual": True,
        },
    ]
    path = tmp_path / "myriad.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    templates = import_myriadlama(path)
    assert [(t.id, t.style, t.text) for t in templates] == [
        ("P178.en.myriad1m", "statement", "[X] was developed by [Y]."),
        ("P178.en.myriad2", "question", "Who developed [X]? [Y]."),
    ]
    facts, forms = import_myriadlama_facts(path)
    # §4.2 Table 1: unique triples, not pairs: each object of a pair is a fact
    assert facts["fact_id"].tolist() == ["Q1|P178|Q2", "Q3|P178|Q4", "Q3|P178|Q5"]
    assert facts.set_index("fact_id").loc["Q3|P178|Q4", "objects"] == ["Q4", "Q5"]
    q1 = forms[forms.entity == "Q1"]
    assert q1[["form", "source"]].values.tolist() == [["Windows", "label"], ["MS Windows", "alias"]]
    assert set(forms[forms.entity == "Q2"]["form"]) == {"Microsoft", "MS"}
    assert forms[forms.entity == "Q5"]["form"].tolist() == ["Nintendo"]
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"template": "[X] is [Y]"}\n')
    with pytest.raises(TemplateError, match="record 0: needs a relation"):
        import_myriadlama(bad)
