"""The user-facing CSV tables (summary, leaderboard, paired, control_check) have contracts with
dtypes, and read back through contracts.read_csv as the report and tests need them."""

import numpy as np
import pandas as pd
import pytest
from factprobe import contracts


def test_summary_round_trip_keeps_empty_keys_and_fills_integers(tmp_path):
    path = tmp_path / "summary.csv"
    # Hand-written, as pandas writes it: an empty shots / strategy, a suite-level row (n_facts 0, bin 3).
    path.write_text(
        "model,measure,value,strategy,n,lang,verbalization,style,shots,bin,n_facts,level\n"
        "m,k_avg,0.75,random,5,en,template,statement,,-1,4,fact\n"
        "m,belief_calib_acc,,,0,en,template,statement,,3,0,suite\n"
        "m,recall,0.5,,1,en,template,statement,,,2,fact\n"
    )
    back = contracts.read_csv("summary", path)
    assert back["strategy"].tolist() == ["random", "", ""] and back["shots"].tolist() == ["", "", ""]
    assert back["bin"].tolist() == [-1, 3, -1]  # an empty bin reads as -1 (the field's "missing")
    assert back["n"].dtype == np.int64 and back["n_facts"].tolist() == [4, 0, 2]
    assert back["value"].iloc[0] == 0.75 and np.isnan(back["value"].iloc[1])


def test_leaderboard_written_and_read_through_its_contract(tmp_path):
    board = pd.DataFrame(
        {
            "suite": ["s", "s"],
            "measure": ["k_avg", "belief_consist"],
            "strategy": ["random", ""],
            "n": [5, 0],
            "model": ["a", "a"],
            "value": [0.5, 0.25],
            "ci_low": [0.4, np.nan],
            "ci_high": [0.6, np.nan],
            "n_facts": pd.array([8, None], dtype="Int64"),
            "rank": pd.array([1, 1], dtype="Int64"),
            "n_used": [5.0, np.nan],
            "chance": [0.5, np.nan],
            "same_as": ["", ""],
        }
    )
    contracts.write_csv("leaderboard", board, tmp_path / "leaderboard.csv")
    back = contracts.read_csv("leaderboard", tmp_path / "leaderboard.csv")
    assert back["n_facts"].tolist() == [8, 0] and back["strategy"].tolist() == ["random", ""]
    assert np.isnan(back["ci_low"].iloc[1]) and back["same_as"].tolist() == ["", ""]
    with pytest.raises(contracts.ContractError, match="lacks column"):
        contracts.write_csv("leaderboard", board.drop(columns="same_as"), tmp_path / "bad.csv")
