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


def _scores(tmp_path, values):
    table = pa.table({"fact": ["f1", "f2", "f3"], "logprob": values, "forms": [[1.0, 2.0]] * 3})
    pq.write_table(table, tmp_path / "s.parquet")
    return table_digest(tmp_path / "s.parquet")


def test_float_noise_in_the_last_bits_is_not_a_change(tmp_path):
    """A value next to a rounding boundary (the CI failure: 6-digit rendering flipped) stays equal."""
    before = {"s.parquet": _scores(tmp_path, [-1.2345649999, -7.5, -0.25])}
    after = {"s.parquet": _scores(tmp_path, [-1.2345650001, -7.5000001, -0.25])}
    assert compare(before, after) == []


def test_a_real_float_change_is_seen_even_when_the_sum_is_kept(tmp_path):
    before = {"s.parquet": _scores(tmp_path, [-1.0, -2.0, -3.0])}
    swapped = {"s.parquet": _scores(tmp_path, [-2.0, -1.0, -3.0])}  # same multiset and sum, other rows
    (problem,) = compare(before, swapped)
    assert problem.startswith("s.parquet: logprob values moved")
    nudged = {"s.parquet": _scores(tmp_path, [-1.0, -2.001, -3.0])}
    assert compare(before, nudged) != []
