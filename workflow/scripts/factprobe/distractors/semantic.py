"""Semantic distractors, Sem (distractors paper §3.3, "Semantic Distractors").

Every entity is a bag of features (§3.3): (i) the entity itself, (ii) each relation r with
(e, r, ·), (iii) each object o with (e, ·, o), (iv) each pair (r, o) with (e, r, o). The paper's
bag is a *set* in *one* namespace, as the reference implementation (DistFactAssessLM,
``SimilarityDistractorFinder``) builds it: a Python ``set`` of id strings per entity, so a relation
repeated 47 times (P150 subdivisions) counts once, and the entity "Q1" of its own bag (i) and the
object "Q1" in another entity's bag (iii) are the same feature. These are the defaults
(``bag="sets"``, ``namespace="shared"``, ``reverse=False``). Named variants, kept for earlier
results: ``bag="counts"`` keeps repeats as term frequencies; ``namespace="tagged"`` keeps (i),
(iii) and the reverse features in separate namespaces; ``reverse=True`` (the reference's optional
``use_reverse_features``, off in its experiments and not listed by the paper) gives an object also
(v) each r with (·, r, e), (vi) each subject s with (s, ·, e) and (vii) each (s, r): in the shared
namespace (v) is the relation feature of (ii) and (vi) the entity feature of (i)/(iii), as in the
reference's strings.

Weighting (footnote ‡ allows BM25 as an option): the reference fits scikit-learn's
``TfidfVectorizer(analyzer=identity, norm=None)`` on those sets, i.e. ``use_idf``, ``smooth_idf``
(idf = ln((1+N)/(1+df)) + 1 over the N entities with a bag), no sublinear tf, tf = 1 for every
feature of a set; vectors are stored unnormalised and compared in nmslib's
``cosinesimil_sparse`` space, which normalises. Here rows are L2-normalised once so that cosine
is a dot product: the same cosines.

Features are int64 codes ``tag << 56 | a << 32 | b`` (tag = kind of feature), made unique with
``np.unique``: no Python dict of strings, so the vocabulary scales to hundreds of millions of
features. Bags are indexed once per dump with nmslib HNSW ``cosinesimil_sparse`` (footnote §) and
saved with the side files; exact search (scipy sparse product) is the reference and the fallback.

The workflow builds the index in parts (:mod:`.semparts`, issue 31 item 3: rules ``sem_bags`` and
``build_sem_index``), which give the files of :func:`build_index` (the unsharded build, kept as
the reference) byte for byte.
"""

from __future__ import annotations

import json
import logging
import mmap
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import scipy.sparse as sp

from factprobe import arrays
from factprobe.hashing import stable_hash
from factprobe.parallel import cpu_clock

log = logging.getLogger(__name__)
logging.getLogger("nmslib").setLevel(logging.WARNING)

TAG_SELF, TAG_REL, TAG_OBJ, TAG_REL_OBJ, TAG_INV_REL, TAG_INV_SUBJ, TAG_INV_REL_SUBJ = range(7)
#: ``distractors.sem.bag``: sets (the paper's bag, tf 1) or counts (repeats as term frequency).
BAGS = ("sets", "counts")
#: ``distractors.sem.namespace``: shared (the reference's one namespace of id strings) or tagged.
NAMESPACES = ("shared", "tagged")
_ID_BITS = 32
_TAG_SHIFT = 56
_ROW_BLOCK = 1 << 16
# Part of an entity (the sharded index, :mod:`.semparts`): a Lehmer hash modulo the prime
# 2**31 - 1, computed alike in numpy and DuckDB (products stay below 2**47: no overflow).
PART_MODULUS = (1 << 31) - 1
PART_MULTIPLIER = 48271


def _nnz_chunks(m: sp.csr_matrix, size: int = 1 << 22):
    """``(start, stop)`` spans of a sparse matrix's data, so temporaries stay ``size`` long."""
    for a in range(0, m.nnz, size):
        yield a, min(m.nnz, a + size)


def _code(tag: int, a: np.ndarray | int, b: np.ndarray | int) -> np.ndarray:
    return (np.int64(tag) << _TAG_SHIFT) | (np.asarray(a, np.int64) << _ID_BITS) | np.asarray(b, np.int64)


def feature_tags(namespace: str = "shared") -> dict[int, int]:
    """The tag each kind of feature is coded with.

    ``shared`` (§3.3 as the reference codes it, one string per id): an entity is one feature
    whether it is the bag's own entity (i), an object (iii) or a reverse subject (vi), and a
    relation one feature whether forward (ii) or reverse (v); (r, o) and (s, r) pairs stay apart
    (the reference writes them ``r_o`` and ``s_r``). ``tagged``: every kind apart.
    """
    if namespace not in NAMESPACES:
        raise ValueError(f"distractors.sem.namespace must be one of {NAMESPACES}, not {namespace!r}")
    kinds = (TAG_SELF, TAG_REL, TAG_OBJ, TAG_REL_OBJ, TAG_INV_REL, TAG_INV_SUBJ, TAG_INV_REL_SUBJ)
    if namespace == "tagged":
        return {k: k for k in kinds}
    same = {TAG_SELF: TAG_OBJ, TAG_INV_SUBJ: TAG_OBJ, TAG_INV_REL: TAG_REL}
    return {k: same.get(k, k) for k in kinds}


def check_bag(bag: str) -> None:
    if bag not in BAGS:
        raise ValueError(f"distractors.sem.bag must be one of {BAGS}, not {bag!r}")


def feature_codes(
    subject: np.ndarray,
    prop: np.ndarray,
    obj: np.ndarray,
    reverse: bool = False,
    namespace: str = "shared",
) -> tuple[np.ndarray, np.ndarray]:
    """``(entity, feature code)`` pairs, one per feature occurrence (repeats are kept here;
    :func:`weight_matrix` makes each bag a set or counts them, ``bag``).

    Entity and object ids must be below 2**32, property ids below 2**24 (true of Wikidata).
    """
    s, p, o = (np.asarray(x, np.int64) for x in (subject, prop, obj))
    if len(s) and (max(s.max(), o.max()) >= 1 << _ID_BITS or p.max() >= 1 << (_TAG_SHIFT - _ID_BITS)):
        raise ValueError("entity id >= 2**32 or property id >= 2**24: widen the feature code layout")
    tag = feature_tags(namespace)
    ents = [arrays.unique(s)]
    rows = [s, s, s]
    codes = [_code(tag[TAG_REL], 0, p), _code(tag[TAG_OBJ], 0, o), _code(tag[TAG_REL_OBJ], p, o)]
    if reverse:
        ents.append(arrays.unique(o))
        rows += [o, o, o]
        codes += [
            _code(tag[TAG_INV_REL], 0, p),
            _code(tag[TAG_INV_SUBJ], 0, s),
            _code(tag[TAG_INV_REL_SUBJ], p, s),
        ]
    selves = arrays.unique(np.concatenate(ents))
    rows.append(selves)
    codes.append(_code(tag[TAG_SELF], 0, selves))
    return np.concatenate(rows), np.concatenate(codes)


def weight_matrix(
    rows: np.ndarray,
    codes: np.ndarray,
    weighting: str = "tfidf",
    k1: float = 1.2,
    b: float = 0.75,
    bag: str = "sets",
) -> tuple[np.ndarray, np.ndarray, sp.csr_matrix, np.ndarray]:
    """``(entities, features, X, idf)``: L2-normalised weighted bags, one row per entity.

    ``bag="sets"``: tf is 1 for every feature of a bag (§3.3); ``"counts"``: the number of
    occurrences. ``tfidf`` is scikit-learn's smooth TF-IDF (tf × (ln((1+N)/(1+df)) + 1));
    ``bm25`` uses idf ln(1 + (N-df+0.5)/(df+0.5)) and saturated tf with k1, b.
    """
    check_bag(bag)
    entities, r = np.unique(rows, return_inverse=True)
    features, c = np.unique(codes, return_inverse=True)
    n, m = len(entities), len(features)
    tf = sp.csr_matrix((np.ones(len(r), np.float32), (r, c)), shape=(n, m), dtype=np.float32)
    tf.sum_duplicates()
    if bag == "sets":
        tf.data[:] = 1.0
    X, idf = weigh(tf, weighting, k1, b)
    return entities, features, X, idf


def weigh(
    tf: sp.csr_matrix,
    weighting: str = "tfidf",
    k1: float = 1.2,
    b: float = 0.75,
    corpus: tuple[int, np.ndarray, float] | None = None,
) -> tuple[sp.csr_matrix, np.ndarray]:
    """``(X, idf)`` of a canonical float32 CSR of raw counts (rows: entities, columns: features).

    One code path for the in-memory bags (:func:`weight_matrix`) and the DuckDB ones
    (:func:`bags_from_parquet`), so both give the same floats. ``corpus``: ``(N, df per column,
    mean bag length)`` of the whole dump when ``tf`` holds only some of its bags (the candidate
    rows), so each row gets the weights it has in the whole index.
    """
    if corpus is None:
        n, m = tf.shape
        df, mean_length = np.bincount(tf.indices, minlength=m).astype(np.float64), None
    else:
        n, df, mean_length = corpus[0], np.asarray(corpus[1], np.float64), corpus[2]
    idf = idf_of(weighting, n, df)
    weigh_rows(tf, idf, weighting, k1, b, mean_length)
    X = tf if tf.dtype == np.float32 else tf.astype(np.float32)
    X.sort_indices()
    return X, idf


def idf_of(weighting: str, n: int, df: np.ndarray) -> np.ndarray:
    """IDF of each feature from its document frequency ``df`` over ``n`` bags (:func:`weigh`)."""
    if weighting == "tfidf":
        return np.log((1.0 + n) / (1.0 + df)) + 1.0
    if weighting == "bm25":
        return np.log1p((n - df + 0.5) / (df + 0.5))
    raise ValueError(f"weighting must be 'tfidf' or 'bm25', not {weighting!r}")


def weigh_rows(
    tf: sp.csr_matrix,
    idf: np.ndarray,
    weighting: str = "tfidf",
    k1: float = 1.2,
    b: float = 0.75,
    mean_length: float | None = None,
) -> None:
    """Weigh and L2-normalise the rows of ``tf`` in place with a given ``idf``.

    Every operation is row-local (given ``idf`` and BM25's ``mean_length``), so a block of rows
    gets the same floats as in the whole matrix: the sharded index (:mod:`.semparts`) relies on it.
    """
    if weighting == "tfidf":
        for a, b_ in _nnz_chunks(tf):
            tf.data[a:b_] *= idf[tf.indices[a:b_]].astype(np.float32)
    elif weighting == "bm25":
        length = np.asarray(tf.sum(axis=1)).ravel()
        mean = length.mean() if mean_length is None else mean_length
        norm = k1 * (1 - b + b * length / max(mean, 1e-9))
        row_of = np.repeat(np.arange(tf.shape[0]), np.diff(tf.indptr))
        t = tf.data
        tf.data = (idf[tf.indices] * t * (k1 + 1) / (t + norm[row_of])).astype(np.float32)
    else:
        raise ValueError(f"weighting must be 'tfidf' or 'bm25', not {weighting!r}")
    # L2 rows in place, a block of rows at a time: the same float32 operations as
    # ``diags(1 / norms) @ tf`` (one product per entry) without the matrix's copies, which were
    # the job's peak memory at scale (issue 15).
    rows = tf.shape[0]
    for lo in range(0, rows, _ROW_BLOCK):
        hi = min(rows, lo + _ROW_BLOCK)
        block = tf[lo:hi]
        norms = np.sqrt(np.asarray(block.multiply(block).sum(axis=1)).ravel())
        norms[norms == 0] = 1.0
        scale = (1.0 / norms).astype(np.float32)
        a, b_ = tf.indptr[lo], tf.indptr[hi]
        tf.data[a:b_] *= np.repeat(scale, np.diff(tf.indptr[lo : hi + 1]))


def bags_from_parquet(
    claims_path: str | Path,
    reverse: bool = False,
    threads: int = 1,
    memory_mb: int | None = None,
    rows: np.ndarray | None = None,
    bag: str = "sets",
    namespace: str = "shared",
) -> tuple[np.ndarray, np.ndarray, sp.csr_matrix, tuple[int, np.ndarray, float]]:
    """``(entities, features, counts, corpus)`` of a claims Parquet file, counted in DuckDB (issue 15 item 3).

    The same bags as :func:`feature_codes` + :func:`weight_matrix` on the non-deprecated distinct
    triples, but the feature occurrences are grouped (and counted, ``bag="counts"``) by DuckDB,
    which spills to disk, instead of being materialised as int64 arrays and sorted in memory:
    only the final CSR (4 + 4 bytes per non-zero) is held. ``counts`` is canonical float32
    (1 for every feature of a bag with ``bag="sets"``).

    ``rows``: keep only these entities' bags (the candidates, :func:`factprobe.scan.sem_candidates`);
    ``corpus`` = ``(N, df of each kept feature, mean bag length)`` is still counted over every
    entity of the dump, so a kept row is weighted as in the whole index (:func:`weigh`).
    """
    from factprobe import scan

    check_bag(bag)
    con = scan.connect(threads, memory_mb)
    tf_table(con, claims_path, reverse, bag, namespace)
    n_all = total = None
    if rows is not None:
        n_all, total = con.execute("SELECT count(DISTINCT e), coalesce(sum(n), 0) FROM tf").fetchone()
        con.execute("CREATE TEMP TABLE dfs AS SELECT f, count(*)::BIGINT AS df FROM tf GROUP BY f")
        con.register("keep_rows", pd.DataFrame({"e": np.asarray(rows, np.int64)}))
        con.execute("CREATE TEMP TABLE kept AS SELECT * FROM tf WHERE e IN (SELECT e FROM keep_rows)")
        con.execute("DROP TABLE tf")
        con.execute("ALTER TABLE kept RENAME TO tf")
    entities, features, df, counts = read_bags(con, rows is not None)
    con.close()
    if rows is None:
        # The matrix is the whole corpus: its statistics come from the arrays, no second scan.
        n_all, total = len(entities), float(counts.data.sum(dtype=np.float64))
        df = np.bincount(counts.indices, minlength=len(features)).astype(np.float64)
    return entities, features, counts, (int(n_all), df, float(total) / max(int(n_all), 1))


def part_sql(column: str, parts: int) -> str:
    """DuckDB expression of :func:`factprobe.distractors.semparts.part_of` (the same integers)."""
    return f"((({column} % {PART_MODULUS}) * {PART_MULTIPLIER}) % {PART_MODULUS}) % {int(parts)}"


def tf_table(
    con,
    claims_path: str | Path,
    reverse: bool,
    bag: str,
    namespace: str,
    part: tuple[int, int] | None = None,
) -> None:
    """DuckDB temp table ``tf (e, f, n)``: the bags of the non-deprecated distinct triples.

    ``part = (p, P)``: only the bags of the entities of part ``p`` of ``P`` (:func:`part_sql`):
    the triples are filtered while scanned (a subject of the part, or with reverse features an
    object), so only the part's slice is made distinct and grouped.
    """
    from factprobe import scan

    scan.check_columns(con, "claims", claims_path, ["subject", "property", "object", "rank"])
    src = f"read_parquet('{str(claims_path).replace(chr(39), chr(39) * 2)}')"
    where = "rank >= 1"
    if part is not None:
        mine = f"{part_sql('subject', part[1])} = {int(part[0])}"
        if reverse:
            mine = f"({mine} OR {part_sql('object', part[1])} = {int(part[0])})"
        where += f" AND {mine}"
    con.execute(
        f"CREATE TEMP TABLE c AS SELECT DISTINCT subject::BIGINT AS s, property::BIGINT AS p, "
        f"object::BIGINT AS o FROM {src} WHERE {where}"
    )
    top_id, top_p = con.execute("SELECT max(greatest(s, o)), max(p) FROM c").fetchone()
    if top_id is not None and (top_id >= 1 << _ID_BITS or top_p >= 1 << (_TAG_SHIFT - _ID_BITS)):
        raise ValueError("entity id >= 2**32 or property id >= 2**24: widen the feature code layout")
    tf = "count(*)::INTEGER" if bag == "counts" else "1::INTEGER"
    keep = "" if part is None else f"WHERE {part_sql('e', part[1])} = {int(part[0])}"
    con.execute(
        f"CREATE TEMP TABLE tf AS SELECT e, f, {tf} AS n FROM ({_feature_sql(reverse, namespace)}) {keep} GROUP BY e, f"
    )
    con.execute("DROP TABLE c")


def _feature_sql(reverse: bool, namespace: str) -> str:
    """The ``(e, f)`` occurrences of :func:`feature_codes` as one DuckDB query over table ``c``."""
    tag = feature_tags(namespace)

    def code(kind: int, a: str, b: str) -> str:
        return f"(({tag[kind]}::BIGINT << {_TAG_SHIFT}) | ({a} << {_ID_BITS}) | {b})"

    parts = [
        f"SELECT s AS e, {code(TAG_REL, '0', 'p')} AS f FROM c",
        f"SELECT s, {code(TAG_OBJ, '0', 'o')} FROM c",
        f"SELECT s, {code(TAG_REL_OBJ, 'p', 'o')} FROM c",
    ]
    selves = "SELECT DISTINCT s AS e FROM c"
    if reverse:
        parts += [
            f"SELECT o, {code(TAG_INV_REL, '0', 'p')} FROM c",
            f"SELECT o, {code(TAG_INV_SUBJ, '0', 's')} FROM c",
            f"SELECT o, {code(TAG_INV_REL_SUBJ, 'p', 's')} FROM c",
        ]
        selves += " UNION SELECT o FROM c"
    parts.append(f"SELECT e, {code(TAG_SELF, '0', 'e')} FROM ({selves})")
    return " UNION ALL ".join(parts)


def read_bags(con, with_dfs: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, sp.csr_matrix]:
    """``(entities, features, df or None, counts)`` of DuckDB table ``tf`` (e, f, n), as a CSR."""
    per_row = con.execute("SELECT e, count(*) AS k FROM tf GROUP BY e ORDER BY e").fetchnumpy()
    entities = per_row["e"].astype(np.int64)
    df = None
    if not with_dfs:
        features = con.execute("SELECT DISTINCT f FROM tf ORDER BY f").fetchnumpy()["f"].astype(np.int64)
    else:
        got = con.execute(
            "SELECT f, df FROM (SELECT DISTINCT f FROM tf) JOIN dfs USING (f) ORDER BY f"
        ).fetchnumpy()
        features, df = got["f"].astype(np.int64), got["df"].astype(np.float64)
    indptr = np.zeros(len(entities) + 1, np.int64)
    np.cumsum(per_row["k"], out=indptr[1:])
    indices = np.empty(indptr[-1], np.int32)
    data = np.empty(indptr[-1], np.float32)
    lo = 0
    # Streamed in row order: only one batch of (e, f, n) besides the CSR arrays.
    for batch in con.sql("SELECT f, n FROM tf ORDER BY e, f").to_arrow_reader(1 << 20):
        f = batch.column(0).to_numpy()
        indices[lo : lo + len(f)] = np.searchsorted(features, f)
        data[lo : lo + len(f)] = batch.column(1).to_numpy()
        lo += len(f)
    counts = sp.csr_matrix((data, indices, indptr), shape=(len(entities), len(features)))
    counts.has_canonical_format = True  # (e, f) unique from GROUP BY, sorted by the ORDER BY
    return entities, features, df, counts


def exact_topk(
    X: sp.csr_matrix, rows: np.ndarray, k: int, batch: int | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Exact cosine top-``k`` of each query row against all rows, self excluded.

    Returns ``(ids, sims)`` of shape (len(rows), k), ids ``-1`` where fewer exist; sorted by
    similarity descending, ties by row index. Only rows with cosine > 0 are returned.
    """
    XT = X.T.tocsr()
    # A hub feature makes a query row dense: bound the batch's product to ~2e7 entries.
    batch = batch or max(1, min(256, 20_000_000 // max(X.shape[0], 1)))
    ids = np.full((len(rows), k), -1, np.int64)
    sims = np.zeros((len(rows), k), np.float32)
    for lo in range(0, len(rows), batch):
        q = rows[lo : lo + batch]
        S = (X[q] @ XT).tocsr()
        for i in range(len(q)):
            cols = S.indices[S.indptr[i] : S.indptr[i + 1]]
            vals = S.data[S.indptr[i] : S.indptr[i + 1]]
            keep = cols != q[i]
            cols, vals = cols[keep], vals[keep]
            if len(cols) > k:
                part = np.argpartition(-vals, k - 1)[:k]
                cols, vals = cols[part], vals[part]
            order = np.lexsort((cols, -vals))
            ids[lo + i, : len(order)] = cols[order]
            sims[lo + i, : len(order)] = vals[order]
    return ids, sims


def _nmslib():
    import nmslib

    return nmslib


def build_hnsw(
    X: sp.csr_matrix,
    m: int = 32,
    ef_construction: int = 200,
    post: int = 2,
    threads: int = 1,
    progress: bool = False,
):
    """An nmslib HNSW index over the rows of ``X`` in the ``cosinesimil_sparse`` space."""
    nmslib = _nmslib()
    index = nmslib.init(method="hnsw", space="cosinesimil_sparse", data_type=nmslib.DataType.SPARSE_VECTOR)
    index.addDataPointBatch(X)
    index.createIndex(
        {"M": m, "efConstruction": ef_construction, "post": post, "indexThreadQty": threads},
        print_progress=progress,
    )
    return index


def hnsw_topk(
    index, X: sp.csr_matrix, rows: np.ndarray, k: int, ef_search: int, threads: int = 1
) -> tuple[np.ndarray, np.ndarray]:
    """Approximate top-``k`` of the query rows (self excluded), same layout as :func:`exact_topk`."""
    index.setQueryTimeParams({"efSearch": max(ef_search, k + 1)})
    res = index.knnQueryBatch(X[rows], k=k + 1, num_threads=threads)
    ids = np.full((len(rows), k), -1, np.int64)
    sims = np.zeros((len(rows), k), np.float32)
    for i, (got, dist) in enumerate(res):
        # Cosine 0 shares no feature: exact search never returns those, so neither does HNSW.
        keep = (got != rows[i]) & (dist < 1.0 - 1e-7)
        got, dist = got[keep][:k], dist[keep][:k]
        ids[i, : len(got)] = got
        sims[i, : len(got)] = 1.0 - dist
    return ids, sims


def recall_at(
    X: sp.csr_matrix, approx: np.ndarray, exact_ids: np.ndarray, exact_sims: np.ndarray, rows: np.ndarray
) -> float:
    """Tie-aware recall@k: an approximate hit counts when its exact cosine ≥ the exact k-th cosine."""
    hits = total = 0
    for i, q in enumerate(rows):
        want = exact_ids[i] >= 0
        if not want.any():
            continue
        kth = exact_sims[i][want].min()
        got = approx[i][approx[i] >= 0]
        true_sims = np.asarray((X[got] @ X[q].T).todense()).ravel() if len(got) else np.empty(0)
        hits += min(int((true_sims >= kth - 1e-5).sum()), int(want.sum()))
        total += int(want.sum())
    return hits / total if total else 1.0


def sample_rows(n_rows: int, size: int, key: str) -> np.ndarray:
    """A hash-seeded sample of row numbers (sorted)."""
    rng = np.random.default_rng(stable_hash(key, "recall-sample"))
    return np.sort(rng.choice(n_rows, size=min(size, n_rows), replace=False))


def release_pages(maps) -> None:
    """Drop the pages of these memory maps read so far from the process (clean file pages: read
    again on the next access), so that reading a matrix block by block keeps one block resident."""
    for m in maps:
        mm = getattr(m, "_mmap", None)
        if mm is not None:
            mm.madvise(mmap.MADV_DONTNEED)


@dataclass
class SemIndex:
    """A saved semantic index: entity ids per row, the weighted matrix, optionally HNSW."""

    entities: np.ndarray
    X: sp.csr_matrix
    hnsw: object | None = None
    ef_search: int = 200
    threads: int = 1
    # The memory maps under X (load_index), whose read pages release_pages hands back.
    maps: tuple = ()
    # A folder of TypeSlice.save folders, one per declared type (rule prepare_retrieval): a type
    # found there is mapped, not built (TypeSlices).
    slices: Path | None = None
    # Exact rankings of objects computed once for a suite (rule prepare_retrieval, _exact_lists).
    prefixes: Prefixes | None = None

    def release_pages(self) -> None:
        """Drop the mapped matrix pages read so far from the process (clean file pages, read
        again on the next access): a job that ranked a large type does not keep its rows
        resident, so its peak RSS is its own arrays (issue 15)."""
        release_pages(self.maps)

    def row_of(self, entities: np.ndarray) -> np.ndarray:
        """Row of each entity, ``-1`` when it has no bag in this dump."""
        entities = np.asarray(entities, np.int64)
        i = np.searchsorted(self.entities, entities)
        i = np.minimum(i, max(len(self.entities) - 1, 0))
        ok = len(self.entities) > 0
        return np.where(ok & (self.entities[i] == entities), i, -1) if ok else np.full(len(entities), -1)

    def neighbours(self, entities: np.ndarray, k: int, method: str = "hnsw") -> list[list[int]]:
        """Up to ``k`` most similar entities (ids) of each query entity, most similar first."""
        rows = self.row_of(entities)
        out: list[list[int]] = [[] for _ in rows]
        present = np.flatnonzero(rows >= 0)
        if len(present) == 0 or k <= 0:
            return out
        k = min(k, len(self.entities) - 1)
        if k <= 0:
            return out
        q = rows[present]
        if method == "hnsw" and self.hnsw is not None:
            ids, _ = hnsw_topk(self.hnsw, self.X, q, k, self.ef_search, self.threads)
        elif method in ("exact", "hnsw"):
            ids, _ = exact_topk(self.X, q, k)
        else:
            raise ValueError(f"search must be 'hnsw' or 'exact', not {method!r}")
        for j, i in enumerate(present):
            got = ids[j][ids[j] >= 0]
            out[i] = self.entities[got].tolist()
        return out

    def ranked_within(self, entity: int, candidates: np.ndarray) -> list[int]:
        """Every candidate with cosine > 0 to ``entity`` (itself excluded), most similar first,
        ties by entity id: exact search inside a set (the entities sharing a declared type)."""
        return TypeSlice(self, candidates).ranked(entity)


class TypeSlice:
    """The rows of a set of candidates (one declared type set), sliced and transposed once so
    that every query against the set costs its own postings, not the set's size (issue 15).

    The product is ``X[q] @ X[cands].T``, the orientation of :func:`exact_topk`, so each cosine
    is the same float as in a search against every entity (a row's sum runs over the query's
    features in order, whatever the other columns).
    """

    def __init__(self, index: SemIndex, candidates: np.ndarray) -> None:
        self.index = index
        rows = index.row_of(np.asarray(candidates, np.int64))
        self.rows = arrays.unique(rows[rows >= 0])
        # Read in blocks of rows, releasing the mapped pages each block touched: a large type's
        # rows are spread over the whole matrix, and one read of them all would hold every page
        # of it. The product X[q] @ XT gives each cosine the float of a search against every
        # entity (a column's sum runs over the query's features, whatever the other columns).
        blocks = []
        for lo in range(0, len(self.rows), SLICE_ROWS):
            blocks.append(index.X[self.rows[lo : lo + SLICE_ROWS]])
            index.release_pages()
        rows = blocks[0] if len(blocks) == 1 else sp.vstack(blocks, format="csr") if blocks else None
        del blocks
        # Columns renumbered to the features the slice holds (a monotone map, so each row keeps
        # its order and each cosine its float): the transposed slice's size follows its own
        # non-zeros, not the dump's vocabulary (8 bytes a feature of indptr per slice: 2 GB at
        # full size, and as much work to build, issue 31).
        # Sort-based (arrays.unique): NumPy's hash-based np.unique took 3.2 of the 5.2 s of the
        # 4 M-entity multiprompt job's slice building (issue 31).
        self.features = arrays.unique(rows.indices) if rows is not None else np.empty(0, np.int32)
        self.XT = None
        if rows is not None:
            local = np.searchsorted(self.features, rows.indices).astype(np.int32)
            rows = sp.csr_matrix((rows.data, local, rows.indptr), shape=(rows.shape[0], len(self.features)))
            self.XT = rows.T.tocsr()

    def save(self, folder: str | Path) -> None:
        """Write the slice's arrays to ``folder`` (uncompressed ``.npy``, for :meth:`mapped`)."""
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        arrays_ = {"rows": self.rows, "features": self.features}
        if self.XT is not None:
            arrays_.update(data=self.XT.data, indices=self.XT.indices, indptr=self.XT.indptr)
        for name, values in arrays_.items():
            np.save(folder / f"{name}.npy", values)

    @classmethod
    def mapped(cls, index: SemIndex, folder: str | Path) -> TypeSlice:
        """A slice :meth:`save` wrote, memory-mapped: a query reads the postings of its own
        features only (issue 31 item 4: retrieval shards share one preparation's slices)."""
        folder = Path(folder)
        got = cls.__new__(cls)
        got.index = index
        got.rows = np.load(folder / "rows.npy", mmap_mode="r")
        got.features = np.load(folder / "features.npy", mmap_mode="r")
        got.XT = None
        if (folder / "indptr.npy").exists():
            parts = [np.load(folder / f"{n}.npy", mmap_mode="r") for n in ("data", "indices", "indptr")]
            got.XT = sp.csr_matrix(tuple(parts), shape=(len(got.features), len(got.rows)), copy=False)
        return got

    def nbytes(self) -> int:
        """Bytes the slice holds (its transposed rows and feature map)."""
        if self.XT is None:
            return self.features.nbytes
        return self.features.nbytes + sum(a.nbytes for a in (self.XT.data, self.XT.indices, self.XT.indptr))

    def _query(self, entity: int) -> tuple[int, np.ndarray, np.ndarray]:
        """``(row, weights, slice features)`` of ``entity``'s features the slice holds, in the
        same (ascending) order: the sums of a product run over the same terms in the same
        order as against the whole matrix. Row ``-1`` when the entity has no bag.

        Read from the matrix's arrays in chunks of :data:`QUERY_CHUNK` features: a class's own
        bag holds a reverse feature per member (scholarly article: 3 M at 4 M entities), and
        copying the row whole (``X[[q]]``) and matching it at once held ≈ 100 MB at 4 M
        entities, 30 times that at full size, in every worker ranking it (issue 31 item 5)."""
        q = int(self.index.row_of(np.array([entity], np.int64))[0])
        if q < 0 or self.XT is None:
            return -1, np.empty(0, np.float32), np.empty(0, np.int64)
        X = self.index.X
        begin, end = int(X.indptr[q]), int(X.indptr[q + 1])
        weights, features = [], []
        for lo in range(begin, end, QUERY_CHUNK):
            hi = min(lo + QUERY_CHUNK, end)
            indices = X.indices[lo:hi]
            pos = np.searchsorted(self.features, indices)
            hit = pos < len(self.features)
            hit[hit] = self.features[pos[hit]] == indices[hit]
            weights.append(X.data[lo:hi][hit])
            features.append(pos[hit].astype(np.int64))
        if not weights:
            return q, np.empty(0, X.dtype), np.empty(0, np.int64)
        return q, np.concatenate(weights), np.concatenate(features)

    def scores(self, entity: int) -> tuple[np.ndarray, np.ndarray]:
        """``(rows, cosines)`` of the candidates with cosine > 0 to ``entity``, itself excluded."""
        q, weights, features = self._query(entity)
        if q < 0:
            return np.empty(0, np.int64), np.empty(0, np.float32)
        local = sp.csr_matrix(
            (weights, features.astype(np.int32), np.array([0, len(features)])),
            shape=(1, len(self.features)),
        )
        sims = (local @ self.XT).tocsr()
        rows, vals = self.rows[sims.indices], sims.data
        keep = (vals > 0) & (rows != q)
        return rows[keep], vals[keep]

    def ranked(self, entity: int, top: int | None = None, scored=None) -> list[int]:
        """Candidate ids most similar first, ties by id; ``top``: only those at least as similar
        as the ``top``-th (a prefix of the whole ranking, ties kept whole)."""
        rows, vals = scored if scored is not None else self.scores(entity)
        return _ranked(self.index, rows, vals, top)


def part_rows(index: SemIndex, candidates: np.ndarray) -> list[np.ndarray]:
    """The index rows of ``candidates`` in parts of at most :data:`SLICE_PART`, in row order.

    A type's slice is built, saved and ranked part by part: one slice of a giant class
    (scholarly articles, 40 M members and ≈ 10⁹ non-zeros at full size) held ≈ 30 bytes a
    non-zero while built and ≈ 30 bytes a member while ranked, in one worker (issue 31 item 5:
    284 MB at 4 M entities already). A cosine is a column's sum over the query's features
    in ascending order, whatever the other columns, so a part's floats are the whole slice's."""
    rows = index.row_of(np.asarray(candidates, np.int64))
    rows = arrays.unique(rows[rows >= 0])
    return [rows[lo : lo + SLICE_PART] for lo in range(0, len(rows), SLICE_PART)] or [rows]


def part_slice(index: SemIndex, rows: np.ndarray) -> TypeSlice:
    """The :class:`TypeSlice` of one of :func:`part_rows`."""
    return TypeSlice(index, index.entities[rows])


def type_parts(index: SemIndex, candidates: np.ndarray) -> list[TypeSlice]:
    """:func:`part_slice` of each of :func:`part_rows`."""
    return [part_slice(index, rows) for rows in part_rows(index, candidates)]


def save_parts(parts: list[TypeSlice], folder: str | Path) -> None:
    """One part: its arrays in ``folder`` (:meth:`TypeSlice.save`); several: ``folder/<i>``."""
    folder = Path(folder)
    if len(parts) == 1:
        parts[0].save(folder)
        return
    for i, part in enumerate(parts):
        part.save(folder / str(i))


def mapped_parts(index: SemIndex, folder: str | Path) -> list[TypeSlice]:
    """The parts :func:`save_parts` wrote, memory-mapped (:meth:`TypeSlice.mapped`)."""
    folder = Path(folder)
    if (folder / "rows.npy").exists():
        return [TypeSlice.mapped(index, folder)]
    parts = sorted(int(p.name) for p in folder.iterdir() if p.name.isdigit())
    if not parts or parts != list(range(len(parts))):
        raise RuntimeError(f"{folder}: not a saved type slice (parts {parts}); rerun prepare_retrieval")
    _descriptors_for(len(parts) * len(SLICE_FILES) + SLICE_CACHE_PARTS * len(SLICE_FILES))
    return [TypeSlice.mapped(index, folder / str(i)) for i in parts]


#: Arrays of a saved slice part, each mapped with a file descriptor of its own.
SLICE_FILES = ("rows", "features", "data", "indices", "indptr")


def _descriptors_for(needed: int) -> None:
    """Raise this process's soft limit of open files towards its hard limit when ``needed``
    more may not fit: a giant class's parts are mapped together (305 parts of 5 arrays at full
    size), and many systems start jobs at 1024."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = needed + 256
    if soft != resource.RLIM_INFINITY and soft < want:
        target = want if hard == resource.RLIM_INFINITY else min(hard, want)
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))


def _ranked(index: SemIndex, rows: np.ndarray, vals: np.ndarray, top: int | None) -> list[int]:
    """Entity ids of ``rows`` by cosine ``vals`` descending, ties by row (= entity id order);
    ``top``: only those at least as similar as the ``top``-th (ties kept whole)."""
    if top is not None and len(vals) > top:
        kth = np.partition(vals, len(vals) - top)[len(vals) - top]
        keep = vals >= kth
        rows, vals = rows[keep], vals[keep]
    order = np.lexsort((rows, -vals))
    return index.entities[rows[order]].tolist()


def _weighted_bags(
    claims: pd.DataFrame | str | Path,
    weighting: str,
    reverse: bool,
    bm25_k1: float,
    bm25_b: float,
    threads: int,
    memory_mb: int | None,
    rows: np.ndarray | None,
    bag: str,
    namespace: str,
) -> tuple[np.ndarray, np.ndarray, sp.csr_matrix, np.ndarray, tuple | None]:
    """``(entities, features, X, idf, corpus or None)`` of :func:`build_index`'s claims: a table
    in memory, or a Parquet file counted by DuckDB (:func:`bags_from_parquet`)."""
    if isinstance(claims, pd.DataFrame):
        if rows is not None:
            raise ValueError("candidate rows need the claims Parquet file (the DuckDB bags)")
        c = claims[claims["rank"] >= 1][["subject", "property", "object"]].drop_duplicates()
        occurrences, codes = feature_codes(
            c["subject"].to_numpy(), c["property"].to_numpy(), c["object"].to_numpy(), reverse, namespace
        )
        entities, features, X, idf = weight_matrix(occurrences, codes, weighting, bm25_k1, bm25_b, bag)
        return entities, features, X, idf, None
    entities, features, counts, corpus = bags_from_parquet(
        claims, reverse, threads, memory_mb, rows, bag, namespace
    )
    # Corpus statistics only for candidate rows: a whole matrix weighs itself, as before.
    X, idf = weigh(counts, weighting, bm25_k1, bm25_b, corpus if rows is not None else None)
    return entities, features, X, idf, corpus


def _hnsw_with_recall(
    X: sp.csr_matrix,
    folder: Path,
    t1: float,
    hnsw_m: int,
    ef_construction: int,
    ef_search: int,
    post: int,
    threads: int,
    recall_queries: int,
    recall_k: int,
    key: str,
) -> tuple[float, float | None, int, np.ndarray]:
    """Build and save the HNSW graph of ``X``; ``(end time, recall@k vs exact cosine, k, query rows)``."""
    index = build_hnsw(X, hnsw_m, ef_construction, post, threads, progress=X.shape[0] > 100_000)
    t2 = time.perf_counter()
    index.saveIndex(str(folder / "hnsw.bin"), save_data=True)
    log.info("HNSW built in %.1fs (%.0f entities/s)", t2 - t1, X.shape[0] / max(t2 - t1, 1e-9))
    q = sample_rows(X.shape[0], recall_queries, key)
    k = min(recall_k, X.shape[0] - 1)
    recall = None
    if k > 0 and len(q):
        ex_ids, ex_sims = exact_topk(X, q, k)
        ap_ids, _ = hnsw_topk(index, X, q, k, ef_search, threads)
        recall = recall_at(X, ap_ids, ex_ids, ex_sims, q)
        log.info(
            "recall@%d of HNSW (efSearch=%d) vs exact cosine on %d queries: %.4f",
            k,
            ef_search,
            len(q),
            recall,
        )
    return t2, recall, k, q


def add_hnsw(
    X: sp.csr_matrix | None,
    folder: Path,
    hnsw: bool,
    hnsw_m: int,
    ef_construction: int,
    ef_search: int,
    post: int,
    threads: int,
    recall_queries: int,
    recall_k: int,
    key: str,
) -> dict:
    """The HNSW graph of an index's matrix ``X`` (``hnsw``: some suite searches it) and the
    ``meta.json`` entries that describe it: ``hnsw`` (its settings, None without a graph),
    ``seconds_hnsw`` and ``recall`` (recall@k of HNSW vs exact cosine on a sample)."""
    t1 = time.perf_counter()
    t2, recall, k, q = t1, None, 0, np.empty(0, np.int64)
    if hnsw:
        t2, recall, k, q = _hnsw_with_recall(
            X, folder, t1, hnsw_m, ef_construction, ef_search, post, threads, recall_queries, recall_k, key
        )
    else:
        log.info("no suite searches this index with HNSW: graph not built (exact search only)")
    settings = {"M": hnsw_m, "efConstruction": ef_construction, "post": post, "efSearch": ef_search}
    return {
        "hnsw": settings if hnsw else None,
        "seconds_hnsw": round(t2 - t1, 3),
        "recall": {"k": int(k), "queries": int(len(q)), "value": recall},
    }


def build_index(
    claims: pd.DataFrame | str | Path,
    folder: str | Path,
    weighting: str = "tfidf",
    reverse: bool = False,
    bm25_k1: float = 1.2,
    bm25_b: float = 0.75,
    hnsw_m: int = 32,
    ef_construction: int = 200,
    ef_search: int = 200,
    post: int = 2,
    threads: int = 1,
    recall_queries: int = 1000,
    recall_k: int = 50,
    key: str = "",
    hnsw: bool = True,
    memory_mb: int | None = None,
    rows: np.ndarray | None = None,
    bag: str = "sets",
    namespace: str = "shared",
) -> dict:
    """Build and save the index of one dump's non-deprecated claims into ``folder``.

    ``claims``: a claims table, or the path of a claims Parquet file, whose bags are then counted
    out of core by DuckDB (:func:`bags_from_parquet`, bounded by ``memory_mb``; same matrix).

    Files: ``entities.npy`` (row -> entity id), ``features.npy`` (column -> code), ``idf.npy``,
    ``matrix.{data,indices,indptr}.npy`` (scipy CSR, L2-normalised; plain arrays so that
    :func:`load_index` maps them and reads only the rows a job ranks), ``hnsw.bin`` (+ ``.dat``, nmslib with data) and
    ``meta.json`` (settings, sizes, timings, recall@k of HNSW vs exact cosine on a sample).
    ``hnsw=False`` (no suite searches this dump with ``search: hnsw``) skips the graph and the
    recall check: the graph's build grows as n^1.3 and is the bulk of the job at scale (issue 15).
    ``rows`` (Parquet input only): index only these entities, weighted as in the whole dump.
    ``bag``, ``namespace``, ``reverse``: the features (:func:`feature_codes`, :func:`weight_matrix`;
    the paper's §3.3 bag is ``sets``, ``shared``, no reverse features).
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    entities, features, X, idf, corpus = _weighted_bags(
        claims, weighting, reverse, bm25_k1, bm25_b, threads, memory_mb, rows, bag, namespace
    )
    t1 = time.perf_counter()
    log.info("bags: %d entities, %d features, %d nonzeros (%.1fs)", X.shape[0], X.shape[1], X.nnz, t1 - t0)
    if rows is not None:
        log.info(
            "rows: the %d candidates of %d entities with a bag (IDF over all of them)", X.shape[0], corpus[0]
        )
    np.save(folder / "entities.npy", entities)
    np.save(folder / "features.npy", features)
    np.save(folder / "idf.npy", idf)
    save_matrix(folder, X)
    graph = add_hnsw(
        X, folder, hnsw, hnsw_m, ef_construction, ef_search, post, threads, recall_queries, recall_k, key
    )
    meta = {
        "weighting": weighting,
        "reverse": reverse,
        "bag": bag,
        "namespace": namespace,
        "bm25_k1": bm25_k1,
        "bm25_b": bm25_b,
        "hnsw": graph["hnsw"],
        "entities": int(X.shape[0]),
        "rows": "every entity" if rows is None else "candidates",
        "features": int(X.shape[1]),
        "nnz": int(X.nnz),
        "seconds_bags": round(t1 - t0, 3),
        "seconds_hnsw": graph["seconds_hnsw"],
        "recall": graph["recall"],
    }
    (folder / "meta.json").write_text(json.dumps(meta, indent=2))
    return meta


MATRIX_PARTS = ("data", "indices", "indptr")
#: The arrays of an index folder (build_index, semparts.merge_parts); meta.json lies beside them.
INDEX_FILES = ("entities.npy", "features.npy", "idf.npy", *(f"matrix.{p}.npy" for p in MATRIX_PARTS))
# Rows of a type slice read at once (TypeSlice): at most a few MB of mapped pages each.
SLICE_ROWS = 4096
#: Members of a type one slice part holds at most (type_parts): building a part holds ≈ 30
#: bytes a non-zero of its rows, ranking against it ≈ 30 bytes a member, ≈ 100 MB at most
#: whatever the size of the class (issue 31 item 5).
SLICE_PART = 1 << 17
#: Features of a query's bag matched against a slice at once (TypeSlice._query).
QUERY_CHUNK = 1 << 16


def save_matrix(folder: Path, X: sp.csr_matrix) -> None:
    """The CSR arrays of ``X`` as ``matrix.{part}.npy`` (uncompressed: mappable)."""
    X = X.tocsr()
    for part in MATRIX_PARTS:
        np.save(folder / f"matrix.{part}.npy", getattr(X, part))


def load_matrix(folder: Path, rows: int) -> tuple[sp.csr_matrix, tuple]:
    """The index's CSR matrix over memory-mapped arrays, and the maps: a retrieval job ranks the members of
    its anchors' types only, so only their rows are read (issue 15: the whole matrix of a full
    dump is tens of GB). The column count is that of ``features.npy``."""
    missing = [p for p in MATRIX_PARTS if not (folder / f"matrix.{p}.npy").exists()]
    if missing:
        raise RuntimeError(
            f"{folder}: no matrix.{missing[0]}.npy (an index from before the mapped format, or an "
            "interrupted build); re-run rule build_sem_index for this dump"
        )
    data, indices, indptr = (np.load(folder / f"matrix.{p}.npy", mmap_mode="r") for p in MATRIX_PARTS)
    if len(indptr) != rows + 1:
        raise RuntimeError(
            f"{folder}: matrix has {len(indptr) - 1} rows for {rows} entities; re-run build_sem_index"
        )
    cols = len(np.load(folder / "features.npy", mmap_mode="r"))
    return sp.csr_matrix((data, indices, indptr), shape=(rows, cols), copy=False), (data, indices, indptr)


def load_index(
    folder: str | Path, search: str = "hnsw", ef_search: int | None = None, threads: int = 1
) -> SemIndex:
    """Load a saved index; ``search="exact"`` skips the HNSW graph."""
    folder = Path(folder)
    if not (folder / "meta.json").exists():
        raise RuntimeError(f"{folder}: no meta.json; re-run rule build_sem_index for this dump")
    meta = json.loads((folder / "meta.json").read_text())
    entities = np.load(folder / "entities.npy")
    X, maps = load_matrix(folder, len(entities))
    hnsw = None
    if search == "hnsw":
        if meta["hnsw"] is None:
            raise RuntimeError(
                f"{folder}: built without an HNSW graph (no suite had search: hnsw); "
                "re-run rule build_sem_index for this dump"
            )
        nmslib = _nmslib()
        hnsw = nmslib.init(method="hnsw", space="cosinesimil_sparse", data_type=nmslib.DataType.SPARSE_VECTOR)
        hnsw.loadIndex(str(folder / "hnsw.bin"), load_data=True)
    return SemIndex(entities, X, hnsw, ef_search or (meta["hnsw"] or {}).get("efSearch", 200), threads, maps)


def sem_distractors(
    index: SemIndex,
    omega,
    facts: list[tuple[int, int, int]],
    n: int,
    search: str = "hnsw",
    widen: int = 4,
    built: dict | None = None,
) -> list[list[int]]:
    """Top ``n`` Ω-valid neighbours of each fact's object, widening k until n are found.

    Only entities with cosine > 0 (at least one shared feature) count: zero-similarity ones
    would be an arbitrary sample, so a fact may get fewer than ``n`` (the count is recorded).

    ``search="exact"``: the ranking of the entities sharing a declared type with o (the only
    ones Ω admits), by exact cosine, then Ω. ``"hnsw"``: one batched query for all facts at
    ``k = widen·n + 16``; facts still short of ``n`` after the Ω filter are re-queried with k
    multiplied by ``widen`` until the index is exhausted.

    ``built``: ``{"s": seconds, "n": count}`` to which the type slices' building is added, and
    ``"search_s"``, the seconds of the exact products and rankings, slice building excluded
    (their cost follows the size of the type, benchmarks/scale.py).
    """
    out: list[list[int]] = [[] for _ in facts]
    if search == "exact":
        return _exact_lists(index, omega, facts, n, widen, built)
    todo = list(range(len(facts)))
    k = widen * n + 16
    total = len(index.entities)
    while todo:
        objs = np.array([facts[i][2] for i in todo], np.int64)
        lists = index.neighbours(objs, k, search)
        again = []
        for i, cand in zip(todo, lists, strict=True):
            s, r, o = facts[i]
            out[i] = omega.filter(s, r, o, cand, n)
            if len(out[i]) < n and len(cand) >= min(k, total - 1) and k < total - 1:
                again.append(i)
        todo, k = again, k * widen
    return out


class TypeSlices:
    """:class:`TypeSlice` per declared type, kept while they fit ``budget_bytes``
    (least recently used dropped first), for :func:`_exact_lists`.

    Ω admits the entities sharing a declared type with o: the union of o's types' members. One
    slice per type set re-read a giant class (humans, scholarly articles) for every set that
    holds it, so the slices' building grew as (number of sets) x (class size), n^1.5-1.9 between
    250 k and 4 M entities (issue 31). Per type, a class is read once while it stays in the
    budget, and a set's scores are the union of its types' scores: each cosine is the same float
    in every slice (:class:`TypeSlice`), so the union is the set's own ranking.
    """

    def __init__(self, index: SemIndex, omega, budget_bytes: int, built: dict | None = None) -> None:
        self.index, self.omega, self.budget, self.built = index, omega, budget_bytes, built
        self.slices: dict[int, list[TypeSlice]] = {}
        self.held = 0  # bytes of the slices held
        self.parts = 0  # and their parts
        # Per entity row, the last object whose scores counted it (prefix: a type set's
        # distinct candidates), allocated when first needed.
        self._seen: np.ndarray | None = None
        self._stamp = 0

    def _slice(self, t: int) -> list[TypeSlice]:
        """The parts of type ``t``'s slice (:func:`type_parts`)."""
        got = self.slices.pop(t, None)
        stored = None if self.index.slices is None else self.index.slices / str(t)
        if got is None and stored is not None and stored.is_dir():
            got = mapped_parts(self.index, stored)
            self.held += sum(p.nbytes() for p in got)
            self.parts += len(got)
        elif got is None:
            started = cpu_clock()
            got = type_parts(self.index, self.omega.members(np.array([t], np.int64)))
            if self.built is not None:
                self.built["s"] += cpu_clock() - started
                self.built["n"] += 1
            self.held += sum(p.nbytes() for p in got)
            self.parts += len(got)
        self.slices[t] = got  # most recently used last
        # Bytes, and parts: each mapped array holds a file descriptor (CPython's mmap keeps a
        # duplicate), and a suite's thousands of small types ran a preparation's workers out of
        # them at 4 M entities with 10 k facts a relation (issue 31).
        while (self.held > self.budget or self.parts > SLICE_CACHE_PARTS) and next(iter(self.slices)) != t:
            dropped = self.slices.pop(next(iter(self.slices)))
            self.held -= sum(p.nbytes() for p in dropped)
            self.parts -= len(dropped)
        return got

    def scores(self, types: np.ndarray, entity: int) -> tuple[np.ndarray, np.ndarray]:
        """``(rows, cosines)`` of the members of any of ``types`` with cosine > 0 to ``entity``."""
        parts = [p.scores(entity) for t in types for p in self._slice(int(t))]
        if not parts:
            return np.empty(0, np.int64), np.empty(0, np.float32)
        if len(parts) == 1:
            return parts[0]
        if len(types) == 1:  # a type's parts hold disjoint rows
            return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])
        rows, first = np.unique(np.concatenate([p[0] for p in parts]), return_index=True)
        return rows, np.concatenate([p[1] for p in parts])[first]

    def prefix(self, types: np.ndarray, entity: int, top: int) -> tuple[np.ndarray, np.ndarray, int]:
        """``(rows, cosines, number scored)``: of :meth:`scores`, the candidates
        :func:`_ranked` keeps with ``top`` (at least as similar as the ``top``-th, ties whole),
        possibly with more, and the number of distinct candidates with cosine > 0.

        Part by part (:func:`type_parts`), keeping each part's own ``top`` (ties whole): the
        ``top`` of the union are within the ``top`` of the part they lie in (a part holds no
        more candidates above them than the union does), so :func:`_ranked` of what is kept
        is the prefix of the whole ranking, while a worker holds one part's scores, not a
        giant class's (issue 31 item 5)."""
        slices = [self._slice(int(t)) for t in types]
        if sum(len(parts) for parts in slices) <= 1:
            rows, vals = self.scores(types, entity)
            return rows, vals, len(rows)
        if len(slices) > 1:
            # Distinct candidates over the types' parts: each row counted by the first part
            # that scores it for this object.
            if self._seen is None or self._stamp == np.iinfo(np.uint8).max:
                self._seen, self._stamp = np.zeros(len(self.index.entities), np.uint8), 0
            self._stamp += 1
        kept_rows, kept_vals, scored = [], [], 0
        for parts in slices:
            for part in parts:
                rows, vals = part.scores(entity)
                if len(slices) > 1:
                    scored += int((self._seen[rows] != self._stamp).sum())
                    self._seen[rows] = self._stamp
                else:
                    scored += len(rows)
                if len(vals) > top:
                    keep = vals >= np.partition(vals, len(vals) - top)[len(vals) - top]
                    rows, vals = rows[keep], vals[keep]
                kept_rows.append(rows)
                kept_vals.append(vals)
        rows, first = np.unique(np.concatenate(kept_rows), return_index=True)
        return rows, np.concatenate(kept_vals)[first], scored


#: Bytes of type slices :func:`_exact_lists` keeps (≈ 8 a non-zero).
SLICE_CACHE_BYTES = 1_600_000_000
#: Slice parts it keeps at most: a mapped part holds 5 file descriptors (1024 is a common limit).
SLICE_CACHE_PARTS = 128


def _exact_lists(index: SemIndex, omega, facts: list[tuple[int, int, int]], n: int, widen: int, built):
    """:func:`sem_distractors` with ``search="exact"``: the ranking of the entities sharing a
    declared type with o (the only ones Ω admits), by exact cosine, then Ω.

    Exact search inside o's types (the reference code's index per type; :class:`TypeSlices`), not
    against every entity; one product per distinct object: facts sharing an object (a country,
    hundreds of facts at 250k entities) share its ranking, and only Ω, which depends on (s, r),
    runs per fact (issue 31: the product costs the postings of o's features in its types, which
    grow with the dump). An object whose ranked prefix a preparation holds (``index.prefixes``,
    the same ``top``) is not ranked again: retrieval shards share one suite's products."""
    out: list[list[int]] = [[] for _ in facts]
    slices = TypeSlices(index, omega, SLICE_CACHE_BYTES, built)
    top = widen * n + 16
    held = index.prefixes if index.prefixes is not None and index.prefixes.top == top else None
    by_types: dict[tuple, list[int]] = {}
    for i, (_, _, o) in enumerate(facts):
        by_types.setdefault(tuple(omega.types_of(o).tolist()), []).append(i)
    # Sets sharing their first types one after another: their slices are still held.
    for types in sorted(by_types):
        group = by_types[types]
        last, whole = None, None
        for i in sorted(group, key=lambda i: facts[i][2]):
            s, r, o = facts[i]
            if o != last:
                started, building = cpu_clock(), built["s"] if built is not None else 0.0
                got = held.get(o) if held is not None else None
                scored = None
                if got is None:
                    rows, vals, count = slices.prefix(np.array(types, np.int64), o, top)
                    got = (_ranked(index, rows, vals, top), count)
                    # Every candidate scored, not only a prefix: the whole ranking needs no product.
                    scored = (rows, vals) if count == len(rows) else None
                # Ω keeps the first n of the ranking: rank a prefix, the whole set only if Ω
                # rejects most of it (the same list either way).
                (prefix, ranked), last, whole = got, o, None
                if built is not None:
                    # The products and rankings only: a slice built on the way is building
                    # (built["s"], once per type), not per-fact search (benchmarks/scale.py
                    # scales search linearly per fact; it once counted the building twice).
                    took = cpu_clock() - started - (built["s"] - building)
                    built["search_s"] = built.get("search_s", 0.0) + took
            out[i] = omega.filter(s, r, o, prefix, n)
            if len(out[i]) < n and len(prefix) < ranked:
                if whole is None:
                    scored = scored if scored is not None else slices.scores(np.array(types, np.int64), o)
                    whole = _ranked(index, *scored, None)
                out[i] = omega.filter(s, r, o, whole, n)
    return out


def _rank_groups(index: SemIndex, omega, groups: list, top: int, built=None) -> dict:
    """``{object: (ranked prefix, number scored)}`` of every object of ``groups`` (type set,
    objects), the sets in the given order so that a set's slices serve the next."""
    slices, ranked = TypeSlices(index, omega, SLICE_CACHE_BYTES, built), {}
    for types, objects in groups:
        for o in objects:
            rows, vals, count = slices.prefix(np.array(types, np.int64), o, top)
            ranked[o] = (_ranked(index, rows, vals, top), count)
    return ranked


_FORKED: tuple | None = None


def _rank_run(run: list) -> dict:
    index, omega, top = _FORKED
    return _rank_groups(index, omega, run, top)


def _rank_forked(index: SemIndex, omega, groups: list, top: int, workers: int) -> dict:
    """:func:`_rank_groups` over ``workers`` forked processes, in contiguous runs of type sets
    (neighbours share slices) of about equal numbers of objects, 4 runs a worker to even out
    the load. Forked: the index, Ω and mapped slices are shared, not pickled."""
    import multiprocessing

    global _FORKED
    total, runs, run, size = sum(len(g[1]) for g in groups), [], [], 0
    for g in groups:
        run.append(g)
        size += len(g[1])
        if size >= total / (4 * workers):
            runs.append(run)
            run, size = [], 0
    runs += [run] if run else []
    _FORKED = (index, omega, top)
    try:
        with multiprocessing.get_context("fork").Pool(workers) as pool:
            parts = pool.map(_rank_run, runs, chunksize=1)
    finally:
        _FORKED = None
    return {o: got for part in parts for o, got in part.items()}


@dataclass
class Prefixes:
    """Exact Sem rankings of a suite's objects (:func:`exact_prefixes`): per object, the ranked
    prefix :func:`_exact_lists` keeps (``top`` = widen·n + 16, ties whole) and how many members
    have cosine > 0 (beyond the prefix only an Ω that rejects most of it reads on)."""

    top: int
    objects: np.ndarray  # sorted
    starts: np.ndarray  # len(objects) + 1 offsets into entities
    entities: np.ndarray
    scored: np.ndarray

    def get(self, o: int) -> tuple[list[int], int] | None:
        """``(prefix, number scored)`` of object ``o``, None when not held."""
        i = int(np.searchsorted(self.objects, o))
        if i >= len(self.objects) or self.objects[i] != o:
            return None
        return self.entities[self.starts[i] : self.starts[i + 1]].tolist(), int(self.scored[i])

    def save(self, folder: str | Path) -> None:
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        for name in ("objects", "starts", "entities", "scored"):
            np.save(folder / f"{name}.npy", np.asarray(getattr(self, name), np.int64))
        (folder / "meta.json").write_text(json.dumps({"top": int(self.top)}))

    @classmethod
    def load(cls, folder: str | Path) -> Prefixes:
        folder = Path(folder)
        top = json.loads((folder / "meta.json").read_text())["top"]
        got = {
            n: np.load(folder / f"{n}.npy", mmap_mode="r")
            for n in ("objects", "starts", "entities", "scored")
        }
        return cls(top, **got)


def exact_prefixes(
    index: SemIndex, omega, objects: np.ndarray, n: int, widen: int = 4, built=None, workers: int = 1
) -> Prefixes:
    """The :class:`Prefixes` of ``objects`` for :func:`sem_distractors` (``search="exact"``, its
    ``n`` and ``widen``): each ranked once, as :func:`_exact_lists` ranks it (distractors paper
    §3.3, Sem), in the same type-set order so that slices are reused. ``workers`` > 1: runs of
    type sets ranked in forked processes (each object's ranking is its own: the same prefixes);
    the preparation job is on the knowledge suite's critical path (issue 31 item 5)."""
    top = widen * n + 16
    by_types: dict[tuple, list[int]] = {}
    for o in arrays.unique(np.asarray(objects, np.int64)).tolist():
        by_types.setdefault(tuple(omega.types_of(o).tolist()), []).append(o)
    groups = [(types, by_types[types]) for types in sorted(by_types)]
    if workers > 1 and len(groups) > 1:
        ranked = _rank_forked(index, omega, groups, top, workers)
    else:
        ranked = _rank_groups(index, omega, groups, top, built)
    keys = sorted(ranked)
    sizes = np.array([len(ranked[o][0]) for o in keys], np.int64)
    entities = [e for o in keys for e in ranked[o][0]]
    return Prefixes(
        top,
        np.array(keys, np.int64),
        np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64),
        np.array(entities, np.int64),
        np.array([ranked[o][1] for o in keys], np.int64),
    )
