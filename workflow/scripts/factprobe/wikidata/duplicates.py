"""An entity id that occurs twice in a dump fails the extraction, naming both lines.

Two versions of one entity would both reach the tables (its labels and claims doubled, the
objects of both versions valid), so the probes would count facts the entity never held at once.
Nothing says which version is right, so no rule keeps one: the job stops.

:class:`SeenIds` remembers every item and property id as one bit (a 120M-item dump: 15 MB), so
detecting a repeat costs a few array operations per chunk. Lines are not kept per entity; only
when a repeat is found does :func:`locate_lines` read the dump again from its start to name the
two lines.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

#: Id prefixes of the kinds the entities table holds.
PREFIX = {"item": "Q", "property": "P"}
#: Bytes at the start of a line searched for the entity's own ``"id"``: in dump lines it comes
#: right after ``"type"``; later on the line the same text is a claim's value.
HEAD_BYTES = 512


def entity_id(kind: str, number: int) -> str:
    """``Q42`` / ``P31``: the id of an entities-table row as the dump writes it."""
    return f"{PREFIX.get(kind, '')}{number}"


class SeenIds:
    """A growing bit set of ids per kind."""

    def __init__(self) -> None:
        self.bits: dict[str, np.ndarray] = {}

    def add(self, entities: pa.Table) -> tuple[str, int] | None:
        """Record the ids of an entities table (chunk order); the first repeated ``(kind, id)``
        (against earlier tables or within this one), else None."""
        if entities.num_rows == 0:
            return None
        ids, kinds = entities.column("id"), entities.column("kind")
        for kind in pc.unique(kinds).to_pylist():
            own = pc.filter(ids, pc.equal(kinds, kind)).to_numpy().astype(np.int64)
            repeat = self._add(str(kind), own)
            if repeat is not None:
                return str(kind), repeat
        return None

    def _add(self, kind: str, ids: np.ndarray) -> int | None:
        bits = self.bits.get(kind, np.zeros(0, dtype=np.uint8))
        need = int(ids.max()) // 8 + 1
        if need > len(bits):
            grown = np.zeros(max(need, 2 * len(bits)), dtype=np.uint8)
            grown[: len(bits)] = bits
            bits = self.bits[kind] = grown
        index, mask = ids >> 3, (1 << (ids & 7)).astype(np.uint8)
        before = (bits[index] & mask) != 0
        if before.any():
            return int(ids[np.argmax(before)])
        unique, counts = np.unique(ids, return_counts=True)
        if (counts > 1).any():
            return int(unique[np.argmax(counts > 1)])
        np.bitwise_or.at(bits, index, mask)
        return None


def _is_entity_line(line: bytes, entity_id: str) -> bool:
    """Whether ``line`` is the entity ``entity_id`` itself (not a claim pointing at it)."""
    head = line[:HEAD_BYTES]
    if f'"{entity_id}"'.encode() not in head:
        return False
    try:
        return json.loads(line.strip().rstrip(b",")).get("id") == entity_id
    except (ValueError, AttributeError):
        return False


def locate_lines(path: Path, entity_id: str, limit: int = 2) -> list[int]:
    """Line numbers (from 1, of the decompressed file) of the first ``limit`` lines that are the
    entity ``entity_id``, read from the start of the dump."""
    from factprobe.wikidata.stream import _open_decompressed

    found: list[int] = []
    with open(path, "rb") as raw, _open_decompressed(raw, path) as fh:
        for number, line in enumerate(fh, start=1):
            if _is_entity_line(line, entity_id):
                found.append(number)
                if len(found) == limit:
                    break
    return found


def duplicate_message(path: Path, kind: str, number: int, lines: list[int]) -> str:
    """The error of a repeated entity: its id, both lines (when found) and what to do."""
    where = (
        f"at lines {lines[0]} and {lines[1]}"
        if len(lines) >= 2
        else "twice (in one JSON document, or on lines that could not be told apart)"
    )
    return (
        f"{path}: entity {entity_id(kind, number)} occurs {where}; a dump holds each entity once, and two versions "
        "would both reach the tables. Remove one of the two lines (or download the dump again)."
    )
