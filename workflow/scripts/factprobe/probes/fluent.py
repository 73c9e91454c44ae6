"""The released Fluent-mLAMA data as a suite: the paper's own prompts, facts and object forms.

Fluent-mLAMA (fluent-mlama-disfluency, ZurichNLP/Fluent-mLAMA ``fixed_data/fixed_data.zip``):
one TSV per language and relation, ``<lang>_<PID>_{20prompt|nogpt}.tsv``, one fact a row with
``sub_uri, sub_label, obj_uri, obj_label``, the prompts of the three verbalizations of §3.2
(``template_prompt`` = MLAMA template filled and cut before [Y]; ``gt_prompt`` = Google Translate
sentence; ``chatgpt_prompt``, only in ``20prompt`` files = GPT-4o-mini with forced labels), the
object as inflected in each sentence (``gt_infl_object``, ``chatgpt_infl_object``) and the
object's Wikidata ``aliases`` (``|||``-separated). A sentence the authors could not split has
``ERROR`` in its prompt and object columns (§3.2 "we filter such facts"). As the authors'
loader (``processor.py``) does, a row whose GT inflected object is ``ERROR`` or whose GT prompt is
empty is dropped in *every* verbalization (its template prompt too), so the three verbalizations
are compared on one set of facts; any other ``ERROR`` (a ChatGPT sentence) drops that
verbalization's prompt only.

Tables (docs/contracts.md layouts):

* ``facts``: one row per (subject, relation, object) over all languages (``dump`` =
  ``fluent-mlama``, ``popularity`` = 0, one stratum), with ``short_gt``: the languages in which
  the fact's GT prompt is too short by the authors' ``exclude_short`` rule (evaluated here on the
  raw strings, :func:`short_gt_prompt`); the paper's aggregation leaves
  those (fact, language) pairs out (``metrics.ranking_average: relation``); and ``own_forms``:
  per language the object strings of the fact's own release row (:func:`row_correct_forms`),
  the correct set the metrics stage ranks for that row;
* ``prompts``: one row per fact × language × verbalization, ``verbalization`` = ``template`` /
  ``gt`` / ``chatgpt``, ``template_id`` = ``<PID>.<lang>.fluent-<verbalization>``, the text
  right-stripped (the release keeps the space before the object);
* ``entity_forms``: per language the subject and object labels (``label``), the object's aliases
  (``alias``) and the inflected objects of the sentences (``inflected``). §3.2: "we consider all
  forms (both non-inflected and possibly inflected) of object NEs as correct ones"; Table 1 counts
  label and inflections, the wide setting (§5.2, App. E) adds the aliases.

The release is research-only (no licence, built on mLAMA, CC-BY-NC): it is read from the path
the config names, at run time, and never copied into the repository.
"""

from __future__ import annotations

import csv
import io
import logging
import math
import re
import zipfile
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from factprobe import contracts
from factprobe.hashing import sha256_order

from .select import assign_split

log = logging.getLogger(__name__)

FILE_RE = re.compile(r"(?:^|/)([a-z]{2,3}(?:-[a-z]+)?)_(P[1-9][0-9]*)_(20prompt|nogpt)\.tsv$")
VERBALIZATIONS = {
    "template": ("template_prompt", None),
    "gt": ("gt_prompt", "gt_infl_object"),
    "chatgpt": ("chatgpt_prompt", "chatgpt_infl_object"),
}
REQUIRED = ("sub_uri", "sub_label", "obj_uri", "obj_label", "template_prompt", "gt_prompt", "gt_infl_object")
ERROR = "ERROR"
QID_RE = re.compile(r"^Q[1-9][0-9]*$")


class FluentError(ValueError):
    """The release cannot be read; the message names the file and what to fix."""


def _length(text: str | None) -> int:
    """Characters of a release field as the authors' pandas reading measures it: an empty field is
    read as NaN and ``str(NaN)`` is ``"nan"`` (3 characters)."""
    if text is None or (isinstance(text, float) and math.isnan(text)) or text == "":
        return 3
    return len(str(text))


def short_gt_prompt(template: str | None, gt: str | None, chatgpt: str | None = None) -> bool:
    """The authors' ``exclude_short`` rule on one release row (raw strings, spaces included).

    With a ChatGPT prompt (the ``20prompt`` files, Table 1): short when ``len(gt) <
    (len(chatgpt) + len(template)) / 6``, i.e. under a third of the other two prompts' mean
    length. Without one (``nogpt`` files, Table 3): short when ``len(gt) < len(template) / 3``.
    """
    if chatgpt is None:
        return _length(gt) < _length(template) / 3
    return _length(gt) < (_length(chatgpt) + _length(template)) / 6


def release_files(path: str | Path) -> Iterator[tuple[str, str, str, str]]:
    """``(lang, relation, file name, text)`` of every TSV of the release: the zip as published
    (macOS ``__MACOSX`` entries skipped) or a folder it was unpacked into."""
    path = Path(path)
    if path.is_file() and zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as archive:
            for name in sorted(archive.namelist()):
                match = FILE_RE.search(name)
                if match and "__MACOSX" not in name:
                    yield match.group(1), match.group(2), f"{path}:{name}", archive.read(name).decode("utf-8")
        return
    if path.is_dir():
        for file in sorted(path.rglob("*.tsv")):
            match = FILE_RE.search(file.name)
            if match and "__MACOSX" not in file.parts:
                yield match.group(1), match.group(2), str(file), file.read_text(encoding="utf-8")
        return
    raise FluentError(
        f"{path}: not the Fluent-mLAMA release (fixed_data.zip or its unpacked folder); "
        "fix suites.<suite>.source.path"
    )


def _rows(name: str, text: str) -> tuple[list[dict], int]:
    """Rows of one TSV and the count of malformed ones. Fields are CSV-quoted where a raw model
    answer spans lines (``chatgpt_translation``); a row without entity ids is malformed."""
    reader = csv.DictReader(io.StringIO(text), delimiter="\t")
    missing = [c for c in REQUIRED if c not in (reader.fieldnames or [])]
    if missing:
        raise FluentError(f"{name}: missing column(s) {missing}; is this a Fluent-mLAMA TSV?")
    rows, bad = [], 0
    for row in reader:
        if QID_RE.match(row.get("sub_uri") or "") and QID_RE.match(row.get("obj_uri") or ""):
            rows.append(row)
        else:
            bad += 1
    return rows, bad


def _usable(value: str | None) -> str:
    value = (value or "").strip()
    return "" if value == ERROR else value


def fact_kept(row: dict) -> bool:
    """Whether the authors' loader keeps a release row: its GT inflected object is not ``ERROR``
    and its GT prompt is not empty (``processor.py``; pandas reads an empty field as NaN)."""
    return (row.get("gt_infl_object") or "") != ERROR and (row.get("gt_prompt") or "") != ""


def is_short_gt(row: dict) -> bool:
    """The authors' ``exclude_short`` rule on a raw row: with a ChatGPT prompt column (20prompt
    files) against template and ChatGPT, else against the template."""
    chatgpt = row.get("chatgpt_prompt") if "chatgpt_prompt" in row else None
    return short_gt_prompt(row.get("template_prompt"), row.get("gt_prompt"), chatgpt)


def _verbalized(row: dict, verb: str, fact_id: str, relation: str, lang: str, forms: list) -> tuple | None:
    """The prompts-table row of ``row``'s verbalization ``verb`` (None where the release has an
    ERROR or empty field); an inflected object form goes to ``forms``."""
    prompt_col, infl_col = VERBALIZATIONS[verb]
    obj, sub_label = row["obj_uri"].strip(), row["sub_label"].strip()
    prompt = _usable(row.get(prompt_col)).rstrip()
    inflected = _usable(row.get(infl_col)) if infl_col else row["obj_label"].strip()
    if not prompt or not inflected:
        return None
    if infl_col:
        forms.append((obj, lang, inflected, "inflected"))
    tid = f"{relation}.{lang}.fluent-{verb}"
    return (f"{fact_id}|{tid}|{lang}|0|none", fact_id, lang, tid, "statement", sub_label, prompt) + (
        "",
        verb,
        "none",
        0,
        relation,
    )


def row_correct_forms(row: dict) -> list[tuple[str, str]]:
    """``(form, source)`` of a release row's correct strings, as the authors' ``_prepare_completions``
    reads the row (module docstring): ``obj_label`` (``label``), the GT and ChatGPT inflected
    objects (``inflected``) and the aliases (``alias``, correct only in the wide setting); empty,
    ``ERROR`` and pandas-NaN fields left out, stripped as the imported forms are."""
    out = [(row["obj_label"].strip(), "label")]
    for col in ("gt_infl_object", "chatgpt_infl_object"):
        value = _usable(row.get(col))
        if value and value not in PANDAS_NA:
            out.append((value, "inflected"))
    aliases = row.get("aliases") or ""
    if aliases not in PANDAS_NA:
        out += [(a.strip(), "alias") for a in aliases.split("|||") if a.strip()]
    # One source per string, the first: a label listed among the aliases stays a label.
    first: dict[str, str] = {}
    for form, source in out:
        if form:
            first.setdefault(form, source)
    return list(first.items())


def _fact_table(
    facts: dict[str, tuple[str, str, str]],
    short: dict[str, list[str]],
    seed: object,
    own: dict[str, set[tuple[str, str, str]]],
) -> pd.DataFrame:
    """The facts table of the imported facts (one object each, no popularity strata)."""
    fact_table = pd.DataFrame(
        [(fid, s, r, o, [o]) for fid, (s, r, o) in sorted(facts.items())],
        columns=["fact_id", "subject", "property", "object", "objects"],
    )
    fact_table["popularity"] = 0
    fact_table["stratum"] = 0
    fact_table["split"] = assign_split(fact_table["fact_id"], seed)
    fact_table["dump"] = "fluent-mlama"
    fact_table["short_gt"] = [sorted(short.get(f, [])) for f in fact_table["fact_id"]]
    fact_table["own_forms"] = [
        [dict(lang=lang, form=form, source=src) for lang, form, src in sorted(own.get(f, ()))]
        for f in fact_table["fact_id"]
    ]
    return fact_table


def _prompt_table(prompts: list[tuple]) -> pd.DataFrame:
    """The prompts table of the rows :func:`_verbalized` built (zero-shot: no demonstrations)."""
    prompt_table = pd.DataFrame(prompts, columns=contracts.columns("prompts")[:-1])
    prompt_table["subject_form_index"] = prompt_table["subject_form_index"].astype("int32")
    prompt_table["demos"] = [[] for _ in range(len(prompt_table))]
    return prompt_table


def _form_table(forms: list[tuple[str, str, str, str]]) -> pd.DataFrame:
    """One row per (entity, lang, form): a label stays a label even where a sentence left it uninflected."""
    form_table = pd.DataFrame(forms, columns=["entity", "lang", "form", "source"])
    order = {"label": 0, "inflected": 1, "alias": 2}
    return (
        form_table.assign(_o=form_table["source"].map(order))
        .sort_values(["entity", "lang", "_o", "form"], kind="stable")
        .drop_duplicates(["entity", "lang", "form"])
        .drop(columns="_o")
        .reset_index(drop=True)
    )


@dataclass
class _Imported:
    """What the release's rows give, gathered over its files: facts by id, the languages whose
    ground truth is short per fact, each fact's own correct strings, prompts, entity forms, and
    the prompts skipped per (language, verbalization or ``all``)."""

    facts: dict[str, tuple[str, str, str]] = field(default_factory=dict)
    short: dict[str, list[str]] = field(default_factory=dict)
    own: dict[str, set[tuple[str, str, str]]] = field(default_factory=dict)
    prompts: list = field(default_factory=list)
    forms: list = field(default_factory=list)
    skipped: Counter = field(default_factory=Counter)

    def add_row(self, row: dict, lang: str, relation: str, verbalizations: Sequence[str]) -> None:
        """One release row: its fact, its forms and its prompt in each of ``verbalizations``."""
        if not fact_kept(row):
            self.skipped[(lang, "all")] += 1
            return
        subject, obj = row["sub_uri"].strip(), row["obj_uri"].strip()
        fact_id = f"{subject}|{relation}|{obj}"
        self.facts.setdefault(fact_id, (subject, relation, obj))
        if is_short_gt(row):
            self.short.setdefault(fact_id, []).append(lang)
        forms = self.forms
        sub_label, obj_label = row["sub_label"].strip(), row["obj_label"].strip()
        forms += [(subject, lang, sub_label, "label"), (obj, lang, obj_label, "label")]
        forms += [
            (obj, lang, a.strip(), "alias") for a in (row.get("aliases") or "").split("|||") if a.strip()
        ]
        # The row's own correct strings; its inflections are scored even where that
        # verbalization's prompt is missing, since the row counts them for every prompt.
        row_forms = row_correct_forms(row)
        self.own.setdefault(fact_id, set()).update((lang, f, src) for f, src in row_forms)
        forms += [(obj, lang, f, src) for f, src in row_forms if src == "inflected"]
        for verb in verbalizations:
            prompt = _verbalized(row, verb, fact_id, relation, lang, forms)
            if prompt is None:
                self.skipped[(lang, verb)] += 1
            else:
                self.prompts.append(prompt)


def import_fluent_mlama(
    path: str | Path,
    languages: Sequence[str],
    relations: Sequence[str] | None = None,
    verbalizations: Sequence[str] = ("template", "gt", "chatgpt"),
    seed: object = 0,
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """``(facts, prompts, entity_forms)`` of the release for ``languages`` and ``relations``
    (``None`` = every relation), with the asked ``verbalizations``; see the module docstring."""
    unknown = [v for v in verbalizations if v not in VERBALIZATIONS]
    if unknown:
        raise FluentError(f"unknown verbalization(s) {unknown}; choose from {list(VERBALIZATIONS)}")
    got = _Imported()
    seen_langs = set()
    for lang, relation, name, text in release_files(path):
        if lang not in languages or (relations is not None and relation not in relations):
            continue
        seen_langs.add(lang)
        rows, bad = _rows(name, text)
        if bad:
            log.warning("%s: %d malformed rows (no sub_uri/obj_uri) skipped", name, bad)
        for row in rows:
            got.add_row(row, lang, relation, verbalizations)
    missing = sorted(set(languages) - seen_langs)
    if missing:
        raise FluentError(f"{path}: no file for language(s) {missing} (relations {relations or 'all'})")
    if got.skipped:
        log.info(
            "Fluent-mLAMA: prompts not imported (ERROR or empty; 'all' = the whole fact): %s",
            dict(got.skipped),
        )
    fact_table = _fact_table(got.facts, got.short, seed, got.own)
    prompt_table = _prompt_table(got.prompts)
    form_table = _form_table(got.forms)
    log.info(
        "Fluent-mLAMA: %d facts, prompts per language x verbalization %s",
        len(fact_table),
        prompt_table.groupby(["lang", "verbalization"]).size().to_dict(),
    )
    return fact_table, prompt_table, form_table


#: Fields pandas' read_csv reads as NaN (its default ``na_values``): the authors' code never sees
#: them as strings, so they are in no pool.
PANDAS_NA = frozenset(
    "#N/A|#N/A N/A|#NA|-1.#IND|-1.#QNAN|-NaN|-nan|1.#IND|1.#QNAN|<NA>|N/A|NA|NULL|NaN|None|n/a|nan|null".split(
        "|"
    )
)


def _object_strings(row: dict) -> set[str]:
    """The object strings of a release row in the authors' pool (``processor.py``
    ``_prepare_adversarial_pool``): label, GT (and ChatGPT, in 20prompt files) inflected object and
    aliases, non-empty; ``ERROR`` (an unsplittable sentence) is no object name and is left out."""
    fields = [row.get("obj_label"), row.get("gt_infl_object"), row.get("chatgpt_infl_object")]
    aliases = row.get("aliases") or ""
    strings = [f for f in fields if f and f not in PANDAS_NA]
    if aliases not in PANDAS_NA:
        strings += aliases.split("|||")
    return {s for s in strings if s and s != ERROR}


def release_string_pools(
    path: str | Path, languages: Sequence[str], relations: Sequence[str] | None = None
) -> tuple[dict[tuple[str, str], list[str]], dict[tuple[str, str], set[str]]]:
    """The paper's distractor pools (§3.3, App. B) from the release: ``(pools, correct)`` with
    ``pools[(relation, lang)]`` the object strings of the rows the authors keep (:func:`fact_kept`)
    of ``<lang>_<relation>`` in SHA-256 order, and ``correct[(fact_id, lang)]`` the fact's own
    strings, which its distractors leave out (distractors/pool.py, strategy ``pool`` with ``source: dataset``)."""
    pools, correct = {}, {}
    for lang, relation, name, text in release_files(path):
        if lang not in languages or (relations is not None and relation not in relations):
            continue
        strings: set[str] = set()
        for row in _rows(name, text)[0]:
            if not fact_kept(row):
                continue
            own = _object_strings(row)
            fact_id = f"{row['sub_uri'].strip()}|{relation}|{row['obj_uri'].strip()}"
            correct[(fact_id, lang)] = correct.get((fact_id, lang), set()) | own
            strings |= own
        pools[(relation, lang)] = sha256_order(strings)
    return pools, correct
