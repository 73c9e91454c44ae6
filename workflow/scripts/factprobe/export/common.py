"""Helpers shared by the exporters: the suite tables they read."""

from __future__ import annotations

import os

import pandas as pd

from factprobe.io import read_table


def read_suite_table(paths: str | os.PathLike | list) -> pd.DataFrame:
    """One suite table from one file or several (e.g. ``prompts`` + ``translated_prompts``).

    The translate stage writes only new rows (docs/contracts.md), so concatenating is the
    whole table; columns present in one file only are null in the others' rows.
    """
    if isinstance(paths, str | os.PathLike):
        paths = [paths]
    frames = [read_table(p).to_pandas() for p in paths]
    return pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
