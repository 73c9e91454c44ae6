"""Template loader and validator (templates-format.md; distractors-knowledge-measure §3.1)."""

from pathlib import Path

import pytest
from factprobe.probes.templates import TemplateError, is_object_final, load_templates

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "templates"


def write(tmp_path, body, lang="en"):
    path = tmp_path / f"{lang}.yaml"
    path.write_text(f"language: {lang}\ntemplates:\n{body}", encoding="utf-8")
    return path


def test_loads_test_file_and_computes_object_final():
    templates = load_templates(DATA / "en.yaml")
    assert len(templates) == 9
    by_id = {t.id: t for t in templates}
    assert by_id["P36.en.s1"].text == "The capital of [X] is [Y]."
    assert by_id["P36.en.s1"].object_final is True
    assert by_id["P36.en.s3"].object_final is False  # "[Y] is the capital of [X]."
    assert by_id["P36.en.c1"].object_final is True  # "... Answer: [Y]"
    assert by_id["P36.en.c1"].prefix == "Fill in the blank: ___ is the capital city of [X]. Answer:"
    assert {t.lang for t in templates} == {"en"}
    assert by_id["P36.en.q1"].style == "question"


@pytest.mark.parametrize(
    "text,final",
    [
        ("The capital of [X] is [Y].", True),
        ("The capital of [X] is [Y] .", True),
        ("Question: Which city is the capital of [X]? Answer: [Y]", True),
        ("[X]的首都是[Y]。", True),
        ("Is [Y] the capital of [X]?", False),
        ("[Y] is the capital of [X].", False),
        ("[X] lies in [Y] province.", False),
    ],
)
def test_object_final(text, final):
    assert is_object_final(text) is final


@pytest.mark.parametrize(
    "body,message",
    [
        ("  - {id: a, relation: P36, style: statement, text: 'The capital of [X] is Y.'}\n", "0 [Y] slots"),
        ("  - {id: a, relation: P36, style: statement, text: '[X] and [X] are [Y].'}\n", "2 [X] slots"),
        ("  - {id: a, relation: P36, style: claim, text: 'The capital of [X] is [Y].'}\n", "style 'claim'"),
        (
            "  - {id: a, relation: Q36, style: statement, text: 'The capital of [X] is [Y].'}\n",
            "not a property id",
        ),
        ("  - {id: a, relation: P36, style: completion, text: 'Capital of [X]. Answer: [Y]'}\n", "'___'"),
        ("  - {id: a, relation: P36, style: statement, text: '[X.Nom] is [Y].'}\n", "0 [X] slots"),
        ("  - {id: a, relation: P36, style: statement, text: '[DEF;X] [X] is [Y].'}\n", "unknown markup"),
        (
            "  - {id: a, relation: P36, style: statement, text: '[Y] is in [X].', object_final: true}\n",
            "object_final is written as True",
        ),
        (
            "  - {id: a, relation: P36, style: statement, text: 'The capital of [X] is [Y].', slot: y}\n",
            "unknown key",
        ),
        ("  - {relation: P36, style: statement, text: 'The capital of [X] is [Y].'}\n", "'id' is missing"),
    ],
)
def test_errors_name_file_line_and_template(tmp_path, body, message):
    path = write(
        tmp_path, "  - {id: ok, relation: P36, style: statement, text: '[X] has capital [Y].'}\n" + body
    )
    with pytest.raises(TemplateError) as err:
        load_templates(path)
    text = str(err.value)
    assert message in text
    assert str(path) in text and "line 4" in text
    if "'id' is missing" not in message:
        assert "(template a)" in text


def test_duplicate_id_names_both_lines(tmp_path):
    body = (
        "  - {id: P36.en.s1, relation: P36, style: statement, text: 'The capital of [X] is [Y].'}\n"
        "  - {id: P36.en.s1, relation: P36, style: statement, text: '[X] has its capital in [Y].'}\n"
    )
    with pytest.raises(TemplateError, match=r"line 4: template id 'P36.en.s1' already used on line 3"):
        load_templates(write(tmp_path, body))


def test_language_must_match_file_name(tmp_path):
    path = tmp_path / "de.yaml"
    path.write_text(
        "language: en\ntemplates:\n  - {id: a, relation: P36, style: statement, text: '[X] [Y]'}\n"
    )
    with pytest.raises(TemplateError, match="file name says 'de' but 'language' is 'en'"):
        load_templates(path)


def test_missing_file_and_bad_yaml(tmp_path):
    with pytest.raises(TemplateError, match="template file not found"):
        load_templates(tmp_path / "en.yaml")
    (tmp_path / "en.yaml").write_text("language: en\ntemplates: [\n")
    with pytest.raises(TemplateError, match="not valid YAML"):
        load_templates(tmp_path / "en.yaml")


@pytest.mark.parametrize(
    "path", sorted((ROOT / "resources" / "templates").glob("*.yaml")), ids=lambda p: p.name
)
def test_every_shipped_template_file_is_valid(path):
    templates = load_templates(path)
    lang = path.stem
    assert templates and all(t.lang == lang for t in templates)
    for t in templates:
        assert t.id.startswith(f"{t.relation}.{lang}."), t.id
    if lang == "en":
        statements = {}
        for t in templates:
            if t.style == "statement" and t.object_final:
                statements.setdefault(t.relation, []).append(t)
        assert len(statements) >= 40 and all(len(v) >= 5 for v in statements.values())
