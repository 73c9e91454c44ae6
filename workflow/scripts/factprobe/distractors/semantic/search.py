"""The Sem distractors of facts (distractors paper §3.3): each fact's object's most similar
Ω-valid entities, by HNSW or by exact search within its declared types (:mod:`.slices`),
and the exact rankings of a suite's objects computed once for its retrieval shards
(:class:`Prefixes`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from factprobe import arrays
from factprobe.parallel import cpu_clock

from .index import SemIndex
from .slices import TypeSlices, rank_rows


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


#: Bytes of type slices :func:`_exact_lists` keeps (≈ 8 a non-zero).
SLICE_CACHE_BYTES = 1_600_000_000


def _exact_lists(index: SemIndex, omega, facts: list[tuple[int, int, int]], n: int, widen: int, built):
    """:func:`sem_distractors` with ``search="exact"``: the ranking of the entities sharing a
    declared type with o (the only ones Ω admits), by exact cosine, then Ω.

    Exact search inside o's types (the reference code's index per type; :class:`TypeSlices`), not
    against every entity; one product per distinct object: facts sharing an object (a country,
    hundreds of facts at 250k entities) share its ranking, and only Ω, which depends on (s, r),
    runs per fact (the product costs the postings of o's features in its types, which
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
                    got = (rank_rows(index, rows, vals, top), count)
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
                    whole = rank_rows(index, *scored, None)
                out[i] = omega.filter(s, r, o, whole, n)
    return out


def _rank_groups(index: SemIndex, omega, groups: list, top: int, built=None) -> dict:
    """``{object: (ranked prefix, number scored)}`` of every object of ``groups`` (type set,
    objects), the sets in the given order so that a set's slices serve the next."""
    slices, ranked = TypeSlices(index, omega, SLICE_CACHE_BYTES, built), {}
    for types, objects in groups:
        for o in objects:
            rows, vals, count = slices.prefix(np.array(types, np.int64), o, top)
            ranked[o] = (rank_rows(index, rows, vals, top), count)
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
    def from_folder(cls, folder: str | Path) -> Prefixes:
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
    the preparation job is on the knowledge suite's critical path."""
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
