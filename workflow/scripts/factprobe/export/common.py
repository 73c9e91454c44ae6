"""Helpers shared by the exporters: atomic folders and the suite tables they read."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pandas as pd

from factprobe.io import read_table


@contextmanager
def atomic_folder(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary sibling folder; it replaces ``path`` only if the block succeeds.

    An export killed half-way leaves no folder that looks complete (DESIGN.md: atomic outputs).
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent))
    try:
        yield tmp
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o777 & ~umask)
        if target.exists():
            shutil.rmtree(target)
        os.replace(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def read_suite_table(paths: str | os.PathLike | list) -> pd.DataFrame:
    """One suite table from one file or several (e.g. ``prompts`` + ``translated_prompts``).

    The translate stage writes only new rows (docs/contracts.md), so concatenating is the
    whole table; columns present in one file only are null in the others' rows.
    """
    if isinstance(paths, str | os.PathLike):
        paths = [paths]
    frames = [read_table(p).to_pandas() for p in paths]
    return pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
