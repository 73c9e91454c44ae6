"""The semantic index built in parts: the same index as the unsharded build.

Each part job (``count_part``) counts the bags of the entities of its part (a hash of the entity
id) and their document frequencies; ``build_from_parts`` sums the frequencies (IDF over the
dump) and weighs the rows. Checked against the unsharded build (``build_index``, one DuckDB
pass over every bag) file for file, against an independent TF-IDF written out below from the
paper's definition (§3.3: a bag is the set of e, r, o, (r, o); smooth IDF; cosine), and on the
Sem rankings retrieval reads.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
from factprobe.distractors.semantic.bags import PART_MODULUS, part_sql
from factprobe.distractors.semantic.index import INDEX_FILES, build_index, exact_topk, load_index
from factprobe.distractors.semantic.index_parts import build_from_parts
from factprobe.distractors.semantic.part_bags import count_part, part_of
from factprobe.distractors.semantic.part_count import PART_DUMP_BYTES, dump_parts, parts_for
from factprobe.distractors.semantic.slices import ranked_within
from factprobe.scan import connect
from factprobe.settings import Sem

FILES = INDEX_FILES


@pytest.fixture(scope="module")
def claims(tmp_path_factory):
    """400 statements over 120 subjects and 150 objects, some deprecated (rank 0), repeats."""
    rng = np.random.default_rng(31)
    n = 400
    table = pd.DataFrame(
        {
            "subject": rng.integers(1, 121, n),
            "property": rng.integers(1, 9, n),
            "object": rng.integers(1, 151, n),
            "rank": rng.integers(0, 3, n),
        }
    )
    path = tmp_path_factory.mktemp("claims") / "claims.parquet"
    table.to_parquet(path)
    return path, table


def build_parts(claims_path, root, parts, settings, rows=None, sizes=None):
    folders = []
    more = {} if sizes is None else {"sizes": sizes}
    for p in range(parts):
        folder = root / f"bags{parts}" / str(p)
        count_part(
            claims_path,
            folder,
            p,
            parts,
            settings.reverse_features,
            settings.bag,
            settings.namespace,
            rows=rows,
            **more,
        )
        folders.append(folder)
    out = root / f"index{parts}"
    build_from_parts(folders, out, settings, hnsw=False)
    return folders, out


SETTINGS = [
    Sem(),  # the paper's bag: sets, shared namespace, TF-IDF
    Sem(weighting="bm25"),
    Sem(weighting="bm25", reverse_features=True, bag="counts", namespace="tagged"),
]


@pytest.mark.parametrize("settings", SETTINGS)
@pytest.mark.parametrize("candidates", [False, True])
def test_parts_give_the_unsharded_index_file_for_file(claims, tmp_path, settings, candidates):
    path, _ = claims
    rows = np.arange(1, 151, 4) if candidates else None
    build_index(path, tmp_path / "whole", settings, hnsw=False, rows=rows)
    for parts in (1, 2, 3):
        _, out = build_parts(path, tmp_path, parts, settings, rows)
        for name in FILES:
            want, got = np.load(tmp_path / "whole" / name), np.load(out / name)
            assert got.dtype == want.dtype and np.array_equal(got, want), (parts, name)
        meta = json.loads((out / "meta.json").read_text())
        assert [p["part"] for p in meta["parts"]] == list(range(parts))
        assert meta["nnz"] == sum(p["nnz"] for p in meta["parts"])


@pytest.mark.parametrize("settings", SETTINGS)
@pytest.mark.parametrize("sizes", [(3, 40), (5, 7), (1, 1)])
def test_entity_and_feature_buckets_give_the_unsharded_index_file_for_file(claims, tmp_path, settings, sizes):
    """A part cut into buckets of entity ids (2^sizes[0] ids) and ranges of feature codes (sizes[1]
    codes) writes the files of one bucket, and the merge those of the unsharded build: the
    buckets only bound each sort, they do not change the bags, the vocabulary or the counts."""
    path, _ = claims
    rows = np.arange(1, 151, 3)
    build_index(path, tmp_path / "whole", settings, hnsw=False, rows=rows)
    for parts in (1, 2):
        one, _ = build_parts(path, tmp_path / "one", parts, settings, rows)
        many, out = build_parts(path, tmp_path / "many", parts, settings, rows, sizes)
        for a, b in zip(one, many, strict=True):
            for name in ("entities.npy", "features.npy", *FILES[3:]):
                assert np.array_equal(np.load(a / name), np.load(b / name)), (parts, name)
            want, got = pd.read_parquet(a / "df.parquet"), pd.read_parquet(b / "df.parquet")
            assert want.equals(got) and len(got) > 0
            assert {k: v for k, v in json.loads((a / "meta.json").read_text()).items() if k != "seconds"} == {
                k: v for k, v in json.loads((b / "meta.json").read_text()).items() if k != "seconds"
            }
        for name in FILES:
            assert np.array_equal(np.load(tmp_path / "whole" / name), np.load(out / name)), (parts, name)


def naive_cosines(table: pd.DataFrame) -> tuple[list[int], np.ndarray]:
    """§3.3 written out with dicts: bag = set of e, r, o, (r, o) strings; idf = ln((1+N)/(1+df)) + 1."""
    bags: dict[int, set[str]] = {}
    kept = table[table["rank"] >= 1]
    for s, r, o in zip(kept["subject"], kept["property"], kept["object"], strict=True):
        bags.setdefault(int(s), set()).update({f"Q{s}", f"P{r}", f"Q{o}", f"P{r}_Q{o}"})
    order = sorted(bags)
    df: dict[str, int] = {}
    for bag in bags.values():
        for f in bag:
            df[f] = df.get(f, 0) + 1
    idf = {f: math.log((1 + len(bags)) / (1 + d)) + 1 for f, d in df.items()}
    vecs = []
    for e in order:
        norm = math.sqrt(sum(idf[f] ** 2 for f in bags[e]))
        vecs.append({f: idf[f] / norm for f in bags[e]})
    cos = np.array([[sum(w * b.get(f, 0.0) for f, w in a.items()) for b in vecs] for a in vecs])
    return order, cos


def test_parts_give_the_naive_tfidf_cosines_and_rankings(claims, tmp_path):
    path, table = claims
    order, cos = naive_cosines(table)
    _, out = build_parts(path, tmp_path, 3, Sem())
    index = load_index(out, "exact")
    assert index.entities.tolist() == order
    X = index.X
    assert np.abs((X @ X.T).toarray() - cos).max() < 1e-5
    # Sem's exact ranking of every entity: cosine descending (ties by row), as the naive cosines.
    ids, sims = exact_topk(X, np.arange(len(order)), 10)
    for q in range(len(order)):
        got = ids[q][ids[q] >= 0]
        assert np.allclose(sims[q][: len(got)], cos[q, got], atol=1e-5)
        others = np.delete(cos[q], q)
        if len(got) == 10:  # no cosine outside the top 10 beats its 10th
            assert np.sort(others)[-10] <= sims[q][9] + 1e-5


def test_sem_rankings_equal_on_sharded_and_whole_index(claims, tmp_path):
    """The lists retrieval ranks (TypeSlice, sem_distractors' exact search) are the same."""
    path, _ = claims
    build_index(path, tmp_path / "whole", hnsw=False)
    _, out = build_parts(path, tmp_path, 2, Sem())
    whole, parted = load_index(tmp_path / "whole", "exact"), load_index(out, "exact")
    candidates = np.arange(1, 151)
    for entity in (3, 17, 60, 99, 120):
        assert ranked_within(parted, entity, candidates) == ranked_within(whole, entity, candidates)
        a, b = (
            whole.neighbours(np.array([entity]), 8, "exact"),
            parted.neighbours(np.array([entity]), 8, "exact"),
        )
        assert a == b


def test_part_assignment_is_a_stable_hash_alike_in_numpy_and_duckdb():
    # By hand: part = ((e mod (2^31 - 1)) · 48271 mod (2^31 - 1)) mod P.
    # e = 1: 48271 mod 3 = 1 (48271 = 3 · 16090 + 1); e = 2: 96542 = 3 · 32180 + 2;
    # e = 2^31 - 1 ≡ 0: part 0; e = 2^31: ≡ 1, like e = 1.
    ids = np.array([1, 2, PART_MODULUS, PART_MODULUS + 1, 44_000, 2**32 - 1], np.int64)
    got = part_of(ids, 3)
    assert got[:4].tolist() == [1, 2, 0, 1]
    assert got[4] == (44_000 * 48271) % PART_MODULUS % 3
    con = connect()
    con.register("ids", pd.DataFrame({"e": np.arange(0, 2**32, 7_654_321, dtype=np.int64)}))
    frame = con.execute(f"SELECT e, {part_sql('e', 5)} AS p FROM ids ORDER BY e").fetchdf()
    assert np.array_equal(frame["p"].to_numpy(), part_of(frame["e"].to_numpy(), 5))
    # Balanced over consecutive ids (Wikidata's are dense): each of 4 parts within 2 % of 1/4.
    counts = np.bincount(part_of(np.arange(1, 400_001), 4), minlength=4)
    assert counts.min() > 0.98 * 100_000 and counts.max() < 1.02 * 100_000


def test_each_part_reads_only_its_entities(claims, tmp_path):
    """A part's bags are its entities only, their statistics add up to the whole dump's, and a
    statement of another part is never materialised: an id too wide for the feature code layout
    fails only the part that owns it."""
    path, table = claims
    folders, _ = build_parts(path, tmp_path, 3, Sem())
    subjects = np.unique(table.loc[table["rank"] >= 1, "subject"].to_numpy())
    seen = []
    for p, folder in enumerate(folders):
        ents = np.load(folder / "entities.npy")
        assert (part_of(ents, 3) == p).all()
        seen.append(ents)
        meta = json.loads((folder / "meta.json").read_text())
        assert meta["bags"] == len(ents)
    assert np.array_equal(np.sort(np.concatenate(seen)), subjects)
    wide = 2**32 + 5  # ids must be < 2^32: the layout check raises where this subject is read
    bad = pd.concat([table, pd.DataFrame({"subject": [wide], "property": [1], "object": [1], "rank": [1]})])
    bad_path = tmp_path / "bad.parquet"
    bad.to_parquet(bad_path)
    owner = int(part_of(np.array([wide]), 3)[0])
    for p in range(3):
        if p == owner:
            with pytest.raises(ValueError, match="widen the feature code layout"):
                count_part(bad_path, tmp_path / "bad" / str(p), p, 3)
        else:
            count_part(bad_path, tmp_path / "bad" / str(p), p, 3)


def test_parts_from_the_dump_size(tmp_path):
    assert parts_for(None) == parts_for(0) == 1
    assert parts_for(PART_DUMP_BYTES) == 1 and parts_for(PART_DUMP_BYTES + 1) == 2
    assert dump_parts(tmp_path / "absent.json.gz") == 1
    # Whole Wikidata (≈ 140 GB of .json.gz): ≈ 14 parts of ≤ 150 M non-zeros.
    assert 10 <= parts_for(140 * 10**9) <= 20


def test_merge_refuses_incomplete_or_mixed_parts(claims, tmp_path):
    path, _ = claims
    folders, _ = build_parts(path, tmp_path, 2, Sem())
    with pytest.raises(RuntimeError, match="re-run rule sem_bags"):
        build_from_parts(folders[:1], tmp_path / "one", hnsw=False)
    with pytest.raises(RuntimeError, match="re-run rule sem_bags"):
        build_from_parts(folders, tmp_path / "rev", Sem(reverse_features=True), hnsw=False)


def test_part_jobs_ask_for_their_share_of_the_memory(tmp_path):
    """sem_bags' mem_mb (functions/distractors.smk): floor + factor x input MB / parts, so a part job of P asks
    for about 1/P of what the one job over the whole claims asked for."""
    from factprobe.plumbing.diskspace import input_scaled

    claims = tmp_path / "claims.parquet"
    claims.write_bytes(b"\0" * 10_000_000)  # 10 MB (diskspace.MB = 10^6 bytes)
    whole = input_scaled("mem_mb", 60, 2000, "sem_bags", 64000)
    parted = input_scaled("mem_mb", 60, 2000, "sem_bags", 64000, lambda w: 4)
    assert whole(None, [str(claims)]) == 2000 + 600
    assert parted(None, [str(claims)]) == 2000 + 150
    assert parted(None, [str(claims)], attempt=2) == 2 * 2150


def test_merge_cuts_split_no_value_and_cover_every_array():
    """The k-way merge's steps (semantic.index_parts._merge_cuts): ranges that tile each array, at most a
    window of each, and every value of a step below every value of the next, so the unique
    values of the steps, one after another, are np.unique of the concatenation."""
    from factprobe.distractors.semantic.index_parts import _merge_cuts

    rng = np.random.default_rng(7)
    arrays = [np.unique(rng.integers(0, 60, k)) for k in (40, 5, 0, 25)] + [np.arange(50, 58)]
    want = np.unique(np.concatenate(arrays))
    for window in (1, 2, 3, 7, 100):
        steps = list(_merge_cuts(arrays, window))
        got, prev_max = [], -1
        for step in steps:
            values = np.concatenate([a[lo:hi] for a, (lo, hi) in zip(arrays, step, strict=True)])
            assert len(values) and values.min() > prev_max, window
            assert all(hi - lo <= window for lo, hi in step)
            prev_max = values.max()
            got.append(np.unique(values))
        assert np.array_equal(np.concatenate(got), want), window
        for p, a in enumerate(arrays):  # each array's ranges follow on from each other to its end
            bounds = [s[p] for s in steps]
            assert bounds[0][0] == 0 and bounds[-1][1] == len(a)
            assert all(x[1] == y[0] for x, y in zip(bounds[:-1], bounds[1:], strict=True))


@pytest.mark.parametrize(
    "settings,rows",
    [
        (Sem(), range(1, 151, 3)),
        (Sem(weighting="bm25"), None),
        (Sem(weighting="bm25"), range(1, 151, 3)),
        (Sem(), [3]),  # two parts without a row
        (Sem(weighting="bm25"), [5000]),  # no row at all
    ],
)
def test_streaming_merge_in_tiny_blocks_gives_the_unsharded_files(
    claims, tmp_path, monkeypatch, settings, rows
):
    """Blocks of 2 features and 2 rows or 9 non-zeros (df.parquet read 3 rows at a time, the mapped
    column maps and IDF 16 bytes and 3 positions at a time), so that every block crosses the parts: the same files as the
    unsharded build; features = np.unique of the parts' features and IDF from the parts'
    df.parquet summed by pandas (independent of the merge); no scratch file left."""
    import factprobe.distractors.semantic.index_parts as SP

    path, _ = claims
    rows = None if rows is None else np.array(rows, np.int64)
    build_index(path, tmp_path / "whole", settings, hnsw=False, rows=rows)
    monkeypatch.setattr(SP, "MERGE_FEATURES", 2)
    monkeypatch.setattr(SP, "MERGE_ROWS", 2)
    monkeypatch.setattr(SP, "DF_BATCH", 3)
    monkeypatch.setattr(SP, "GATHER_BYTES", 16)
    monkeypatch.setattr(SP, "GATHER_ITEMS", 3)
    monkeypatch.setattr(SP, "MERGE_NNZ", 9)
    folders, out = build_parts(path, tmp_path, 3, settings, rows)
    for name in FILES:
        want, got = np.load(tmp_path / "whole" / name), np.load(out / name)
        assert got.dtype == want.dtype and np.array_equal(got, want), name
        assert (out / name).read_bytes() == (tmp_path / "whole" / name).read_bytes(), name
    features = np.load(out / "features.npy")
    assert np.array_equal(features, np.unique(np.concatenate([np.load(f / "features.npy") for f in folders])))
    df = pd.concat([pd.read_parquet(f / "df.parquet") for f in folders]).groupby("f")["df"].sum()
    n = sum(json.loads((f / "meta.json").read_text())["bags"] for f in folders)
    d = df.loc[features].to_numpy(np.float64)
    want_idf = (
        np.log((1.0 + n) / (1.0 + d)) + 1.0
        if settings.weighting == "tfidf"
        else np.log1p((n - d + 0.5) / (d + 0.5))
    )
    assert np.allclose(np.load(out / "idf.npy"), want_idf, rtol=1e-12)
    assert sorted(p.name for p in out.iterdir()) == sorted([*FILES, "meta.json"])


def test_merge_refuses_a_df_file_out_of_order(claims, tmp_path):
    path, _ = claims
    folders, _ = build_parts(path, tmp_path, 2, Sem())
    df = pd.read_parquet(folders[1] / "df.parquet")
    df.iloc[::-1].to_parquet(folders[1] / "df.parquet")
    with pytest.raises(RuntimeError, match=r"df\.parquet: features not in increasing order"):
        build_from_parts(folders, tmp_path / "bad", hnsw=False)
