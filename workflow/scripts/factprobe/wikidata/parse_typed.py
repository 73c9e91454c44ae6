"""The typed fast path of entity parsing: :class:`LineDecoder` decodes one dump line straight
into the extraction tables' columns (:mod:`factprobe.wikidata.parse` has the conventions, the
generic path over a plain ``dict`` and the row buffers both paths fill).

A typed ``msgspec`` decoder declares only the fields the tables need (labels and aliases only in
the configured languages, only the P580/P582/P585 qualifiers, no descriptions); everything else
is skipped in C without building Python objects. This is what makes ~35k entities/s in one
process possible (research/performance.md §A.3: typed msgspec ~2.5x ``json.loads``). Lines the
typed schema rejects, properties and API-response wrappers take the generic path; tests check
both paths agree on every real demo entity.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import msgspec
from msgspec import Struct, field
from msgspec.structs import astuple

from factprobe.contracts import id_int_or_none
from factprobe.wikidata.parse import (
    _ITEM_TABLES,
    CREATION_PROPERTIES,
    KINDS,
    RANKS,
    UNREADABLE_ITEM,
    BadEntity,
    Columns,
    Skips,
    _languages,
    _numeric,
    extend_columns,
    new_rows,
    new_skips,
    parse_time_text,
    rows_from_object,
)

# --- typed fast path -------------------------------------------------------------------------
# gc=False: these structs never form reference cycles, and skipping GC tracking of millions
# of short-lived objects is a measurable share of decode time.


class _Text(Struct, gc=False):
    value: str = ""


class _Skip(Struct, gc=False):
    """Any object whose content is irrelevant (a sitelink): msgspec skips it without allocating."""


class _Value(Struct, gc=False):
    """The fields of an entity-id or time datavalue; other value objects decode to all-None."""

    numeric_id: int | None = field(name="numeric-id", default=None)
    id: str | None = None
    entity_type: str | None = field(name="entity-type", default=None)
    time: str | None = None


class _DataValue(Struct, gc=False):
    type: str = ""
    value: _Value | str | float | list | None = None


class _Snak(Struct, gc=False):
    snaktype: str = "value"
    datatype: str | None = None
    datavalue: _DataValue | None = None


class _Qualifiers(Struct, gc=False):
    P580: list[_Snak] | None = None
    P582: list[_Snak] | None = None
    P585: list[_Snak] | None = None


class _Statement(Struct, gc=False):
    mainsnak: _Snak | None = None
    rank: str = "normal"
    qualifiers: _Qualifiers | list | None = None


_Claims = dict[str, list[_Statement]] | list | None
_Sitelinks = dict[str, _Skip] | list | None


def _typed_date(snaks: list[_Snak] | None) -> int | None:
    for snak in snaks or ():
        if snak.snaktype == "value" and snak.datavalue is not None:
            value = snak.datavalue.value
            if isinstance(value, _Value):
                parsed = parse_time_text(value.time)
                if parsed is not None:
                    return parsed
    return None


class LineDecoder:
    """Decode one entity line (bytes) straight into table rows with a typed msgspec schema.

    :meth:`decode` counts each entity in :attr:`kinds` by kind: ``item``/``property`` (rows
    written) or the skip reason (``lexeme``, ``mediainfo``, ``missing`` ...), and the item
    statements without a claims row in :attr:`skips`. Labels and aliases are read in the
    configured languages and ``mul`` (:data:`DEFAULT_LANGUAGE`). Lines the typed
    schema rejects, properties and API-response wrappers go through the generic
    :func:`entity_rows`; :attr:`generic` counts them. Raises ``msgspec.DecodeError`` for
    invalid JSON and :class:`BadEntity` for JSON that is no entity; a bad line adds no rows.
    """

    def __init__(self, languages: Iterable[str] | None):
        self.languages = _languages(languages)
        #: entities seen per kind: ``item``, ``property`` and the skipped ones.
        self.kinds: dict[str, int] = {}
        #: lines that took the generic path.
        self.generic = 0
        #: item statements without a claims row (:data:`Skips`).
        self.skips: Skips = new_skips()
        text_list = list[_Text] | dict[str, _Text] | None
        if self.languages is None:
            labels_t: Any = dict[str, _Text] | list | None
            aliases_t: Any = dict[str, text_list] | list | None
        else:
            # One struct field per configured language: labels in the ~300 other languages are
            # skipped by the decoder instead of becoming Python strings.
            names = {f"l{i}": lang for i, lang in enumerate(self.languages)}
            labels_s = msgspec.defstruct(
                "Labels", [(n, _Text | None, None) for n in names], rename=names, gc=False
            )
            aliases_s = msgspec.defstruct(
                "Aliases", [(n, text_list, None) for n in names], rename=names, gc=False
            )
            labels_t = labels_s | list | None
            aliases_t = aliases_s | list | None
        entity_s = msgspec.defstruct(
            "Entity",
            [
                ("id", str, ""),
                ("type", str, ""),
                ("missing", Any, msgspec.UNSET),
                ("modified", str | None, None),
                ("labels", labels_t, None),
                ("aliases", aliases_t, None),
                ("claims", _Claims, None),
                ("sitelinks", _Sitelinks, None),
            ],
            gc=False,
        )
        self._typed = msgspec.json.Decoder(entity_s)
        self._plain = msgspec.json.Decoder()
        self._names = None if self.languages is None else [f"l{i}" for i in range(len(self.languages))]

    def decode(self, line: bytes | memoryview, cols: Columns) -> None:
        """Append the rows of the entity (or API response) on one line; count its kind."""
        try:
            ent = self._typed.decode(line)
        except msgspec.ValidationError:
            self._generic(line, cols)
            return
        kinds = self.kinds
        if ent.missing is not msgspec.UNSET:
            kinds["missing"] = kinds.get("missing", 0) + 1
        elif ent.type == "item" and ent.id:
            lengths = [len(cols[name][0]) for name in _ITEM_TABLES]
            try:
                self._item_rows(ent, cols)
            except BadEntity:
                for name, n in zip(_ITEM_TABLES, lengths, strict=True):
                    for col in cols[name]:
                        del col[n:]
                raise
            kinds["item"] = kinds.get("item", 0) + 1
        elif ent.type and ent.type not in KINDS:
            # lexemes, mediainfo, forms, senses: counted, never parsed further.
            kinds[ent.type] = kinds.get(ent.type, 0) + 1
        else:
            # properties, API-response wrappers ({"entities": ...}) and odd shapes.
            self._generic(line, cols)

    def _generic(self, line: bytes | memoryview, cols: Columns) -> None:
        self.generic += 1
        rows = new_rows()
        for kind in rows_from_object(self._plain.decode(line), self.languages, rows, self.skips):
            self.kinds[kind] = self.kinds.get(kind, 0) + 1
        extend_columns(cols, rows)

    def _item_rows(self, ent: Any, cols: Columns) -> None:
        """The entities, labels, claims and types rows of one item (contracts.md, extract_dump)."""
        num = _numeric(ent.id)
        sitelinks = ent.sitelinks
        e_id, e_kind, e_sitelinks, e_modified, e_created = cols["entities"]
        e_id.append(num)
        e_kind.append("item")
        e_sitelinks.append(len(sitelinks) if isinstance(sitelinks, dict) else 0)
        e_modified.append(ent.modified)
        if self._names is None:
            _all_label_rows(num, ent.labels, ent.aliases, cols["labels"])
        else:
            _language_label_rows(num, self.languages, ent.labels, ent.aliases, cols["labels"])
        claims = ent.claims
        e_created.append(_claim_rows(num, claims, cols, self.skips) if isinstance(claims, dict) else None)


def _all_label_rows(num: int, labels: Any, aliases: Any, label_cols: list[list]) -> None:
    """Labels and aliases in every language (no language filter: generic structs)."""
    l_id, l_lang, l_text, l_alias = label_cols
    if isinstance(labels, dict):
        for lang, lab in labels.items():
            if lab.value:
                l_id.append(num)
                l_lang.append(lang)
                l_text.append(lab.value)
                l_alias.append(False)
    if isinstance(aliases, dict):
        for lang, group in aliases.items():
            for al in group.values() if isinstance(group, dict) else group or ():
                if al.value:
                    l_id.append(num)
                    l_lang.append(lang)
                    l_text.append(al.value)
                    l_alias.append(True)


def _language_label_rows(
    num: int, langs: list[str], labels: Any, aliases: Any, label_cols: list[list]
) -> None:
    """Labels and aliases of the configured languages (structs with one field per language)."""
    l_id, l_lang, l_text, l_alias = label_cols
    # astuple: all configured languages in one C call instead of one getattr each.
    if labels is not None and not isinstance(labels, list):
        for lang, lab in zip(langs, astuple(labels), strict=True):
            if lab is not None and lab.value:
                l_id.append(num)
                l_lang.append(lang)
                l_text.append(lab.value)
                l_alias.append(False)
    if aliases is not None and not isinstance(aliases, list):
        for lang, group in zip(langs, astuple(aliases), strict=True):
            if group:
                for al in group.values() if isinstance(group, dict) else group:
                    if al.value:
                        l_id.append(num)
                        l_lang.append(lang)
                        l_text.append(al.value)
                        l_alias.append(True)


def _claim_rows(num: int, claims: dict, cols: Columns, skips: Skips) -> int | None:
    """Claims and types rows of one item's wikibase-item statements; returns its creation date
    (the earliest date of the non-deprecated main snaks of :data:`CREATION_PROPERTIES`). The
    other statements are counted in ``skips``."""
    created = None
    for pid, statements in claims.items():
        if not statements:
            continue
        if pid in CREATION_PROPERTIES:
            date = _earliest_date(statements)
            if date is not None and (created is None or date < created):
                created = date
            continue
        # A property has one datatype, so its first snak decides for all its statements
        # (most statements are strings, external ids, quantities ...).
        first = statements[0].mainsnak
        if first is not None and first.datatype is not None and first.datatype != "wikibase-item":
            by_datatype = skips["datatype"]
            by_datatype[first.datatype] = by_datatype.get(first.datatype, 0) + len(statements)
            continue
        _statement_rows(num, pid, statements, cols, skips)
    return created


def _earliest_date(statements: list) -> int | None:
    """The earliest time value of the non-deprecated value snaks of one property."""
    created = None
    for st in statements:
        snak = st.mainsnak
        if st.rank == "deprecated" or snak is None or snak.snaktype != "value":
            continue
        dv = snak.datavalue
        if dv is None:
            continue
        value = dv.value
        if isinstance(value, _Value):
            date = parse_time_text(value.time)
            if date is not None and (created is None or date < created):
                created = date
    return created


def _item_value(snak: Any) -> int | None:
    """The item id of a wikibase-item value snak, None for any other snak."""
    if snak is None or snak.snaktype != "value":
        return None
    dv = snak.datavalue
    if dv is None:
        return None
    datatype, value = snak.datatype, dv.value
    if datatype is None:
        # 2014 dumps: no datatype on snaks; an item value is an entityid of type item.
        if dv.type != "wikibase-entityid" or not isinstance(value, _Value):
            return None
        if (value.entity_type or "item") != "item":
            return None
    elif datatype != "wikibase-item" or not isinstance(value, _Value):
        return None
    obj = value.numeric_id
    if obj is None:
        obj = id_int_or_none(value.id)
    return obj


def _skip_reason(snak: Any) -> tuple[str, str]:
    """``(axis, key)`` of :data:`Skips` for a main snak that :func:`_item_value` rejected."""
    if snak is None:
        return "snaktype", "missing"
    if snak.snaktype != "value":
        return "snaktype", snak.snaktype
    if snak.datatype is not None:
        return "datatype", UNREADABLE_ITEM if snak.datatype == "wikibase-item" else snak.datatype
    dv = snak.datavalue
    if dv is None:
        return "datatype", "unknown"
    if dv.type == "wikibase-entityid":
        etype = dv.value.entity_type if isinstance(dv.value, _Value) else None
        if (etype or "item") == "item":
            return "datatype", UNREADABLE_ITEM
        return "datatype", "wikibase-" + etype
    return "datatype", dv.type or "unknown"


def _statement_rows(num: int, pid: str, statements: list, cols: Columns, skips: Skips) -> None:
    """Claims rows (and types rows for P31/P279) of one property's statements; the statements
    without an item value are counted in ``skips``."""
    c_subject, c_property, c_object, c_rank, c_start, c_end, c_point = cols["claims"]
    t_id, t_type, t_via = cols["types"]
    prop = None
    is_type = pid == "P31" or pid == "P279"
    for st in statements:
        obj = _item_value(st.mainsnak)
        if obj is None:
            axis, key = _skip_reason(st.mainsnak)
            skips[axis][key] = skips[axis].get(key, 0) + 1
            continue
        if prop is None:
            prop = _numeric(pid)  # raises BadEntity with the reason
        rank = RANKS.get(st.rank, 1)
        quals = st.qualifiers
        if quals is None or quals.__class__ is list:
            start = end = point = None
        else:
            snaks = quals.P580
            start = _typed_date(snaks) if snaks else None
            snaks = quals.P582
            end = _typed_date(snaks) if snaks else None
            snaks = quals.P585
            point = _typed_date(snaks) if snaks else None
        c_subject.append(num)
        c_property.append(prop)
        c_object.append(obj)
        c_rank.append(rank)
        c_start.append(start)
        c_end.append(end)
        c_point.append(point)
        if rank and is_type:
            t_id.append(num)
            t_type.append(obj)
            t_via.append(pid)
