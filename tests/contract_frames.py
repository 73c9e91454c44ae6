"""Test frames that hold every contract column: the library reads contract columns without
checking that they exist, so a hand-made test table names the columns it cares about and gets
the rest, empty, from here."""

from __future__ import annotations

import pandas as pd
import pyarrow as pa
from factprobe import contracts


def _empty_value(field: pa.Field) -> object:
    """What an absent column holds: missing strings (None: the library's defaults for missing
    values apply, as for a written table's nulls), 0 for integers, NaN for floats, False, []."""
    if pa.types.is_string(field.type):
        return None
    if pa.types.is_integer(field.type):
        return 0
    if pa.types.is_boolean(field.type):
        return False
    if pa.types.is_list(field.type):
        return None  # filled per row below
    return float("nan")


def full(name: str, frame: pd.DataFrame, **values: object) -> pd.DataFrame:
    """``frame`` with the contract columns of table ``name`` it lacks added (``values`` where
    given, else missing/empty); its own columns, and their order, are kept."""
    out = frame.copy()
    for field in contracts.SCHEMAS[name]:
        if field.name in out.columns:
            continue
        if field.name in values:
            out[field.name] = values[field.name]
        elif pa.types.is_list(field.type):
            out[field.name] = [[] for _ in range(len(out))]
        else:
            out[field.name] = _empty_value(field)
    return out


def full_inputs(inputs):
    """A metrics ``SuiteInputs`` whose tables (scores, prompts, candidates, facts, forms) hold
    every contract column (:func:`full`); returns the same object."""
    for table in ("scores", "prompts", "candidates", "facts", "forms"):
        frame = getattr(inputs, table)
        if frame is not None:
            setattr(inputs, table, full(table, frame))
    return inputs


def full_prompt_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """:func:`factprobe.metrics.common.prompt_frame` of a hand prompts table (:func:`full` first)."""
    from factprobe.metrics.common import prompt_frame

    return prompt_frame(full("prompts", frame))
