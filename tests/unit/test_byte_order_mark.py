"""Tables a user writes may start with a UTF-8 byte-order mark (Excel writes one): read as if
it were not there, never as part of the first column's name."""

from pathlib import Path

import pandas as pd
from factprobe import contracts
from factprobe.config_check import read_registry
from factprobe.diff.single_value import read_list
from factprobe.metrics.meta import read_human_scores
from factprobe.probes.importers import read_triples

ROOT = Path(__file__).resolve().parents[2]
SCHEMAS = ROOT / "workflow/schemas"
BOM = "\ufeff"


def test_models_registry_with_a_byte_order_mark(tmp_path):
    plain = (ROOT / "config/models.tsv").read_text(encoding="utf-8")
    path = tmp_path / "models.tsv"
    path.write_text(BOM + plain, encoding="utf-8")
    expected = read_registry(ROOT / "config/models.tsv", SCHEMAS / "models.schema.yaml", "name")
    assert read_registry(path, SCHEMAS / "models.schema.yaml", "name") == expected


def test_user_tables_with_a_byte_order_mark(tmp_path):
    (tmp_path / "single.tsv").write_text(BOM + "property\tlabel\nP19\tplace of birth\nP36\tcapital\n")
    assert read_list(tmp_path / "single.tsv") == {19, 36}
    (tmp_path / "human.tsv").write_text(BOM + "subject\trelation\tobject\tscore\nQ90\tP1376\tQ142\t0.75\n")
    human = read_human_scores(tmp_path / "human.tsv")
    assert human["subject"].tolist() == ["Q90"] and human["score"].tolist() == [0.75]
    (tmp_path / "triples.tsv").write_text(BOM + "subject\tproperty\tobject\nQ90\tP1376\tQ142\n")
    triples = read_triples(tmp_path / "triples.tsv")
    assert triples[["subject", "property", "object"]].values.tolist() == [["Q90", "P1376", "Q142"]]


def test_contract_csv_with_a_byte_order_mark(tmp_path):
    frame = pd.DataFrame({c: [""] for c in contracts.columns("control_check")})
    path = tmp_path / "check.csv"
    frame.to_csv(path, index=False, encoding="utf-8-sig")
    assert path.read_bytes().startswith(BOM.encode("utf-8"))
    assert list(contracts.read_csv("control_check", path).columns) == contracts.columns("control_check")
