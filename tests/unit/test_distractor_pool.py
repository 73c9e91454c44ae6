"""Fluent-mLAMA distractor pool (§3.1, reference ``processor.py``) on a hand-made
dump table: the pool is every object of the relation in the dump, in hash order, not only the
objects of the suite's sampled facts."""

import numpy as np
import pandas as pd
import pytest
from factprobe.distractors.omega import Omega
from factprobe.distractors.pool import relation_pools
from factprobe.distractors.retrieve import retrieve
from factprobe.hashing import stable_hash
from factprobe.settings import Retrieve

# Countries 1..9 (type 100) and one city 50 (type 200). P47 (shares border with) holds in the
# dump for (1,2) (3,4) (5,6) (7,8) (9,8); (1, P36, 50) is another relation. The suite sampled
# two facts only: (1, P47, 2) and (3, P47, 4).
VALID = pd.DataFrame(
    [(1, 47, 2), (3, 47, 4), (5, 47, 6), (7, 47, 8), (9, 47, 8), (1, 36, 50)],
    columns=["subject", "property", "object"],
)
TYPES = pd.DataFrame({"id": [*range(1, 10), 50], "type": [100] * 9 + [200]})
NAMES = {1: "Aland", 2: "Borduria", 3: "Corto", 4: "Dorne", 5: "Elbonia", 6: "Freedonia"}
NAMES |= {7: "Genovia", 8: "Hyrule", 9: "Ivalice", 50: "Capitol"}
FORMS = pd.DataFrame(
    [(f"Q{e}", "en", name, "label") for e, name in NAMES.items()]
    # Freedonia (6) has no Czech form: it cannot be a Czech distractor.
    + [(f"Q{e}", "cs", name + "a", "label") for e, name in NAMES.items() if e != 6],
    columns=["entity", "lang", "form", "source"],
)
FACTS = pd.DataFrame(
    {
        "fact_id": ["Q1|P47|Q2", "Q3|P47|Q4"],
        "subject": ["Q1", "Q3"],
        "property": ["P47", "P47"],
        "object": ["Q2", "Q4"],
        "objects": [["Q2"], ["Q4"]],
    }
)


def hash_order(prop, lang, ents):
    return sorted(ents, key=lambda e: stable_hash(prop, lang, f"Q{e}"))


def omega():
    forms = pd.DataFrame({"entity": [int(e[1:]) for e in FORMS["entity"]], "form": FORMS["form"]})
    return Omega(TYPES, forms, VALID, form_threshold=None)


def test_relation_pool_holds_every_object_of_the_relation_in_the_dump():
    pools = relation_pools(FACTS, FORMS, ["en", "cs"], VALID)
    # Objects of P47 in the dump: 2, 4, 6, 8 (not the subjects, not P36's city 50).
    assert pools[("P47", "en")].tolist() == hash_order("P47", "en", [2, 4, 6, 8])
    assert pools[("P47", "cs")].tolist() == hash_order("P47", "cs", [2, 4, 8])
    # The former rule: only the suite's own objects.
    suite = relation_pools(FACTS, FORMS, ["en", "cs"])
    assert suite[("P47", "en")].tolist() == hash_order("P47", "en", [2, 4])


def _settings(source, size=50):
    return Retrieve(
        strategies=["pool"],
        n=10,
        pool_size=size,
        search="exact",
        languages=["en", "cs"],
        dump="20190201",
        form_threshold=None,
        valid_ranks="non_deprecated",
        ef_search=200,
        strategy_settings={"pool": {"source": source}},
    )


@pytest.mark.parametrize("size", [50, 2])
def test_retrieve_draws_pool_distractors_from_the_dump(size):
    om = omega()
    cand = retrieve(FACTS, om, _settings("relation", size), {"entity_forms": FORMS})
    pool = cand[(cand["strategy"] == "pool") & (cand["fact_id"] == "Q1|P47|Q2")]
    # Fact (1, P47, 2): Ω drops the object itself; 4, 6, 8 are countries without (1, P47, ·).
    want_en = hash_order("P47", "en", [4, 6, 8])[:size]
    want_cs = hash_order("P47", "cs", [4, 8])[:size]
    got = {lang: g.sort_values("rank")["entity"].tolist() for lang, g in pool.groupby("lang")}
    assert got == {"en": [f"Q{e}" for e in want_en], "cs": [f"Q{e}" for e in want_cs]}
    # The suite-only pool of the same fact is the other sampled object alone.
    cand = retrieve(FACTS, om, _settings("suite", size), {"entity_forms": FORMS})
    pool = cand[(cand["strategy"] == "pool") & (cand["fact_id"] == "Q1|P47|Q2")]
    assert sorted(pool["entity"]) == ["Q4", "Q4"]
    assert np.array_equal(pool["rank"].to_numpy(), [1, 1])


# --- a pool indexed by declared type (per-fact cost flat in the pool's size) -----------


def _random_world(seed):
    """A pool of 3,000 entities in a random order over 40 types of very different sizes (a giant
    type, a long tail), some with 2-3 types, some untyped, some type rows listed twice; forms
    with shared names (clause 3) and valid objects (clause 2) to reject within a type."""
    rng = np.random.default_rng(seed)
    ents = np.arange(1, 3001)
    giant = rng.random(len(ents)) < 0.4
    rows = [(e, 900) for e in ents[giant]]
    for e in ents[~giant]:
        k = rng.choice([0, 1, 1, 1, 2, 3])
        rows += [(int(e), 901 + int(rng.zipf(1.6)) % 39) for _ in range(k)]
    rows += rows[:50]  # duplicated (id, type) rows
    types = pd.DataFrame(rows, columns=["id", "type"])
    names = [f"n{int(x)}" for x in rng.integers(0, 400, len(ents))]
    forms = pd.DataFrame({"entity": ents, "form": names})
    forms = forms[rng.random(len(forms)) < 0.95]  # some entities without a form
    subj = rng.integers(5000, 5050, 600)
    valid = pd.DataFrame({"subject": subj, "property": 47, "object": rng.choice(ents, 600)})
    om = Omega(types, forms, valid, form_threshold=None)
    pool = rng.permutation(np.append(ents, [7000, 7001]))  # 7000, 7001: in no types table
    return om, pool, subj, rng


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_typed_pool_gives_the_whole_pool_filter(seed):
    from factprobe.distractors.pool import TypedPool, pool_distractors

    om, pool, subj, rng = _random_world(seed)
    typed = TypedPool(pool, om)
    # Every type's entries, in pool order, block by block with small first blocks.
    for o in [*rng.choice(pool, 60).tolist(), 7000]:
        want = pool[om.same_type(o, pool)]
        for first in (1, 3, 64):
            blocks = list(typed.sharing_type(om.types_of(o), first=first))
            got = np.concatenate(blocks) if blocks else np.empty(0, np.int64)
            assert got.tolist() == want.tolist()
            assert all(len(b) for b in blocks)
    # The distractors: the naive filter over the whole pool (every clause, every n).
    for s, o in zip(subj[:200].tolist(), rng.choice(pool, 200).tolist(), strict=True):
        for n in (0, 1, 4, 50, 5000):
            assert pool_distractors(om, typed, s, 47, o, n) == om.filter(s, 47, o, pool, n)


def test_type_rows_are_types_of_each_entity():
    om, pool, _, _ = _random_world(3)
    owner, types = om.type_rows(pool)
    assert np.all(np.diff(owner) >= 0)
    for i, e in enumerate(pool.tolist()):
        assert types[owner == i].tolist() == om.types_of(e).tolist()
    empty = Omega(TYPES.iloc[:0], pd.DataFrame({"entity": [1], "form": ["a"]}), VALID)
    assert [a.tolist() for a in empty.type_rows(np.array([1, 2]))] == [[], []]
