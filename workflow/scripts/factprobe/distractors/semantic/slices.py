"""Exact Sem search within a declared type: the rows of a type's members sliced and transposed
once (:class:`TypeSlice`), cut in parts and saved for retrieval's shards, and kept per type
while they fit a memory budget (:class:`TypeSlices`).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import scipy.sparse as sp

from factprobe import arrays
from factprobe.parallel import cpu_clock

from .index import SemIndex


class TypeSlice:
    """The rows of a set of candidates (one declared type set), sliced and transposed once so
    that every query against the set costs its own postings, not the set's size.

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
        # full size, and as much work to build).
        # Sort-based (arrays.unique): NumPy's hash-based np.unique took 3.2 of the 5.2 s of the
        # 4 M-entity multiprompt job's slice building.
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
        features only (retrieval shards share one preparation's slices)."""
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
        entities, 30 times that at full size, in every worker ranking it."""
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
        return rank_rows(self.index, rows, vals, top)


def part_rows(index: SemIndex, candidates: np.ndarray) -> list[np.ndarray]:
    """The index rows of ``candidates`` in parts of at most :data:`SLICE_PART`, in row order.

    A type's slice is built, saved and ranked part by part: one slice of a giant class
    (scholarly articles, 40 M members and ≈ 10⁹ non-zeros at full size) held ≈ 30 bytes a
    non-zero while built and ≈ 30 bytes a member while ranked, in one worker (
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


def rank_rows(index: SemIndex, rows: np.ndarray, vals: np.ndarray, top: int | None) -> list[int]:
    """Entity ids of ``rows`` by cosine ``vals`` descending, ties by row (= entity id order);
    ``top``: only those at least as similar as the ``top``-th (ties kept whole)."""
    if top is not None and len(vals) > top:
        kth = np.partition(vals, len(vals) - top)[len(vals) - top]
        keep = vals >= kth
        rows, vals = rows[keep], vals[keep]
    order = np.lexsort((rows, -vals))
    return index.entities[rows[order]].tolist()


# Rows of a type slice read at once (TypeSlice): at most a few MB of mapped pages each.
SLICE_ROWS = 4096


#: Members of a type one slice part holds at most (type_parts): building a part holds ≈ 30
#: bytes a non-zero of its rows, ranking against it ≈ 30 bytes a member, ≈ 100 MB at most
#: whatever the size of the class.
SLICE_PART = 1 << 17


#: Features of a query's bag matched against a slice at once (TypeSlice._query).
QUERY_CHUNK = 1 << 16


class TypeSlices:
    """:class:`TypeSlice` per declared type, kept while they fit ``budget_bytes``
    (least recently used dropped first), for :func:`_exact_lists`.

    Ω admits the entities sharing a declared type with o: the union of o's types' members. One
    slice per type set re-read a giant class (humans, scholarly articles) for every set that
    holds it, so the slices' building grew as (number of sets) x (class size), n^1.5-1.9 between
    250 k and 4 M entities. Per type, a class is read once while it stays in the
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
        # them at 4 M entities with 10 k facts a relation.
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
        :func:`rank_rows` keeps with ``top`` (at least as similar as the ``top``-th, ties whole),
        possibly with more, and the number of distinct candidates with cosine > 0.

        Part by part (:func:`type_parts`), keeping each part's own ``top`` (ties whole): the
        ``top`` of the union are within the ``top`` of the part they lie in (a part holds no
        more candidates above them than the union does), so :func:`rank_rows` of what is kept
        is the prefix of the whole ranking, while a worker holds one part's scores, not a
        giant class's."""
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


#: Slice parts it keeps at most: a mapped part holds 5 file descriptors (1024 is a common limit).
SLICE_CACHE_PARTS = 128


def ranked_within(index: SemIndex, entity: int, candidates: np.ndarray) -> list[int]:
    """Every candidate with cosine > 0 to ``entity`` (itself excluded), most similar first,
    ties by entity id: exact search inside a set (the entities sharing a declared type)."""
    return TypeSlice(index, candidates).ranked(entity)
