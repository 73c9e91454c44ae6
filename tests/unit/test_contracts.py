"""Table contracts in code (factprobe.contracts) agree with docs/contracts.md, and their I/O and
id helpers check what they promise."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from factprobe import contracts

DOC = Path(__file__).resolve().parents[2] / "docs" / "contracts.md"
#: Doc paths of files that share another table's schema.
SAME_SCHEMA = {
    "{shard}.topk.parquet": "topk",
    "{model}.forms.parquet": "forms",
    "{shard}.candidates.parquet": "candidates",
    "{shard}.forms.parquet": "forms",
}
TYPE_WORDS = r"(?:str|int\d*|float\d*|bool|list<str>)"


def doc_rows() -> list[tuple[str, str]]:
    """``(output cell, columns cell)`` of every row of the "Paths, rules, tables" table."""
    rows = []
    for line in DOC.read_text().splitlines():
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]
        if len(cells) == 4 and cells[0] not in ("stage", "---"):
            rows.append((cells[2], cells[3]))
    return rows


def row_of(path: str) -> str:
    hits = [cols for out, cols in doc_rows() if f"`{path}`" in out]
    assert len(hits) == 1, f"docs/contracts.md: {len(hits)} rows for `{path}`"
    return hits[0]


@pytest.mark.parametrize("name", sorted(contracts.SCHEMAS))
def test_every_contract_column_is_documented(name):
    cols = row_of(contracts.PATHS[name])
    missing = [c for c in contracts.columns(name) if not re.search(rf"(?<![\w<]){re.escape(c)}(?!\w)", cols)]
    assert not missing, f"docs/contracts.md row of {name} lacks {missing}"


def test_every_documented_typed_column_is_in_the_contract():
    for name in contracts.SCHEMAS:
        cols = row_of(contracts.PATHS[name])
        documented = set(re.findall(rf"(?<![\w<])(\w+) {TYPE_WORDS}(?![\w])", cols))
        extra = documented - set(contracts.columns(name))
        assert not extra, f"docs/contracts.md documents {sorted(extra)} for {name}; add them to contracts.py"


def test_every_documented_parquet_table_has_a_contract():
    known = set(contracts.PATHS.values()) | set(SAME_SCHEMA)
    for out, _ in doc_rows():
        for path in re.findall(r"`([^`]+\.parquet)`", out):
            assert path in known, f"docs/contracts.md lists `{path}` but contracts.py has no schema for it"


def test_write_casts_to_the_contract_keeps_extra_columns_and_read_checks(tmp_path):
    frame = pd.DataFrame(
        {
            "prompt_id": ["a", "b"],
            "rank": [1, 2],  # int64 from pandas; the contract says int32
            "token_id": [5, 6],
            "token": ["x", "y"],
            "logprob": [-1.0, -2.5],
            "note": ["kept", "too"],
        }
    )
    path = tmp_path / "t" / "topk.parquet"
    contracts.write("topk", frame, path)
    schema = pq.read_schema(path)
    assert schema.field("rank").type == pa.int32() and schema.names[-1] == "note"
    assert list(tmp_path.joinpath("t").iterdir()) == [path]  # no temp file left behind
    back = contracts.read("topk", path)
    assert back["rank"].tolist() == [1, 2] and back["logprob"].tolist() == [-1.0, -2.5]
    with pytest.raises(
        contracts.ContractError, match=r"bad.parquet: topk table lacks column\(s\) \['token'\]"
    ):
        contracts.write("topk", frame.drop(columns="token"), tmp_path / "bad.parquet")
    assert not (tmp_path / "bad.parquet").exists()
    with pytest.raises(
        contracts.ContractError, match=r"topk.parquet: scores table lacks column\(s\) \['entity'"
    ):
        contracts.read("scores", path)
    with pytest.raises(contracts.ContractError, match=r"topk.rank is not int32"):
        contracts.write("topk", frame.assign(rank=["one", "two"]), tmp_path / "bad.parquet")


def test_id_helpers():
    assert contracts.id_int("Q42") == 42 and contracts.id_int("P19") == 19
    for bad in ("42", "Q", "Qx1", "L5", None):
        with pytest.raises(ValueError, match="not a Wikidata item/property id"):
            contracts.id_int(bad)
        assert contracts.id_int_or_none(bad) is None
    assert contracts.id_ints(["Q1", "P2", "Q30"]).tolist() == [1, 2, 30]
    assert contracts.id_ints([]).dtype == np.int64
    with pytest.raises(ValueError, match="'Berlin'"):
        contracts.id_ints(["Q64", "Berlin"])
    assert contracts.qid(42) == "Q42" and contracts.pid(19) == "P19"
    s = pd.Series([155, 183])
    assert contracts.qid_series(s).tolist() == ["Q155", "Q183"]
    assert contracts.pid_series(pd.Series([36])).tolist() == ["P36"]
    assert contracts.fact_id("Q155", "P36", "Q2844") == "Q155|P36|Q2844"
    ids = contracts.fact_id(pd.Series(["Q1", "Q2"]), pd.Series(["P3", "P3"]), pd.Series(["Q4", "Q5"]))
    assert ids.tolist() == ["Q1|P3|Q4", "Q2|P3|Q5"]
    assert contracts.split_fact_id("Q155|P36|Q2844") == ("Q155", "P36", "Q2844")
    with pytest.raises(ValueError, match="not a fact id"):
        contracts.split_fact_id("Q155|P36")
    assert contracts.pair_key("Q155", "P36") == "Q155|P36"


def test_text_tables_round_trip_with_their_dtypes(tmp_path):
    """CSV/TSV contracts: separator from the suffix, contract dtypes on read, empty strings kept."""
    matches = pd.DataFrame(
        {
            "n_candidates": [2, 0],
            "kind": ["entity", "entity"],
            "text": ["Paris", "Nowhere"],
            "id": ["Q90", ""],
            "matched_by": ["label", ""],
            "note": ["x", "y"],
        }
    )
    path = tmp_path / "released_matches.csv"
    contracts.write_text("released_matches", matches, path)
    # Contract columns first, in contract order; the extra column after them.
    assert path.read_text().splitlines()[0] == "kind,text,id,matched_by,n_candidates,note"
    back = contracts.read_text("released_matches", path)
    assert back["id"].tolist() == ["Q90", ""] and back["n_candidates"].dtype == np.int64
    stats = pd.DataFrame({"property": ["P17"], **{c: [1] for c in contracts.columns("diff_stats")[1:]}})
    contracts.write_text("diff_stats", stats, tmp_path / "stats.tsv")
    assert "\t" in (tmp_path / "stats.tsv").read_text().splitlines()[0]
    assert contracts.read_text("diff_stats", tmp_path / "stats.tsv")["total"].tolist() == [1]


def test_text_tables_name_the_file_on_bad_values(tmp_path):
    path = tmp_path / "released_matches.csv"
    path.write_text("kind,text,id,matched_by,n_candidates\nentity,Paris,Q90,label,many\n")
    with pytest.raises(contracts.ContractError, match=r"released_matches.csv: released_matches.n_candidates"):
        contracts.read_text("released_matches", path)
    path.write_text("kind,text\nentity,Paris\n")
    with pytest.raises(
        contracts.ContractError, match=r"lacks column\(s\) \['id', 'matched_by', 'n_candidates'\]"
    ):
        contracts.read_text("released_matches", path)


def test_translate_stats_contract_names_every_drop_reason():
    from factprobe.translate.sentence import REASONS, STATS_COLUMNS

    assert contracts.columns("translate_stats") == ["suite", *STATS_COLUMNS]
    assert [
        c[len("dropped_") :] for c in STATS_COLUMNS if c.startswith("dropped_") and c != "dropped_share"
    ] == list(REASONS)
