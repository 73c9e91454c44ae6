"""Turn Wikidata entity JSON into rows of the extraction tables (docs/contracts.md).

Two decoders produce identical rows:

* :class:`factprobe.wikidata.parse_typed.LineDecoder` — the fast path. A typed ``msgspec`` decoder declares only the fields the
  tables need (labels and aliases only in the configured languages, only the P580/P582/P585
  qualifiers, no descriptions); everything else is skipped in C without building Python
  objects. This is what makes ~35k entities/s in one process possible (research/performance.md
  §A.3: typed msgspec ~2.5x ``json.loads``).
* :func:`entity_rows` — the generic path over a plain decoded ``dict``. Used for properties
  (rare, and their label falls back to any language), for lines the typed schema rejects, and
  for API-response wrappers. Tests check both paths agree on every real demo entity.

Reading the dump file (compression, layout, shards, byte offsets for errors) lives in
:mod:`factprobe.wikidata.reader`.

Conventions (the contract every later stage reads):

* ids are integers without their letter (Q42 -> 42, P19 -> 19); ``kind`` tells items from
  properties where both can occur.
* dates are signed ``int32`` ``YYYYMMDD`` with ``00`` for an unknown month or day (Wikidata
  precision below day), so that BCE years and pre-1677 dates survive and comparisons with a
  dump date (``int(dump)``) are plain integer comparisons.
* ``rank``: 0 deprecated, 1 normal, 2 preferred.

Format quirks handled (all seen in real files under tests/data and resources/demo): the 2014
``{"entity-type": "item", "numeric-id": 239}`` datavalue without ``id``; ``[]`` written where an
empty object is expected (labels, aliases, claims, qualifiers, sitelinks); snaks without
``datatype`` (2014); aliases keyed by index instead of a list.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from factprobe.contracts import EXTRACT_TABLES, SCHEMAS, id_int_or_none

# Wikidata's default language: always extracted, whatever ``extract.languages`` says
# (:mod:`factprobe.wikidata.labels` applies it as every language's fallback).
from factprobe.wikidata.labels import DEFAULT_LANGUAGE

RANKS = {"deprecated": 0, "normal": 1, "preferred": 2}
QUALIFIER_DATES = {"P580": "start", "P582": "end", "P585": "point_in_time"}
#: P2302 values that make a property single-valued (Q19474404 single-value constraint,
#: Q52060874 single-best-value constraint).
SINGLE_VALUE_CONSTRAINTS = {19474404, 52060874}
TYPE_PROPERTIES = {"P31": "P31", "P279": "P279"}
#: Creation-like dates (inception, birth, start, discovery, official opening, first appearance,
#: point in time, publication): WikiFactDiff's test for a "physically new" entity
#: (research/anchors.md §3.1 step 2). ``entities.created`` is their earliest value.
CREATION_PROPERTIES = frozenset({"P571", "P569", "P580", "P575", "P1619", "P6949", "P585", "P577"})
_ITEM_TABLES = ("entities", "labels", "claims", "types")
#: Entity kinds written to the tables; every other ``type`` (lexeme, mediainfo, form, sense)
#: is skipped and counted.
KINDS = ("item", "property")
#: Skip-count key of a wikibase-item statement whose value snak holds no readable item id.
UNREADABLE_ITEM = "wikibase-item (unreadable value)"

#: Row-wise buffers (generic path): table -> list of tuples in :data:`factprobe.contracts.SCHEMAS` column order.
Rows = dict[str, list[tuple]]
#: Item statements not written to ``claims``: ``datatype`` -> {datatype: n} (every statement of
#: a datatype other than wikibase-item, whatever its snak type) and ``snaktype`` -> {snak type: n}
#: (wikibase-item statements without a value: somevalue, novalue, an unknown snak type, or
#: ``missing`` for no main snak). Statements of the creation properties are read for
#: ``entities.created`` and not counted.
Skips = dict[str, dict[str, int]]
#: Column-wise buffers (fast path): table -> one list per column. Appending to column lists
#: creates no per-row tuple, which spares the garbage collector and a transpose before Arrow.
Columns = dict[str, tuple[list, ...]]


class BadEntity(ValueError):
    """A line that is JSON but not a usable entity (no id, unparseable id, wrong shapes)."""


def new_rows() -> Rows:
    """Empty row buffers, one list of tuples per table."""
    return {name: [] for name in EXTRACT_TABLES}


def new_columns() -> Columns:
    """Empty column buffers, one list per column of every table."""
    return {name: tuple([] for _ in SCHEMAS[name]) for name in EXTRACT_TABLES}


def new_skips() -> Skips:
    """Empty skip counts (:data:`Skips`)."""
    return {"datatype": {}, "snaktype": {}}


def add_skips(target: Skips, new: Skips) -> None:
    """Add the counts of ``new`` to ``target``."""
    for axis, counts in new.items():
        into = target.setdefault(axis, {})
        for key, n in counts.items():
            into[key] = into.get(key, 0) + n


def _count(counts: dict[str, int], key: str, n: int = 1) -> None:
    counts[key] = counts.get(key, 0) + n


def extend_columns(columns: Columns, rows: Rows) -> None:
    """Append row-wise ``rows`` to column-wise ``columns``."""
    for name, new in rows.items():
        if new:
            for col, values in zip(columns[name], zip(*new, strict=True), strict=True):
                col.extend(values)


def _as_dict(value: Any) -> dict:
    """Old dumps write ``[]`` where a (then empty) object is expected."""
    return value if isinstance(value, dict) else {}


def _numeric(ident: Any) -> int:
    """``"Q42"`` -> 42; raises :class:`BadEntity` for anything else."""
    num = id_int_or_none(ident)
    if num is None:
        raise BadEntity(f"entity id {ident!r} is not Q<number> or P<number>")
    return num


def entity_numeric_id(value: Any) -> int | None:
    """Numeric id of a ``wikibase-entityid`` datavalue, also in the old ``numeric-id``-only form."""
    if not isinstance(value, dict):
        return None
    num = value.get("numeric-id")
    if isinstance(num, int):
        return num
    return id_int_or_none(value.get("id"))


def parse_time_text(text: Any) -> int | None:
    """Wikidata time string ``"+1830-07-21T00:00:00Z"`` -> ``18300721`` (``-`` sign kept).

    Month and day below the value's precision are written ``00`` by Wikidata and kept so.
    Years beyond the int32 ``YYYYMMDD`` range (geological times) give ``None``.
    """
    if not isinstance(text, str) or len(text) < 11:
        return None
    sign = -1 if text[0] == "-" else 1
    body = text[1:] if text[0] in "+-" else text
    try:
        year_s, month_s, day_s = body.split("T", 1)[0].rsplit("-", 2)
        year, month, day = int(year_s), int(month_s), int(day_s)
    except ValueError:
        return None
    if year > 214747 or not (0 <= month <= 12 and 0 <= day <= 31):
        return None
    return sign * (year * 10000 + month * 100 + day)


def parse_time(value: Any) -> int | None:
    """Wikidata time value ``{"time": "+1830-07-21T00:00:00Z", ...}`` -> ``18300721``."""
    if not isinstance(value, dict):
        return None
    return parse_time_text(value.get("time"))


def _snak_value(snak: Any) -> Any:
    if not isinstance(snak, dict) or snak.get("snaktype", "value") != "value":
        return None
    return _as_dict(snak.get("datavalue")).get("value")


def statement_dates(statement: dict) -> dict[str, int | None]:
    """First valid P580 / P582 / P585 qualifier as ``start`` / ``end`` / ``point_in_time``."""
    out: dict[str, int | None] = {"start": None, "end": None, "point_in_time": None}
    qualifiers = _as_dict(statement.get("qualifiers"))
    for pid, column in QUALIFIER_DATES.items():
        for snak in qualifiers.get(pid) or ():
            parsed = parse_time(_snak_value(snak))
            if parsed is not None:
                out[column] = parsed
                break
    return out


def _value_type(snak: dict) -> str | None:
    """Old dumps lack ``datatype`` on snaks; infer wikibase-item from the datavalue."""
    dv = _as_dict(snak.get("datavalue"))
    if dv.get("type") == "wikibase-entityid":
        etype = _as_dict(dv.get("value")).get("entity-type", "item")
        return "wikibase-" + str(etype)
    return dv.get("type")


def _languages(languages: Iterable[str] | None) -> list[str] | None:
    """The configured languages in order, plus :data:`DEFAULT_LANGUAGE` (``None``: all)."""
    if languages is None:
        return None
    return list(dict.fromkeys([*languages, DEFAULT_LANGUAGE]))


def _generic_skip(snak: Any, skips: Skips) -> bool:
    """Count an item statement's main snak (generic path) when it gives no claims row; returns
    whether it was skipped. Same keys, in the same cases, as the fast path."""
    if not isinstance(snak, dict):
        _count(skips["snaktype"], "missing")
        return True
    datatype = snak.get("datatype")
    if datatype is not None and datatype != "wikibase-item":
        _count(skips["datatype"], str(datatype))
        return True
    snaktype = snak.get("snaktype", "value")
    if snaktype != "value":
        _count(skips["snaktype"], str(snaktype))
        return True
    datatype = datatype or _value_type(snak)
    if datatype != "wikibase-item":
        _count(skips["datatype"], str(datatype or "unknown"))
        return True
    if entity_numeric_id(_snak_value(snak)) is None:
        _count(skips["datatype"], UNREADABLE_ITEM)
        return True
    return False


def entity_kind(entity: dict) -> str:
    """``item``/``property`` or the skip reason (``missing``, ``lexeme``, ``mediainfo`` ...)."""
    if "missing" in entity:
        return "missing"
    return str(entity.get("type"))


def _item_label_rows(num: int, entity: dict, langs: list[str] | None, out: list) -> None:
    """Append an item's labels, then its aliases, in ``langs`` order (``None``: every language)."""
    labels = _as_dict(entity.get("labels"))
    aliases = _as_dict(entity.get("aliases"))
    for lang in labels if langs is None else langs:
        lab = labels.get(lang)
        if isinstance(lab, dict) and lab.get("value"):
            out.append((num, lang, lab["value"], False))
    for lang in aliases if langs is None else langs:
        group = aliases.get(lang)
        # Aliases of one language are a list, but very old dumps keyed them by index.
        items = group.values() if isinstance(group, dict) else group or ()
        for al in items:
            if isinstance(al, dict) and al.get("value"):
                out.append((num, lang, al["value"], True))


def _property_label(labels: dict) -> str | None:
    """A property's label: English, else :data:`DEFAULT_LANGUAGE`, else its first language."""
    label = _as_dict(labels.get("en")).get("value")
    if label is None:
        label = _as_dict(labels.get(DEFAULT_LANGUAGE)).get("value")
    if label is None and labels:
        label = _as_dict(next(iter(labels.values()))).get("value")
    return label


def _item_statement(num: int, pid: str, prop: int, st: dict, rows: Rows, mine: Skips) -> int | None:
    """Append the claims (and types) row of one item statement, or count why it has none;
    returns the creation date a creation-property statement gives (else ``None``)."""
    snak = _as_dict(st.get("mainsnak"))
    value = _snak_value(snak)
    if pid in CREATION_PROPERTIES:
        return parse_time(value) if st.get("rank") != "deprecated" else None
    if _generic_skip(st.get("mainsnak"), mine):
        return None
    obj = entity_numeric_id(value)
    rank = RANKS.get(st.get("rank", "normal"), 1)
    dates = statement_dates(st)
    rows["claims"].append((num, prop, obj, rank, dates["start"], dates["end"], dates["point_in_time"]))
    if pid in TYPE_PROPERTIES and rank > 0:
        rows["types"].append((num, obj, pid))
    return None


def _is_single_value(pid: str, st: dict) -> bool:
    """Whether one property statement is a non-deprecated single-value constraint (P2302).

    Property statements only matter for their constraints; their ids would collide with item
    ids in the claims table."""
    if pid != "P2302" or st.get("rank") == "deprecated":
        return False
    return entity_numeric_id(_snak_value(_as_dict(st.get("mainsnak")))) in SINGLE_VALUE_CONSTRAINTS


def entity_rows(
    entity: dict, languages: Iterable[str] | None, rows: Rows | None = None, skips: Skips | None = None
) -> Rows:
    """Rows for every table from one decoded entity (an item or a property).

    Appends to ``rows`` (a fresh :func:`new_rows` if omitted) and returns it; tuples follow
    :data:`factprobe.contracts.SCHEMAS`. ``languages=None`` keeps every language; otherwise labels and aliases come
    in the configured language order, then ``mul`` (the same order as :class:`LineDecoder`).
    Item statements without a claims row are counted in ``skips`` (:data:`Skips`).
    """
    target = rows
    rows = new_rows()  # filled completely before merging, so a bad entity adds nothing
    mine = new_skips()
    kind = entity_kind(entity)
    if kind not in KINDS:
        raise BadEntity(f"entity of kind {kind!r} has no rows")
    num = _numeric(entity.get("id"))
    if kind == "item":
        _item_label_rows(num, entity, _languages(languages), rows["labels"])

    created = None
    single_value = False
    for pid, statements in _as_dict(entity.get("claims")).items():
        if not isinstance(statements, list):
            continue
        prop = _numeric(pid)
        for st in statements:
            if kind == "property":
                single_value |= isinstance(st, dict) and _is_single_value(pid, st)
            elif not isinstance(st, dict):
                _count(mine["snaktype"], "missing")
            else:
                date = _item_statement(num, pid, prop, st, rows, mine)
                if date is not None and (created is None or date < created):
                    created = date

    sitelinks = len(_as_dict(entity.get("sitelinks")))
    rows["entities"].append((num, kind, sitelinks, entity.get("modified"), created))
    if kind == "property":
        label = _property_label(_as_dict(entity.get("labels")))
        rows["properties"].append((num, entity.get("datatype"), single_value, label))
    if skips is not None:
        add_skips(skips, mine)
    if target is None:
        return rows
    for name, new in rows.items():
        target[name].extend(new)
    return target


def _is_wrapper(obj: Any) -> bool:
    """An API response ``{"entities": {...}, "success": 1}`` rather than one entity."""
    return isinstance(obj, dict) and "id" not in obj and isinstance(obj.get("entities"), dict)


def _one(obj: Any, languages: list[str] | None, rows: Rows, skips: Skips | None) -> str:
    if not isinstance(obj, dict):
        raise BadEntity(f"a JSON {type(obj).__name__}, not an entity object")
    if "id" not in obj and "missing" not in obj:
        raise BadEntity("JSON object without an entity id")
    kind = entity_kind(obj)
    if kind not in KINDS:
        return kind
    entity_rows(obj, languages, rows, skips)
    return kind


def rows_from_object(
    obj: Any, languages: Iterable[str] | None, rows: Rows, skips: Skips | None = None
) -> list[str]:
    """Rows of a decoded entity or API response; returns the kind of each entity in it and counts
    the skipped item statements in ``skips``."""
    langs = _languages(languages)
    if _is_wrapper(obj):
        kinds = [_one(ent, langs, rows, skips) for ent in obj["entities"].values()]
        if not kinds:
            raise BadEntity("API response with no entities")
        return kinds
    return [_one(obj, langs, rows, skips)]
