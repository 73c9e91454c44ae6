"""Turn Wikidata entity JSON into rows of the extraction tables (DESIGN.md §2).

Pure functions over one decoded entity. Reading the dump file (compression, array vs
JSON-lines layout, byte offsets for errors) lives in :mod:`factprobe.wikidata.reader`.

Conventions (the contract every later stage reads):

* ids are integers without their letter (Q42 -> 42, P19 -> 19); ``kind`` tells items from
  properties where both can occur.
* dates are signed ``int32`` ``YYYYMMDD`` with ``00`` for an unknown month or day (Wikidata
  precision below day), so that BCE years and pre-1677 dates survive and comparisons with a
  dump date (``int(dump)``) are plain integer comparisons.
* ``rank``: 0 deprecated, 1 normal, 2 preferred.
"""

from __future__ import annotations

from typing import Any, Iterable

RANKS = {"deprecated": 0, "normal": 1, "preferred": 2}
QUALIFIER_DATES = {"P580": "start", "P582": "end", "P585": "point_in_time"}
#: P2302 values that make a property single-valued (single-value, single-best-value).
SINGLE_VALUE_CONSTRAINTS = {19474404, 52060874}
TYPE_PROPERTIES = {"P31": "P31", "P279": "P279"}


def _as_dict(value: Any) -> dict:
    """Old dumps write ``[]`` where a (then empty) object is expected."""
    return value if isinstance(value, dict) else {}


def entity_numeric_id(value: dict) -> int | None:
    """Numeric id of a ``wikibase-entityid`` datavalue, also in the old ``numeric-id``-only form."""
    if not isinstance(value, dict):
        return None
    if "numeric-id" in value:
        return int(value["numeric-id"])
    ident = value.get("id")
    if isinstance(ident, str) and len(ident) > 1 and ident[0] in "QP":
        return int(ident[1:])
    return None


def parse_time(value: Any) -> int | None:
    """Wikidata time value ``{"time": "+1830-07-21T00:00:00Z", ...}`` -> ``18300721``.

    Month and day below the value's precision are written ``00`` by Wikidata and kept so.
    """
    if not isinstance(value, dict):
        return None
    text = value.get("time")
    if not isinstance(text, str) or len(text) < 11:
        return None
    sign = -1 if text[0] == "-" else 1
    body = text[1:] if text[0] in "+-" else text
    try:
        date_part = body.split("T", 1)[0]
        year_s, month_s, day_s = date_part.rsplit("-", 2)
        year, month, day = int(year_s), int(month_s), int(day_s)
    except ValueError:
        return None
    if year > 214747:  # int32 YYYYMMDD limit; far-future/past years are not validity dates
        return None
    return sign * (year * 10000 + month * 100 + day)


def _snak_value(snak: dict) -> Any:
    if snak.get("snaktype") != "value":
        return None
    return _as_dict(snak.get("datavalue")).get("value")


def statement_dates(statement: dict) -> dict[str, int | None]:
    """First P580 / P582 / P585 qualifier of a statement as ``start`` / ``end`` / ``point_in_time``."""
    out: dict[str, int | None] = {"start": None, "end": None, "point_in_time": None}
    qualifiers = _as_dict(statement.get("qualifiers"))
    for pid, column in QUALIFIER_DATES.items():
        for snak in qualifiers.get(pid, ()) or ():
            parsed = parse_time(_snak_value(snak))
            if parsed is not None:
                out[column] = parsed
                break
    return out


def entity_rows(entity: dict, languages: Iterable[str] | None) -> dict[str, list[tuple]]:
    """Rows for every table from one decoded entity.

    Returns a dict ``table -> list of tuples`` in the column order of :data:`COLUMNS`.
    ``languages=None`` keeps every language.
    """
    ident = entity.get("id", "")
    etype = entity.get("type")
    kind = "property" if etype == "property" else "item"
    num = int(ident[1:])
    langs = None if languages is None else set(languages)
    rows: dict[str, list[tuple]] = {name: [] for name in COLUMNS}

    sitelinks = len(_as_dict(entity.get("sitelinks")))
    rows["entities"].append((num, kind, sitelinks, entity.get("modified")))

    labels = _as_dict(entity.get("labels"))
    aliases = _as_dict(entity.get("aliases"))
    if kind == "item":
        for lang, lab in labels.items():
            if (langs is None or lang in langs) and isinstance(lab, dict) and lab.get("value"):
                rows["labels"].append((num, lang, lab["value"], False))
        for lang, group in aliases.items():
            if langs is not None and lang not in langs:
                continue
            # Aliases of one language are a list, but very old dumps keyed them by index.
            items = group.values() if isinstance(group, dict) else group or ()
            for al in items:
                if isinstance(al, dict) and al.get("value"):
                    rows["labels"].append((num, lang, al["value"], True))

    claims = _as_dict(entity.get("claims"))
    single_value = False
    for pid, statements in claims.items():
        prop = int(pid[1:])
        for st in statements or ():
            snak = _as_dict(st.get("mainsnak"))
            value = _snak_value(snak)
            if kind == "property":
                # Property statements only matter for their constraints; their ids would
                # collide with item ids in the claims table.
                if pid == "P2302" and st.get("rank") != "deprecated":
                    single_value |= entity_numeric_id(value) in SINGLE_VALUE_CONSTRAINTS
                continue
            if snak.get("datatype", _value_type(snak)) != "wikibase-item":
                continue
            obj = entity_numeric_id(value)
            if obj is None:
                continue
            rank = RANKS.get(st.get("rank", "normal"), 1)
            dates = statement_dates(st)
            rows["claims"].append(
                (num, prop, obj, rank, dates["start"], dates["end"], dates["point_in_time"])
            )
            if pid in TYPE_PROPERTIES and rank > 0:
                rows["types"].append((num, obj, pid))

    if kind == "property":
        label = _as_dict(labels.get("en")).get("value")
        if label is None and labels:
            label = _as_dict(next(iter(labels.values()))).get("value")
        rows["properties"].append((num, entity.get("datatype"), single_value, label))
    return rows


def _value_type(snak: dict) -> str | None:
    """Old dumps lack ``datatype`` on snaks; infer wikibase-item from the datavalue."""
    dv = _as_dict(snak.get("datavalue"))
    if dv.get("type") == "wikibase-entityid":
        value = _as_dict(dv.get("value"))
        if value.get("entity-type", "item") == "item":
            return "wikibase-item"
        return "wikibase-" + str(value.get("entity-type"))
    return dv.get("type")


#: Column names of every table, in the order :func:`entity_rows` writes them.
COLUMNS: dict[str, tuple[str, ...]] = {
    "entities": ("id", "kind", "sitelinks", "modified"),
    "labels": ("id", "lang", "text", "is_alias"),
    "claims": ("subject", "property", "object", "rank", "start", "end", "point_in_time"),
    "types": ("id", "type", "via"),
    "properties": ("id", "datatype", "single_value", "label"),
}
