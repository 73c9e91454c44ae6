"""summarize_metrics refuses a suite whose score table covers fewer facts than its facts table."""

import pandas as pd
import pytest
from factprobe import contracts
from factprobe.metrics.coverage import check_suite_scores, missing_facts, require_all_facts_scored

FACTS = ["Q1|P36|Q101", "Q2|P36|Q102", "Q3|P36|Q103", "Q4|P36|Q104"]


def test_missing_facts_sorted():
    assert missing_facts(FACTS, ["Q3|P36|Q103", "Q1|P36|Q101"]) == ["Q2|P36|Q102", "Q4|P36|Q104"]


def test_fewer_scored_facts_refused_naming_both_counts():
    with pytest.raises(ValueError) as err:
        require_all_facts_scored("knowledge", "gpt2", FACTS, FACTS[:3], "facts.parquet", "gpt2.parquet")
    message = str(err.value)
    assert "suite 'knowledge', model 'gpt2'" in message
    assert "gpt2.parquet scores 3 facts but the facts table facts.parquet has 4" in message
    assert "missing: Q4|P36|Q104" in message
    require_all_facts_scored("knowledge", "gpt2", FACTS, FACTS + FACTS[:1], "f", "s")  # all covered


def write(name, frame, path):
    full = frame.assign(**{c: None for c in contracts.columns(name) if c not in frame.columns})
    contracts.write(name, full[contracts.columns(name)], path)


def test_suite_tables_checked_per_model(tmp_path):
    write("facts", pd.DataFrame({"fact_id": FACTS}), tmp_path / "facts.parquet")
    # model a: two rows per fact, every fact; model b: fact Q2 lost with a shard
    scores_a = pd.DataFrame({"fact_id": FACTS * 2, "prompt_id": "p", "entity": "Q", "form": "f"})
    scores_b = scores_a[scores_a["fact_id"] != FACTS[1]]
    write("scores", scores_a, tmp_path / "a.parquet")
    write("scores", scores_b, tmp_path / "b.parquet")
    check_suite_scores("knowledge", ["a"], tmp_path / "facts.parquet", [str(tmp_path / "a.parquet")])
    with pytest.raises(
        ValueError, match=r"model 'b': .*b\.parquet scores 3 facts but the facts table .* has 4"
    ):
        check_suite_scores(
            "knowledge",
            ["a", "b"],
            tmp_path / "facts.parquet",
            [str(tmp_path / "a.parquet"), str(tmp_path / "b.parquet")],
        )
