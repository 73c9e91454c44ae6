"""The default-label rule as one DuckDB query: which labels and aliases an entity has in a language.

Wikidata's default language ``mul`` ("Help:Default values for labels and aliases") applies to
every language without its own label: for a language L, an entity's label is L's own, else
``mul``'s, and its aliases are L's together with ``mul``'s (descriptions have no default). Shared by
extraction's label tools (:mod:`factprobe.wikidata.labels`) and the suites' scans
(:func:`factprobe.scan.write_entity_forms`), so every reader applies the same rule.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

#: Wikidata's default language for labels and aliases (also ``parse.DEFAULT_LANGUAGE``).
DEFAULT_LANGUAGE = "mul"


def _literal(text: str | Path) -> str:
    """``text`` as a SQL string literal."""
    return "'" + str(text).replace("'", "''") + "'"


#: The ``entity_forms`` columns of :func:`forms_query`.
FORM_COLUMNS = (
    "'Q' || id AS entity, lang, text AS form, CASE WHEN is_alias THEN 'alias' ELSE 'label' END AS source"
)


def forms_query(
    label_files: Sequence[str | Path],
    languages: Sequence[str],
    newest: bool = True,
    columns: str = FORM_COLUMNS,
) -> str:
    """DuckDB query of the forms of every entity in ``languages`` with the ``mul`` fallback.

    ``label_files`` are ``results/wikidata/{dump}/labels.parquet`` (the dump is the folder name).
    ``columns`` (SQL over ``id``, ``lang``, ``text``, ``is_alias``), by default ``entity`` ("Q42"),
    ``lang``, ``form``, ``source`` ("label"/"alias"); one row per distinct (entity, lang, form), a label before the same text as an
    alias. Within a dump, L's label else ``mul``'s label, and L's aliases then ``mul``'s.
    ``newest``: per (entity, lang) only the newest dump that has a form, so forms of two dates
    never mix; otherwise every dump's. Ordered by entity (as text), lang, labels before aliases,
    own forms before ``mul``'s, then file order.
    """
    union = " UNION ALL ".join(
        f"SELECT id, lang, text, is_alias, {_literal(Path(p).parent.name)} AS dump, {i} AS f, "
        f"file_row_number AS rn FROM read_parquet({_literal(p)}, file_row_number = true)"
        for i, p in enumerate(label_files)
    )
    langs = [lang for lang in dict.fromkeys(languages)]
    targets = (
        "SELECT * FROM (VALUES " + ", ".join(f"({_literal(lang)})" for lang in langs) + ") AS t(lang)"
        if langs
        else "SELECT NULL::VARCHAR AS lang WHERE false"
    )
    keep = "QUALIFY dump = max(dump) OVER (PARTITION BY id, lang)" if newest else ""
    mul = _literal(DEFAULT_LANGUAGE)
    return f"""
        WITH l AS ({union}),
        targets AS ({targets}),
        own AS (SELECT id, lang, text, is_alias, dump, f, rn, 0 AS via FROM l
                WHERE lang IN (SELECT lang FROM targets)),
        labelled AS (SELECT DISTINCT id, dump, lang FROM own WHERE NOT is_alias),
        defaults AS (
            SELECT m.id, t.lang, m.text, m.is_alias, m.dump, m.f, m.rn, 1 AS via
            FROM l AS m CROSS JOIN targets AS t
            WHERE m.lang = {mul} AND t.lang <> {mul}
              AND (m.is_alias OR NOT EXISTS (
                  SELECT 1 FROM labelled AS o WHERE o.id = m.id AND o.dump = m.dump AND o.lang = t.lang))),
        forms AS (SELECT * FROM (SELECT * FROM own UNION ALL SELECT * FROM defaults) {keep}),
        firsts AS (SELECT * FROM forms
                   QUALIFY row_number() OVER (PARTITION BY id, lang, text ORDER BY is_alias, via, f, rn) = 1)
        SELECT {columns} FROM firsts ORDER BY 'Q' || id, lang, is_alias, via, f, rn
        """
