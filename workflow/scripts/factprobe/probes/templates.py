"""Relation templates: the record type, the YAML loader and its validator.

A template is the cloze sentence C(s, r) of distractors-knowledge-measure §3.1: ``[X]`` is the
subject slot, ``[Y]`` the object slot. A causal LM can only score the object when ``[Y]`` ends
the sentence (the "object-final" condition of §3.1), so the loader computes ``object_final``.
Styles follow probelm-plausibility §3 / Appendix D: ``statement``, ``completion``
(fill-in-the-blank with an answer cue) and ``question``. File format: templates-format.md,
documented in config/README.md, section templates.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import yaml

STYLES = ("statement", "completion", "question")
ANSWERS = ("object", "subject")
RELATION_RE = re.compile(r"^P[1-9][0-9]*$")
LANG_RE = re.compile(r"^[a-z]{2,3}(-[a-z]+)?$")
ID_RE = re.compile(r"^\S+$")
# [Y] may be followed only by whitespace and one optional sentence-final mark (Latin or CJK).
OBJECT_FINAL_RE = re.compile(r"\[Y\]\s*[.?!。．？！]?\s*$")
KNOWN_KEYS = {"id", "relation", "style", "text", "answer", "object_final"}


class TemplateError(ValueError):
    """A template file or record is invalid; the message names the file, line and template id."""


@dataclass(frozen=True)
class Template:
    """One relation template (templates-format.md); ``source`` names the file or importer."""

    id: str
    relation: str
    lang: str
    style: str
    text: str
    answer: str = "object"
    object_final: bool = True
    source: str = ""

    @property
    def prefix(self) -> str:
        """Text before ``[Y]`` (the part a causal LM conditions on), right-stripped."""
        return self.text.split("[Y]", 1)[0].rstrip()


def is_object_final(text: str) -> bool:
    """True when ``[Y]`` is followed only by optional final punctuation (§3.1 object-final cloze)."""
    return bool(OBJECT_FINAL_RE.search(text))


def check_text(text: str, where: str) -> None:
    """Exactly one ``[X]`` and one ``[Y]``, no other bracketed slot; raise TemplateError otherwise."""
    for slot in ("[X]", "[Y]"):
        count = text.count(slot)
        if count != 1:
            raise TemplateError(f"{where}: text {text!r} has {count} {slot} slots; write exactly one")
    leftover = re.findall(r"\[[^\]]*\]", text.replace("[X]", "").replace("[Y]", ""))
    if leftover:
        raise TemplateError(
            f"{where}: text {text!r} has unknown markup {leftover}; only [X] and [Y] are slots"
        )


def make_template(record: dict, lang: str, source: str, where: str) -> Template:
    """Validate one raw record (a dict from YAML or an importer) and build a :class:`Template`."""
    if isinstance(record.get("id"), str):
        where = f"{where} (template {record['id']})"
    unknown = set(record) - KNOWN_KEYS
    if unknown:
        raise TemplateError(f"{where}: unknown key(s) {sorted(unknown)}; allowed: {sorted(KNOWN_KEYS)}")
    for key in ("id", "relation", "style", "text"):
        if not isinstance(record.get(key), str) or not record[key].strip():
            raise TemplateError(f"{where}: key {key!r} is missing or not a non-empty string")
    tid, relation, style, text = record["id"], record["relation"], record["style"], record["text"]
    if not ID_RE.match(tid):
        raise TemplateError(f"{where}: id must not contain whitespace")
    if not RELATION_RE.match(relation):
        raise TemplateError(f"{where}: relation {relation!r} is not a property id like 'P36'")
    if style not in STYLES:
        raise TemplateError(f"{where}: style {style!r} is not one of {list(STYLES)}")
    answer = record.get("answer", "object")
    if answer not in ANSWERS:
        raise TemplateError(f"{where}: answer {answer!r} is not one of {list(ANSWERS)}")
    check_text(text, where)
    if style == "completion" and "___" not in text:
        raise TemplateError(f"{where}: a completion template marks its blank with '___'")
    final = is_object_final(text)
    written = record.get("object_final")
    if written is not None:
        if not isinstance(written, bool):
            raise TemplateError(f"{where}: object_final must be true or false, not {written!r}")
        if written != final:
            raise TemplateError(
                f"{where}: object_final is written as {written} but the text {text!r} says {final}; "
                "remove the key (it is computed) or fix the text"
            )
    return Template(tid, relation, lang, style, text, answer, final, source)


# libyaml when PyYAML has it (same documents, marks included): the template files are parsed
# by every probe job, and the pure-Python parser took seconds for them.
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load_templates(path: str | Path) -> list[Template]:
    """Read and validate one ``resources/templates/<lang>.yaml`` file.

    Errors name the file, the line of the offending record and the template id. Ids must be
    unique within the file.
    """
    path = Path(path)
    if not path.exists():
        raise TemplateError(f"{path}: template file not found; write it or fix templates.sets in config")
    try:
        root = yaml.compose(path.read_text(encoding="utf-8"), Loader=_LOADER)
    except yaml.YAMLError as exc:
        raise TemplateError(f"{path}: not valid YAML: {exc}") from exc
    if not isinstance(root, yaml.MappingNode):
        raise TemplateError(f"{path}: expected a mapping with keys 'language' and 'templates'")
    data = yaml.load(path.read_text(encoding="utf-8"), Loader=_LOADER)
    lang = data.get("language")
    if not isinstance(lang, str) or not LANG_RE.match(lang):
        raise TemplateError(f"{path}: 'language' must be a language code like 'en', not {lang!r}")
    if path.stem != lang:
        raise TemplateError(f"{path}: file name says {path.stem!r} but 'language' is {lang!r}")
    records = data.get("templates")
    if not isinstance(records, list) or not records:
        raise TemplateError(f"{path}: 'templates' must be a non-empty list")
    lines = _record_lines(root)
    out: list[Template] = []
    seen: dict[str, int] = {}
    for i, record in enumerate(records):
        line = lines[i] if i < len(lines) else 0
        where = f"{path}: line {line}"
        if not isinstance(record, dict):
            raise TemplateError(f"{where}: each template is a mapping with id, relation, style, text")
        template = make_template(record, lang, str(path), where)
        if template.id in seen:
            raise TemplateError(
                f"{where}: template id {template.id!r} already used on line {seen[template.id]}"
            )
        seen[template.id] = line
        out.append(template)
    return out


def _record_lines(root: yaml.MappingNode) -> list[int]:
    """1-based line of each item of the top-level ``templates`` sequence."""
    for key, value in root.value:
        if key.value == "templates" and isinstance(value, yaml.SequenceNode):
            return [item.start_mark.line + 1 for item in value.value]
    return []


def check_unique(templates: Iterable[Template]) -> None:
    """Template ids must be unique across every set a suite combines."""
    seen: dict[str, str] = {}
    for t in templates:
        if t.id in seen:
            raise TemplateError(
                f"template id {t.id!r} appears in both {seen[t.id]} and {t.source}; rename one"
            )
        seen[t.id] = t.source
