"""Content digest of the demo's output tables, independent of Parquet byte layout.

`tests/test_demo.py` compares a fresh demo run against the checked-in `tests/data/demo_digest.json`.
After an *intentional* change of outputs, regenerate it from a finished demo run and commit it:

    PYTHONPATH=workflow/scripts .venv/bin/python tests/demo_digest.py results > tests/data/demo_digest.json

Per table: the row count, the column names, a SHA-256 over the non-float cells of every row
rendered as text and sorted (so neither row order, row groups nor compression matter), and for each
float column a few numbers compared with a tolerance: the count of non-finite values, the sum of
absolute values and three random projections (each value weighted by a pseudo-random weight in
[-1, 1] drawn from its row's non-float cells). A model's last bits differ between CPUs (the CI
machine's SIMD kernels are not this one's), so floats cannot be hashed, even rounded: a value next
to a rounding boundary flips. A real change of one value by more than ~1e-5 of the column's total
mass still moves a projection past the tolerance.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

# Outputs that are not tables (report HTML, model folders, nmslib index) or are caches are left out.
SKIP_PARTS = ("cache", "models", "report", "distractors/index")
SUFFIXES = (".parquet", ".csv", ".tsv")


N_PROJECTIONS = 3
# Relative to the column's sum of |values|; last-bit noise of float32 sums stays orders below it.
RTOL = 1e-5


def _is_float(value: object) -> bool:
    return isinstance(value, float) or (
        isinstance(value, list) and bool(value) and all(isinstance(v, float) for v in value)
    )


def _cell(value: object) -> str:
    if isinstance(value, list):
        return "[" + ",".join(_cell(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ",".join(f"{k}:{_cell(v)}" for k, v in sorted(value.items())) + "}"
    return repr(value)


def _weights(key: str, column: str, n: int) -> list[list[float]]:
    """``N_PROJECTIONS`` weights in [-1, 1] for each of ``n`` values of one cell, fixed by its row key."""
    seed = int.from_bytes(hashlib.sha256(f"{column}\x1f{key}".encode()).digest()[:8], "big")
    draw = random.Random(seed)
    return [[draw.uniform(-1.0, 1.0) for _ in range(n)] for _ in range(N_PROJECTIONS)]


def table_digest(path: Path) -> dict:
    """``{"rows", "columns", "sha256", "floats"}`` of one Parquet/CSV/TSV table."""
    if path.suffix == ".parquet":
        table = pq.read_table(path)
    else:
        delimiter = "\t" if path.suffix == ".tsv" else ","
        table = pacsv.read_csv(path, parse_options=pacsv.ParseOptions(delimiter=delimiter))
    columns = table.column_names
    records = table.to_pylist()
    floats = [c for c in columns if pa.types.is_floating(table.schema.field(c).type) or _float_list(table, c)]
    keyed = [c for c in columns if c not in floats]
    keys = ["\x1f".join(_cell(row[c]) for c in keyed) for row in records]
    sha = hashlib.sha256()
    sha.update("\x1e".join(columns).encode())
    for key in sorted(keys):
        sha.update(b"\x1e" + key.encode())
    stats = {}
    for column in floats:
        nonfinite, mass, proj = 0, 0.0, [0.0] * N_PROJECTIONS
        for key, row in zip(keys, records, strict=True):
            values = row[column]
            values = [] if values is None else values if isinstance(values, list) else [values]
            weights = _weights(key, column, len(values))
            for i, value in enumerate(values):
                if value is None or not math.isfinite(value):
                    nonfinite += 1
                    continue
                mass += abs(value)
                for j in range(N_PROJECTIONS):
                    proj[j] += weights[j][i] * value
        stats[column] = {"nonfinite": nonfinite, "abs_sum": mass, "projections": proj}
    return {"rows": table.num_rows, "columns": columns, "sha256": sha.hexdigest(), "floats": stats}


def _float_list(table, column: str) -> bool:
    kind = table.schema.field(column).type
    return pa.types.is_list(kind) and pa.types.is_floating(kind.value_type)


def _floats_differ(old: dict, new: dict) -> str | None:
    """Which float column changed beyond the tolerance, if any."""
    for column, a in old.items():
        b = new.get(column)
        if b is None:
            return f"{column} is no longer a float column"
        tol = RTOL * max(a["abs_sum"], b["abs_sum"]) + 1e-9
        if a["nonfinite"] != b["nonfinite"]:
            return f"{column} non-finite count {a['nonfinite']} -> {b['nonfinite']}"
        diffs = [abs(x - y) for x, y in zip(a["projections"], b["projections"], strict=True)]
        if abs(a["abs_sum"] - b["abs_sum"]) > tol or max(diffs) > tol:
            return f"{column} values moved (max projection change {max(diffs):.3g}, tolerance {tol:.3g})"
    return None


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
        elif (moved := _floats_differ(old.get("floats", {}), new.get("floats", {}))) is not None:
            problems.append(f"{name}: {moved} ({old['rows']} rows)")
    return problems


if __name__ == "__main__":
    print(
        json.dumps(
            demo_digest(Path(sys.argv[1] if len(sys.argv) > 1 else "results")), indent=1, sort_keys=True
        )
    )
