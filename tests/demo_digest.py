"""Content digest of the demo's output tables, and the tolerance policy that compares two runs.

`tests/test_demo.py` compares a fresh demo run against the checked-in digest, two files:
`tests/data/demo_digest.json` (per table: rows, columns, a SHA-256 of the exact cells) and
`tests/data/demo_digest.values.npz` (every float of every table, in a fixed row order). After an
*intentional* change of outputs (or a new lock file), regenerate both from a finished demo run and
commit them:

    PYTHONPATH=workflow/scripts .venv/bin/python tests/demo_digest.py results tests/data/demo_digest

The policy (README.md, "Reproducibility"), each part with its reason:

- **Exact** for every non-float cell: ids, counts, categorical columns, strings. Row order,
  row groups and compression do not matter (the cells of each row are rendered as text and the
  rows sorted before hashing). A dropped row or one changed distractor changes the hash.
- **Floats** value by value, in the rows' sorted order: ``|a - b| <= FLOAT_ATOL + FLOAT_RTOL * |a|``
  and the same non-finite values in the same places. A model's last bits differ between CPUs (the
  x86 kernels for AVX2, AVX-512 and AMX sum in different orders), so floats cannot be hashed, even
  rounded. The tolerance (``FLOAT_ATOL``, 1e-3) is ~5.5x the largest difference measured between
  runs on different instruction sets and 10x below the smallest change the check must catch
  (0.01 nats on one score).
- **Top-k tables** (``*.topk.parquet``: the k most probable next tokens of each prompt) by
  prompt: the same prompts exactly; a token's log-probability within ``FLOAT_ATOL``; a token may
  appear on one side only when it sits at the k-th boundary (within ``FLOAT_ATOL`` of the other
  side's k-th log-probability), so ranks may swap only between tokens tied within the tolerance.
- **first_rank** (a form's first-token rank, derived from the top-k table) may move only inside
  the window its reference top-k list allows: between 1 + #(tokens more probable by more than
  the tolerance) and 1 + #(tokens within the tolerance or more probable), ``inf`` past k.
"""

from __future__ import annotations

import hashlib
import json
import math
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

# Outputs that are not tables (report HTML, model folders, nmslib index) or are caches are left out.
SKIP_PARTS = ("cache", "models", "report", "distractors/index")
SUFFIXES = (".parquet", ".csv", ".tsv")
TOPK_SUFFIX = ".topk.parquet"

# Largest score difference measured between instruction sets with batch-invariant scoring (the
# demo's 4,922 knowledge, judged and multiprompt requests on an AVX-512 machine, and on the same
# machine restricted to AVX2 kernels: `benchmarks/invariance.py --dump / --against`,
# benchmarks/RESULTS.md): 1.8e-4 nats for SmolLM2, 2.6e-5 for the control model, the same top-k
# tokens. Within one machine scores are bit-identical whatever the batching, so this is all the
# noise there is. The tolerance is ~5.5x that and 10x below the 0.01 nats the check must catch.
FLOAT_ATOL = 1e-3
# No relative part: 0.01 nats must be caught at every magnitude (forms reach -300 nats).
FLOAT_RTOL = 0.0
SEP = "\x1f"


@dataclass
class Digest:
    """Per-table metadata (JSON) and the float values of every table (NumPy arrays)."""

    tables: dict[str, dict] = field(default_factory=dict)
    values: dict[str, np.ndarray] = field(default_factory=dict)

    def save(self, stem: Path) -> None:
        stem = Path(stem)
        stem.with_suffix(".json").write_text(json.dumps(self.tables, indent=1, sort_keys=True) + "\n")
        with open(stem.with_suffix(".values.npz"), "wb") as fh:
            np.savez_compressed(fh, **self.values)

    @classmethod
    def load(cls, stem: Path) -> Digest:
        stem = Path(stem)
        tables = json.loads(stem.with_suffix(".json").read_text())
        with np.load(stem.with_suffix(".values.npz")) as arrays:
            values = {k: arrays[k] for k in arrays.files}
        return cls(tables, values)


def _cell(value: object) -> str:
    if isinstance(value, list):
        return "[" + ",".join(_cell(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ",".join(f"{k}:{_cell(v)}" for k, v in sorted(value.items())) + "}"
    return repr(value)


def _read(path: Path) -> pa.Table:
    if path.suffix == ".parquet":
        return pq.read_table(path)
    delimiter = "\t" if path.suffix == ".tsv" else ","
    return pacsv.read_csv(path, parse_options=pacsv.ParseOptions(delimiter=delimiter))


def _is_float_column(table: pa.Table, column: str) -> bool:
    kind = table.schema.field(column).type
    return pa.types.is_floating(kind) or (pa.types.is_list(kind) and pa.types.is_floating(kind.value_type))


def _flat(value: object) -> list[float]:
    if value is None:
        return [math.nan]
    return [math.nan if v is None else float(v) for v in value] if isinstance(value, list) else [float(value)]


def _sha(columns: list[str], keys: list[str]) -> str:
    sha = hashlib.sha256()
    sha.update("\x1e".join(columns).encode())
    for key in keys:
        sha.update(b"\x1e" + key.encode())
    return sha.hexdigest()


def table_digest(path: Path, name: str) -> tuple[dict, dict[str, np.ndarray], list[str]]:
    """Metadata, float arrays and the sorted row keys of one table (``name`` keys its arrays)."""
    table = _read(path)
    if name.endswith(TOPK_SUFFIX):
        return _topk_digest(table, name)
    columns = table.column_names
    floats = [c for c in columns if _is_float_column(table, c)]
    keyed = [c for c in columns if c not in floats]
    records = table.to_pylist()
    rows = [(SEP.join(_cell(r[c]) for c in keyed), [_flat(r[c]) for c in floats]) for r in records]
    # Ties in the key (rows differing only in floats) are ordered by their values.
    rows.sort(key=lambda kv: (kv[0], [[-math.inf if math.isnan(x) else x for x in v] for v in kv[1]]))
    keys = [k for k, _ in rows]
    values = {
        f"{name}{SEP}{c}": np.array([x for _, vals in rows for x in vals[i]], dtype=np.float64)
        for i, c in enumerate(floats)
    }
    meta = {"rows": table.num_rows, "columns": columns, "floats": floats, "sha256": _sha(columns, keys)}
    return meta, values, keys


def _topk_digest(table: pa.Table, name: str) -> tuple[dict, dict[str, np.ndarray], list[str]]:
    """A top-k table by prompt: the prompt set exactly, each prompt's (token, logprob) in rank order."""
    frame = table.to_pandas().sort_values(["prompt_id", "rank", "token_id"], kind="stable")
    prompts = sorted(frame["prompt_id"].unique())
    counts = frame.groupby("prompt_id", sort=True).size().reindex(prompts).to_numpy()
    values = {
        f"{name}{SEP}offsets": np.concatenate([[0], np.cumsum(counts)]).astype(np.int64),
        f"{name}{SEP}token_id": frame["token_id"].to_numpy(dtype=np.int64),
        f"{name}{SEP}logprob": frame["logprob"].to_numpy(dtype=np.float64),
    }
    columns = table.column_names
    meta = {"rows": table.num_rows, "columns": columns, "kind": "topk", "sha256": _sha(columns, prompts)}
    return meta, values, prompts


def demo_digest(results: Path, with_keys: bool = False):
    """Digest of every table under ``results`` keyed by its path relative to ``results``.

    With ``with_keys`` also each table's sorted row keys (the comparison needs a run's prompt ids).
    """
    digest, keys = Digest(), {}
    for path in sorted(Path(results).rglob("*")):
        rel = path.relative_to(results).as_posix()
        if path.suffix in SUFFIXES and path.is_file() and not any(rel.startswith(p) for p in SKIP_PARTS):
            meta, values, row_keys = table_digest(path, rel)
            digest.tables[rel] = meta
            digest.values.update(values)
            keys[rel] = row_keys
    return (digest, keys) if with_keys else digest


def floats_close(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Element-wise: both the same non-finite value, or finite and within the tolerance."""
    same = (a == b) | (np.isnan(a) & np.isnan(b))
    finite = np.isfinite(a) & np.isfinite(b)
    with np.errstate(invalid="ignore"):
        near = np.abs(a - b) <= FLOAT_ATOL + FLOAT_RTOL * np.abs(a)
    return same | (finite & near)


def _topk_problems(name: str, expected: Digest, actual: Digest) -> list[str]:
    def lists(d: Digest):
        off = d.values[f"{name}{SEP}offsets"]
        tok, lp = d.values[f"{name}{SEP}token_id"], d.values[f"{name}{SEP}logprob"]
        return [(tok[s:e], lp[s:e]) for s, e in zip(off[:-1], off[1:], strict=True)]

    bad = []
    for i, ((ta, la), (tb, lb)) in enumerate(zip(lists(expected), lists(actual), strict=True)):
        a, b = dict(zip(ta.tolist(), la, strict=True)), dict(zip(tb.tolist(), lb, strict=True))
        for token in a.keys() & b.keys():
            if not floats_close(np.array([a[token]]), np.array([b[token]]))[0]:
                bad.append(f"prompt #{i}: token {token} logprob {a[token]:.6g} -> {b[token]:.6g}")
        for only, other in ((a.keys() - b.keys(), lb), (b.keys() - a.keys(), la)):
            side = a if other is lb else b
            for token in only:  # on one side only: must sit at the other side's k-th boundary
                if len(other) == 0 or side[token] > other.min() + FLOAT_ATOL:
                    bad.append(f"prompt #{i}: token {token} ({side[token]:.6g}) in one top-k only")
    return [f"{name}: top-k {p}" for p in bad[:3]] + ([f"{name}: ... {len(bad)} in all"] if bad else [])


def _rank_window(first_logprob: float, topk_logprobs: np.ndarray) -> tuple[float, float]:
    """The first-token ranks a tie within the tolerance allows (``scoring.suite.first_token_ranks``)."""
    k = len(topk_logprobs)
    lo = 1 + int(np.sum(topk_logprobs > first_logprob + FLOAT_ATOL))
    hi = 1 + int(np.sum(topk_logprobs >= first_logprob - FLOAT_ATOL))
    return (math.inf if lo > k else lo), (math.inf if hi > k else hi)


def _first_rank_ok(
    name: str, expected: Digest, keys: dict[str, list[str]], exp: np.ndarray, act: np.ndarray
) -> bool:
    """Whether every moved first_rank stays in the window of the reference top-k list.

    The top-k table's prompt set is equal on both sides (its hash matched), so the run's sorted
    prompt ids index the reference lists.
    """
    topk = name.removesuffix(".parquet") + TOPK_SUFFIX
    if topk not in expected.tables or topk not in keys or name not in keys:
        return False
    off = expected.values[f"{topk}{SEP}offsets"]
    lps = expected.values[f"{topk}{SEP}logprob"]
    start = {p: i for i, p in enumerate(keys[topk])}
    first = expected.values[f"{name}{SEP}first_logprob"]
    cols = expected.tables[name]["columns"]
    keyed = [c for c in cols if c not in expected.tables[name]["floats"]]
    at = keyed.index("prompt_id")
    for i in np.flatnonzero(~floats_close(exp, act)):
        j = start.get(keys[name][i].split(SEP)[at][1:-1])  # the cell as repr(): 'Q1|P2|...'

        if j is None:
            return False
        lo, hi = _rank_window(first[i], lps[off[j] : off[j + 1]])
        if not lo <= act[i] <= hi:
            return False
    return True


def compare(expected: Digest, actual: Digest, actual_keys: dict[str, list[str]] | None = None) -> list[str]:
    """Human-readable differences under the tolerance policy (empty when the outputs agree)."""
    problems = [
        f"{name}: missing in the new run" for name in sorted(expected.tables.keys() - actual.tables.keys())
    ]
    problems += [
        f"{name}: not in the digest" for name in sorted(actual.tables.keys() - expected.tables.keys())
    ]
    actual_keys = actual_keys or {}
    for name in sorted(expected.tables.keys() & actual.tables.keys()):
        old, new = expected.tables[name], actual.tables[name]
        if old["columns"] != new["columns"]:
            problems.append(f"{name}: columns {old['columns']} -> {new['columns']}")
        elif old["rows"] != new["rows"]:
            problems.append(f"{name}: rows {old['rows']} -> {new['rows']}")
        elif old["sha256"] != new["sha256"]:
            what = "prompts" if old.get("kind") == "topk" else "content"
            problems.append(f"{name}: {what} changed ({old['rows']} rows)")
        elif old.get("kind") == "topk":
            problems += _topk_problems(name, expected, actual)
        else:
            problems += _float_problems(name, expected, actual, actual_keys)
    return problems


def _float_problems(name: str, expected: Digest, actual: Digest, keys: dict[str, list[str]]) -> list[str]:
    out = []
    for column in expected.tables[name]["floats"]:
        a, b = expected.values[f"{name}{SEP}{column}"], actual.values[f"{name}{SEP}{column}"]
        if a.shape != b.shape:
            out.append(f"{name}: {column} has {b.size} values, the digest {a.size}")
            continue
        close = floats_close(a, b)
        if close.all():
            continue
        if column == "first_rank" and _first_rank_ok(name, expected, keys, a, b):
            continue
        i = int(np.flatnonzero(~close)[0])
        out.append(
            f"{name}: {column} values moved beyond the tolerance in {int((~close).sum())} of {a.size} "
            f"rows (first: {a[i]:.8g} -> {b[i]:.8g})"
        )
    return out


if __name__ == "__main__":
    results = Path(sys.argv[1] if len(sys.argv) > 1 else "results")
    demo_digest(results).save(Path(sys.argv[2] if len(sys.argv) > 2 else "tests/data/demo_digest"))
