"""Ω's members of a type set: one type's members are a view of the by-type table,
unions of several are memoised with least-recently-used eviction; every answer equals the
members worked out from the types table directly."""

import numpy as np
import pandas as pd
import pytest
from factprobe.distractors import omega as om
from factprobe.distractors.omega import Omega


def _world(seed):
    rng = np.random.default_rng(seed)
    # A giant type (0), a human-like one (1), a long tail (2..59); duplicated (id, type) rows.
    ids = np.arange(1, 2001)
    rows = [(int(e), 0) for e in ids[rng.random(len(ids)) < 0.4]]
    rows += [(int(e), 1) for e in ids[rng.random(len(ids)) < 0.1]]
    rows += [(int(e), int(2 + rng.zipf(1.5) % 58)) for e in ids for _ in range(rng.integers(0, 3))]
    rows += rows[::7]
    types = pd.DataFrame(rows, columns=["id", "type"]).sample(frac=1.0, random_state=seed)
    forms = pd.DataFrame({"entity": ids, "form": [f"e{e}" for e in ids]})
    valid = pd.DataFrame({"subject": [1], "property": [2], "object": [3]})
    return Omega(types, forms, valid, form_threshold=None), types, rng


def naive_members(types: pd.DataFrame, wanted) -> list[int]:
    return sorted(set(types.loc[types["type"].isin(set(int(t) for t in wanted)), "id"].tolist()))


@pytest.mark.parametrize("cache", [2, 4096])
def test_members_equal_the_types_table_whatever_the_cache(monkeypatch, cache):
    monkeypatch.setattr(om, "MEMBERS_CACHE", cache)
    omega, types, rng = _world(cache)
    sets = [[0], [1], [0, 1], [1, 0, 1], [0, 5], [7], [999], [999, 3], [], [3, 4, 5, 6], [0, 1, 2, 3]]
    sets += [rng.choice(60, rng.integers(1, 4)).tolist() for _ in range(40)]
    for _ in range(3):  # again: answers from the cache (or rebuilt after eviction) are the same
        for wanted in sets:
            got = omega.members(np.array(wanted, dtype=np.int64))
            assert got.dtype == np.int64
            assert got.tolist() == naive_members(types, wanted) == omega._members(np.unique(wanted)).tolist()
            assert not got.flags.writeable  # shared: nobody may change it in place
    held = omega.__dict__.get("_members_cache", {})
    assert len(held) <= cache
    assert all(len(k) > 1 for k in held)  # one type is a view, never held


def test_one_type_is_a_view_of_the_table_and_a_giant_class_is_not_copied():
    omega, types, _ = _world(1)
    giant = omega.members(np.array([0]))
    assert np.shares_memory(giant, omega._by_type[2])
    assert omega.members(np.array([0, 0])).base is giant.base  # the same set, any spelling
    # An entity's declared types give back the entity among their members.
    for e in types["id"].unique()[:200].tolist():
        assert e in set(omega.members(omega.types_of(e)).tolist())
