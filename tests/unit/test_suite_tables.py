"""One loader of a suite's merged prompts, candidates and forms."""

import pandas as pd
import pytest
from factprobe import contracts
from factprobe.io import write_frame
from factprobe.suite_tables import CONTRACT, load_suite_tables, read_concat


def part_frame(name: str, rows: list[str]) -> pd.DataFrame:
    """A frame with the contract columns of input ``name`` (nulls) and an ``id`` column."""
    cols = contracts.columns(CONTRACT[name])
    return pd.DataFrame({**{c: [None] * len(rows) for c in cols}, "id": rows})


def test_merges_the_parts_a_job_has_in_order(tmp_path):
    paths = {}
    for name, rows in {
        "prompts": ["p1", "p2"],
        "translated_prompts": ["p3"],
        "candidates": ["c1"],
        "appropt": ["c2", "c3"],
        "forms": ["f1"],
        "appropt_forms": ["f2"],
    }.items():
        paths[name] = str(tmp_path / f"{name}.parquet")
        write_frame(part_frame(name, rows), paths[name])
    tables = load_suite_tables(paths)
    assert tables.prompts["id"].tolist() == ["p1", "p2", "p3"]
    assert tables.candidates["id"].tolist() == ["c1", "c2", "c3"]
    assert tables.forms["id"].tolist() == ["f1", "f2"]  # no translated forms in this job
    assert tables.prompts.index.tolist() == [0, 1, 2]
    del paths["appropt"], paths["appropt_forms"], paths["translated_prompts"]
    assert load_suite_tables(paths).candidates["id"].tolist() == ["c1"]
    del paths["forms"]
    with pytest.raises(ValueError, match="input 'forms' is required"):
        load_suite_tables(paths)
    assert read_concat([]) is None and read_concat(None) is None


def test_each_part_is_read_through_its_contract(tmp_path):
    paths = {}
    for name in ("prompts", "candidates", "forms"):
        paths[name] = str(tmp_path / f"{name}.parquet")
        write_frame(part_frame(name, ["x"]), paths[name])
    paths["appropt"] = str(tmp_path / "appropt.parquet")
    write_frame(part_frame("candidates", ["y"]), paths["appropt"])  # lacks appropt's form, prompt_id, found
    with pytest.raises(
        contracts.ContractError, match=r"appropt.parquet: appropt table lacks column\(s\) \['form'"
    ):
        load_suite_tables(paths)
