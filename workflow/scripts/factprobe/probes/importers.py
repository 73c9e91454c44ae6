"""Importers for external template sets: LAMA / ParaRel jsonl, mParaRel (per-language ParaRel
folders, the mLAMA templates), X-FACTR ``TREx_prompts.csv`` and MyriadLAMA (belief-myriadlama §4; its released records, jsonl / json / csv / tsv / parquet).

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

import pandas as pd

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
        for lineno, row, where in _jsonl_rows(path):
            record = {
                "id": f"{path.stem}.{lang}.pararel{lineno}",
                "relation": path.stem,
                "style": "statement",
                "text": row["pattern"],
            }
            out.append(_template(record, lang, str(path), where))
    return out


def _jsonl_rows(path: Path, keys: tuple[str, ...] = ("pattern",)):
    """``(line number, row, "<path>: line N")`` of each non-empty line of a JSONL template file
    ((m)ParaRel, LAMA), whose rows must be JSON objects with ``keys``."""
    for lineno, line in enumerate(path.read_text(encoding="utf-8-sig").splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path}: line {lineno}"
        try:
            row = json.loads(line)
            for key in keys:
                row[key]
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            named = f"a '{keys[0]}' key" if len(keys) == 1 else " and ".join(f"'{k}'" for k in keys) + " keys"
            raise TemplateError(f"{where}: expected a JSON object with {named} ({exc})") from exc
        yield lineno, row, where


def import_mpararel(folder: str | Path, languages: list[str], checked_only: bool = False) -> list[Template]:
    """mParaRel / mLAMA patterns (Fierro & Søgaard 2022; the templated verbalization of Fluent-mLAMA
    §3.2): ``<folder>/<lang>/P<id>.jsonl``, one ``{"pattern": ..., "checked-by-human": bool}`` a line.

    Ids are ``<relation>.<lang>.mpararel<line>``; every pattern is a statement. The released
    patterns are lower-cased, so the first letter of a pattern that opens with a letter is
    capitalised (a sentence start); ``[X]``/``[Y]`` openings are capitalised by the probe builder.
    ``checked_only`` keeps the human-reviewed patterns only. A language without a folder raises.
    """
    folder = Path(folder)
    out: list[Template] = []
    for lang in languages:
        if not LANG_RE.match(lang):
            raise TemplateError(f"{folder}: {lang!r} is not a language code")
        files = sorted(
            (folder / lang).glob("P*.jsonl"), key=lambda p: int(p.stem[1:]) if p.stem[1:].isdigit() else 0
        )
        if not files:
            raise TemplateError(
                f"{folder / lang}: no mParaRel files <lang>/P<id>.jsonl for language {lang!r}; "
                "fix templates.sets.*.path (the mpararel_reviewed/patterns folder) or the suite's languages"
            )
        for path in files:
            for lineno, row, where in _jsonl_rows(path):
                if checked_only and not row.get("checked-by-human"):
                    continue
                text = row["pattern"].strip()
                if text[:1].isalpha():
                    text = text[0].upper() + text[1:]
                record = {
                    "id": f"{path.stem}.{lang}.mpararel{lineno}",
                    "relation": path.stem,
                    "style": "statement",
                    "text": text,
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
    for lineno, row, where in _jsonl_rows(path, ("relation", "template")):
        relation, text = row["relation"], row["template"]
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
    with open(path, newline="", encoding="utf-8-sig") as fh:
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


MYRIAD_RELATION_KEYS = ("rel_uri", "predicate_id", "relation")


def _myriad_records(path: Path) -> list[dict]:
    """Rows of a MyriadLAMA file: ``.jsonl`` (one object a line), ``.json`` (a list), else a table."""
    if not path.exists():
        raise TemplateError(f"{path}: MyriadLAMA file not found; fix templates.sets.*.path")
    name = path.name.lower()
    if name.endswith(".jsonl"):
        rows = []
        for lineno, line in enumerate(path.read_text(encoding="utf-8-sig").splitlines(), start=1):
            if line.strip():
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError as exc:
                    raise TemplateError(f"{path}: line {lineno}: not JSON ({exc})") from exc
        return rows
    if name.endswith(".json"):
        data = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(data, list):
            raise TemplateError(f"{path}: expected a JSON list of records")
        return data
    import pandas as pd

    if name.endswith(".parquet"):
        frame = pd.read_parquet(path)
    else:
        frame = pd.read_csv(
            path, sep="\t" if name.endswith(".tsv") else ",", keep_default_na=False, encoding="utf-8-sig"
        )
    return frame.to_dict("records")


def import_myriadlama(path: str | Path, lang: str = "en") -> list[Template]:
    """MyriadLAMA relational templates (belief-myriadlama §4.1: 5 manual + 95 paraphrased per relation).

    Each record carries the relation (``rel_uri``, ``predicate_id`` or ``relation``) and a
    ``template`` with ``[X]`` and ``[Y]``; the released dataset repeats a template on every fact,
    so identical (relation, template) pairs are imported once, in file order. Ids are
    ``<relation>.<lang>.myriad<k>`` (k counts per relation), with ``m`` appended for manual
    templates (``is_manual``). A template whose object slot follows a question mark ("Who
    developed [X]? [Y].") has style ``question``, others ``statement``. Templates with [Y]
    inside the sentence (mask style) are kept: layout ``mask_qa`` asks them (App. E).
    """
    path = Path(path)
    out: list[Template] = []
    seen: set[tuple[str, str]] = set()
    counts: dict[str, int] = {}
    for i, row in enumerate(_myriad_records(path)):
        where = f"{path}: record {i}"
        relation = next((str(row[k]) for k in MYRIAD_RELATION_KEYS if row.get(k)), None)
        text = row.get("template")
        if relation is None or not isinstance(text, str):
            raise TemplateError(
                f"{where}: needs a relation ({'/'.join(MYRIAD_RELATION_KEYS)}) and a 'template'"
            )
        text = normalise_spacing(text)
        if (relation, text) in seen:
            continue
        seen.add((relation, text))
        counts[relation] = counts.get(relation, 0) + 1
        manual = str(row.get("is_manual", "")).lower() in ("true", "1")
        style = "question" if "?" in text.split("[Y]", 1)[0] else "statement"
        record = {
            "id": f"{relation}.{lang}.myriad{counts[relation]}{'m' if manual else ''}",
            "relation": relation,
            "style": style,
            "text": text,
        }
        out.append(_template(record, lang, str(path), where))
    return out


def import_myriadlama_facts(path: str | Path, lang: str = "en"):
    """Facts and entity forms of MyriadLAMA records: ``(facts, forms)`` tables in the ``facts`` /
    ``entity_forms`` layout (docs/contracts.md).

    The release (HF ``iszhaoxin/MyriadLAMA``, the paper's footnote 1) has one record per prompt:
    ``uuid`` (the LAMA-UHN subject-relation pair), ``rel_uri``, ``sub_ent`` (one subject
    expression), ``template``, ``is_manual``, the pair's objects ``obj_uris`` with their names
    ``obj_ents`` (parallel) and the accepted answer names ``obj_aliases`` (the columns its users
    read: a flat list per record; nested per object is read too). The subject's id is
    ``sub_uri`` (LAMA-UHN's field) where the records carry it; no public loader of the dataset
    reads one, so without it the subject is the pair's own (:func:`pair_subjects`: one id per
    ``uuid``, outside Wikidata's range). §4.2 Table 1 counts 34,048 unique triples over 24,643
    subject-relation pairs: every object of a pair is its own fact (s, r, o), ``objects`` the
    pair's objects. Subject expressions other than the first are aliases (§4.1 "extension of
    entities", A.1); every object name is a correct answer. A flat alias list is given to the
    object whose name it is, else to the pair's first object.
    """
    import pandas as pd

    path = Path(path)
    facts, forms = {}, []
    records = _myriad_records(path)
    derived = pair_subjects(records, path)
    for i, row in enumerate(records):
        try:
            subject = str(row.get("sub_uri") or derived[str(row["uuid"])])
            relation = str(row.get("rel_uri") or row["predicate_id"])
            objects = row["obj_uris"]
        except KeyError as exc:
            raise TemplateError(
                f"{path}: record {i}: missing {exc} (sub_uri or uuid, rel_uri, obj_uris)"
            ) from None
        objects = [str(o) for o in (objects if isinstance(objects, (list, tuple)) else json.loads(objects))]
        if not objects:
            raise TemplateError(f"{path}: record {i}: obj_uris is empty")
        for obj in objects:
            fact_id = f"{subject}|{relation}|{obj}"
            facts.setdefault(fact_id, (fact_id, subject, relation, obj, objects))
        sub_ent = row.get("sub_ent")
        if sub_ent:
            forms.append((subject, lang, str(sub_ent), "label"))
        # obj_ents is parallel to obj_uris; obj_aliases is either parallel lists or one flat list
        # of names of the (first) object.
        for obj, name in zip(objects, list(row.get("obj_ents") or []), strict=False):
            forms.append((obj, lang, str(name), "alias"))
        aliases = list(row.get("obj_aliases") or [])
        if aliases and all(isinstance(a, (list, tuple)) for a in aliases):
            pairs = [(obj, name) for obj, names in zip(objects, aliases, strict=False) for name in names]
        else:
            named = {str(n): o for o, n in zip(objects, list(row.get("obj_ents") or []), strict=False)}
            pairs = [(named.get(str(name), objects[0]), name) for name in aliases]
        forms.extend((obj, lang, str(name), "alias") for obj, name in pairs)
    fact_table = pd.DataFrame(
        list(facts.values()), columns=["fact_id", "subject", "property", "object", "objects"]
    )
    form_table = pd.DataFrame(forms, columns=["entity", "lang", "form", "source"]).drop_duplicates()
    # One label per entity: the first expression; later ones are aliases.
    first = ~form_table.duplicated(["entity", "lang"])
    form_table["source"] = ["label" if f else "alias" for f in first]
    return fact_table, form_table.reset_index(drop=True)


#: Subjects of MyriadLAMA pairs without ``sub_uri``: ids from here on, above every Wikidata item
#: (about 1.4e8 in 2026) and small enough for Ω's packed (subject, property) keys (< 2**39).
PAIR_SUBJECT_BASE = 2**38


def pair_subjects(records: list[dict], path: Path) -> dict[str, str]:
    """An item id for the subject of each pair (``uuid``) whose records have no ``sub_uri``.

    MyriadLAMA's public loaders read ``uuid`` (one LAMA-UHN subject-relation pair), ``sub_ent``
    and the objects, not a subject id; the pair is then its subject's only identity: ``Q`` +
    :data:`PAIR_SUBJECT_BASE` + the uuid's rank among the file's sorted uuids, so no real entity
    is named, the dump's statements never claim it (Ω's valid objects of the pair are its listed
    ``obj_uris``) and its forms are its ``sub_ent`` expressions. A record with neither field is
    refused naming both."""
    missing = sorted({str(r["uuid"]) for r in records if not r.get("sub_uri") and r.get("uuid") is not None})
    bare = next((i for i, r in enumerate(records) if not r.get("sub_uri") and r.get("uuid") is None), None)
    if bare is not None:
        raise TemplateError(f"{path}: record {bare}: neither sub_uri nor uuid names the subject")
    return {uuid: f"Q{PAIR_SUBJECT_BASE + k}" for k, uuid in enumerate(missing)}


# --------------------------------------------------------------------------- listed triples
# Distractors paper §4.2: the measures are compared with human scores on a given list of
# judged triples (KaRR's 210 facts). A suite with ``source: {format: triples}`` probes exactly
# the listed triples; the scores, when present, feed rule human_alignment.

TRIPLE_COLUMNS = ["subject", "property", "object", "score", "line"]


class TriplesError(ValueError):
    """A triples or verbalization-pairs file is malformed; the message names the file and line/item."""


def _check_ids(where: str, subject: str, prop: str, obj: str) -> tuple[str, str, str]:
    """The three ids as strings, checked: ``Q..``, ``P..``, ``Q..``."""
    ok = (
        str(subject)[:1] == "Q"
        and str(subject)[1:].isdigit()
        and str(prop)[:1] == "P"
        and str(prop)[1:].isdigit()
        and str(obj)[:1] == "Q"
        and str(obj)[1:].isdigit()
    )
    if not ok:
        raise TriplesError(
            f"{where}: ({subject!r}, {prop!r}, {obj!r}) is not a Wikidata triple (Q<id>, P<id>, Q<id>); fix the file"
        )
    return str(subject), str(prop), str(obj)


def _json_triples(path: Path) -> list[tuple]:
    """``[[[s, r, o], score], ...]`` (the reference's human-score file) or ``[[s, r, o], ...]``."""
    try:
        items = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise TriplesError(f"{path}: not valid JSON ({exc}); expected [[[s, r, o], score], ...]") from None
    if not isinstance(items, list):
        raise TriplesError(f"{path}: the top level must be a list of [[s, r, o], score] items")
    rows = []
    for i, item in enumerate(items):
        where = f"{path}: item {i}"
        scored = isinstance(item, list) and len(item) == 2 and isinstance(item[0], list)
        triple, score = (item[0], item[1]) if scored else (item, None)
        if not (isinstance(triple, list) and len(triple) == 3):
            raise TriplesError(f"{where}: {item!r} is not [[subject, property, object], score]")
        rows.append((*_check_ids(where, *triple), _score(where, score), i))
    return rows


def _score(where: str, value) -> float:
    """A judged score as a float; None / empty = unjudged (NaN)."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return float("nan")
    try:
        return float(value)
    except (TypeError, ValueError):
        raise TriplesError(f"{where}: score {value!r} is not a number") from None


def _tsv_triples(path: Path) -> list[tuple]:
    """``subject  property  object  [score]`` a line; ``#`` lines are comments and a line starting
    ``subject`` above the first triple is the header."""
    rows = []
    for lineno, line in enumerate(path.read_text(encoding="utf-8-sig").splitlines(), start=1):
        cells = [c.strip() for c in line.split("\t")]
        if not line.strip() or line.startswith("#"):
            continue
        if not rows and cells[0].lower() == "subject":  # the header, above the first triple
            continue
        where = f"{path}: line {lineno}"
        if len(cells) not in (3, 4):
            raise TriplesError(
                f"{where}: expected 3 or 4 tab-separated cells (subject property object [score])"
            )
        rows.append(
            (*_check_ids(where, *cells[:3]), _score(where, cells[3] if len(cells) == 4 else None), lineno)
        )
    return rows


def read_triples(path: str | Path) -> pd.DataFrame:
    """The listed triples of a ``source: {format: triples}`` suite: ``subject, property, object,
    score`` (NaN when unjudged), ``line`` (TSV line or JSON item). A ``.json`` file is the
    reference's human-score layout, anything else a TSV. A triple listed twice is an error."""
    path = Path(path)
    if not path.exists():
        raise TriplesError(f"{path}: triples file not found; fix suites.<s>.source.path")
    rows = _json_triples(path) if path.suffix.lower() == ".json" else _tsv_triples(path)
    if not rows:
        raise TriplesError(f"{path}: no triple listed")
    frame = pd.DataFrame(rows, columns=TRIPLE_COLUMNS)
    dup = frame.duplicated(["subject", "property", "object"], keep="first")
    if dup.any():
        first = frame[dup].iloc[0]
        raise TriplesError(
            f"{path}: {'item' if path.suffix.lower() == '.json' else 'line'} {first['line']}: "
            f"({first['subject']}, {first['property']}, {first['object']}) is listed twice"
        )
    return frame


# --------------------------------------------------------------------------- verbalization pairs
# Distractors paper §4.3 / App. B: 77 facts verbalized with a template, each verbalization
# reviewed and hand-corrected (DistFactAssessLM ``scripts/taxonomy/taxonomy_hichem.csv``:
# ``triples_raw``, ``triples`` (labels), ``context``, ``verbalization``, ``errors``, ``correction``).
# Kept as the reference's robustness notebook keeps them: the first 152 rows, an ``errors`` cell
# that is filled, not ``ignore`` and not ``-`` (a perfect verbalization has no correction), context
# ``present``; the correction's closing ” dropped and “ read as «. A cloze sentence is the text
# before the answer's label, so the sentence must end with a label: the object's (kept as is) or
# the subject's, which the reference reverses into the fact (o, r, s) with s as the answer (its
# optimize.ipynb swaps [SUB] and [OBJ] of a subject-final template): 23 + 9 = the paper's 32 pairs.

PAIR_COLUMNS = [
    "row",
    "subject",
    "property",
    "object",
    "subject_label",
    "object_label",
    "flawed",
    "corrected",
    "reversed",
]
PAIRS_MAX_ROWS = 152
_RAW_TRIPLE_RE = re.compile(r"^\('(Q\d+)', '(P\d+)', '(Q\d+)'\)$")
_LABELS_RE = re.compile(r"^\((.*), start=[^,]*, end=[^,]*\)$")


def _pair_labels(cell: str, sentences: list[str]) -> tuple[str, str, bool] | None:
    """(subject label, object label, reversed) from the ``triples`` cell ``(S, R, O, start=..,
    end=..)``: of the splits at ", " whose O or whose S ends every sentence, the one with the
    longest ending label (the reference replaces the longer label first, so it decides which
    slot the sentence ends with), O on a tie; reversed = S ends the sentences. None = neither."""
    match = _LABELS_RE.match(cell.strip())
    if not match:
        return None
    parts = match.group(1).split(", ")
    found = []
    for i in range(2, len(parts)):
        # A label's final period is the sentence's, which the cloze text has dropped.
        subject, obj = ", ".join(parts[: i - 1]), ", ".join(parts[i:])
        if obj.rstrip(".") and all(s.endswith(obj.rstrip(".")) for s in sentences):
            found.append((len(obj), 1, (subject, obj.rstrip("."), False)))
        if subject.rstrip(".") and all(s.endswith(subject.rstrip(".")) for s in sentences):
            found.append((len(subject), 0, (subject.rstrip("."), obj, True)))
    return max(found)[2] if found else None


def _cloze(sentence: str, obj: str) -> str:
    """The text before the object label (sentence ends with it)."""
    return sentence[: len(sentence) - len(obj)].rstrip()


def pair_from_row(row: dict, index: int, where: str) -> tuple[dict | None, str]:
    """One released row -> (pair record or None, why it is kept or left out)."""
    errors = (row.get("errors") or "").strip()
    if index >= PAIRS_MAX_ROWS:
        return None, "beyond_row_152"
    if not errors or errors == "ignore":
        return None, "not_annotated"
    if errors == "-":
        return None, "perfect"
    if (row.get("context") or "").strip() != "present":
        return None, "past_context"
    match = _RAW_TRIPLE_RE.match((row.get("triples_raw") or "").strip())
    if not match:
        raise TriplesError(f"{where}: triples_raw {row.get('triples_raw')!r} is not ('Q..', 'P..', 'Q..')")
    flawed = row["verbalization"].strip().rstrip(".").rstrip()
    corrected = row["correction"].strip().rstrip("”").replace("“", "« ").rstrip(".").rstrip()
    labels = _pair_labels(row.get("triples") or "", [flawed, corrected])
    if labels is None:
        return None, "not_object_final"
    subject_label, object_label, reverse = labels
    subject, prop, obj = match.groups()
    if reverse:  # the reference's (o, r, s): the sentence ends with the answer s
        subject, obj, subject_label, object_label = obj, subject, object_label, subject_label
    record = {"subject": subject, "property": prop, "object": obj}
    record.update(
        row=index,
        subject_label=subject_label,
        object_label=object_label,
        flawed=_cloze(flawed, object_label),
        corrected=_cloze(corrected, object_label),
        reversed=reverse,
    )
    return record, "reversed" if reverse else "kept"


def import_verbalization_pairs(path: str | Path) -> tuple[pd.DataFrame, dict[str, int]]:
    """The §4.3 pairs (:data:`PAIR_COLUMNS`: flawed and corrected cloze text of each kept row)
    and the count of rows per outcome (kept, reversed, perfect, past_context, not_object_final, ...)."""
    path = Path(path)
    if not path.exists():
        raise TriplesError(f"{path}: verbalization-pairs file not found; fix suites.<s>.source.path")
    with open(path, newline="", encoding="utf-8-sig") as fh:
        reader = csv.DictReader(fh)
        needed = ["triples_raw", "triples", "context", "verbalization", "errors", "correction"]
        missing = [c for c in needed if c not in (reader.fieldnames or [])]
        if missing:
            raise TriplesError(f"{path}: line 1: no column(s) {missing}; is this taxonomy_hichem.csv?")
        kept, counts = [], {}
        for index, row in enumerate(reader):
            record, why = pair_from_row(row, index, f"{path}: line {index + 2}")
            counts[why] = counts.get(why, 0) + 1
            if record is not None:
                kept.append(record)
    return pd.DataFrame(kept, columns=PAIR_COLUMNS), counts
