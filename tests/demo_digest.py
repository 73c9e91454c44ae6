"""Content digest of the demo's output tables, independent of Parquet byte layout.

`tests/test_demo.py` compares a fresh demo run against the checked-in `tests/data/demo_digest.json`.
After an *intentional* change of outputs, regenerate it from a finished demo run and commit it:

    PYTHONPATH=workflow/scripts .venv/bin/python tests/demo_digest.py results > tests/data/demo_digest.json

Per table: the row count, the column names and a SHA-256 over the rows rendered as text and
sorted, so neither row order, row groups nor compression matter. Floats are rendered with 6
significant digits so that the last bits of a model's arithmetic do not count as a change.
"""

from __future__ import annotations

import hashlib
import json
import math
import sys
from pathlib import Path

import pyarrow.csv as pacsv
import pyarrow.parquet as pq

# Outputs that are not tables (report HTML, model folders, nmslib index) or are caches are left out.
SKIP_PARTS = ("cache", "models", "report", "distractors/index")
SUFFIXES = (".parquet", ".csv", ".tsv")


def _cell(value: object) -> str:
    if isinstance(value, float):
        return repr(value) if math.isnan(value) or math.isinf(value) else f"{value:.6g}"
    if isinstance(value, list):
        return "[" + ",".join(_cell(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ",".join(f"{k}:{_cell(v)}" for k, v in sorted(value.items())) + "}"
    return repr(value)


def table_digest(path: Path) -> dict:
    """``{"rows", "columns", "sha256"}`` of one Parquet/CSV/TSV table."""
    if path.suffix == ".parquet":
        table = pq.read_table(path)
    else:
        delimiter = "\t" if path.suffix == ".tsv" else ","
        table = pacsv.read_csv(path, parse_options=pacsv.ParseOptions(delimiter=delimiter))
    columns = table.column_names
    rows = sorted("\x1f".join(_cell(v) for v in row.values()) for row in table.to_pylist())
    sha = hashlib.sha256()
    sha.update("\x1e".join(columns).encode())
    for row in rows:
        sha.update(b"\x1e" + row.encode())
    return {"rows": table.num_rows, "columns": columns, "sha256": sha.hexdigest()}


def demo_digest(results: Path) -> dict[str, dict]:
    """Digest of every table under ``results`` keyed by its path relative to ``results``."""
    out = {}
    for path in sorted(results.rglob("*")):
        rel = path.relative_to(results).as_posix()
        if path.suffix in SUFFIXES and path.is_file() and not any(rel.startswith(p) for p in SKIP_PARTS):
            out[rel] = table_digest(path)
    return out


def compare(expected: dict[str, dict], actual: dict[str, dict]) -> list[str]:
    """Human-readable differences (empty when the outputs are unchanged)."""
    problems = [f"{name}: missing in the new run" for name in sorted(expected.keys() - actual.keys())]
    problems += [f"{name}: not in the digest" for name in sorted(actual.keys() - expected.keys())]
    for name in sorted(expected.keys() & actual.keys()):
        old, new = expected[name], actual[name]
        if old["columns"] != new["columns"]:
            problems.append(f"{name}: columns {old['columns']} -> {new['columns']}")
        elif old["rows"] != new["rows"]:
            problems.append(f"{name}: rows {old['rows']} -> {new['rows']}")
        elif old["sha256"] != new["sha256"]:
            problems.append(f"{name}: content changed ({old['rows']} rows)")
    return problems


if __name__ == "__main__":
    print(
        json.dumps(
            demo_digest(Path(sys.argv[1] if len(sys.argv) > 1 else "results")), indent=1, sort_keys=True
        )
    )
