"""Sem's weighting of the bags (:mod:`.bags`) into the rows of the index.

Weighting (footnote ‡ allows BM25 as an option): the reference fits scikit-learn's
``TfidfVectorizer(analyzer=identity, norm=None)`` on those sets, i.e. ``use_idf``, ``smooth_idf``
(idf = ln((1+N)/(1+df)) + 1 over the N entities with a bag), no sublinear tf, tf = 1 for every
feature of a set; vectors are stored unnormalised and compared in nmslib's
``cosinesimil_sparse`` space, which normalises. Here rows are L2-normalised once so that cosine
is a dot product: the same cosines.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .bags import check_bag

_ROW_BLOCK = 1 << 16


def _nnz_chunks(m: sp.csr_matrix, size: int = 1 << 22):
    """``(start, stop)`` spans of a sparse matrix's data, so temporaries stay ``size`` long."""
    for a in range(0, m.nnz, size):
        yield a, min(m.nnz, a + size)


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
    gets the same floats as in the whole matrix: the sharded index (:mod:`.index_parts`) relies on it.
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
    # the job's peak memory at scale.
    rows = tf.shape[0]
    for lo in range(0, rows, _ROW_BLOCK):
        hi = min(rows, lo + _ROW_BLOCK)
        block = tf[lo:hi]
        norms = np.sqrt(np.asarray(block.multiply(block).sum(axis=1)).ravel())
        norms[norms == 0] = 1.0
        scale = (1.0 / norms).astype(np.float32)
        a, b_ = tf.indptr[lo], tf.indptr[hi]
        tf.data[a:b_] *= np.repeat(scale, np.diff(tf.indptr[lo : hi + 1]))
