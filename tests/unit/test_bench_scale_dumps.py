"""benchmarks/scale_dumps.py: a small pair's composition, read back with plain
``json`` by benchmarks/check_scale_dumps.py, is within the Wikidata-calibrated ranges."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import check_scale_dumps  # noqa: E402
import scale_dumps  # noqa: E402

N = 5000


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    out = tmp_path_factory.mktemp("scale_dumps")
    stats = scale_dumps.write_dumps(N, out, workers=2)
    return out, stats


def test_composition_of_a_small_pair_is_in_the_target_ranges(pair):
    out, stats = pair
    old = out / "wikidata-20141201-scale.json.gz"
    # 200 countries and 7 continents are hubs at any N (4 % of 5,000 items, 0.1 % at 200 k): the
    # per-item figures leave them and the class items out; the class count is over all items.
    comp = check_scale_dumps.composition(old, hubs=False)
    rows = check_scale_dumps.check(comp, N)
    assert [r for r in rows if not r[-1] and r[0] != "classes"] == []
    assert check_scale_dumps.composition(old)["classes"] >= N / 200
    assert comp["largest_class"] == "Q13442814" and comp["second_class"] == "Q5"
    assert stats["20141201"]["items"] == stats["20190201"]["items"] == N
    assert stats["20141201"]["properties"] > 1000  # the demo's property entities


def test_newer_dump_differs_by_one_item_value_in_about_three_percent_of_items(pair):
    out, stats = pair
    edits = check_scale_dumps.check_edits(
        *(out / f"wikidata-{d}-scale.json.gz" for d in ("20141201", "20190201"))
    )
    assert edits["bad_edits"] == 0
    assert edits["edited"] == stats["20190201"]["edited_items"]
    assert 0.02 * N <= edits["edited"] <= 0.035 * N  # 3 % of the ordinary items (binomial)


def test_the_long_tail_of_classes_grows_with_n():
    assert scale_dumps.Layout(200_000).n_tail >= 1000
    small, large = scale_dumps.Layout(20_000), scale_dumps.Layout(200_000)
    assert large.n_tail >= 9 * small.n_tail


def test_chunks_are_deterministic():
    scale_dumps._STATE["layout"] = scale_dumps.Layout(N)
    scale_dumps._STATE["frag"] = scale_dumps.Fragments()
    assert scale_dumps.build_chunk((1000, 1400, 0.03, None)) == scale_dumps.build_chunk(
        (1000, 1400, 0.03, None)
    )
