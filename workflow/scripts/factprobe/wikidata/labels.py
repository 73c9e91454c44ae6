"""Label lookup across dumps: forms Λ(e) of an entity (distractors paper §3.2).

The one place that decides which labels and aliases an entity has in a language. Wikidata's
default language ``mul`` ("Help:Default values for labels and aliases") applies to every
language without its own label: for a language L, an entity's label is L's own, else ``mul``'s,
and its aliases are L's together with ``mul``'s (descriptions have no default and are not read).
The rule is applied within each dump, before the newest dump that has a form is chosen, so a
dump whose editors removed an English label equal to the ``mul`` one still labels the entity.

Every reader of labels goes through :func:`factprobe.label_rule.forms_query` (a shared module:
the suites' scans read it too): the suites' ``entity_forms``
(:func:`factprobe.scan.write_entity_forms`), hence templates and forms, subject aliases, Ω's
name checks, distractor names, translation inputs and exports; :func:`resolved_labels` for the
released-benchmark import; :func:`label_table` for tests and small tools. Extraction counts the
coverage per language (:func:`label_counts`, :func:`coverage`) for ``extract_stats.json`` and
the report.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from factprobe import contracts
from factprobe.label_rule import DEFAULT_LANGUAGE, _literal, forms_query


def _all_languages(label_files: Sequence[str | Path]) -> list[str]:
    """Every language with a form in ``label_files`` except ``mul``, sorted."""
    from factprobe import scan

    con = scan.connect()
    union = " UNION ".join(f"SELECT DISTINCT lang FROM read_parquet({_literal(p)})" for p in label_files)
    rows = con.execute(f"SELECT lang FROM ({union}) WHERE lang <> {_literal(DEFAULT_LANGUAGE)}").fetchall()
    return sorted(r[0] for r in rows)


def label_table(label_files: Iterable[str | Path], languages: Iterable[str] | None = None) -> pd.DataFrame:
    """Labels and aliases of every entity, taken from the newest dump that labels it.

    ``label_files`` are ``results/wikidata/{dump}/labels.parquet`` paths in any order; the dump
    date is read from the parent folder name. Returns columns ``entity`` ("Q42"), ``lang``,
    ``form``, ``source`` ("label"/"alias"), one row per distinct form, labels before aliases:
    the ``entity_forms`` table (:func:`forms_query`, with the ``mul`` fallback).
    ``languages=None``: every language of the files but ``mul``.
    """
    import tempfile

    from factprobe import scan

    files = [str(p) for p in label_files]
    if not files:
        return contracts.empty("entity_forms")
    langs = _all_languages(files) if languages is None else list(languages)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "entity_forms.parquet"
        scan.write_entity_forms(files, langs, out)
        return contracts.read("entity_forms", out)


def resolved_labels(label_files: Iterable[str | Path], languages: Sequence[str]) -> pd.DataFrame:
    """Rows of the ``labels`` contract (``id``, ``lang``, ``text``, ``is_alias``) of every dump in
    ``label_files`` for ``languages``, with the ``mul`` fallback applied per dump (not only the
    newest dump's forms): what a reader of raw label tables gets instead of reading them."""
    from factprobe import scan

    files = [str(p) for p in label_files]
    if not files:
        return contracts.empty("labels")
    con = scan.connect()
    for f in files:
        scan.check_columns(con, "labels", f, ["id", "lang", "text", "is_alias"])
    frame = con.sql(forms_query(files, languages, newest=False, columns="id, lang, text, is_alias")).to_df()
    return frame.astype({"id": "int64", "is_alias": "bool"})


# --- coverage counts at extraction -------------------------------------------------------------


@dataclass
class LabelCounts:
    """Label counts of extracted items: summable over chunks, turned into :func:`coverage`."""

    #: items with a label of their own, per language (``mul`` included)
    own: dict[str, int] = field(default_factory=dict)
    #: items with both a label of their own and a ``mul`` label, per language
    both: dict[str, int] = field(default_factory=dict)

    def add(self, other: LabelCounts) -> None:
        """Add ``other``'s counts to these."""
        for mine, theirs in ((self.own, other.own), (self.both, other.both)):
            for lang, n in theirs.items():
                mine[lang] = mine.get(lang, 0) + n


def _lang_counts(langs: pa.ChunkedArray | pa.Array) -> dict[str, int]:
    counts = pc.value_counts(langs)
    return {
        str(v): int(n)
        for v, n in zip(counts.field("values").to_pylist(), counts.field("counts").to_pylist(), strict=True)
    }


def label_counts(labels: pa.Table) -> LabelCounts:
    """:class:`LabelCounts` of one chunk's ``labels`` table (an entity's rows are all in its chunk,
    and an item has at most one label per language)."""
    if labels.num_rows == 0:
        return LabelCounts()
    own = labels.filter(pc.invert(labels["is_alias"]))
    mul_ids = own.filter(pc.equal(own["lang"], DEFAULT_LANGUAGE))["id"].combine_chunks()
    both = own.filter(pc.is_in(own["id"], value_set=mul_ids)) if len(mul_ids) else own.slice(0, 0)
    return LabelCounts(_lang_counts(own["lang"]), _lang_counts(both["lang"]))


def coverage(counts: LabelCounts, items: int, languages: Iterable[str] | None) -> dict[str, dict[str, int]]:
    """Per language (the configured ones, or every one seen but ``mul``): items with a label of
    their own (``own``), with a label only through ``mul`` (``default``) and with none (``none``)."""
    if languages is None:
        langs = sorted(lang for lang in counts.own if lang != DEFAULT_LANGUAGE)
    else:
        langs = [lang for lang in dict.fromkeys(languages) if lang != DEFAULT_LANGUAGE]
    with_default = counts.own.get(DEFAULT_LANGUAGE, 0)
    out = {}
    for lang in langs:
        own = counts.own.get(lang, 0)
        default = with_default - counts.both.get(lang, 0)
        out[lang] = {"own": own, "default": default, "none": items - own - default}
    return out


def coverage_line(table: Mapping[str, Mapping[str, int]]) -> str:
    """``en 5 own + 2 mul, 1 none; de ...``: the per-language coverage in one phrase."""
    return "; ".join(
        f"{lang} {c['own']} own + {c['default']} mul, {c['none']} none" for lang, c in table.items()
    )
