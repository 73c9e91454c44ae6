"""One loader of a suite's merged prompts, candidates and forms (issue 11 item 5)."""

import pandas as pd
import pytest
from factprobe.io import write_frame
from factprobe.suite_tables import load_suite_tables, read_concat


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
        write_frame(pd.DataFrame({"id": rows}), paths[name])
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
