"""Single-value relations for the diff (WikiFactDiff "functional" relations, anchors.md §3.1).

WikiFactDiff takes them from property constraints P2302 = Q19474404 (single-value) or
Q52060874 (single-best-value); the extraction stores that as ``properties.single_value``.
Dumps without constraint statements (all before 2015, and samples without property entities)
need the bundled list ``resources/properties/single_value.tsv`` (see its README).
"""

from __future__ import annotations

import csv
from collections.abc import Iterable
from pathlib import Path

from factprobe import contracts
from factprobe.contracts import id_int_or_none

SOURCES = ("constraints", "list", "both")


def read_list(path: str | Path) -> set[int]:
    """Property ids (``P6`` -> 6) of a TSV with a ``property`` column; errors name file and line."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path}: single-value property list not found; fix diff.single_value_list")
    out: set[int] = set()
    with open(path, newline="", encoding="utf-8-sig") as fh:
        reader = csv.DictReader(fh, delimiter="\t")
        if "property" not in (reader.fieldnames or []):
            raise ValueError(f"{path}: needs a 'property' column (tab-separated), found {reader.fieldnames}")
        for lineno, row in enumerate(reader, start=2):
            pid = (row["property"] or "").strip()
            num = id_int_or_none(pid) if pid.startswith("P") else None
            if num is None:
                raise ValueError(f"{path}: line {lineno}: property {pid!r} is not a property id like P6")
            out.add(num)
    return out


def from_constraints(property_tables: Iterable[str | Path]) -> set[int]:
    """Properties flagged ``single_value`` in any of the extraction ``properties`` tables."""
    out: set[int] = set()
    for path in property_tables:
        table = contracts.read("properties", path, ["id", "single_value"])
        out.update(int(i) for i, sv in zip(table["id"], table["single_value"], strict=False) if sv)
    return out


def single_value_properties(
    source: str, list_path: str | Path | None, property_tables: Iterable[str | Path]
) -> set[int]:
    """The single-value property ids chosen by ``source`` (constraints / list / both)."""
    if source not in SOURCES:
        raise ValueError(f"diff.single_value must be one of {SOURCES}, got {source!r}")
    out: set[int] = set()
    if source in ("constraints", "both"):
        out |= from_constraints(property_tables)
    if source in ("list", "both"):
        if list_path is None:
            raise ValueError("diff.single_value_list is needed when diff.single_value is 'list' or 'both'")
        out |= read_list(list_path)
    return out
