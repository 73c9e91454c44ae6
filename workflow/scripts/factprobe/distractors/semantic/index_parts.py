"""The semantic index built in parts: linear cost, each job's memory bounded.

The unsharded build (:func:`.index.build_index`) groups every (entity, feature) occurrence of
the dump in one DuckDB job: its cost grew as n^1.2-1.4, it spilled at 1 M entities and held ≈ 43
bytes per non-zero (85-270 GB at full size). Here the same index is built in two steps:

1. ``sem_bags`` (rule, one job per part): :func:`.part_bags.count_part` counts the bags of the entities of
   one part only (DuckDB filters the claims while scanning them) and saves them unweighted with
   the part's document frequencies, its number of bags and their total length. Its cost is
   linear in the part's statements: one DuckDB GROUP BY (e, f) and ORDER BY over the whole part
   grew as n^1.22 from 1 M to 4 M entities (each of its hash tables and sorts grew past the
   caches; the search of every non-zero's feature in the sorted vocabulary too), so the part is
   counted one bucket of 2^14 entity ids at a time (a bounded sort in numpy, the buckets found
   by a radix sort), its vocabulary and document frequencies made one range of feature codes
   at a time, and each non-zero's column looked up among its own bucket's codes. What still
   grows faster than the statements: the bucket of an entity named as object by a share of
   the dump (a class, with reverse features) is one sort of that share.
2. ``build_sem_index`` (rule, one job per dump): :func:`merge_parts` sums the document
   frequencies (global IDF, so nothing depends on the number of parts), then streams the parts'
   rows in entity order into one index folder, weighing and L2-normalising a block of rows at a
   time (:func:`.weighting.weigh_rows`, row-local), and writes the files of the unsharded index.

The folder is the one :func:`.index.load_index` maps: the same entities, features, IDF and
float32 matrix, byte for byte (tests/unit/test_sem_parts.py), so retrieval, its type slices
and the Sem rankings do not change. A part's entities are ``part_of(e) = ((e mod M) · 48271 mod M)
mod P`` (M = 2^31 - 1; :data:`.bags.PART_MODULUS`), a hash of the *entity*, not of its
class: Wikidata's largest class (scholarly article, ≈ 38 % of items) would be one part of at
least 38 % of the work, and a type slice reads its rows from the merged matrix whatever part
they came from. The hash spreads consecutive ids, so a range of ids created together (often of
one kind) is split evenly.

The number of parts ``P`` is known when the DAG is built (:func:`.part_count.parts_for`): the dump
file's size divided by :data:`.part_count.PART_DUMP_BYTES`, the compressed bytes whose bags hold about
:data:`.part_count.PART_NNZ` non-zeros. The merge streams (k-way merges of the parts' sorted features
and entities, read through memory maps): its peak is one block of features and one of rows (at
least the largest bag: 3.0 M non-zeros at 4 M entities), whatever the vocabulary's size; its work
is linear in the non-zeros. The HNSW graph (``search: hnsw``
only) is built over the merged matrix, as before: one graph, the same results.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import scipy.sparse as sp

from factprobe import arrays
from factprobe.settings import Sem

from . import index
from .weighting import idf_of, weigh_rows

# Global rows merged (weighed, written) at once: at most MERGE_ROWS rows and MERGE_NNZ non-zeros (or
# one row, whatever its length: Wikidata's reverse bags are heavy-tailed), a few tens of MB.
MERGE_ROWS = 1 << 17
MERGE_NNZ = 1 << 21
# Global features merged at once (k-way, :func:`_global_vocabulary`): 8 MB of codes; rows of a
# part's df.parquet read at once.
MERGE_FEATURES = 1 << 20
DF_BATCH = 1 << 18
# Bytes of a mapped vocabulary-sized array (IDF, a part's column map) read between two releases
# of its pages (:class:`_Paged`).
GATHER_BYTES = 1 << 25
GATHER_ITEMS = 1 << 20


def _read_parts(folders: list[Path]) -> list[dict]:
    """The parts' meta.json, checked to be the parts 0..P-1 of one build with one setting."""
    metas = []
    for f in folders:
        path = Path(f) / "meta.json"
        if not path.exists():
            raise RuntimeError(f"{f}: no meta.json (an interrupted sem_bags job); re-run rule sem_bags")
        metas.append(json.loads(path.read_text()))
    want = list(range(len(folders)))
    if [m["part"] for m in metas] != want or {m["parts"] for m in metas} != {len(folders)}:
        raise RuntimeError(
            f"{folders}: not the parts 0..{len(folders) - 1} of one index; re-run rule sem_bags"
        )
    keys = ("reverse", "bag", "namespace", "rows")
    if len({tuple(m[k] for k in keys) for m in metas}) != 1:
        raise RuntimeError(f"{folders}: parts built with different settings {keys}; re-run rule sem_bags")
    return metas


def _global_vocabulary(folders: list[Path], folder: Path, scratch: Path, n_all: int, weighting: str) -> int:
    """Write ``features.npy`` (every feature of a kept bag, sorted) and ``idf.npy`` (its IDF from
    the document frequencies summed over the parts: bags of distinct entities, so the sums are
    the dump's) into ``folder``, and each part's map from its features to their global columns
    into ``scratch``; return the number of features.

    A k-way merge of the parts' sorted (mapped) ``features.npy``, :data:`MERGE_FEATURES` at a time
    (:func:`_merge_cuts`): memory is one block, whatever the vocabulary (the
    vocabulary grows with the dump, ≈ 460 M features at full size). Each part's ``df.parquet`` is
    read alongside, in ``f`` order (:class:`_SortedDf`), and its frequencies added to the block's.
    """
    feats = [np.load(f / "features.npy", mmap_mode="r") for f in folders]
    dfs = [_SortedDf(f / "df.parquet") for f in folders]
    maps = [_npy_writer(scratch / f"to_global.{p}.npy", np.int32, len(a)) for p, a in enumerate(feats)]
    dtype = np.result_type(*(a.dtype for a in feats))
    bodies = {name: open(scratch / f"{name}.body", "wb") for name in ("features", "idf")}  # noqa: SIM115
    n = 0
    for cut in _merge_cuts(feats, max(1, MERGE_FEATURES // len(feats))):
        pieces = [np.asarray(a[lo:hi]) for a, (lo, hi) in zip(feats, cut, strict=True)]
        block = arrays.unique(np.concatenate(pieces)).astype(dtype, copy=False)
        if n + len(block) >= 2**31:
            raise RuntimeError(
                f"{folders[0]}: over 2^31 features; the index's int32 columns cannot hold them"
            )
        for piece, out in zip(pieces, maps, strict=True):
            (np.searchsorted(block, piece) + n).astype(np.int32).tofile(out)
        df = np.zeros(len(block), np.float64)
        for reader in dfs:
            reader.add_to(block, df)
        block.tofile(bodies["features"])
        idf_of(weighting, n_all, df).tofile(bodies["idf"])  # elementwise: the same floats in blocks
        n += len(block)
        index.release_pages(feats)
    for out in [*maps, *bodies.values()]:
        out.close()
    _npy_from_body(folder / "features.npy", scratch / "features.body", dtype, n)
    _npy_from_body(folder / "idf.npy", scratch / "idf.body", np.float64, n)
    return n


def _mean_length(folders: list[Path], metas: list[dict]) -> float:
    """BM25's mean bag length as :func:`.weighting.weigh` takes it: over the dump's bags (candidate
    rows), else the float32 mean of the matrix's row sums in entity order (4 bytes a row: numpy's
    pairwise float32 sum is reproduced only over the whole array)."""
    if metas[0]["rows"] == "candidates":
        n_all = sum(m["bags"] for m in metas)
        return float(sum(m["total"] for m in metas)) / max(n_all, 1)
    parts = _open_parts(folders)
    length = np.zeros(sum(len(e) for e, _, _ in parts), np.float32)
    lo = 0
    for cut in _row_cuts(parts):
        ids, sums = [], []
        for (ents, X, _), (a, z) in zip(parts, cut, strict=True):
            if z > a:
                ids.append(np.asarray(ents[a:z]))
                sums.append(np.asarray(X[a:z].sum(axis=1)).ravel())
        order = np.argsort(np.concatenate(ids), kind="stable")
        length[lo : lo + len(order)] = np.concatenate(sums)[order]
        lo += len(order)
        _release_parts(parts)
    return length.mean()


def _npy_writer(path: Path, dtype, n: int):
    """An open ``.npy`` file of ``n`` items of ``dtype`` whose data is to be appended in order."""
    f = open(path, "wb")  # noqa: SIM115 (closed by the caller once every block is written)
    header = {"descr": np.lib.format.dtype_to_descr(np.dtype(dtype)), "fortran_order": False, "shape": (n,)}
    np.lib.format.write_array_header_1_0(f, header)
    return f


def _write_rows(
    folder: Path,
    folders: list[Path],
    scratch: Path,
    n_features: int,
    weighting: str,
    k1: float,
    b: float,
    mean: float | None,
) -> tuple[int, int]:
    """Write ``entities.npy`` and ``matrix.{data,indices,indptr}.npy`` of the merged, weighted
    index; return its number of rows and of non-zeros.

    Rows go out in entity order a block at a time, a k-way merge of the parts' sorted (mapped)
    ``entities.npy`` (:func:`_merge_cuts`): each part gives the contiguous run of its rows that
    falls in the block, their columns mapped to the global vocabulary by its map in ``scratch``
    (a monotone map: each row stays sorted), and :func:`.weighting.weigh_rows` weighs the block, so
    every row gets the floats of the unsharded build. Every file's length is known before the
    first block (the parts' rows and non-zeros add up), so each is appended to, never held.
    """
    parts = _open_parts(folders)
    # Read at the block's columns, scattered over the vocabulary: a span at a time (_Paged).
    cols = [_Paged(np.load(scratch / f"to_global.{p}.npy", mmap_mode="r")) for p in range(len(folders))]
    # A part holding every feature (one part) maps its columns to themselves: no gather.
    cols = [None if len(c) == n_features else c for c in cols]
    idf = _Paged(np.load(folder / "idf.npy", mmap_mode="r"))
    n_rows = sum(len(e) for e, _, _ in parts)
    nnz = sum(int(X.nnz) for _, X, _ in parts)
    # scipy's index dtype (int32 while it fits), as the unsharded build saves it.
    ptr_type = np.int32 if nnz < 2**31 else np.int64
    # Appended block by block to plain files (no writable map: its dirty pages would count in the
    # job's resident memory), and the mapped pages released after each block.
    out = {
        "entities": _npy_writer(folder / "entities.npy", np.int64, n_rows),
        "data": _npy_writer(folder / "matrix.data.npy", np.float32, nnz),
        "indices": _npy_writer(folder / "matrix.indices.npy", np.int32, nnz),
        "indptr": _npy_writer(folder / "matrix.indptr.npy", ptr_type, n_rows + 1),
    }
    np.zeros(1, ptr_type).tofile(out["indptr"])
    done = 0
    for cut in _row_cuts(parts):
        ids, block = _row_block(parts, cols, cut, n_features)
        weigh_rows(block, idf, weighting, k1, b, mean)
        ids.astype(np.int64, copy=False).tofile(out["entities"])
        block.data.astype(np.float32, copy=False).tofile(out["data"])
        block.indices.astype(np.int32, copy=False).tofile(out["indices"])
        (block.indptr[1:] + done).astype(ptr_type).tofile(out["indptr"])
        done += int(block.nnz)
        _release_parts(parts)
    for f in out.values():
        f.close()
    return n_rows, nnz


def merge_parts(
    parts: list[str | Path],
    folder: str | Path,
    weighting: str = "tfidf",
    bm25_k1: float = 1.2,
    bm25_b: float = 0.75,
) -> dict:
    """The index folder of :func:`.index.build_index` from the parts of :func:`.part_bags.count_part`.

    IDF over the dump (the parts' document frequencies summed), rows weighed and L2-normalised
    as in the unsharded build: the same ``entities.npy``, ``features.npy``, ``idf.npy`` and
    ``matrix.*.npy``. ``meta.json`` gets the manifest of the parts (``parts``). The HNSW graph,
    when searched, is added by :func:`.index.add_hnsw`. Memory is a block of features and a
    block of rows (:data:`MERGE_FEATURES`, :data:`MERGE_ROWS`), whatever the dump's size: the
    parts are read through memory maps and each part's column map lives in a scratch folder,
    removed at the end.
    """
    t0 = time.perf_counter()
    folders = [Path(p) for p in parts]
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    metas = _read_parts(folders)
    n_all = sum(m["bags"] for m in metas)
    scratch = folder / "merge.scratch"
    scratch.mkdir(exist_ok=True)
    try:
        n_features = _global_vocabulary(folders, folder, scratch, n_all, weighting)
        mean = _mean_length(folders, metas) if weighting == "bm25" else None
        n_rows, nnz = _write_rows(folder, folders, scratch, n_features, weighting, bm25_k1, bm25_b, mean)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    first = metas[0]
    return {
        "weighting": weighting,
        "reverse": first["reverse"],
        "bag": first["bag"],
        "namespace": first["namespace"],
        "bm25_k1": bm25_k1,
        "bm25_b": bm25_b,
        "entities": n_rows,
        "rows": first["rows"],
        "features": n_features,
        "nnz": nnz,
        "seconds_bags": round(sum(m["seconds"] for m in metas), 3),
        "seconds_merge": round(time.perf_counter() - t0, 3),
        "parts": [
            {k: m[k] for k in ("part", "bags", "entities", "features", "nnz", "seconds")} for m in metas
        ],
    }


def build_from_parts(
    parts: list[str | Path],
    folder: str | Path,
    sem: Sem = index.PAPER_SEM,
    *,
    hnsw: bool = True,
    threads: int = 1,
    key: str = "",
) -> dict:
    """:func:`merge_parts`, then the HNSW graph over the merged matrix (``hnsw``) and ``meta.json``.

    ``sem``, ``hnsw``, ``threads`` and ``key`` as in :func:`.index.build_index`; the features
    (``reverse_features``, ``bag``, ``namespace``) were the parts' (:func:`.part_bags.count_part`)
    and are checked against them.
    """
    folder = Path(folder)
    meta = merge_parts(parts, folder, sem.weighting, sem.bm25_k1, sem.bm25_b)
    got = (meta["reverse"], meta["bag"], meta["namespace"])
    if got != (sem.reverse_features, sem.bag, sem.namespace):
        raise RuntimeError(
            f"{parts[0]}: parts counted with (reverse, bag, namespace) {got}; re-run rule sem_bags"
        )
    X = index.load_matrix(folder, meta["entities"])[0] if hnsw else None
    meta.update(index.add_hnsw(X, folder, sem, hnsw, threads, key))
    (folder / "meta.json").write_text(json.dumps(meta, indent=2))
    return meta


# The streaming merge's helpers (the merge's memory independent of the dump).


def _merge_cuts(arrays: list[np.ndarray], window: int, indptrs: list | None = None, nnz: int = 0):
    """Yield the steps of a k-way merge of sorted arrays, each of distinct values: per step, one
    ``(lo, hi)`` range of each array, together every value of the arrays up to a threshold
    (so a value found in several arrays falls in one step) and at most ``window`` of each.

    The threshold is the smallest last value among the next ``window`` values of the arrays that
    go on beyond them: within each array what follows is larger (values are distinct), so every
    value up to it is in the ranges, and the array it came from moves a whole window ahead.
    ``indptrs`` (the arrays' rows' CSR offsets): a window also ends before ``nnz`` non-zeros of
    its rows, or after its first row.
    """
    lo = [0] * len(arrays)
    sizes = [len(a) for a in arrays]
    while any(i < n for i, n in zip(lo, sizes, strict=True)):
        ends = [min(n, i + window) for i, n in zip(lo, sizes, strict=True)]
        if indptrs is not None:
            ends = [
                min(e, max(i + 1, _rows_within(ptr, i, nnz)))
                for e, i, ptr in zip(ends, lo, indptrs, strict=True)
            ]
        going_on = [a[e - 1] for a, e, n in zip(arrays, ends, sizes, strict=True) if e < n]
        if going_on:
            t = min(going_on)
            ends = [
                i + int(np.searchsorted(a[i:e], t, "right")) for a, i, e in zip(arrays, lo, ends, strict=True)
            ]
        yield list(zip(lo, ends, strict=True))
        lo = ends


class _SortedDf:
    """A part's ``df.parquet`` (``f``, ``df``) read forward in ``f`` order, a batch at a time."""

    def __init__(self, path: Path) -> None:
        self.path = path
        # Without pre-buffering and read-ahead, pyarrow holds one batch (else ≈ 100 MB a part).
        self.batches = pq.ParquetFile(path, pre_buffer=False).iter_batches(
            DF_BATCH, columns=["f", "df"], use_threads=False
        )
        self.codes, self.counts, self.at, self.last = np.zeros(0, np.int64), np.zeros(0, np.int64), 0, None

    def _next_batch(self) -> bool:
        got = next(self.batches, None)
        if got is None:
            return False
        codes, counts = got.column(0).to_numpy(), got.column(1).to_numpy()
        unsorted = len(codes) and (
            np.any(codes[1:] <= codes[:-1]) or (self.last is not None and codes[0] <= self.last)
        )
        if unsorted:
            raise RuntimeError(
                f"{self.path}: features not in increasing order (not written by sem_bags); re-run rule sem_bags"
            )
        self.codes, self.counts, self.at, self.last = codes, counts, 0, codes[-1] if len(codes) else self.last
        return True

    def add_to(self, block: np.ndarray, df: np.ndarray) -> None:
        """Add the frequencies of the features of ``block`` (sorted, the merge's current block)
        to ``df``; the rows up to ``block[-1]`` are consumed (those of unkept bags' features go)."""
        while True:
            if self.at == len(self.codes) and not self._next_batch():
                return
            stop = self.at + int(np.searchsorted(self.codes[self.at :], block[-1], "right"))
            codes, counts = self.codes[self.at : stop], self.counts[self.at : stop]
            pos = np.minimum(np.searchsorted(block, codes), len(block) - 1)
            hit = block[pos] == codes
            df[pos[hit]] += counts[hit]  # a part's codes are unique
            self.at = stop
            if stop < len(self.codes):
                return


def _npy_from_body(path: Path, body: Path, dtype, n: int) -> None:
    """``path`` as ``np.save`` writes an array of ``n`` items of ``dtype``, from the raw ``body``
    (written while ``n`` was not yet known: the header holds it)."""
    with _npy_writer(path, dtype, n) as out, open(body, "rb") as src:
        shutil.copyfileobj(src, out, 1 << 23)
    body.unlink()


def _open_parts(folders: list[Path]) -> list[tuple]:
    """Each part's ``(entities, counts matrix, its maps)``, all memory-mapped."""
    parts = []
    for f in folders:
        ents = np.load(f / "entities.npy", mmap_mode="r")
        X, maps = index.load_matrix(f, len(ents))
        parts.append((ents, X, (ents, *maps)))
    return parts


def _release_parts(parts: list[tuple]) -> None:
    """Drop the parts' mapped pages read so far (:func:`.index.release_pages`)."""
    for _, _, maps in parts:
        index.release_pages(maps)


def _row_block(parts: list[tuple], cols: list[np.ndarray], cut: list[tuple], n_features: int):
    """``(ids, counts)``: the rows of one merge step in entity order, columns global."""
    ids, pieces = [], []
    for (ents, X, _), to_global, (a, z) in zip(parts, cols, cut, strict=True):
        if z > a:
            sub = X[a:z]
            pieces.append(
                sp.csr_matrix(
                    (
                        sub.data.astype(np.float32, copy=False),
                        sub.indices if to_global is None else to_global[sub.indices],
                        sub.indptr,
                    ),
                    shape=(z - a, n_features),
                )
            )
            ids.append(np.asarray(ents[a:z]))
    ids = np.concatenate(ids)
    block = pieces[0] if len(pieces) == 1 else sp.vstack(pieces, format="csr")
    if len(ids) > 1 and np.any(ids[1:] < ids[:-1]):  # parts interleave: rows into entity order
        order = np.argsort(ids, kind="stable")
        return ids[order], block[order]
    return ids, block


class _Paged:
    """A mapped 1-D array read at scattered positions (``a[idx]``: a block's columns) one span of
    :data:`GATHER_BYTES` at a time, its pages released after each span: the pages resident at
    once are bounded whatever the array's size (a vocabulary of ≈ 460 M features at full size,
    3.7 GB of IDF, would otherwise be paged in whole by every block of rows). Positions are
    grouped by span with numpy's linear radix sort of 16-bit keys."""

    def __init__(self, mapped: np.ndarray) -> None:
        self.a = mapped
        self.span = max(GATHER_BYTES // mapped.itemsize, -(-len(mapped) // 65535), 1)

    def __len__(self) -> int:
        return len(self.a)

    def __getitem__(self, idx) -> np.ndarray:
        idx = np.asarray(idx)
        if len(self.a) <= self.span:
            out = np.asarray(self.a[idx])
            index.release_pages([self.a])
            return out
        out = np.empty(idx.shape, self.a.dtype)
        for c in range(0, len(idx), GATHER_ITEMS):  # temporaries of GATHER_ITEMS positions
            part = idx[c : c + GATHER_ITEMS]
            key = (part // self.span).astype(np.uint16)
            order = np.argsort(key, kind="stable")
            bounds = np.concatenate([[0], np.cumsum(np.bincount(key, minlength=1))])
            for lo, hi in zip(bounds[:-1], bounds[1:], strict=True):
                if hi > lo:
                    at = order[lo:hi]
                    out[c + at] = self.a[part[at]]
                    index.release_pages([self.a])
        return out


def _rows_within(indptr: np.ndarray, lo: int, nnz: int) -> int:
    """End of the rows from ``lo`` whose non-zeros add up to at most ``nnz`` (CSR ``indptr``)."""
    return int(np.searchsorted(indptr, indptr[lo] + nnz, "right")) - 1


def _row_cuts(parts: list[tuple]):
    """:func:`_merge_cuts` of the parts' entities, a block of rows bounded in rows and non-zeros."""
    n = len(parts)
    return _merge_cuts(
        [e for e, _, _ in parts],
        max(1, MERGE_ROWS // n),
        [X.indptr for _, X, _ in parts],
        max(1, MERGE_NNZ // n),
    )
