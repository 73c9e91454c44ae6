"""The demo digest ignores Parquet layout and row order, and sees every content change."""

import pyarrow as pa
import pyarrow.parquet as pq
from demo_digest import compare, demo_digest, table_digest


def test_digest_ignores_row_order_and_layout(tmp_path):
    table = pa.table({"a": [3, 1, 2], "b": ["x", "y", None], "c": [0.1, 0.25, float("inf")]})
    pq.write_table(table, tmp_path / "one.parquet", compression="zstd", row_group_size=1)
    pq.write_table(table.take([2, 0, 1]), tmp_path / "two.parquet", compression="snappy")
    assert table_digest(tmp_path / "one.parquet") == table_digest(tmp_path / "two.parquet")


def test_digest_sees_a_changed_cell_and_compare_names_it(tmp_path):
    (tmp_path / "t").mkdir()
    pq.write_table(pa.table({"a": [1, 2]}), tmp_path / "t/x.parquet")
    (tmp_path / "t/s.tsv").write_text("p\tn\nP17\t3\n")
    before = demo_digest(tmp_path)
    assert set(before) == {"t/x.parquet", "t/s.tsv"} and before["t/s.tsv"]["rows"] == 1
    pq.write_table(pa.table({"a": [1, 3]}), tmp_path / "t/x.parquet")
    assert compare(before, demo_digest(tmp_path)) == ["t/x.parquet: content changed (2 rows)"]
    assert compare(before, before) == []
