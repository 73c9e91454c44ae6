"""Importers for external template sets: LAMA / ParaRel jsonl and X-FACTR ``TREx_prompts.csv``.

They return the same :class:`~factprobe.probes.templates.Template` records as the YAML loader,
so a suite can mix the team's templates with published ones (belief-myriadlama §2: more
templates per relation give a multi-prompt view of a fact).

Normalisation shared by all importers: LAMA-style tokenised spacing before punctuation
(``"[X] was born in [Y] ."``) is joined (``"[X] was born in [Y]."``) and runs of spaces collapse.

X-FACTR markup (see :func:`resolve_xfactr`) is resolved as follows:

* case / number tags on a slot are dropped: ``[X.Nom]`` -> ``[X]``, ``[Y.IN+ESS]`` -> ``[Y]``
  (the entity label is scored in its citation form);
* agreement alternatives ``[né;X-Gender=MASC|née;X-Gender=FEM]`` or
  ``[toca;X-Number=SG|tocan;X-Number=PL]`` take the alternative whose feature value is
  ``gender`` (default ``MASC``) or ``SG``, else the first alternative;
* entity-dependent function words (``[DEF;X]``, ``[PREPLOC;Y]``, ``[PREPDEF-à;X]``, ``[Y;be]``) cannot be
  chosen without the entity's grammatical features: with ``functions="skip"`` (default) such a
  template is not imported (reported by the caller), with ``functions="drop"`` the token is removed;
* a cell that is still malformed after this (e.g. ``[X bad]``) is skipped and reported.
"""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

from .templates import LANG_RE, Template, TemplateError, make_template

SPACE_PUNCT_RE = re.compile(r"\s+([.?!,;:。])")
SLOT_TAG_RE = re.compile(r"\[([XY])\.[^\]]+\]")
FEATURE_RE = re.compile(r"\[([^\[\]]*;[XY]-[A-Za-z]+=[^\[\]]*)\]")
# [DEF;X], [PREPDEF-à;X] (a function of the entity) and [Y;be] (a clitic attached to it)
FUNCTION_RE = re.compile(r"\[[^\[\]\s;]+;[XY]\]|\[[XY];[^\[\]]+\]")


def normalise_spacing(text: str) -> str:
    """Join LAMA's space before punctuation and collapse runs of whitespace."""
    return SPACE_PUNCT_RE.sub(r"\1", re.sub(r"\s+", " ", text.strip()))


def _template(record: dict, lang: str, source: str, where: str) -> Template:
    record = dict(record, text=normalise_spacing(record["text"]))
    return make_template(record, lang, source, where)


def import_pararel(folder: str | Path, lang: str = "en") -> list[Template]:
    """ParaRel patterns: one ``P<id>.jsonl`` per relation, one ``{"pattern": ...}`` per line.

    Template ids are ``<relation>.<lang>.pararel<line>``; every pattern is a statement.
    """
    folder = Path(folder)
    files = sorted(folder.glob("P*.jsonl"), key=lambda p: int(p.stem[1:]) if p.stem[1:].isdigit() else 0)
    if not files:
        raise TemplateError(f"{folder}: no ParaRel files named P<id>.jsonl found; fix templates.sets.*.path")
    out: list[Template] = []
    for path in files:
        relation = path.stem
        for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if not line.strip():
                continue
            where = f"{path}: line {lineno}"
            try:
                pattern = json.loads(line)["pattern"]
            except (json.JSONDecodeError, KeyError, TypeError) as exc:
                raise TemplateError(f"{where}: expected a JSON object with a 'pattern' key ({exc})") from exc
            record = {
                "id": f"{relation}.{lang}.pararel{lineno}",
                "relation": relation,
                "style": "statement",
                "text": pattern,
            }
            out.append(_template(record, lang, str(path), where))
    return out


def import_lama(path: str | Path, lang: str = "en") -> list[Template]:
    """LAMA ``relations.jsonl``: one ``{"relation": "P19", "template": "[X] was born in [Y] ."}`` per line."""
    path = Path(path)
    if not path.exists():
        raise TemplateError(f"{path}: LAMA relations file not found; fix templates.sets.*.path")
    out: list[Template] = []
    seen: set[str] = set()
    for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path}: line {lineno}"
        try:
            row = json.loads(line)
            relation, text = row["relation"], row["template"]
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            raise TemplateError(
                f"{where}: expected JSON with 'relation' and 'template' keys ({exc})"
            ) from exc
        tid = f"{relation}.{lang}.lama"
        if tid in seen:  # LAMA has one template per relation; number any repeats
            tid = f"{tid}{lineno}"
        seen.add(tid)
        out.append(
            _template(
                {"id": tid, "relation": relation, "style": "statement", "text": text}, lang, str(path), where
            )
        )
    return out


def resolve_xfactr(text: str, gender: str = "MASC", functions: str = "skip") -> str | None:
    """Resolve X-FACTR morphology markup (rules in the module docstring); None = not importable."""
    text = SLOT_TAG_RE.sub(r"[\1]", text)

    def pick(match: re.Match) -> str:
        options = [opt.split(";", 1) for opt in match.group(1).split("|")]
        for word, feature in options:
            if feature.split("=", 1)[-1].upper() in (gender.upper(), "SG"):
                return word
        return options[0][0]

    text = FEATURE_RE.sub(pick, text)
    if FUNCTION_RE.search(text):
        if functions == "skip":
            return None
        text = FUNCTION_RE.sub("", text)
    return text


def import_xfactr(
    path: str | Path,
    languages: list[str],
    gender: str = "MASC",
    functions: str = "skip",
) -> tuple[list[Template], list[str]]:
    """X-FACTR ``TREx_prompts.csv`` (columns ``pid, relation, <lang>...``) for ``languages``.

    Returns the templates (ids ``<relation>.<lang>.xfactr``) and one line per skipped cell
    ("file: line N, column L: reason") whose markup could not be resolved (:func:`resolve_xfactr`).
    """
    path = Path(path)
    if functions not in ("skip", "drop"):
        raise TemplateError(f"{path}: functions must be 'skip' or 'drop', not {functions!r}")
    if not path.exists():
        raise TemplateError(f"{path}: X-FACTR prompts file not found; fix templates.sets.*.path")
    with open(path, newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        columns = reader.fieldnames or []
        if "pid" not in columns:
            raise TemplateError(f"{path}: no 'pid' column; is this X-FACTR's TREx_prompts.csv?")
        missing = [lang for lang in languages if lang not in columns]
        if missing:
            raise TemplateError(f"{path}: no column for language(s) {missing}; available: {columns[2:]}")
        out: list[Template] = []
        skipped: list[str] = []
        for lineno, row in enumerate(reader, start=2):
            for lang in languages:
                if not LANG_RE.match(lang):
                    raise TemplateError(f"{path}: {lang!r} is not a language code")
                cell = (row.get(lang) or "").strip()
                if not cell:
                    continue
                where = f"{path}: line {lineno}, column {lang}"
                text = resolve_xfactr(cell, gender, functions)
                if text is None:
                    skipped.append(f"{where}: entity-dependent function word in {cell!r}")
                    continue
                record = {
                    "id": f"{row['pid']}.{lang}.xfactr",
                    "relation": row["pid"],
                    "style": "statement",
                    "text": text,
                }
                try:
                    out.append(_template(record, lang, str(path), where))
                except TemplateError as exc:
                    skipped.append(str(exc))
    return out, skipped
