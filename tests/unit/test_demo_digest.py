"""The demo digest's tolerance policy (tests/demo_digest.py) on hand-made tables.

Exact for ids and categorical cells; floats value by value within FLOAT_ATOL; top-k lists and
first-token ranks may differ only between tokens tied within the tolerance.
"""

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from demo_digest import FLOAT_ATOL, Digest, compare, demo_digest

NOISE = FLOAT_ATOL / 10  # well inside the tolerance: last-bit differences of another CPU


def write(folder, name, table):
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path)


def digest_of(folder):
    return demo_digest(folder, with_keys=True)


def check(before_dir, after_dir):
    before = demo_digest(before_dir)
    after, keys = digest_of(after_dir)
    return compare(before, after, keys)


def test_digest_ignores_row_order_and_layout(tmp_path):
    table = pa.table({"a": [3, 1, 2], "b": ["x", "y", None], "c": [0.1, 0.25, float("inf")]})
    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    pq.write_table(table, tmp_path / "one/t.parquet", compression="zstd", row_group_size=1)
    pq.write_table(table.take([2, 0, 1]), tmp_path / "two/t.parquet", compression="snappy")
    assert check(tmp_path / "one", tmp_path / "two") == []


def test_digest_round_trips_through_its_two_files(tmp_path):
    write(tmp_path / "r", "t/x.parquet", pa.table({"a": ["p", "q"], "v": [0.5, -1.25]}))
    (tmp_path / "r/t/s.tsv").write_text("p\tn\nP17\t3\n")
    digest = demo_digest(tmp_path / "r")
    digest.save(tmp_path / "d")
    loaded = Digest.load(tmp_path / "d")
    assert loaded.tables == digest.tables and set(loaded.values) == set(digest.values)
    assert compare(loaded, digest) == []
    assert loaded.tables["t/s.tsv"]["rows"] == 1


def test_a_changed_id_or_dropped_row_is_seen(tmp_path):
    write(tmp_path / "a", "x.parquet", pa.table({"a": [1, 2], "v": [0.1, 0.2]}))
    write(tmp_path / "b", "x.parquet", pa.table({"a": [1, 3], "v": [0.1, 0.2]}))
    write(tmp_path / "c", "x.parquet", pa.table({"a": [1], "v": [0.1]}))
    assert check(tmp_path / "a", tmp_path / "b") == ["x.parquet: content changed (2 rows)"]
    assert check(tmp_path / "a", tmp_path / "c") == ["x.parquet: rows 2 -> 1"]


def scores(values, forms=((1.0, 2.0),) * 3):
    return pa.table({"fact": ["f1", "f2", "f3"], "logprob": values, "forms": [list(f) for f in forms]})


def test_float_noise_below_the_tolerance_is_not_a_change(tmp_path):
    write(tmp_path / "a", "s.parquet", scores([-1.2345649999, -7.5, -0.25]))
    write(tmp_path / "b", "s.parquet", scores([-1.2345650001, -7.5 + NOISE, -0.25 - NOISE]))
    assert check(tmp_path / "a", tmp_path / "b") == []


def test_one_score_moved_by_a_hundredth_of_a_nat_is_seen(tmp_path):
    write(tmp_path / "a", "s.parquet", scores([-1.0, -2.0, -300.0]))
    write(tmp_path / "b", "s.parquet", scores([-1.0, -2.01, -300.0]))
    (problem,) = check(tmp_path / "a", tmp_path / "b")
    assert problem.startswith("s.parquet: logprob values moved beyond the tolerance in 1 of 3 rows")
    # the same change on the largest magnitude is seen too (the relative part stays below 0.01)
    write(tmp_path / "c", "s.parquet", scores([-1.0, -2.0, -300.01]))
    assert check(tmp_path / "a", tmp_path / "c") != []


def test_swapped_values_with_the_same_sum_are_seen(tmp_path):
    write(tmp_path / "a", "s.parquet", scores([-1.0, -2.0, -3.0]))
    write(tmp_path / "b", "s.parquet", scores([-2.0, -1.0, -3.0]))
    assert check(tmp_path / "a", tmp_path / "b") != []


def test_a_float_inside_a_list_and_a_new_non_finite_value_are_seen(tmp_path):
    write(tmp_path / "a", "s.parquet", scores([-1.0, -2.0, -3.0]))
    write(tmp_path / "b", "s.parquet", scores([-1.0, -2.0, -3.0], forms=((1.0, 2.0), (1.0, 2.5), (1.0, 2.0))))
    write(tmp_path / "c", "s.parquet", scores([-1.0, float("-inf"), -3.0]))
    assert check(tmp_path / "a", tmp_path / "b") != []
    assert check(tmp_path / "a", tmp_path / "c") != []


def topk(rows):
    prompt, rank, token, lp = zip(*rows, strict=True)
    return pa.table(
        {
            "prompt_id": list(prompt),
            "rank": pa.array(rank, pa.int32()),
            "token_id": pa.array(token, pa.int64()),
            "token": [f"t{t}" for t in token],
            "logprob": list(lp),
        }
    )


REF = [
    ("p1", 1, 10, -1.0),
    ("p1", 2, 11, -2.0),
    ("p1", 3, 12, -3.0),
    ("p2", 1, 20, -0.5),
    ("p2", 2, 21, -4.0),
]


def test_top_k_ranks_may_swap_only_between_tied_tokens(tmp_path):
    tied = [("p1", 1, 10, -1.0), ("p1", 2, 11, -2.0), ("p1", 3, 12, -2.0 - NOISE)]
    tied_swapped = [("p1", 1, 10, -1.0), ("p1", 2, 12, -2.0 - NOISE / 2), ("p1", 3, 11, -2.0)]
    write(tmp_path / "a", "m.topk.parquet", topk(tied))
    write(tmp_path / "b", "m.topk.parquet", topk(tied_swapped))
    assert check(tmp_path / "a", tmp_path / "b") == []
    # a real swap (1 nat apart) is a change
    write(tmp_path / "c", "m.topk.parquet", topk(REF))
    swapped = [("p1", 1, 11, -1.0), ("p1", 2, 10, -2.0), *REF[2:]]
    write(tmp_path / "d", "m.topk.parquet", topk(swapped))
    assert check(tmp_path / "c", tmp_path / "d") != []


def test_top_k_boundary_token_may_change_only_when_tied_with_the_kth(tmp_path):
    write(tmp_path / "a", "m.topk.parquet", topk(REF))
    # token 13 ties with the 3rd of p1 and takes its place: allowed
    write(tmp_path / "b", "m.topk.parquet", topk([*REF[:2], ("p1", 3, 13, -3.0 + NOISE), *REF[3:]]))
    assert check(tmp_path / "a", tmp_path / "b") == []
    # token 13 enters far above the boundary: a change
    write(tmp_path / "c", "m.topk.parquet", topk([*REF[:2], ("p1", 3, 13, -2.5), *REF[3:]]))
    assert check(tmp_path / "a", tmp_path / "c") != []
    # a prompt lost: a change of the exact part
    write(tmp_path / "d", "m.topk.parquet", topk(REF[:3]))
    assert check(tmp_path / "a", tmp_path / "d")[0].startswith("m.topk.parquet: rows 5 -> 3")


def score_table(first_logprobs, first_ranks):
    n = len(first_ranks)
    return pa.table(
        {
            "prompt_id": ["p1"] * n,
            "entity": [f"Q{i}" for i in range(n)],
            "first_logprob": first_logprobs,
            "first_rank": first_ranks,
        }
    )


@pytest.mark.parametrize(
    ("first", "before", "after", "ok"),
    [
        (-2.0 - NOISE, 2.0, 3.0, True),  # tied with token 11 (-2.0): rank 2 or 3
        (-2.0 - NOISE, 2.0, 1.0, False),  # token 10 (-1.0) is clearly ahead
        (-3.0 + NOISE, 3.0, float("inf"), True),  # tied with the 3rd and last: may fall out of the top 3
        (-2.5, 3.0, float("inf"), False),  # clearly inside the top 3
    ],
)
def test_first_rank_moves_only_inside_its_tie_window(tmp_path, first, before, after, ok):
    write(tmp_path / "a", "s/m.topk.parquet", topk(REF))
    write(tmp_path / "b", "s/m.topk.parquet", topk(REF))
    write(tmp_path / "a", "s/m.parquet", score_table([first], [before]))
    write(tmp_path / "b", "s/m.parquet", score_table([first], [after]))
    assert (check(tmp_path / "a", tmp_path / "b") == []) is ok
