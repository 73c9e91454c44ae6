"""Sem's bag of features as the distractors paper §3.3 defines it.

§3.3: the bag of an entity e holds (i) e itself, (ii) every r with (e, r, o) ∈ B, (iii) every o,
(iv) every (r, o); the bags are TF-IDF vectors compared by cosine. The reference implementation
(DistFactAssessLM, ``SimilarityDistractorFinder._build``) makes each bag a Python set of id strings
(so a repeated relation counts once, and "Q1" as e itself and "Q1" as another entity's object are
the same string) and fits scikit-learn's ``TfidfVectorizer(analyzer=identity, norm=None)``
(smooth idf, raw tf of a set = 1), searched in nmslib's cosine space. Every expected value below is
worked out by hand in the comments, and checked once more against that scikit-learn construction.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from factprobe.distractors.semantic.bags import bags_from_parquet, feature_codes
from factprobe.distractors.semantic.index import build_index, exact_topk, load_index
from factprobe.distractors.semantic.weighting import weigh, weight_matrix
from sklearn.feature_extraction.text import TfidfVectorizer

FRANCE, GERMANY, SPAIN, ITALY, BELGIUM, CHAD = 1, 2, 3, 4, 5, 6
EUROPE, AFRICA = 10, 11
CONTINENT, BORDERS, SUBDIVISION = 30, 47, 150

# Six countries. France and Germany have three subdivisions each (P150 repeated three times),
# Spain and Chad one, Italy none; Belgium borders France (its object Q1 is France's own id).
TOY = [
    (FRANCE, CONTINENT, EUROPE),
    (FRANCE, SUBDIVISION, 21),
    (FRANCE, SUBDIVISION, 22),
    (FRANCE, SUBDIVISION, 23),
    (GERMANY, CONTINENT, EUROPE),
    (GERMANY, SUBDIVISION, 24),
    (GERMANY, SUBDIVISION, 25),
    (GERMANY, SUBDIVISION, 26),
    (SPAIN, CONTINENT, EUROPE),
    (SPAIN, SUBDIVISION, 27),
    (ITALY, CONTINENT, EUROPE),
    (BELGIUM, CONTINENT, EUROPE),
    (BELGIUM, BORDERS, FRANCE),
    (CHAD, CONTINENT, AFRICA),
    (CHAD, SUBDIVISION, 28),
]

# --- The paper's bags (sets, one namespace), N = 6 documents (the subjects) -------------------
# France  {Q1, P30, Q10, P30_Q10, P150, Q21, Q22, Q23, P150_Q21, P150_Q22, P150_Q23}
# Germany {Q2, P30, Q10, P30_Q10, P150, Q24, Q25, Q26, P150_Q24, P150_Q25, P150_Q26}
# Spain   {Q3, P30, Q10, P30_Q10, P150, Q27, P150_Q27}
# Italy   {Q4, P30, Q10, P30_Q10}
# Belgium {Q5, P30, Q10, P30_Q10, P47, Q1, P47_Q1}
# Chad    {Q6, P30, Q11, P30_Q11, P150, Q28, P150_Q28}
# idf = ln((1 + N) / (1 + df)) + 1:  P30 (df 6) 1; Q10, P30_Q10 (df 5) 1.15415; P150 (df 4) 1.33647;
# Q1 (df 2: France's self, Belgium's object) 1.84730; every other feature (df 1) 2.25276.
# |France|² = 1.84730² + 1 + 2·1.15415² + 1.33647² + 6·2.25276² = 39.31237, |France| = 6.26996.
# Belgium: dot = 1 + 2·1.33206 + 1.84730² = 7.07664; |B|² = 3·5.07493 + 1 + 2.66412 + 3.41252
#          = 22.30143; cos = 7.07664 / (6.26996 · 4.72244) = 0.23900
# Italy:   dot = 1 + 2.66412 = 3.66412; |I| = √8.73905 = 2.95619; cos = 0.19768
# Spain:   dot = 3.66412 + 1.78615 = 5.45027; |S| = √20.67506 = 4.54693; cos = 0.19118
# Germany: dot = 5.45027; |G| = √40.97478 = 6.40115; cos = 0.13580
# Chad:    dot = 1 + 1.78615 = 2.78615; |C| = √28.16080 = 5.30668; cos = 0.08374
PAPER_ORDER = [BELGIUM, ITALY, SPAIN, GERMANY, CHAD]
PAPER_COS = [0.23900, 0.19768, 0.19118, 0.13580, 0.08374]

# --- The former features (counts, tagged namespaces) ------------------------------------------
# France's P150 has tf 3 (weight 3 · 1.33647 = 4.00941), its own id e:Q1 (df 1, 2.25276) is not
# Belgium's object o:Q1 (df 1). |France|² = 2.25276² + 1 + 2.66412 + 4.00941² + 30.44958 = 55.264.
# Germany: dot = 1 + 2.66412 + 4.00941² = 19.73949, |G| = |F|, cos = 19.73949 / 55.264 = 0.35719
# Spain:   dot = 3.66412 + 4.00941 · 1.33647 = 9.02258; cos = 9.02258 / (7.43397 · 4.54693) = 0.26693
# Italy:   cos = 3.66412 / (7.43397 · 2.95619) = 0.16673
# Chad:    dot = 1 + 5.35846 = 6.35846; cos = 6.35846 / (7.43397 · 5.30668) = 0.16118
# Belgium: dot = 3.66412 (no Q1 match); |B| = √23.96384 = 4.89529; cos = 0.10069
OLD_ORDER = [GERMANY, SPAIN, ITALY, CHAD, BELGIUM]
OLD_COS = [0.35719, 0.26693, 0.16673, 0.16118, 0.10069]


def toy_arrays():
    s, p, o = (np.array(x, np.int64) for x in zip(*TOY, strict=True))
    return s, p, o


def neighbours_of(entity: int, bag: str, namespace: str) -> tuple[list[int], list[float]]:
    s, p, o = toy_arrays()
    rows, codes = feature_codes(s, p, o, reverse=False, namespace=namespace)
    ents, _, X, _ = weight_matrix(rows, codes, "tfidf", bag=bag)
    ids, sims = exact_topk(X, np.array([int(np.searchsorted(ents, entity))]), 5)
    return [int(ents[i]) for i in ids[0]], [float(v) for v in sims[0]]


def test_paper_bags_give_the_hand_worked_neighbour_order():
    order, cos = neighbours_of(FRANCE, "sets", "shared")
    assert order == PAPER_ORDER
    assert cos == pytest.approx(PAPER_COS, abs=5e-5)


def test_former_features_give_their_hand_worked_order_and_another_first_distractor():
    order, cos = neighbours_of(FRANCE, "counts", "tagged")
    assert order == OLD_ORDER
    assert cos == pytest.approx(OLD_COS, abs=5e-5)
    # The first Sem neighbour of France changes: Germany (3 repeated P150) → Belgium (object Q1).
    assert OLD_ORDER[0] != PAPER_ORDER[0]


def test_each_change_alone():
    """Sets alone drop Germany's repeated P150 (Italy first: cos 3.66412 / (|F| · 2.95619) with
    |F|² = 39.31237 − 1.84730² + 2.25276² = 40.97478, i.e. 3.66412 / 18.92302 = 0.19363); the shared namespace alone
    keeps counts but lets Belgium's Q1 match, not enough against P150 × 3 (Germany first)."""
    order, cos = neighbours_of(FRANCE, "sets", "tagged")
    assert order[0] == ITALY and cos[0] == pytest.approx(0.19363, abs=5e-5)
    assert neighbours_of(FRANCE, "counts", "shared")[0][0] == GERMANY


def test_paper_bags_equal_the_reference_sklearn_construction():
    """Sets of id strings in one namespace, ``TfidfVectorizer(analyzer=identity, norm=None)``,
    cosine: the Gram matrix of the index (L2 rows) equals the reference's cosines."""
    s, p, o = toy_arrays()
    bags: dict[int, set[str]] = {}
    for a, r, b in zip(s, p, o, strict=True):
        bags.setdefault(int(a), set()).update({f"Q{a}", f"P{r}", f"Q{b}", f"P{r}_Q{b}"})
    order = sorted(bags)
    ref = TfidfVectorizer(analyzer=lambda x: sorted(x), norm=None, lowercase=False).fit_transform(
        [bags[e] for e in order]
    )
    norms = np.sqrt(np.asarray(ref.multiply(ref).sum(axis=1)).ravel())
    ref_cos = (ref @ ref.T).toarray() / np.outer(norms, norms)
    rows, codes = feature_codes(s, p, o)  # the defaults are the paper's bag
    ents, feats, X, _ = weight_matrix(rows, codes, "tfidf")
    # 30 features: Q1-Q6, P30, P47, P150, Q10, Q11, P30_Q10, P30_Q11, Q21-Q28, P150_Q21-Q28, P47_Q1.
    assert list(ents) == order and X.shape[1] == ref.shape[1] == 30
    assert np.abs((X @ X.T).toarray() - ref_cos).max() < 1e-6


def test_index_defaults_and_duckdb_bags_are_the_paper_bags(tmp_path):
    """build_index (in memory and from Parquet through DuckDB) defaults to the paper's bag, and
    records the features in meta.json; the Sem ranking of France's neighbours is PAPER_ORDER."""
    from factprobe import contracts

    s, p, o = toy_arrays()
    n = len(s)
    claims = pd.DataFrame(
        {
            "subject": s,
            "property": p,
            "object": o,
            "rank": np.ones(n, np.int8),
            "start": pd.array([None] * n, dtype="Int64"),
            "end": pd.array([None] * n, dtype="Int64"),
            "point_in_time": pd.array([None] * n, dtype="Int64"),
        }
    )
    meta = build_index(claims, tmp_path / "idx", hnsw=False)
    assert (meta["bag"], meta["namespace"], meta["reverse"]) == ("sets", "shared", False)
    idx = load_index(tmp_path / "idx", "exact")
    assert idx.neighbours(np.array([FRANCE]), 5, "exact")[0] == PAPER_ORDER
    contracts.write("claims", claims, tmp_path / "claims.parquet")
    for bag, namespace in [("sets", "shared"), ("counts", "tagged")]:
        rows, codes = feature_codes(s, p, o, False, namespace)
        ents, feats, X, idf = weight_matrix(rows, codes, "tfidf", bag=bag)
        ents2, feats2, counts, _ = bags_from_parquet(
            tmp_path / "claims.parquet", bag=bag, namespace=namespace
        )
        X2, idf2 = weigh(counts, "tfidf")
        assert np.array_equal(ents, ents2) and np.array_equal(feats, feats2) and np.array_equal(idf, idf2)
        assert np.array_equal(X.data, X2.data) and np.array_equal(X.indices, X2.indices)


def test_reverse_features_share_the_namespace_as_the_reference_strings():
    """With reverse features (v)-(vii), the reference adds to o's bag the strings r, s and
    "s_r": in the shared namespace r is (ii)'s feature and s the entity feature. Subdivision Q21
    (object only): {Q21 (self), P150, Q1, Q1_P150}; Q1 is the same column as France's self."""
    s, p, o = toy_arrays()
    rows, codes = feature_codes(s, p, o, reverse=True, namespace="shared")
    mine = set(codes[rows == 21].tolist())
    assert len(mine) == 4
    france_self = set(codes[rows == FRANCE].tolist()) & set(codes[rows == BELGIUM].tolist())
    # France's self feature is also Belgium's object (iii) and Q21's reverse subject (vi).
    assert france_self & mine
    tagged = feature_codes(s, p, o, reverse=True, namespace="tagged")
    assert not set(tagged[1][tagged[0] == 21].tolist()) & set(tagged[1][tagged[0] == FRANCE].tolist())


def test_bad_bag_or_namespace_names_the_setting():
    s, p, o = toy_arrays()
    with pytest.raises(ValueError, match="distractors.sem.namespace"):
        feature_codes(s, p, o, namespace="separate")
    rows, codes = feature_codes(s, p, o)
    with pytest.raises(ValueError, match="distractors.sem.bag"):
        weight_matrix(rows, codes, bag="binary")
