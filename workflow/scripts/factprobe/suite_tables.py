"""One loader of a suite's merged prompts, candidates and forms, for scoring, metrics and control.

A suite's prompts are the probes stage's plus the translate stage's (multilingual suites); its
candidates are the retrieved ones plus a model's ApprOpt list; its forms are those of the
candidates plus the translated and ApprOpt ones. Rules name these inputs as in ``PARTS``; a
consumer reads whichever of them the job has, so every stage sees the same merged tables.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from . import contracts
from .io import read_table

#: Input names of each merged table, in concatenation order (rule inputs in workflow/rules).
PARTS = {
    "prompts": ("prompts", "translated_prompts"),
    "candidates": ("candidates", "appropt"),
    "forms": ("forms", "translated_forms", "appropt_forms"),
}
#: The contract (docs/contracts.md) each input is read and checked with.
CONTRACT = {
    "prompts": "prompts",
    "translated_prompts": "translated_prompts",
    "candidates": "candidates",
    "appropt": "appropt",
    "forms": "forms",
    "translated_forms": "translated_forms",
    "appropt_forms": "forms",
}


@dataclass
class SuiteTables:
    """A suite's merged prompts, candidates and candidate forms."""

    prompts: pd.DataFrame
    candidates: pd.DataFrame
    forms: pd.DataFrame


def read_concat(
    paths: str | Path | Iterable[str | Path] | None, names: str | Iterable[str] | None = None
) -> pd.DataFrame | None:
    """Parquet file(s) read and concatenated in order; None when no path is given.

    ``names``: the contract (docs/contracts.md) of every file, or one per file, checked on read;
    None reads the files as they are."""
    if paths is None:
        return None
    items = [paths] if isinstance(paths, (str, Path)) else list(paths)
    if not items:
        return None
    if names is None:
        frames = [read_table(p).to_pandas() for p in items]
    else:
        contract = [names] * len(items) if isinstance(names, str) else list(names)
        frames = [contracts.read(name, p) for name, p in zip(contract, items, strict=True)]
    return frames[0] if len(frames) == 1 else pd.concat(frames, ignore_index=True)


def load_suite_tables(inputs: Mapping) -> SuiteTables:
    """The merged tables from a job's named inputs (``snakemake.input`` or a dict of paths).

    ``prompts``, ``candidates`` and ``forms`` are required; the other ``PARTS`` are added when
    the job has them.
    """
    names = set(inputs.keys())
    merged = {}
    for table, parts in PARTS.items():
        if table not in names:
            raise ValueError(f"suite tables: input {table!r} is required (have {sorted(names)})")
        paths, contract = [], []
        for part in parts:
            if part in names:
                value = inputs[part]
                files = [value] if isinstance(value, (str, Path)) else list(value)
                paths += files
                contract += [CONTRACT[part]] * len(files)
        merged[table] = read_concat(paths, contract)
    return SuiteTables(**merged)
