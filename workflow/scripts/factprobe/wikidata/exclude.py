"""Classes of items left out while a dump is extracted (``extract.exclude``, config/README.md).

``scholarly`` applies the rule of the Wikidata Query Service's graph split, which moved scholarly
articles out of the main graph into their own (Wikidata:SPARQL query service/WDQS graph split).
The rule as the split's code publishes it (wikimedia/wikidata-query-rdf,
``tools/src/main/resources/wdqs-subgraph-definitions-v2.yaml``, "Add wdqs-subgraph-definitions-v2
with support for P13046"): an entity belongs to the scholarly graph when

* ``?entity wdt:P31 ?scholarly_type`` for one of the 49 classes of :data:`SCHOLARLY_TYPES`, or
* ``?entity wdt:P13046 []`` (P13046, publication type of scholarly work, with any value).

``wdt:`` is the truthy statement: the preferred-rank statements of a property when it has any,
else its normal-rank ones; deprecated statements never count. Both are read from an item's own
claims rows, so each chunk of whole entity lines decides for its own items.

How it is applied (two steps in the one extraction job):

1. While streaming, :meth:`Exclusion.drop_subjects` finds each chunk's scholarly items
   (:func:`scholarly_ids`), drops their entities, labels, claims and types rows, and keeps their
   ids (a sorted array per chunk).
2. A statement whose object is a scholarly item may come before that item in the dump, so the
   claims and types tables are filtered once more when all ids are known
   (:meth:`Exclusion.drop_objects`, called by :class:`~factprobe.wikidata.tables.TableSet` before
   the tables are published): row group by row group, a sorted-array lookup per row.

Not seen by the rule here: a P13046 statement whose value is ``somevalue`` (the claims table holds
item values only; WDQS would count it). Everything dropped is counted (:meth:`Exclusion.record`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

#: P31 classes of the WDQS split's scholarly graph (wdqs-subgraph-definitions-v2.yaml,
#: ``bindings.scholarly_type``, in that file's order): Q13442814 scholarly article first.
SCHOLARLY_TYPES: tuple[int, ...] = (
    13442814,
    7318358,
    2782326,
    815382,
    1348305,
    187685,
    1907875,
    18918145,
    1266946,
    23927052,
    1504425,
    45182324,
    1402850,
    7316896,
    580922,
    30749496,
    111475835,
    92998777,
    114613919,
    798134,
    1385450,
    10885494,
    51282918,
    51282711,
    111475860,
    51283092,
    15706459,
    59387148,
    110716513,
    58897583,
    51283145,
    54670950,
    91901000,
    111476177,
    51283053,
    1414362,
    51283181,
    51282999,
    51283199,
    82969330,
    112585758,
    118114827,
    106276531,
    1884156,
    51283362,
    46629343,
    100328456,
    51283219,
    70471362,
)
#: P13046 "publication type of scholarly work": any truthy value puts an item in the split.
PUBLICATION_TYPE = 13046
INSTANCE_OF = 31
#: The classes ``extract.exclude`` accepts (the schema's enum).
CLASSES = ("scholarly",)

_TYPES = np.array(sorted(SCHOLARLY_TYPES), dtype=np.int64)


def _member(values: np.ndarray, sorted_ids: np.ndarray) -> np.ndarray:
    """``values`` in ``sorted_ids`` (sorted, unique), by binary search: the id set can hold tens of
    millions of ids, far more than one row group of values."""
    if len(sorted_ids) == 0 or len(values) == 0:
        return np.zeros(len(values), dtype=bool)
    at = np.searchsorted(sorted_ids, values)
    np.minimum(at, len(sorted_ids) - 1, out=at)
    return sorted_ids[at] == values


def _np(column: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """An integer column as NumPy (nulls as -1: no item has that id)."""
    return pc.fill_null(column, -1).to_numpy()


def scholarly_ids(claims: pa.Table) -> np.ndarray:
    """Sorted unique subjects of ``claims`` (whole items' rows) that the split's rule puts in the
    scholarly graph: a truthy P31 in :data:`SCHOLARLY_TYPES`, or a truthy P13046 value."""
    prop = _np(claims["property"])
    rank = _np(claims["rank"])
    keep = ((prop == INSTANCE_OF) | (prop == PUBLICATION_TYPE)) & (rank > 0)
    if not keep.any():
        return np.empty(0, dtype=np.int64)
    subject = _np(claims["subject"])[keep]
    obj = _np(claims["object"])[keep]
    prop, rank = prop[keep], rank[keep]
    out = []
    for pid, typed in ((INSTANCE_OF, True), (PUBLICATION_TYPE, False)):
        sel = prop == pid
        s, o, r = subject[sel], obj[sel], rank[sel]
        # Truthy: a subject's preferred statements of the property if it has any, else its normal ones.
        preferred = np.unique(s[r == 2])
        truthy = (r == 2) | ~_member(s, preferred)
        hit = truthy & _member(o, _TYPES) if typed else truthy
        out.append(s[hit])
    return np.unique(np.concatenate(out))


@dataclass
class Exclusion:
    """One excluded class while a dump streams: its ids so far and what was dropped."""

    name: str = "scholarly"
    #: sorted ids of each chunk's excluded items
    parts: list[np.ndarray] = field(default_factory=list)
    items: int = 0
    labels: int = 0
    claims_as_subject: int = 0
    types_as_subject: int = 0
    claims_as_object: int = 0
    types_as_object: int = 0
    _ids: np.ndarray | None = None

    def __post_init__(self) -> None:
        if self.name not in CLASSES:
            raise ValueError(f"extract.exclude: unknown class {self.name!r}; known: {', '.join(CLASSES)}")

    def drop_subjects(self, tables: dict[str, pa.Table]) -> dict[str, pa.Table]:
        """One chunk's tables without the rows of its excluded items (every row of an entity is in
        its chunk); their ids are kept for :meth:`drop_objects`."""
        ids = scholarly_ids(tables["claims"])
        if len(ids) == 0:
            return tables
        self.parts.append(ids)
        self._ids = None
        value_set = pa.array(ids, type=pa.int64())
        out = dict(tables)
        ent = tables["entities"]
        gone = pc.and_(pc.equal(ent["kind"], "item"), pc.is_in(ent["id"], value_set=value_set))
        out["entities"] = ent.filter(pc.invert(gone))
        self.items += ent.num_rows - out["entities"].num_rows
        for name, column, counter in (
            ("labels", "id", "labels"),
            ("claims", "subject", "claims_as_subject"),
            ("types", "id", "types_as_subject"),
        ):
            table = tables[name]
            kept = table.filter(pc.invert(pc.is_in(table[column], value_set=value_set)))
            setattr(self, counter, getattr(self, counter) + table.num_rows - kept.num_rows)
            out[name] = kept
        return out

    @property
    def ids(self) -> np.ndarray:
        """Every excluded id seen so far, sorted."""
        if self._ids is None:
            self._ids = np.unique(np.concatenate(self.parts)) if self.parts else np.empty(0, np.int64)
            self.parts = [self._ids]
        return self._ids

    def drop_objects(self, name: str, table: pa.Table) -> pa.Table:
        """``claims`` or ``types`` rows of kept items without those whose object (``object``,
        ``type``) is an excluded item; other tables pass unchanged."""
        column = {"claims": "object", "types": "type"}.get(name)
        if column is None or table.num_rows == 0:
            return table
        hit = _member(_np(table[column]), self.ids)
        if not hit.any():
            return table
        n = int(hit.sum())
        if name == "claims":
            self.claims_as_object += n
        else:
            self.types_as_object += n
        return table.filter(pa.array(~hit))

    def record(self) -> dict[str, int]:
        """The counts ``extract_stats.json`` keeps under ``excluded.<class>``."""
        return {
            "items": self.items,
            "labels": self.labels,
            "claims_as_subject": self.claims_as_subject,
            "types_as_subject": self.types_as_subject,
            "claims_as_object": self.claims_as_object,
            "types_as_object": self.types_as_object,
        }

    def phrase(self) -> str:
        """The console's words for it."""
        return (
            f"{self.name} {self.items} items ({self.claims_as_subject} item statements as subject, "
            f"{self.claims_as_object} as object, {self.types_as_object} type rows as class) left out"
        )
