"""The semantic index of a dump: its entities, weighted L2-normalised rows (:mod:`.bags`,
:mod:`.weighting`) and optionally an nmslib HNSW graph (footnote §), saved with its side
files and mapped back; the k-nearest-neighbour searches over it (exact: a scipy sparse
product, the reference and the fallback; HNSW ``cosinesimil_sparse``).

The workflow builds the index in parts (:mod:`.index_parts`: rules ``sem_bags`` and
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
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import scipy.sparse as sp

from factprobe.hashing import stable_hash
from factprobe.settings import Sem

from .bags import bags_from_parquet, feature_codes
from .weighting import weigh, weight_matrix

if TYPE_CHECKING:
    from .search import Prefixes

log = logging.getLogger(__name__)

#: ``distractors.sem``'s defaults: the paper's semantic index (§3.3: TF-IDF over sets of
#: (property, value) features, one namespace, no reverse features).
PAPER_SEM = Sem()

logging.getLogger("nmslib").setLevel(logging.WARNING)


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
        resident, so its peak RSS is its own arrays."""
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


def _weighted_bags(
    claims: pd.DataFrame | str | Path, sem: Sem, threads: int, memory_mb: int | None, rows: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray, sp.csr_matrix, np.ndarray, tuple | None]:
    """``(entities, features, X, idf, corpus or None)`` of :func:`build_index`'s claims: a table
    in memory, or a Parquet file counted by DuckDB (:func:`bags_from_parquet`)."""
    weighting, reverse, bag, namespace = sem.weighting, sem.reverse_features, sem.bag, sem.namespace
    bm25_k1, bm25_b = sem.bm25_k1, sem.bm25_b
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
    X: sp.csr_matrix, folder: Path, t1: float, sem: Sem, threads: int, key: str
) -> tuple[float, float | None, int, np.ndarray]:
    """Build and save the HNSW graph of ``X``; ``(end time, recall@k vs exact cosine, k, query rows)``."""
    graph, ef_search = sem.hnsw, sem.hnsw.ef_search
    index = build_hnsw(X, graph.M, graph.ef_construction, graph.post, threads, progress=X.shape[0] > 100_000)
    t2 = time.perf_counter()
    index.saveIndex(str(folder / "hnsw.bin"), save_data=True)
    log.info("HNSW built in %.1fs (%.0f entities/s)", t2 - t1, X.shape[0] / max(t2 - t1, 1e-9))
    q = sample_rows(X.shape[0], sem.recall_queries, key)
    k = min(sem.recall_k, X.shape[0] - 1)
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


def add_hnsw(X: sp.csr_matrix | None, folder: Path, sem: Sem, hnsw: bool, threads: int, key: str) -> dict:
    """The HNSW graph of an index's matrix ``X`` (``hnsw``: some suite searches it) and the
    ``meta.json`` entries that describe it: ``hnsw`` (its settings, None without a graph),
    ``seconds_hnsw`` and ``recall`` (recall@k of HNSW vs exact cosine on a sample)."""
    t1 = time.perf_counter()
    t2, recall, k, q = t1, None, 0, np.empty(0, np.int64)
    if hnsw:
        t2, recall, k, q = _hnsw_with_recall(X, folder, t1, sem, threads, key)
    else:
        log.info("no suite searches this index with HNSW: graph not built (exact search only)")
    graph = sem.hnsw
    settings = {
        "M": graph.M,
        "efConstruction": graph.ef_construction,
        "post": graph.post,
        "efSearch": graph.ef_search,
    }
    return {
        "hnsw": settings if hnsw else None,
        "seconds_hnsw": round(t2 - t1, 3),
        "recall": {"k": int(k), "queries": int(len(q)), "value": recall},
    }


def build_index(
    claims: pd.DataFrame | str | Path,
    folder: str | Path,
    sem: Sem = PAPER_SEM,
    *,
    hnsw: bool = True,
    rows: np.ndarray | None = None,
    threads: int = 1,
    memory_mb: int | None = None,
    key: str = "",
) -> dict:
    """Build and save the index of one dump's non-deprecated claims into ``folder``.

    ``claims``: a claims table, or the path of a claims Parquet file, whose bags are then counted
    out of core by DuckDB (:func:`bags_from_parquet`, bounded by ``memory_mb``; same matrix).

    Files: ``entities.npy`` (row -> entity id), ``features.npy`` (column -> code), ``idf.npy``,
    ``matrix.{data,indices,indptr}.npy`` (scipy CSR, L2-normalised; plain arrays so that
    :func:`load_index` maps them and reads only the rows a job ranks), ``hnsw.bin`` (+ ``.dat``, nmslib with data) and
    ``meta.json`` (settings, sizes, timings, recall@k of HNSW vs exact cosine on a sample).
    ``hnsw=False`` (no suite searches this dump with ``search: hnsw``) skips the graph and the
    recall check: the graph's build grows as n^1.3 and is the bulk of the job at scale.
    ``rows`` (Parquet input only): index only these entities, weighted as in the whole dump.
    ``sem``: the ``distractors.sem`` settings: the features (``bag``, ``namespace``,
    ``reverse_features``: :func:`feature_codes`, :func:`weight_matrix`; the paper's §3.3 bag is
    ``sets``, ``shared``, no reverse features), their weighting, the HNSW graph and its recall check.
    ``key`` seeds the recall sample.
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    entities, features, X, idf, corpus = _weighted_bags(claims, sem, threads, memory_mb, rows)
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
    graph = add_hnsw(X, folder, sem, hnsw, threads, key)
    meta = {
        "weighting": sem.weighting,
        "reverse": sem.reverse_features,
        "bag": sem.bag,
        "namespace": sem.namespace,
        "bm25_k1": sem.bm25_k1,
        "bm25_b": sem.bm25_b,
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


#: The arrays of an index folder (build_index, index_parts.merge_parts); meta.json lies beside them.
INDEX_FILES = ("entities.npy", "features.npy", "idf.npy", *(f"matrix.{p}.npy" for p in MATRIX_PARTS))


def save_matrix(folder: Path, X: sp.csr_matrix) -> None:
    """The CSR arrays of ``X`` as ``matrix.{part}.npy`` (uncompressed: mappable)."""
    X = X.tocsr()
    for part in MATRIX_PARTS:
        np.save(folder / f"matrix.{part}.npy", getattr(X, part))


def load_matrix(folder: Path, rows: int) -> tuple[sp.csr_matrix, tuple]:
    """The index's CSR matrix over memory-mapped arrays, and the maps: a retrieval job ranks the members of
    its anchors' types only, so only their rows are read (the whole matrix of a full
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
