"""The semantic index built in parts (issue 31 item 3): linear cost, each job's memory bounded.

The unsharded build (:func:`.semantic.build_index`) groups every (entity, feature) occurrence of
the dump in one DuckDB job: its cost grew as n^1.2-1.4, it spilled at 1 M entities and held ≈ 43
bytes per non-zero (85-270 GB at full size). Here the same index is built in two steps:

1. ``sem_bags`` (rule, one job per part): :func:`count_part` counts the bags of the entities of
   one part only (DuckDB filters the claims while scanning them) and saves them unweighted with
   the part's document frequencies, its number of bags and their total length.
2. ``build_sem_index`` (rule, one job per dump): :func:`merge_parts` sums the document
   frequencies (global IDF, so nothing depends on the number of parts), then streams the parts'
   rows in entity order into one index folder, weighing and L2-normalising a block of rows at a
   time (:func:`.semantic.weigh_rows`, row-local), and writes the files of the unsharded index.

The folder is the one :func:`.semantic.load_index` maps: the same entities, features, IDF and
float32 matrix, byte for byte (tests/unit/test_sem_parts.py), so retrieval, its type slices
and the Sem rankings do not change. A part's entities are ``part_of(e) = ((e mod M) · 48271 mod M)
mod P`` (M = 2^31 - 1; :data:`.semantic.PART_MODULUS`), a hash of the *entity*, not of its
class: Wikidata's largest class (scholarly article, ≈ 38 % of items) would be one part of at
least 38 % of the work, and a type slice reads its rows from the merged matrix whatever part
they came from. The hash spreads consecutive ids, so a range of ids created together (often of
one kind) is split evenly.

The number of parts ``P`` is known when the DAG is built (:func:`.semplan.parts_for`): the dump
file's size divided by :data:`.semplan.PART_DUMP_BYTES`, the compressed bytes whose bags hold about
:data:`.semplan.PART_NNZ` non-zeros. The merge's peak is the feature vocabulary (8 + 8 bytes a feature)
plus one block of rows; its work is linear in the non-zeros. The HNSW graph (``search: hnsw``
only) is built over the merged matrix, as before: one graph, the same results.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import scipy.sparse as sp

from factprobe import arrays
from factprobe.distractors import semantic as S
from factprobe.distractors.semplan import PART_DUMP_BYTES, PART_NNZ, parts_for  # noqa: F401 (re-exported)

# Global rows merged (weighed, written) at once: a few MB of each part's arrays.
MERGE_ROWS = 1 << 17


def part_of(entities: np.ndarray, parts: int) -> np.ndarray:
    """Part (0 .. parts-1) of each entity id: the hash :func:`.semantic.part_sql` computes in DuckDB."""
    e = np.asarray(entities, np.int64) % S.PART_MODULUS
    return (e * S.PART_MULTIPLIER) % S.PART_MODULUS % int(parts)


def count_part(
    claims_path: str | Path,
    folder: str | Path,
    part: int,
    parts: int,
    reverse: bool = False,
    bag: str = "sets",
    namespace: str = "shared",
    threads: int = 1,
    memory_mb: int | None = None,
    rows: np.ndarray | None = None,
) -> dict:
    """Unweighted bags of the entities of part ``part`` of ``parts`` into ``folder``.

    Files: ``entities.npy`` (sorted ids of the kept bags), ``features.npy`` (sorted codes of their
    features), ``matrix.{data,indices,indptr}.npy`` (counts: 1 per feature with ``bag="sets"``;
    columns index ``features.npy``), ``df.parquet`` (``f``, ``df``: document frequency of every
    feature over *all* the part's bags) and ``meta.json`` (``bags``: the part's entities with a
    bag, ``total``: the sum of their lengths). ``rows``: keep only these entities' bags (the
    candidates); the statistics still count every bag of the part.
    """
    from factprobe import scan

    S.check_bag(bag)
    if not 0 <= part < parts:
        raise ValueError(f"part {part} is not one of 0..{parts - 1}")
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    con = scan.connect(threads, memory_mb)
    S.tf_table(con, claims_path, reverse, bag, namespace, (part, parts))
    bags, total = con.execute("SELECT count(DISTINCT e), coalesce(sum(n), 0) FROM tf").fetchone()
    df_path = str(folder / "df.parquet").replace("'", "''")
    con.execute(
        f"COPY (SELECT f, count(*)::BIGINT AS df FROM tf GROUP BY f ORDER BY f) TO '{df_path}' (FORMAT parquet)"
    )
    if rows is not None:
        rows = np.asarray(rows, np.int64)
        keep = rows[part_of(rows, parts) == part]
        con.register("keep_rows", {"e": keep})
        con.execute("CREATE TEMP TABLE kept AS SELECT * FROM tf WHERE e IN (SELECT e FROM keep_rows)")
        con.execute("DROP TABLE tf")
        con.execute("ALTER TABLE kept RENAME TO tf")
    entities, features, _, counts = S.read_bags(con, False)
    con.close()
    np.save(folder / "entities.npy", entities)
    np.save(folder / "features.npy", features)
    S.save_matrix(folder, counts)
    meta = {
        "part": int(part),
        "parts": int(parts),
        "reverse": reverse,
        "bag": bag,
        "namespace": namespace,
        "rows": "every entity" if rows is None else "candidates",
        "bags": int(bags),
        "total": int(total),
        "entities": int(len(entities)),
        "features": int(len(features)),
        "nnz": int(counts.nnz),
        "seconds": round(time.perf_counter() - t0, 3),
    }
    (folder / "meta.json").write_text(json.dumps(meta, indent=2))
    return meta


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


def _global_vocabulary(folders: list[Path], n_all: int, weighting: str) -> tuple[np.ndarray, np.ndarray]:
    """``(features, idf)``: every feature of a kept bag, its IDF from the document frequencies
    summed over the parts (bags of distinct entities: the sums are the dump's frequencies)."""
    # One sort of every part's (sorted) features: np.union1d part by part re-sorts the union P times.
    features = arrays.unique(np.concatenate([np.load(Path(f) / "features.npy") for f in folders]))
    df = np.zeros(len(features), np.float64)
    for f in folders:
        for batch in pq.ParquetFile(Path(f) / "df.parquet").iter_batches(1 << 20, columns=["f", "df"]):
            codes, counts = batch.column(0).to_numpy(), batch.column(1).to_numpy()
            at = np.minimum(np.searchsorted(features, codes), max(len(features) - 1, 0))
            hit = features[at] == codes if len(features) else np.zeros(len(codes), bool)
            df[at[hit]] += counts[hit]  # a part's codes are unique
    return features, S.idf_of(weighting, n_all, df)


def _mean_length(mats: list[sp.csr_matrix], pos: list[np.ndarray], n_rows: int, metas: list[dict]) -> float:
    """BM25's mean bag length as :func:`.semantic.weigh` takes it: over the dump's bags (candidate
    rows), else the float32 mean of the matrix's row sums in entity order."""
    if metas[0]["rows"] == "candidates":
        n_all = sum(m["bags"] for m in metas)
        return float(sum(m["total"] for m in metas)) / max(n_all, 1)
    length = np.zeros(n_rows, np.float32)
    for X, at in zip(mats, pos, strict=True):
        if X.shape[0]:
            length[at] = np.asarray(X.sum(axis=1)).ravel()
    return length.mean()


def _npy_writer(path: Path, dtype, n: int):
    """An open ``.npy`` file of ``n`` items of ``dtype`` whose data is to be appended in order."""
    f = open(path, "wb")  # noqa: SIM115 (closed by the caller once every block is written)
    header = {"descr": np.lib.format.dtype_to_descr(np.dtype(dtype)), "fortran_order": False, "shape": (n,)}
    np.lib.format.write_array_header_1_0(f, header)
    return f


def _write_rows(
    folder: Path,
    mats: list[sp.csr_matrix],
    maps: list[tuple],
    pos: list[np.ndarray],
    to_global: list[np.ndarray],
    idf: np.ndarray,
    weighting: str,
    k1: float,
    b: float,
    mean: float | None,
) -> int:
    """Write ``matrix.{data,indices,indptr}.npy`` of the merged, weighted index; return its nnz.

    Rows go out in entity order a block at a time: each part gives the contiguous run of its rows
    that falls in the block (its entities are sorted), their columns mapped to the global
    vocabulary (a monotone map: each row stays sorted), and :func:`.semantic.weigh_rows` weighs
    the block, so every row gets the floats of the unsharded build.
    """
    n_rows = sum(len(p) for p in pos)
    per_row = np.zeros(n_rows, np.int64)
    for X, at in zip(mats, pos, strict=True):
        per_row[at] = np.diff(np.asarray(X.indptr))
    indptr = np.zeros(n_rows + 1, np.int64)
    np.cumsum(per_row, out=indptr[1:])
    del per_row
    nnz = int(indptr[-1])
    # Appended block by block to plain files (no writable map: its dirty pages would count in the
    # job's resident memory), and the parts' mapped pages released after each block.
    data = _npy_writer(folder / "matrix.data.npy", np.float32, nnz)
    indices = _npy_writer(folder / "matrix.indices.npy", np.int32, nnz)
    for lo in range(0, n_rows, MERGE_ROWS):
        hi = min(n_rows, lo + MERGE_ROWS)
        pieces, where = [], []
        for X, at, cols in zip(mats, pos, to_global, strict=True):
            a, z = np.searchsorted(at, [lo, hi])
            if z > a:
                sub = X[a:z]
                pieces.append(
                    sp.csr_matrix(
                        (np.array(sub.data, np.float32), cols[sub.indices], sub.indptr),
                        shape=(z - a, len(idf)),
                    )
                )
                where.append(at[a:z])
        block = sp.vstack(pieces, format="csr")[np.argsort(np.concatenate(where))]
        S.weigh_rows(block, idf, weighting, k1, b, mean)
        block.data.astype(np.float32, copy=False).tofile(data)
        block.indices.astype(np.int32, copy=False).tofile(indices)
        for m in maps:
            S.release_pages(m)
    data.close()
    indices.close()
    # scipy's index dtype (int32 while it fits), as the unsharded build saves it.
    np.save(folder / "matrix.indptr.npy", indptr.astype(np.int32) if nnz < 2**31 else indptr)
    return nnz


def merge_parts(
    parts: list[str | Path],
    folder: str | Path,
    weighting: str = "tfidf",
    bm25_k1: float = 1.2,
    bm25_b: float = 0.75,
) -> dict:
    """The index folder of :func:`.semantic.build_index` from the parts of :func:`count_part`.

    IDF over the dump (the parts' document frequencies summed), rows weighed and L2-normalised
    as in the unsharded build: the same ``entities.npy``, ``features.npy``, ``idf.npy`` and
    ``matrix.*.npy``. ``meta.json`` gets the manifest of the parts (``parts``). The HNSW graph,
    when searched, is added by :func:`.semantic.add_hnsw`.
    """
    t0 = time.perf_counter()
    folders = [Path(p) for p in parts]
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    metas = _read_parts(folders)
    n_all = sum(m["bags"] for m in metas)
    features, idf = _global_vocabulary(folders, n_all, weighting)
    ents = [np.load(f / "entities.npy") for f in folders]
    entities = np.sort(np.concatenate(ents))
    pos = [np.searchsorted(entities, e) for e in ents]
    del ents
    loaded = [S.load_matrix(f, len(p)) for f, p in zip(folders, pos, strict=True)]
    mats, maps = [m for m, _ in loaded], [m for _, m in loaded]
    to_global = [np.searchsorted(features, np.load(f / "features.npy")).astype(np.int32) for f in folders]
    mean = _mean_length(mats, pos, len(entities), metas) if weighting == "bm25" else None
    np.save(folder / "entities.npy", entities)
    np.save(folder / "features.npy", features)
    np.save(folder / "idf.npy", idf)
    nnz = _write_rows(folder, mats, maps, pos, to_global, idf, weighting, bm25_k1, bm25_b, mean)
    first = metas[0]
    return {
        "weighting": weighting,
        "reverse": first["reverse"],
        "bag": first["bag"],
        "namespace": first["namespace"],
        "bm25_k1": bm25_k1,
        "bm25_b": bm25_b,
        "entities": int(len(entities)),
        "rows": first["rows"],
        "features": int(len(features)),
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
    bag: str = "sets",
    namespace: str = "shared",
) -> dict:
    """:func:`merge_parts`, then the HNSW graph over the merged matrix (``hnsw``) and ``meta.json``.

    Takes the keyword arguments of :func:`.semantic.build_index` (``distractors.sem``); ``reverse``,
    ``bag`` and ``namespace`` were the parts' (:func:`count_part`) and are checked against them.
    """
    folder = Path(folder)
    meta = merge_parts(parts, folder, weighting, bm25_k1, bm25_b)
    got = (meta["reverse"], meta["bag"], meta["namespace"])
    if got != (reverse, bag, namespace):
        raise RuntimeError(
            f"{parts[0]}: parts counted with (reverse, bag, namespace) {got}; re-run rule sem_bags"
        )
    X = S.load_matrix(folder, meta["entities"])[0] if hnsw else None
    graph = S.add_hnsw(
        X, folder, hnsw, hnsw_m, ef_construction, ef_search, post, threads, recall_queries, recall_k, key
    )
    meta.update(graph)
    (folder / "meta.json").write_text(json.dumps(meta, indent=2))
    return meta
