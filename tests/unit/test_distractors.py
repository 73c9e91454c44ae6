"""Distractor retrieval on the real demo dumps (distractors paper §3.3, PROBELM App. B, fluent-mLAMA §3.1).

Every expected value is derived here independently (pandas / scikit-learn / brute force) from the
extracted demo tables, or is a fact of the demo data stated and checked as a precondition.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
from contract_frames import full
from factprobe.contracts import id_ints as qids
from factprobe.distractors.cooccur import Cooccurrence
from factprobe.distractors.omega import Omega, load_types, suite_omega, valid_objects
from factprobe.distractors.pool import pool_distractors, relation_pools
from factprobe.distractors.random import random_distractors
from factprobe.distractors.retrieve import count_found, forms_of_candidates, retrieve
from factprobe.distractors.semantic import search, slices
from factprobe.distractors.semantic.bags import feature_codes
from factprobe.distractors.semantic.index import build_index, exact_topk, load_index
from factprobe.distractors.semantic.search import sem_distractors
from factprobe.distractors.semantic.slices import TypeSlice
from factprobe.distractors.semantic.weighting import weight_matrix
from factprobe.distractors.temporal import past_objects, temp_sem
from factprobe.hashing import stable_hash
from factprobe.settings import ConfigError, Retrieve, Sem
from sklearn.feature_extraction.text import TfidfVectorizer
from test_distractors_common import DUMP, demo_omega, demo_suite

ISRAEL, DIPLOMATIC, GERMANY, CHINA, MAURITANIA, MALI, BONN = 801, 530, 183, 148, 1025, 912, 586

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import scale  # noqa: E402


@pytest.fixture(scope="module")
def suite(demo_tables):
    facts, forms = demo_suite(demo_tables)
    return facts, forms, demo_omega(demo_tables, facts, forms)


@pytest.fixture(scope="module")
def claims(demo_tables):
    return pq.read_table(demo_tables[DUMP] / "claims.parquet").to_pandas()


@pytest.fixture(scope="module")
def index(demo_tables, claims, tmp_path_factory):
    folder = tmp_path_factory.mktemp("semidx") / DUMP
    # Reverse features on, as config/config.yaml (a small dump: most objects are never subjects).
    build_index(claims, folder, Sem(reverse_features=True, recall_queries=300, recall_k=10), key=DUMP)
    return folder


def demo_settings(strategies: list[str], n: int, pool_size: int) -> Retrieve:
    """Retrieval settings over the demo dump: exact Sem, both co-occurrence sides, en + de pools."""
    return Retrieve(
        strategies=strategies,
        n=n,
        pool_size=pool_size,
        search="exact",
        languages=["en", "de"],
        dump=DUMP,
        form_threshold=90,
        valid_ranks="non_deprecated",
        ef_search=200,
        strategy_settings={"cooccur": {"n": n, "sides": ["object", "subject"]}},
    )


# --- Ω(f) -------------------------------------------------------------------------------------


def test_type_clause_uses_declared_types_only(demo_tables, suite):
    _, _, omega = suite
    types = pd.concat([pq.read_table(demo_tables[d] / "types.parquet").to_pandas() for d in demo_tables])
    # Encyclopédie (Q447) declares book (Q571), and Q571 declares Q340169/Q2342494 via P279:
    # the hierarchy above Q571 must not become Q447's type (footnote †).
    assert set(types.loc[types["id"] == 571, "type"]) >= {340169, 2342494}
    assert set(omega.types_of(447)) == set(types.loc[types["id"] == 447, "type"]) == {571, 386724}
    # Bonn is a city, Germany a country: no declared type in common.
    assert not set(omega.types_of(BONN)) & set(omega.types_of(GERMANY))
    c = omega.clauses(ISRAEL, DIPLOMATIC, GERMANY, [BONN, CHINA])
    assert list(c["type"]) == [False, True]


def test_validity_clause_at_the_dump_date(claims, suite):
    _, _, omega = suite
    rel = claims[(claims["subject"] == ISRAEL) & (claims["property"] == DIPLOMATIC)].set_index("object")
    # Real statements: Israel-China current; Israel-Mauritania ended 2009, Israel-Mali ended 1973.
    assert (
        pd.isna(rel.loc[CHINA, "end"])
        and rel.loc[MAURITANIA, "end"] == 20090000
        and rel.loc[MALI, "end"] < 19740000
    )
    valid = valid_objects(claims, int(DUMP))
    now = set(valid.loc[(valid["subject"] == ISRAEL) & (valid["property"] == DIPLOMATIC), "object"])
    assert CHINA in now and MAURITANIA not in now and MALI not in now
    # In 2005 the Mauritania relation was still valid (end 2009 read as the end of 2009).
    assert MAURITANIA in set(valid_objects(claims, 20050101).query("subject == @ISRAEL")["object"])
    c = omega.clauses(ISRAEL, DIPLOMATIC, GERMANY, [CHINA, MAURITANIA, MALI, GERMANY]).set_index("entity")
    assert c.loc[CHINA].tolist() == [True, False, True, True]  # same type, but a valid object
    assert c.loc[MAURITANIA, "not_valid"] and c.loc[MALI, "not_valid"]
    assert not c.loc[GERMANY, "not_valid"]  # o itself
    assert omega.filter(ISRAEL, DIPLOMATIC, GERMANY, [CHINA, MAURITANIA, GERMANY, MALI]) == [MAURITANIA, MALI]


def test_validity_ranks_truthy_vs_non_deprecated(claims):
    # Germany P47: Kingdom of the Netherlands (Q29999) is normal-ranked, the others preferred.
    rows = claims[(claims["subject"] == GERMANY) & (claims["property"] == 47)].set_index("object")
    assert rows.loc[29999, "rank"] == 1 and rows["rank"].max() == 2 and pd.isna(rows.loc[29999, "end"])
    nd = valid_objects(claims, int(DUMP), "non_deprecated").query("subject == @GERMANY and property == 47")
    tr = valid_objects(claims, int(DUMP), "truthy").query("subject == @GERMANY and property == 47")
    assert 29999 in set(nd["object"]) and 29999 not in set(tr["object"])
    assert set(tr["object"]) == set(rows.index[(rows["rank"] == 2)])


def test_form_clause_exact_and_fuzzy(demo_tables, suite):
    facts, forms, _ = suite
    # Ramesses I (Q1526) and Ramesses III (Q1528): both humans, both with the alias "Ramses".
    f = forms[forms["entity"].isin(["Q1526", "Q1528"]) & (forms["lang"] == "en")]
    shared = set(f.loc[f["entity"] == "Q1526", "form"]) & set(f.loc[f["entity"] == "Q1528", "form"])
    assert shared == {"Ramses"}
    fact = (312402, 40, 1528)  # Setnakhte has child Ramesses III (inverse of a real P22 statement)
    om = demo_omega(demo_tables, facts, forms)
    assert om.clauses(*fact, [1526])["no_shared_form"].tolist() == [False]
    # Case-insensitive: the form table in upper case still shares "RAMSES".
    upper = forms.assign(form=np.where(forms["entity"] == "Q1526", forms["form"].str.upper(), forms["form"]))
    assert demo_omega(demo_tables, facts, upper, threshold=None).clauses(*fact, [1526])[
        "no_shared_form"
    ].tolist() == [False]
    # Labels only: "Ramesses I" vs "Ramesses III" share nothing exactly; rapidfuzz ratio 90.9.
    labels = forms[(forms["source"] == "label") & (forms["lang"] == "en")]
    for threshold, shares in ((90, True), (95, False), (None, False)):
        om = demo_omega(demo_tables, facts, labels, threshold=threshold)
        assert om.clauses(*fact, [1526])["no_shared_form"].tolist() == [not shares], threshold


def test_has_form_clause(suite):
    _, _, omega = suite
    # Q846 is an object of Israel's P530 but has no label in either demo dump.
    assert omega.forms_of(846) == ()
    assert omega.clauses(ISRAEL, DIPLOMATIC, GERMANY, [846])["has_form"].tolist() == [False]


def brute_omega(omega: Omega, demo_tables, facts, forms, s, r, o, threshold=90) -> set[int]:
    """Ω(f) by a direct, slow reading of the definition over every labelled entity."""
    from rapidfuzz import fuzz

    types = load_types([demo_tables[d] / "types.parquet" for d in demo_tables])
    tmap = types.groupby("id")["type"].agg(set).to_dict()
    fmap = forms.assign(k=forms["form"].str.casefold().str.strip()).groupby("entity")["k"].agg(set).to_dict()
    mine = fmap.get(f"Q{o}", set())
    bad = omega.valid_for(s, r) | {o}
    out = set()
    for ent, fs in fmap.items():
        e = int(ent[1:])
        if e in bad or not (tmap.get(e, set()) & tmap.get(o, set())):
            continue
        if fs & mine or any(fuzz.ratio(a, b) >= threshold for a in fs for b in mine):
            continue
        out.add(e)
    return out


def test_omega_filter_equals_the_definition_on_real_facts(demo_tables, suite):
    facts, forms, omega = suite
    everyone = qids(forms["entity"].unique())
    for fact in facts.groupby("property").head(1).itertuples():
        s, r, o = (int(x[1:]) for x in fact.fact_id.split("|"))
        assert set(omega.filter(s, r, o, everyone)) == brute_omega(omega, demo_tables, facts, forms, s, r, o)


def test_omega_filter_with_a_limit_is_the_prefix_of_the_whole_filter(suite):
    # The limited filter reads the list in growing blocks: it must keep first occurrences in
    # order across blocks and stop at the same entities as filtering everything then cutting.
    facts, forms, omega = suite
    everyone = qids(forms["entity"].unique())
    rng = np.random.default_rng(7)
    for fact in facts.groupby("property").head(2).itertuples():
        s, r, o = (int(x[1:]) for x in fact.fact_id.split("|"))
        cand = np.concatenate([everyone, everyone[: len(everyone) // 3]])
        cand = cand[rng.permutation(len(cand))].tolist()
        whole = omega.filter(s, r, o, cand)
        assert len(whole) == len(set(whole))
        for limit in (0, 1, 7, 100, 10_000):
            assert omega.filter(s, r, o, cand, limit) == whole[:limit]
        subjects = omega.filter_subjects(s, r, o, cand)
        assert omega.filter_subjects(s, r, o, cand, 3) == subjects[:3]


# --- strategies --------------------------------------------------------------------------------


def test_random_is_same_type_reproducible_and_hash_seeded(demo_tables, suite):
    facts, forms, omega = suite
    fact = facts.iloc[0]
    s, r, o = int(fact.subject[1:]), int(fact.property[1:]), int(fact.object[1:])
    got = random_distractors(omega, fact.fact_id, s, r, o, 5)
    assert got == random_distractors(omega, fact.fact_id, s, r, o, 5)
    allowed = brute_omega(omega, demo_tables, facts, forms, s, r, o)
    types = load_types([demo_tables[d] / "types.parquet" for d in demo_tables])
    assert len(got) == min(5, len(allowed)) and set(got) <= allowed
    # Independent draw: the same seed over the members in id order, then the Ω set.
    members = np.sort(types.loc[types["type"].isin(set(types.loc[types["id"] == o, "type"])), "id"].unique())
    perm = members[np.random.default_rng(stable_hash(fact.fact_id, "random")).permutation(len(members))]
    assert got == [e for e in perm.tolist() if e in allowed][:5]
    # Another fact of the same object draws another sample.
    other = random_distractors(omega, "other|fact|id", s, r, o, 5)
    assert other != got


def test_random_in_a_type_above_the_full_shuffle_is_uniform_over_omega():
    # 30,000 members of one type (> FULL_SHUFFLE_BELOW): a bounded draw, then Ω. Over 2,000
    # facts every tenth of the valid members gets about a tenth of the picks, and the entities
    # Ω rejects (the valid objects of (s, r), a member without a form) are never drawn.
    from factprobe.distractors.random import FULL_SHUFFLE_BELOW

    members = np.arange(1_000, 31_000)
    assert len(members) > FULL_SHUFFLE_BELOW
    types = pd.DataFrame({"id": members, "type": 5})
    named = members[members != 1_001]
    forms = pd.DataFrame({"entity": named, "form": [f"w{e}" for e in named]})
    valid = pd.DataFrame({"subject": 7, "property": 36, "object": members[:500]})
    omega = Omega(types, forms, valid, form_threshold=None)
    picks = []
    for i in range(2_000):
        got = random_distractors(omega, f"f{i}", 7, 36, 20_000, 5)
        assert len(got) == 5 == len(set(got))
        assert got == random_distractors(omega, f"f{i}", 7, 36, 20_000, 5)
        picks += got
    picks = np.array(picks)
    assert not np.isin(picks, [*members[:500].tolist(), 1_001, 20_000]).any()
    counts = np.bincount((picks - 1_500) * 10 // 29_500, minlength=10)
    assert counts.min() > 850 and counts.max() < 1_150, counts


def test_features_and_tfidf_match_scikit_learn(claims):
    """The named variant ``bag="counts"``, ``namespace="tagged"`` (the former default): bags keep
    repeats and tag each kind of feature (the paper's sets: tests/unit/test_sem_features.py)."""
    c = claims[claims["rank"] >= 1][["subject", "property", "object"]].drop_duplicates()
    rows, codes = feature_codes(c["subject"], c["property"], c["object"], reverse=False, namespace="tagged")
    ents, feats, X, _ = weight_matrix(rows, codes, "tfidf", bag="counts")
    # Independent bags of strings, the paper's four kinds, with repeats and kinds tagged.
    bags = {}
    for s, p, o in c.itertuples(index=False):
        bags.setdefault(s, [f"e{s}"]).extend([f"r{p}", f"o{o}", f"r{p}={o}"])
    order = sorted(bags)
    assert list(ents) == order
    vec = TfidfVectorizer(analyzer=lambda x: x, norm="l2", lowercase=False)
    ref = vec.fit_transform([bags[e] for e in order])
    gram = (X @ X.T).toarray()
    ref_gram = (ref @ ref.T).toarray()
    assert np.abs(gram - ref_gram).max() < 1e-5
    assert X.shape[1] == len(vec.vocabulary_)
    # Germany's bag: one self feature + 3 per statement, before de-duplication of features.
    n_stmts = (c["subject"] == GERMANY).sum()
    assert (rows == GERMANY).sum() == 1 + 3 * n_stmts


def test_paper_bags_match_scikit_learn_on_sets_of_id_strings(claims):
    """The default (§3.3, reference): each bag a set of id strings in one namespace."""
    c = claims[claims["rank"] >= 1][["subject", "property", "object"]].drop_duplicates()
    rows, codes = feature_codes(c["subject"], c["property"], c["object"])
    ents, feats, X, _ = weight_matrix(rows, codes, "tfidf")
    bags = {}
    for s, p, o in c.itertuples(index=False):
        bags.setdefault(s, set()).update({f"Q{s}", f"P{p}", f"Q{o}", f"P{p}_Q{o}"})
    order = sorted(bags)
    assert list(ents) == order
    vec = TfidfVectorizer(analyzer=sorted, norm="l2", lowercase=False)
    ref = vec.fit_transform([bags[e] for e in order])
    assert X.shape[1] == len(vec.vocabulary_)
    assert np.abs((X @ X.T).toarray() - (ref @ ref.T).toarray()).max() < 1e-5


def test_bm25_weights_by_hand(claims):
    c = claims[claims["rank"] >= 1].drop_duplicates(["subject", "property", "object"])
    rows, codes = feature_codes(c["subject"], c["property"], c["object"], reverse=False, namespace="tagged")
    ents, feats, X, idf = weight_matrix(rows, codes, "bm25", k1=1.2, b=0.75, bag="counts")
    i = int(np.searchsorted(ents, GERMANY))
    j = int(np.searchsorted(feats, codes[(rows == GERMANY)][1]))  # Germany's first relation feature
    tf = int(((rows == GERMANY) & (codes == feats[j])).sum())
    n = len(ents)
    df = len(np.unique(rows[codes == feats[j]]))
    dl = (rows == GERMANY).sum()
    avgdl = len(rows) / n
    w = np.log1p((n - df + 0.5) / (df + 0.5)) * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * dl / avgdl))
    raw = []
    for jj in np.flatnonzero(np.isin(feats, np.unique(codes[rows == GERMANY]))):
        t = int(((rows == GERMANY) & (codes == feats[jj])).sum())
        d = len(np.unique(rows[codes == feats[jj]]))
        raw.append(np.log1p((n - d + 0.5) / (d + 0.5)) * t * 2.2 / (t + 1.2 * (0.25 + 0.75 * dl / avgdl)))
    assert X[i, j] == pytest.approx(w / np.linalg.norm(raw), rel=1e-4)


def test_index_saved_loaded_and_exact_matches_brute_force(index):
    meta = json.loads((index / "meta.json").read_text())
    assert meta["recall"]["value"] >= 0.95, meta["recall"]  # defaults M=32, efC=200, efSearch=200
    idx = load_index(index, "hnsw")
    X = idx.X
    q = np.array([int(np.searchsorted(idx.entities, GERMANY))])
    ids, sims = exact_topk(X, q, 10)
    dense = (X @ X[q].T).toarray().ravel()
    dense[q[0]] = -1
    assert sims[0] == pytest.approx(np.sort(dense)[::-1][:10], abs=1e-6)
    assert dense[ids[0]] == pytest.approx(sims[0], abs=1e-6)
    assert len(idx.neighbours(np.array([GERMANY]), 10, "hnsw")[0]) == 10
    assert idx.neighbours(np.array([10**9]), 10)[0] == []  # no bag in this dump


def test_index_matrix_is_mapped_and_equals_the_built_one(index, claims, tmp_path):
    """Load_index maps the CSR arrays (a job reads the rows it ranks only); the mapped
    matrix is the one build_index weighed, and a folder without the arrays names the rule."""
    from factprobe.distractors.semantic.index import load_matrix

    idx = load_index(index, "exact")
    assert isinstance(np.load(index / "matrix.data.npy", mmap_mode="r"), np.memmap)
    assert idx.X.data.base is not None  # a view of the mapped file, not a copy
    c = claims[claims["rank"] >= 1][["subject", "property", "object"]].drop_duplicates()
    rows, codes = feature_codes(
        c["subject"].to_numpy(), c["property"].to_numpy(), c["object"].to_numpy(), reverse=True
    )
    ents, _, X, _ = weight_matrix(rows, codes, "tfidf")
    assert (ents == idx.entities).all()
    assert idx.X.shape == X.shape
    assert abs(idx.X - X).max() < 1e-6
    sub = load_matrix(index, len(idx.entities))[0][[0, 5, 7]]
    assert abs(sub - X[[0, 5, 7]]).max() < 1e-6
    (tmp_path / "old").mkdir()
    for name in ("entities.npy", "features.npy", "meta.json"):
        (tmp_path / "old" / name).write_bytes((index / name).read_bytes())
    with pytest.raises(RuntimeError, match="re-run rule build_sem_index"):
        load_index(tmp_path / "old", "exact")


def test_sem_returns_top_n_of_omega_by_exact_cosine(index, suite):
    facts, _, omega = suite
    idx = load_index(index, "exact")
    triples = [tuple(int(x[1:]) for x in fid.split("|")) for fid in facts["fact_id"]]
    lists = sem_distractors(idx, omega, triples, 5, "exact")
    X = idx.X
    checked = 0
    for (s, r, o), got in zip(triples, lists, strict=True):
        row = idx.row_of(np.array([o]))[0]
        if row < 0:
            assert got == []
            continue
        sims = (X @ X[row].T).toarray().ravel()
        cand = [
            e
            for e in idx.entities[np.argsort(-sims, kind="stable")].tolist()
            if e != o and sims[idx.row_of(np.array([e]))[0]] > 0
        ]
        allowed = set(omega.filter(s, r, o, cand))
        want = sorted(allowed, key=lambda e: -sims[idx.row_of(np.array([e]))[0]])[:5]
        got_sims = [sims[idx.row_of(np.array([e]))[0]] for e in got]
        want_sims = [sims[idx.row_of(np.array([e]))[0]] for e in want]
        assert got_sims == pytest.approx(want_sims, abs=1e-6)  # same cosines (ties may swap ids)
        assert set(got) <= allowed
        checked += 1
    assert checked >= 20


def test_sem_ranks_a_prefix_and_falls_back_to_the_whole_type(index, suite):
    # n = 30 against a 16-entity prefix (widen 0): Ω often needs the whole ranking. Every widen
    # gives the list of ranking the whole type set then filtering (the definition).
    facts, _, omega = suite
    idx = load_index(index, "exact")
    triples = [tuple(int(x[1:]) for x in fid.split("|")) for fid in facts["fact_id"]]
    want = [
        omega.filter(s, r, o, TypeSlice(idx, omega.members(omega.types_of(o))).ranked(o), 30)
        for s, r, o in triples
    ]
    assert sum(len(w) > 16 for w in want) >= 5
    for widen in (0, 1, 4):
        assert sem_distractors(idx, omega, triples, 30, "exact", widen) == want


def test_sem_per_type_slices_give_the_type_set_ranking(index, suite, monkeypatch):
    # Slices per declared type, their scores united per type set, equal one slice of
    # the whole set; whether the cache holds every type or drops each after use (budget 1).
    facts, _, omega = suite
    idx = load_index(index, "exact")
    triples = [tuple(int(x[1:]) for x in fid.split("|")) for fid in facts["fact_id"]]
    assert sum(len(omega.types_of(o)) > 1 for _, _, o in triples) >= 5  # sets of several types
    want = [
        omega.filter(s, r, o, TypeSlice(idx, omega.members(omega.types_of(o))).ranked(o), 10)
        for s, r, o in triples
    ]
    # A slice renumbers its columns to its own features: each cosine the float of the product
    # against the whole vocabulary, bit for bit.
    checked = 0
    for _, _, o in triples[:40]:
        members = omega.members(omega.types_of(o))
        cut = TypeSlice(idx, members)
        q = idx.row_of(np.array([o]))[0]
        if q < 0 or cut.XT is None:
            continue
        assert cut.XT.shape[0] == len(np.unique(idx.X[cut.rows].indices)) < idx.X.shape[1]
        full = (idx.X[[q]] @ idx.X[cut.rows].T).toarray().ravel()
        rows, vals = cut.scores(o)
        expect = {int(r): v for r, v in zip(cut.rows, full, strict=True) if v > 0 and r != q}
        assert dict(zip(rows.tolist(), vals.tolist(), strict=True)) == expect
        checked += 1
    assert checked >= 20
    for budget in (1, 10**9):
        monkeypatch.setattr(search, "SLICE_CACHE_BYTES", budget)
        built = {"s": 0.0, "n": 0}
        assert sem_distractors(idx, omega, triples, 10, "exact", 4, built) == want
        types = {int(t) for _, _, o in triples for t in omega.types_of(o)}
        # Each type read once while held; re-read after being dropped.
        assert built["n"] == len(types) if budget > 1 else built["n"] >= len(types)


def test_sem_search_time_leaves_out_slice_building(index, suite, monkeypatch):
    # built["search_s"] is scaled per fact by benchmarks/scale.py; a slice built on the way is
    # counted once, as building (built["s"]), not again as search.
    facts, _, omega = suite
    idx = load_index(index, "exact")
    triples = [tuple(int(x[1:]) for x in fid.split("|")) for fid in facts["fact_id"]]
    real = TypeSlice.__init__

    def slow(self, *args):
        # CPU spent, not slept: the timings are CPU seconds (a job's own, whatever runs beside it).
        until = time.process_time() + 0.05
        while time.process_time() < until:
            pass
        real(self, *args)

    monkeypatch.setattr(TypeSlice, "__init__", slow)
    built = {"s": 0.0, "n": 0}
    sem_distractors(idx, omega, triples, 10, "exact", 4, built)
    assert built["n"] >= 10 and built["s"] >= 0.05 * built["n"]
    assert built["search_s"] < 0.025 * built["n"]


def test_temp_sem_puts_past_objects_first(claims, suite, index):
    facts, forms, omega = suite
    # The temporal view of the real claims: statements whose end is before the dump date.
    past = claims[(claims["rank"] >= 1) & (claims["end"].astype("Float64") < int(DUMP))]
    temporal = full("temporal", past.assign(status="past", source="qualifier"), truthy=True)
    lists = past_objects(temporal)
    israel = lists[(ISRAEL, DIPLOMATIC)]
    # Most recent end first: Mauritania (2009) before Mali (1973).
    assert israel.index(MAURITANIA) < israel.index(MALI)
    idx = load_index(index, "exact")
    sem = sem_distractors(idx, omega, [(ISRAEL, DIPLOMATIC, GERMANY)], 20, "exact")[0]
    got = temp_sem(omega, israel, sem, ISRAEL, DIPLOMATIC, GERMANY, 10)
    ents = [e for e, _ in got]
    assert got[:2] == [(MAURITANIA, "temporal"), (MALI, "temporal")]
    assert [src for _, src in got[2:]] == ["sem"] * (len(got) - 2)
    assert (
        ents[2:]
        == [e for e in omega.filter(ISRAEL, DIPLOMATIC, GERMANY, sem) if e not in ents[:2]][: len(got) - 2]
    )
    assert len(set(ents)) == len(ents) == 10


def test_cooccur_matches_algorithm_1_by_hand(claims, demo_tables, suite):
    facts, forms, omega = suite
    statements = claims[claims["rank"] >= 1]
    co = Cooccurrence(statements)
    types = load_types([demo_tables[d] / "types.parquet" for d in demo_tables])
    # Several facts whose subjects share their types: the counts are memoised per type set and
    # each fact takes its own subject's statements off.
    found = [
        check_algorithm_1(co, omega, types, statements, fact)
        for fact in facts[facts["property"].isin(["P530", "P47"])].groupby("property").head(3).itertuples()
    ]
    # one demo fact's only Ω-valid alternative is its own subject, left out (self-scenario)
    assert len(found) == 6 and found.count(10) >= 2 and sum(f >= 1 for f in found) == 5


def test_cooccur_int32_columns_answer_as_int64(claims, suite):
    # Statements are held as int32 when every id fits, int64 otherwise (one id past 2**31 in an
    # unrelated relation): both answer every fact alike, and big anchors are never found.
    facts, forms, omega = suite
    statements = claims[claims["rank"] >= 1][["subject", "property", "object"]]
    wide = pd.concat(
        [statements, pd.DataFrame({"subject": [2**33], "property": [999_999], "object": [2**33 + 1]})],
        ignore_index=True,
    )
    narrow, broad = Cooccurrence(statements), Cooccurrence(wide)
    assert narrow.dtype == np.int32 and broad.dtype == np.int64
    assert narrow.by_property[530][0].dtype == np.int32
    picked = facts[facts["property"].isin(["P530", "P47", "P17"])].groupby("property").head(3)
    compared = 0
    for fact in picked.itertuples():
        s, r, o = (int(x[1:]) for x in fact.fact_id.split("|"))
        for side in ("object", "subject"):
            got = narrow.alternatives(omega, fact.fact_id, s, r, o, 10, side)
            assert got == broad.alternatives(omega, fact.fact_id, s, r, o, 10, side)
            compared += len(got)
    assert compared > 50
    assert narrow.counts(omega, 2**40, 530, 2**41, "object")[0].size == 0


def check_algorithm_1(co, omega, types, statements, fact):
    s, r, o = (int(x[1:]) for x in fact.fact_id.split("|"))
    # Algorithm 1 with pandas: parents of s, siblings sharing one, objects of (sib, r, ·) counted.
    parents = set(types.loc[types["id"] == s, "type"])
    siblings = set(types.loc[types["type"].isin(parents), "id"]) - {s}
    objs = statements[(statements["property"] == r) & statements["subject"].isin(siblings)]["object"]
    freq = objs.value_counts()
    ranked = sorted(freq.index, key=lambda e: (-freq[e], stable_hash(fact.fact_id, "object", int(e))))
    # s itself is no alternative (a self-scenario: test_self_candidates.py)
    want = omega.filter(s, r, o, [e for e in ranked if e != s], 10)
    got = co.alternatives(omega, fact.fact_id, s, r, o, 10, "object")
    assert [e for e, _, _ in got] == want
    assert [f for _, f, _ in got] == [int(freq[e]) for e in want]
    assert [g for _, _, g in got] == [10.0 - i for i in range(len(want))]
    assert [f for _, f, _ in got] == sorted([f for _, f, _ in got], reverse=True)
    # Subject side: siblings of o, subjects of (·, r, sib), Ω mirrored onto the subject.
    oparents = set(types.loc[types["id"] == o, "type"])
    osib = set(types.loc[types["type"].isin(oparents), "id"]) - {o}
    subj = statements[(statements["property"] == r) & statements["object"].isin(osib)][
        "subject"
    ].value_counts()
    ranked_s = sorted(subj.index, key=lambda e: (-subj[e], stable_hash(fact.fact_id, "subject", int(e))))
    got_s = co.alternatives(omega, fact.fact_id, s, r, o, 10, "subject")
    assert [e for e, _, _ in got_s] == omega.filter_subjects(s, r, o, [e for e in ranked_s if e != o], 10)
    for e, _, _ in got_s:
        assert o not in omega.valid_for(e, r) and e != s
    return len(want)


def test_cooccur_big_ties_are_a_per_fact_rotation_of_one_hash_order(claims, demo_tables, suite):
    # A tie level above big_tie entities is read as a rotation of the stable_hash(r, side, e)
    # order from stable_hash(fact_id, side); at or below it, sorted by the per-fact hash. The
    # naive ranking recounts Algorithm 1 with pandas and sorts every level by the documented key.
    facts, forms, omega = suite
    statements = claims[claims["rank"] >= 1]
    types = load_types([demo_tables[d] / "types.parquet" for d in demo_tables])
    picked = facts[facts["property"].isin(["P530", "P47", "P17"])].groupby("property").head(4)
    rotated = 0
    for big_tie in (0, 3, 10**9):
        co = Cooccurrence(statements, big_tie=big_tie)
        for fact in picked.itertuples():
            s, r, o = (int(x[1:]) for x in fact.fact_id.split("|"))
            for side, anchor, col, other in (
                ("object", s, "subject", "object"),
                ("subject", o, "object", "subject"),
            ):
                parents = set(types.loc[types["id"] == anchor, "type"])
                siblings = set(types.loc[types["type"].isin(parents), "id"]) - {anchor}
                st = statements[(statements["property"] == r) & statements[col].isin(siblings)]
                freq = st.drop_duplicates(["subject", "property", "object"])[other].value_counts()
                size = freq.value_counts()
                offset = stable_hash(fact.fact_id, side)

                def key(
                    e, freq=freq, size=size, side=side, r=r, offset=offset, tie=big_tie, fid=fact.fact_id
                ):
                    f = int(freq[e])
                    if size[f] <= tie:
                        return (-f, stable_hash(fid, side, int(e)))
                    rotated_key = (stable_hash(r, side, int(e)) - offset) % 2**64
                    return (-f, rotated_key)

                want = [(int(e), int(freq[e])) for e in sorted(freq.index, key=key)]
                assert co.ranked(omega, fact.fact_id, s, r, o, side) == want, (big_tie, fact.fact_id, side)
                rotated += big_tie == 3 and any(size > 3)
                admit = omega.filter if side == "object" else omega.filter_subjects
                got = co.alternatives(omega, fact.fact_id, s, r, o, 10, side)
                itself = s if side == "object" else o  # no self-scenario (test_self_candidates.py)
                assert [e for e, _, _ in got] == admit(s, r, o, [e for e, _ in want if e != itself], 10)
    assert rotated >= 10


def test_cooccur_rotation_reads_a_long_tie_in_blocks():
    # 3,000 typed subjects pointing at 6,000 objects: a tie of >1,000 objects at frequency 1
    # (several 256-doubling blocks) and anchors whose own statements move objects down a level.
    rng = np.random.default_rng(7)
    subjects = np.arange(10_000, 13_000)
    objects = rng.integers(1, 6_001, size=len(subjects) * 2)
    st = pd.DataFrame({"subject": np.repeat(subjects, 2), "property": 27, "object": objects, "rank": 1})
    types = pd.DataFrame({"id": np.concatenate([subjects, np.arange(1, 6_001)]), "type": 5})
    omega = Omega(types, pd.DataFrame({"entity": [], "form": []}), st[["subject", "property", "object"]])
    co = Cooccurrence(st, big_tie=50)
    checked = 0
    for s in subjects[:40].tolist():
        fid = f"Q{s}|P27|Q1"
        sib = st[st["subject"] != s].drop_duplicates(["subject", "object"])
        freq = sib["object"].value_counts()
        size = freq.value_counts()
        offset = stable_hash(fid, "object")

        def key(e, freq=freq, size=size, fid=fid, offset=offset):
            f = int(freq[e])
            if size[f] <= 50:
                return (-f, stable_hash(fid, "object", int(e)))
            return (-f, (stable_hash(27, "object", int(e)) - offset) % 2**64)

        want = [(int(e), int(freq[e])) for e in sorted(freq.index, key=key)]
        assert co.ranked(omega, fid, s, 27, 1, "object") == want
        checked += int(size.max() > 1_000)
    assert checked == 40
    # An untyped anchor has no siblings: nothing to count.
    assert co.ranked(omega, "Q99999|P27|Q1", 99_999, 27, 1, "object") == []


def hub_world() -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """``(statements, types, forms)`` of a small Wikidata-shaped graph with hubs: cities, people,
    companies and a few observatories in 12 countries (country 1 a hub holding half of them),
    people born in cities; most entities of other types than any one subject, some with two
    types, a few without a form or sharing a form with another entity."""
    rng = np.random.default_rng(31)
    countries, cities = np.arange(1, 13), np.arange(100, 400)
    people, companies, observatories = np.arange(1000, 2200), np.arange(3000, 3300), np.arange(4000, 4012)
    located = np.concatenate([cities, people, companies, observatories])
    hub = rng.random(len(located)) < 0.5
    country = np.where(hub, 1, rng.integers(2, 13, len(located)))
    born = rng.choice(people, 900, replace=False)
    st = pd.DataFrame(
        {
            "subject": np.concatenate([located, born, companies[:40]]),
            "property": np.repeat([17, 19, 17], [len(located), len(born), 40]),
            "object": np.concatenate([country, rng.choice(cities, len(born)), rng.integers(2, 13, 40)]),
        }
    ).drop_duplicates()
    kinds = [(countries, 6), (cities, 515), (people, 5), (companies, 4830), (observatories, 62832)]
    types = pd.concat([pd.DataFrame({"id": ids, "type": t}) for ids, t in kinds])
    # Capitals are cities and companies' seats: entities of two types, two type sets per kind.
    types = pd.concat([types, pd.DataFrame({"id": cities[:30], "type": 4830})]).astype("int64")
    ents = np.concatenate([countries, cities, people, companies, observatories])
    ents = ents[rng.random(len(ents)) > 0.05]
    names = [f"name {e}" if e % 37 else "shared name" for e in ents.tolist()]
    return st, types, pd.DataFrame({"entity": ents, "form": names})


def algorithm_1_reference(st, typed, omega, fid, s, r, o, side, n, big_tie):
    """PROBELM Algorithm 1 on plain Python sets for one side, ties ordered as the module
    docstring states (a tie of more than ``big_tie`` entities as a rotation of the hash order),
    then the first ``n`` that Ω admits, checked clause by clause. ``typed``: id -> set of types."""
    anchor, col, other = (s, "subject", "object") if side == "object" else (o, "object", "subject")
    siblings = {e for e, ts in typed.items() if ts & typed.get(anchor, set())} - {anchor}
    rows = st[(st["property"] == r) & st[col].isin(siblings)]
    freq = rows[other].value_counts().to_dict()
    size = pd.Series(freq).value_counts().to_dict() if freq else {}
    offset = stable_hash(fid, side)

    def key(e):
        if size[freq[e]] <= big_tie:
            return (-freq[e], stable_hash(fid, side, e))
        return (-freq[e], (stable_hash(r, side, e) - offset) % 2**64)

    filler = o if side == "object" else s
    forms = omega.forms_of(filler)
    valid = set(st.loc[(st["subject"] == s) & (st["property"] == r), "object"]) if side == "object" else None
    got = []
    for e in sorted(freq, key=key):
        admitted = (
            bool(typed.get(e, set()) & typed.get(filler, set()))
            and e != filler
            and e != (s if side == "object" else o)  # no self-scenario (test_self_candidates.py)
            and (e not in valid if side == "object" else o not in omega.valid_for(e, r))
            and bool(omega.forms_of(e))
            and not set(forms) & set(omega.forms_of(e))
        )
        if admitted and len(got) < n:
            got.append((e, freq[e], float(n + 1 - len(got) - 1)))
    return got, sorted(freq, key=key)


def test_cooccur_alternatives_equal_algorithm_1_with_hubs_and_big_ties():
    # Subject side of (·, P17, country): the hub's sibling set is every located entity, mostly
    # of other types than the fact's subject; the optimised path ranks only the admissible ones
    # (memoised per type sets) and must list exactly what the naive ranking + Ω lists.
    st, types, forms = hub_world()
    omega = Omega(types, forms, st, form_threshold=None)
    typed = types.groupby("id")["type"].apply(set).to_dict()
    # Random facts of each relation and those of the observatories, a small type among many.
    picked = pd.concat([st.groupby("property").sample(12, random_state=3), st[st["subject"] >= 4000]])
    facts = [(int(f.subject), int(f.property), int(f.object)) for f in picked.itertuples(index=False)]
    deep = 0
    for big_tie in (0, 8, 10**9):
        co = Cooccurrence(st.assign(rank=1), big_tie=big_tie)
        for s, r, o in facts:
            fid = f"Q{s}|P{r}|Q{o}"
            for side in ("object", "subject"):
                want, ranked = algorithm_1_reference(st, typed, omega, fid, s, r, o, side, 5, big_tie)
                assert co.alternatives(omega, fid, s, r, o, 5, side) == want, (big_tie, fid, side)
                assert [e for e, _ in co.ranked(omega, fid, s, r, o, side)] == ranked
                # Facts whose admitted alternatives sit deep in a hub's ranking.
                deep += bool(want) and ranked.index(want[-1][0]) > 100
        # Facts share their (relation, side, type sets): far fewer structures than facts.
        assert co.built < 2 * len(facts) * 2
    assert deep >= 10


def test_valid_with_is_valid_for_per_subject():
    # The subject side's validity clause for a block of candidates at once, against the set of
    # each (s*, r): companies with two countries, subjects without the relation, unknown ids.
    st, types, forms = hub_world()
    omega = Omega(types, forms, st, form_threshold=None)
    part = np.concatenate([np.arange(2990, 3060), np.arange(90, 110), [10**9]]).astype(np.int64)
    hits = 0
    for r, o in [(17, 1), (17, 5), (19, 150), (99, 1)]:
        want = np.array([o in omega.valid_for(e, r) for e in part.tolist()])
        assert (omega.valid_with(part, r, o) == want).all()
        hits += int(want.sum())
    assert hits > 10
    assert omega.valid_with(np.empty(0, np.int64), 17, 1).size == 0


def test_pool_is_hash_ordered_same_relation_objects(suite):
    facts, forms, omega = suite
    pools = relation_pools(facts, forms, ["en", "cs"])
    p47 = facts[facts["property"] == "P47"]
    objects = set(qids(p47["object"]))
    for lang in ("en", "cs"):
        pool = pools[("P47", lang)].tolist()
        have = set(qids(forms.loc[forms["lang"] == lang, "entity"]))
        assert set(pool) == objects & have
        assert pool == sorted(pool, key=lambda e: stable_hash("P47", lang, f"Q{e}"))
    fact = p47.iloc[0]
    s, r, o = (int(x[1:]) for x in fact.fact_id.split("|"))
    got = pool_distractors(omega, pools[("P47", "en")], s, r, o, 50)
    assert got == [e for e in pools[("P47", "en")].tolist() if e in set(omega.filter(s, r, o, list(objects)))]


# --- the suite table -----------------------------------------------------------------------------


def test_retrieve_end_to_end_every_row_in_omega(demo_tables, claims, suite, index):
    facts, forms, omega = suite
    settings = demo_settings(["random", "sem", "temp", "cooccur", "pool"], n=10, pool_size=50)
    past = past_objects(
        full(
            "temporal",
            claims[(claims["rank"] >= 1) & (claims["end"].astype("Float64") < int(DUMP))].assign(
                status="past", source="qualifier"
            ),
            truthy=True,
        )
    )
    cand = retrieve(
        facts,
        omega,
        settings,
        {
            "sem_index": load_index(index, "exact"),
            "temporal": past,
            "cooccur": Cooccurrence(claims[claims["rank"] >= 1]),
            "entity_forms": forms,
        },
    )
    assert set(cand.columns) >= {"fact_id", "entity", "role", "strategy", "rank", "relevance"}
    objects = cand[cand["role"] == "object"]
    assert len(objects) == len(facts) and (objects["rank"] == 0).all() and (objects["relevance"] == 11).all()
    d = cand[cand["role"] == "distractor"]
    for (fid, strategy, side, _), g in d.groupby(["fact_id", "strategy", "side", "lang"], dropna=False):
        assert list(g["rank"]) == list(range(1, len(g) + 1))
        assert g["entity"].is_unique
        s, r, o = (int(x[1:]) for x in fid.split("|"))
        ents = qids(g["entity"]).tolist()
        if side == "subject":
            assert omega.filter_subjects(s, r, o, ents) == ents
        else:
            assert omega.filter(s, r, o, ents) == ents, (fid, strategy)
    found = count_found(cand).pivot(index="fact_id", columns="strategy", values="found").fillna(0)
    assert (found[["random", "sem", "temp+sem"]] <= 10).all().all() and found["random"].median() == 10
    # temp >= sem: Temp+Sem only adds past objects in front of the same semantic list.
    assert (found["temp+sem"] >= found["sem"]).all()
    pools = relation_pools(facts, forms, ["en", "de"], omega.valid)  # pool source: relation (default)
    for fact in facts.itertuples():
        s, r, o = (int(x[1:]) for x in fact.fact_id.split("|"))
        want = sum(min(50, len(omega.filter(s, r, o, pools[(fact.property, lang)]))) for lang in ("en", "de"))
        assert found.loc[fact.fact_id, "pool"] == want
    forms_out = forms_of_candidates(cand, forms)
    assert set(forms_out["entity"]) == set(cand["entity"]) & set(forms["entity"])
    merged = forms[forms["entity"].isin(set(cand["entity"]))]
    assert len(forms_out) == len(merged.drop_duplicates(["entity", "lang", "form", "source"]))


def test_bad_input_names_the_file_and_the_fix(suite):
    from factprobe import contracts

    facts, _, _ = suite
    with pytest.raises(
        ValueError, match=r"results/probes/x/facts.parquet: facts table lacks column\(s\) \['objects'\]"
    ):
        contracts.check(facts.drop(columns="objects"), "facts", "results/probes/x/facts.parquet", ["objects"])
    with pytest.raises(ValueError, match="not a Wikidata item/property id: 'Berlin'"):
        qids(["Q64", "Berlin"])
    with pytest.raises(ConfigError, match="unknown distractor strategies"):
        Retrieve(["sem", "nearest"], 10, 50, "exact", ["en"], DUMP, 90, "truthy", 200)


# --- retrieval shards --------------------------------------------------------


def _facts_of(sizes: dict[str, int], subjects: dict[str, int] | None = None) -> pd.DataFrame:
    """Facts ``P-i`` per relation; relation p's facts cycle over ``subjects[p]`` subjects (default:
    one subject a fact)."""
    subjects = subjects or {}
    rows = [
        (f"{p}-{i}", f"Q{p[1:]}{i % subjects.get(p, n):06d}", p) for p, n in sizes.items() for i in range(n)
    ]
    return pd.DataFrame(rows, columns=["fact_id", "subject", "property"])


def test_shard_plan_cuts_by_subject_hash_and_divides_a_skewed_suite():
    """A fact's shard is the stable hash of its subject modulo the shards, so a
    subject's facts (every (s, r) of it) stay together, and a suite whose facts sit in one
    relation is divided as evenly as its subjects allow."""
    from factprobe.distractors.retrieve import shard_plan

    # P1 holds 960 of 1000 facts (skewed); P2 has one subject for its 30 facts; P3 ten facts.
    facts = _facts_of({"P1": 960, "P2": 30, "P3": 10}, {"P2": 1})
    with pytest.raises(ValueError, match="shards must be >= 1"):
        shard_plan(facts, 0)
    assert shard_plan(facts, 1).tolist() == [0] * len(facts)
    for shards in (2, 4, 8):
        plan = shard_plan(facts, shards)
        by_hand = [stable_hash(s, "retrieve-shard") % shards for s in facts["subject"]]
        assert plan.tolist() == by_hand
        # The single-subject relation is one shard; the skewed relation spreads over all.
        assert len(set(plan[facts["property"] == "P2"].tolist())) == 1
        assert set(plan[facts["property"] == "P1"].tolist()) == set(range(shards))
        # The largest shard holds at most 1.5/S of the facts (the relation plan put P1 whole in one).
        assert np.bincount(plan, minlength=shards).max() <= 1.5 * len(facts) / shards
    # A subject with facts in several relations is in one shard with all of them.
    both = pd.concat([_facts_of({"P7": 3}), _facts_of({"P8": 3})], ignore_index=True)
    both["subject"] = ["Q1", "Q2", "Q3"] * 2
    plan = shard_plan(both, 5)
    assert plan[:3].tolist() == plan[3:].tolist()
    # One fact and four shards leave three empty.
    assert len(shard_plan(_facts_of({"P9": 1}), 4)) == 1


def _skewed(facts: pd.DataFrame) -> pd.DataFrame:
    """The demo facts with one relation (the one with most subjects) five times over (its facts
    repeated under new ids), and one relation reduced to one subject: a suite where one relation holds
    most facts and one has a single subject."""
    counts = facts.groupby("property")["subject"].nunique()
    big, single = counts.idxmax(), counts.idxmin()
    extra = facts[facts["property"] == big]
    copies = [extra.assign(fact_id=extra["fact_id"] + f"|copy{i}") for i in range(4)]
    out = pd.concat([facts, *copies], ignore_index=True)
    first = out.loc[out["property"] == single, "subject"].iloc[0]
    keep = (out["property"] != single) | (out["subject"] == first)
    return out[keep].reset_index(drop=True)


@pytest.mark.parametrize(
    ("strategies", "sides", "ranks"),
    [
        (["random", "cooccur"], ["object", "subject"], "non_deprecated"),
        (["random", "cooccur"], ["object", "subject"], "truthy"),
        (["random", "cooccur"], ["object"], "non_deprecated"),
        (["pool"], [], "non_deprecated"),
    ],
)
def test_subject_shards_read_their_slice_and_gather_to_the_one_job_table(
    demo_tables, suite, tmp_path, strategies, sides, ranks
):
    """Each shard reads the facts of its subjects and, unless a strategy takes every subject of
    the relation (subject-side co-occurrence, relation pools), only the statements valid for its
    own (s, r) pairs (load_suite_omega(only=...)); on real demo facts of a skewed suite (one
    relation with most facts, one with a single subject) the gathered shards are the rows of one
    job over the whole suite, row order included."""
    from types import SimpleNamespace

    from factprobe import contracts
    from factprobe.distractors.retrieval_inputs import load_suite_omega, prepare_universe, suite_cooccurrence
    from factprobe.distractors.retrieve import gather_shards, shard_plan

    facts, forms, _ = suite
    facts = _skewed(facts)
    contracts.write("facts", facts, tmp_path / "facts.parquet")
    contracts.write("entity_forms", forms, tmp_path / "forms.parquet")
    inputs = SimpleNamespace(
        facts=tmp_path / "facts.parquet",
        entity_forms=tmp_path / "forms.parquet",
        claims=demo_tables[DUMP] / "claims.parquet",
        types=[demo_tables[d] / "types.parquet" for d in sorted(demo_tables)],
    )
    p = {
        "dump": DUMP,
        "valid_ranks": ranks,
        "form_threshold": 90,
        "strategies": strategies,
        "strategy_settings": {"cooccur": {"sides": sides}},
    }
    settings = dataclasses.replace(
        demo_settings(strategies, n=4, pool_size=6),
        strategy_settings={"cooccur": {"n": 4, "sides": sides or ["object"]}},
        valid_ranks=ranks,
    )

    def run(only=None, prepared=None):
        f, ef, st, om = load_suite_omega(inputs, p, only=only, prepared=prepared)
        co = suite_cooccurrence(st, f, prepared) if "cooccur" in strategies else None
        if co is not None and prepared is not None:
            # The shard mapped the relations' statements sorted once by the preparation; it
            # scanned none itself.
            assert st.empty and co.statements() > 0
            assert all(isinstance(c, np.memmap) for cols in co.by_property.values() for c in cols)
        return f, ef, om, retrieve(f, om, settings, {"cooccur": co, "entity_forms": ef}, only)

    every, whole_forms, whole_omega, whole = run()
    assert (whole["role"] == "distractor").sum() > 50
    # The out-of-core job decides as Ω over the whole tables (pools: every object of the
    # relation in the dump, whoever its subject; fluent-mLAMA §3.1).
    claims = pq.read_table(demo_tables[DUMP] / "claims.parquet").to_pandas()
    co = Cooccurrence(claims[claims["rank"] >= 1]) if "cooccur" in strategies else None
    types = [demo_tables[d] / "types.parquet" for d in demo_tables]
    omega = suite_omega(every, forms, claims, types, DUMP, ranks, 90)
    pd.testing.assert_frame_equal(
        whole, retrieve(every, omega, settings, {"cooccur": co, "entity_forms": forms})
    )
    plan = shard_plan(every, 3)
    # Shards that map the suite's types and forms, prepared once (rule prepare_retrieval), give
    # the rows of shards that scan their own.
    counts = prepare_universe(inputs, tmp_path / "prepared", p)
    assert counts["typed"] == whole_omega.layout()["id_ids"].size and counts["forms"] == whole_forms.num_rows
    if "cooccur" in strategies:
        assert counts["statements"] == Cooccurrence(load_suite_omega(inputs, p)[2]).statements() > 0
    # Where Ω holds every subject (the subject side, relation pools), the preparation holds one
    # job's valid statements; a shard's own scan then reads the hub objects' statements again.
    assert ("valid" in counts) == (sides == ["object", "subject"] or strategies == ["pool"])
    if "valid" in counts:
        assert counts["valid"] == len(whole_omega.valid)
    parts, part_forms, valid, mapped, mapped_forms = [], [], [], [], []
    for shard in range(3):
        mine = every[plan == shard]
        _, ef, om, got = run(mine["fact_id"].tolist())
        valid.append(len(om.valid))
        parts.append(got)
        part_forms.append(forms_of_candidates(got, ef))
        _, ef, om, got = run(mine["fact_id"].tolist(), tmp_path / "prepared")
        assert isinstance(om.layout()["type_ids"], np.memmap)
        if "valid" in counts:
            assert len(om.valid) == len(whole_omega.valid)
        mapped.append(got)
        mapped_forms.append(forms_of_candidates(got, ef))
        pd.testing.assert_frame_equal(got, parts[-1])
        pd.testing.assert_frame_equal(mapped_forms[-1], part_forms[-1])
    big = every["property"].value_counts()
    assert big.iloc[0] > len(every) / 2 and every.groupby("property")["subject"].nunique().min() == 1
    assert np.bincount(plan, minlength=3).max() <= 1.5 * len(every) / 3
    # The valid statements are those of the shard's own subjects (and objects): they divide the
    # whole job's.
    assert max(valid) < len(whole_omega.valid)
    if sides == ["object"]:
        assert sum(valid) <= len(whole_omega.valid)
    cand, got_forms = gather_shards(every, parts, part_forms)
    pd.testing.assert_frame_equal(cand, whole, check_dtype=False)
    pd.testing.assert_frame_equal(got_forms, forms_of_candidates(whole, whole_forms))
    cand, got_forms = gather_shards(every, mapped, mapped_forms)
    pd.testing.assert_frame_equal(cand, whole, check_dtype=False)
    pd.testing.assert_frame_equal(got_forms, forms_of_candidates(whole, whole_forms))


def test_type_slice_in_blocks_ranks_as_one_block(index, suite, monkeypatch):
    """A type slice transposed in blocks of rows (SLICE_ROWS) gives the same cosines and ranking
    as one block, and the mapped pages it released are read again on the next query."""

    _, _, omega = suite
    idx = load_index(index, "exact")
    members = omega.members(omega.types_of(GERMANY))
    assert len(members) == 35  # the demo's countries
    whole = TypeSlice(idx, members)
    monkeypatch.setattr(slices, "SLICE_ROWS", 7)
    cut = TypeSlice(idx, members)
    assert (cut.rows == whole.rows).all() and len(cut.rows) == 35  # five blocks of seven rows
    assert (cut.XT != whole.XT).nnz == 0
    for entity in (GERMANY, CHINA, MALI):
        a, b = whole.scores(entity), cut.scores(entity)
        order_a, order_b = np.argsort(a[0]), np.argsort(b[0])
        assert (a[0][order_a] == b[0][order_b]).all() and (a[1][order_a] == b[1][order_b]).all()
        assert whole.ranked(entity) == cut.ranked(entity) == cut.ranked(entity, None, b)
    idx.release_pages()
    assert cut.ranked(GERMANY, 5) == whole.ranked(GERMANY, 5)


def test_sem_slices_in_parts_rank_as_one_slice(index, suite, monkeypatch, tmp_path, caplog):
    """Type slices in parts of at most SLICE_PART members (a giant class's
    slice held GBs in the worker building or ranking it), each cosine is the float of one slice,
    the prefix kept is the prefix of the whole ranking (ties whole), the count is the number of
    distinct candidates scored: for objects of one type and of several, parts built or saved
    and mapped, so Sem's lists and a preparation's prefixes do not change. The query's bag is
    matched in chunks of QUERY_CHUNK features alike."""
    from factprobe.distractors.retrieval_inputs import prepare_slices
    from factprobe.distractors.retrieve import fact_ids

    facts, _, omega = suite
    idx = load_index(index, "exact")
    triples = fact_ids(facts)
    objects = qids(facts["object"])
    want = sem_distractors(idx, omega, triples, 10, "exact", 4)
    want_prefixes = search.exact_prefixes(idx, omega, objects, 10, 4)
    several = [o for o in set(objects.tolist()) if len(omega.types_of(o)) > 1]
    assert len(several) >= 5
    probe = sorted(set(objects.tolist()))  # every object, of one type and of several, once
    whole = slices.TypeSlices(idx, omega, 10**9)
    ref = {o: dict(zip(*whole.scores(omega.types_of(o), o), strict=True)) for o in probe}
    # Parts of two members (every type with more than two split) and query chunks of one feature
    # are each the extreme of its own loop; one layout each (the two loops do not meet: a chunk
    # is matched against one part's features).
    for part, chunk in ((2, 65536), (7, 1)):
        monkeypatch.setattr(slices, "SLICE_PART", part)
        monkeypatch.setattr(slices, "QUERY_CHUNK", chunk)
        # Few parts held at once (each mapped array holds a file descriptor): the same answers.
        monkeypatch.setattr(slices, "SLICE_CACHE_PARTS", 3 if part == 2 else 128)
        folder = tmp_path / f"slices{part}"
        caplog.clear()
        with caplog.at_level("INFO", logger="factprobe.distractors.retrieval_inputs"):
            prepare_slices(idx, omega, facts, folder, workers=2)
        # benchmarks/scale.py reads the line's times (the model's slice building).
        line = [r.getMessage() for r in caplog.records if r.getMessage().startswith("type slices")]
        assert len(line) == 1 and " split into " in line[0]
        assert len(scale.SLICES_LINE.findall(line[0])) == 1
        split = [d for d in folder.iterdir() if not (d / "rows.npy").exists()]
        assert split and all((d / "0" / "rows.npy").exists() for d in split)  # saved in parts
        for mapped in (None, folder):
            idx.slices = mapped
            typed = slices.TypeSlices(idx, omega, 10**9)
            for o in probe:
                types = omega.types_of(o)
                rows, vals = typed.scores(types, o)
                # The same candidates, each with the same float (a product lists its columns in
                # the order it meets them).
                assert dict(zip(rows, vals, strict=True)) == ref[o] and len(rows) == len(ref[o])
                for top in (1, 5, 56):
                    p_rows, p_vals, count = typed.prefix(types, o, top)
                    assert count == len(rows)
                    assert len(p_rows) <= len(rows) and set(p_rows.tolist()) <= set(rows.tolist())
                    assert slices.rank_rows(idx, p_rows, p_vals, top) == slices.rank_rows(
                        idx, rows, vals, top
                    )
            held = [len(parts) for parts in typed.slices.values()]
            assert typed.parts == sum(held)
            if part == 2:  # only the type last used may hold more than the cap on its own
                assert len(held) == 1 or typed.parts <= 3, held
            assert sem_distractors(idx, omega, triples, 10, "exact", 4) == want
            got = search.exact_prefixes(idx, omega, objects, 10, 4, workers=2 if mapped else 1)
            for name in ("objects", "starts", "entities", "scored"):
                assert np.array_equal(getattr(got, name), getattr(want_prefixes, name)), name
    # Parts of two members split every type with more than two: several types had several parts.
    assert max(len(omega.members(omega.types_of(o))) for o in several) > 7


def test_prepared_type_slices_are_mapped_and_rank_as_built_ones(index, suite, tmp_path):
    """The type slices a preparation saves (retrieval_inputs.prepare_slices, rule prepare_retrieval) are
    memory-mapped by a shard's TypeSlices instead of built, and give the same cosines (bit for
    bit) and so the same exact Sem lists as slices built from the index."""
    from factprobe.distractors.retrieval_inputs import prepare_slices
    from factprobe.distractors.retrieve import fact_ids

    facts, _, omega = suite
    idx = load_index(index, "exact")
    triples = fact_ids(facts)
    built_here = {"s": 0.0, "n": 0}
    want = sem_distractors(idx, omega, triples, 10, "exact", 4, built_here)
    assert built_here["n"] > 3
    assert prepare_slices(idx, omega, facts, tmp_path / "slices") == built_here["n"]
    # Built in forked processes (the preparation's threads): the same files, byte for byte.
    assert prepare_slices(idx, omega, facts, tmp_path / "forked", workers=2) == built_here["n"]
    files = sorted(f.relative_to(tmp_path / "slices") for f in (tmp_path / "slices").rglob("*.npy"))
    assert len(files) >= 3 * built_here["n"]
    for f in files:
        assert (tmp_path / "forked" / f).read_bytes() == (tmp_path / "slices" / f).read_bytes(), f
    mapped = TypeSlice.mapped(idx, tmp_path / "slices" / str(int(omega.types_of(GERMANY)[0])))
    # Mapped, not copied: the product reads the postings of the query's features only.
    assert isinstance(mapped.rows, np.memmap) and not mapped.XT.data.flags.writeable
    whole = TypeSlice(idx, omega.members(omega.types_of(GERMANY)[:1]))
    for entity in (GERMANY, CHINA, MALI):
        a, b = whole.scores(entity), mapped.scores(entity)
        assert (a[0] == b[0]).all() and (a[1] == b[1]).all() and len(a[0]) > 0
    idx.slices = tmp_path / "slices"
    built_mapped = {"s": 0.0, "n": 0}
    assert sem_distractors(idx, omega, triples, 10, "exact", 4, built_mapped) == want
    assert built_mapped["n"] == 0  # every slice mapped, none built
    # Objects ranked once (a preparation's prefixes): the same lists, also for n and widen that
    # make Ω read past a prefix (then the whole ranking from the slices); a prefix of another
    # top is not used.
    objects = qids(facts["object"])
    for n, widen in ((10, 4), (30, 0)):
        expect = sem_distractors(load_index(index, "exact"), omega, triples, n, "exact", widen)
        held = search.exact_prefixes(idx, omega, objects, n, widen)
        # Ranked in forked processes (the preparation's threads): the same prefixes.
        forked = search.exact_prefixes(idx, omega, objects, n, widen, workers=3)
        for name in ("objects", "starts", "entities", "scored"):
            assert np.array_equal(getattr(forked, name), getattr(held, name)), name
        held.save(tmp_path / f"prefixes{n}")
        idx.prefixes = search.Prefixes.from_folder(tmp_path / f"prefixes{n}")
        assert len(idx.prefixes.objects) == len(set(objects.tolist())) and idx.prefixes.top == widen * n + 16
        assert sem_distractors(idx, omega, triples, n, "exact", widen) == expect
    longer = [len(idx.prefixes.get(o)[0]) < idx.prefixes.get(o)[1] for o in set(objects.tolist())]
    assert any(longer)  # some rankings go on past their prefix
    assert sem_distractors(idx, omega, triples, 10, "exact", 4) == want


def test_a_rule_input_is_optional_by_name():
    """A Snakemake input list is a list: ``inputs.index`` is a guard object, not a missing input,
    so the preparation asks for an optional input by key (a suite without Sem has no index)."""
    from factprobe.distractors.retrieval_inputs import _optional
    from snakemake.iocontainers import InputFiles

    assert _optional(InputFiles(fromdict={"facts": "f"}), "index") is None
    assert _optional(InputFiles(fromdict={"facts": "f", "index": "i"}), "index") == "i"
    from types import SimpleNamespace

    assert _optional(SimpleNamespace(facts="f"), "index") is None
