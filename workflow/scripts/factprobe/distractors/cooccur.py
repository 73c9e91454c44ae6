"""Co-occurrence alternatives: PROBELM Algorithm 1 (§3.2, Appendix B; docs/references.md).

Object side: the parents P of s are its declared classes (P279, and P31 because most subjects
are instances; Appendix B names "subclass of"); the siblings S are the other entities declaring a
parent in P; every object of (sib, r, ·) for sib ∈ S is counted, and objects are ranked by that
frequency. Subject side ("repeat with o fixed"): siblings of o through o's parents, the subjects
of (·, r, sib) ranked by frequency. Ties break by ``stable_hash(fact_id, side, entity)``; a tie level of more than
``big_tie`` entities (the subjects of a relation whose objects are hubs: millions of people tied
at frequency 1 in a full dump) is read instead as a per-fact rotation of one fixed hash order,
ascending ``(stable_hash(r, side, entity) - stable_hash(fact_id, side)) mod 2^64``: a fact still
gets a pseudo-random, order-independent window of the tie, for O(n) work rather than
hashing and sorting the whole level for every fact (the paper leaves ties open). The
alternative ranked i of n gets relevance ``n + 1 - i`` and the true triple ``n + 1``, the graded
ranks 1..n+1 of the PROBELM data turned into NDCG gains.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pandas as pd

from factprobe import arrays
from factprobe.distractors.omega import Omega, in_sorted
from factprobe.hashing import stable_hash, stable_hashes
from factprobe.parallel import cpu_clock

# Tie levels up to this size are sorted by the per-fact hash (the largest level of the 20k-entity
# replicated demo, benchmarks/scale_dumps.py, holds 494 entities).
BIG_TIE = 1024
_INT32_MAX = np.iinfo(np.int32).max
# Entities held by the memoised levels before the memo is emptied (a few GB at most).
_MEMO_ENTITIES = 50_000_000
# Admissible parts (one per relation, side and pair of type sets) held before the memo is emptied.
_MEMO_PARTS = 65_536
# An anchor with more own statements than this is a hub: its moves are memoised (_moves).
_HUB_OWN = 256


class Cooccurrence:
    """Statements grouped by property for fast sibling counts.

    Counts over a sibling set are memoised per (relation, side, declared types of the anchor),
    grouped into frequency levels once: facts whose anchors share their types (most subjects of
    a relation) count once, and a fact only moves its anchor's own statements one level down
    (Algorithm 1 excludes the anchor from its siblings). Ranking is lazy, one level at a time,
    so a fact's work follows the levels Ω reaches, not the size of the sibling set.

    Ω admits only entities sharing a declared type with the slot's true filler, so
    :meth:`alternatives` ranks the levels restricted to those entities, memoised per filler
    type set too: a hub's sibling set is mostly of other types (every subject of
    (·, P17, country) against one subject's type), which Ω used to reject one by one for every
    fact, a read that grew with the dump (8.5k candidates per subject-side fact at 250k
    entities, 1.9k at 50k). The order is that of the whole ranking, so the output is the same.
    """

    def __init__(self, statements: pd.DataFrame | None, big_tie: int = BIG_TIE) -> None:
        self.big_tie = big_tie
        # Seconds and count of memoised structures built (per type set and big level): the
        # retrieval log separates them from the per-fact cost (benchmarks/scale.py).
        self.built_s, self.built = 0.0, 0
        # Self-scenarios left out per side (:meth:`alternatives`): the retrieval log reports them.
        self.self_left_out = {"object": 0, "subject": 0}
        self._counts: dict[tuple, _Levels] = {}
        # Entities and admissible parts held by the memo, kept as running totals: summing over
        # the memo at every miss cost O(memo) per fact.
        self._held, self._parts = 0, 0
        self._by_object: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self.dtype, self.by_property = np.int32, {}
        if statements is None:
            return  # :meth:`from_folder` fills the columns
        subj, prop, obj = (statements[c].to_numpy(np.int64) for c in ("subject", "property", "object"))
        if not _distinct_sorted(prop, subj, obj):
            st = (
                statements[["subject", "property", "object"]]
                .drop_duplicates()
                .sort_values(["property", "subject", "object"])
            )
            subj, prop, obj = (st[c].to_numpy(np.int64) for c in ("subject", "property", "object"))
        # One slice per property (scan.scan_statements already de-duplicates and sorts), copied as
        # int32 when every id fits (Wikidata's do): the statements of a relation are most of a
        # retrieval job's state, and the statements table need not outlive this.
        self.dtype = np.int32 if max(subj.max(initial=0), obj.max(initial=0)) <= _INT32_MAX else np.int64
        cuts = np.flatnonzero(prop[1:] != prop[:-1]) + 1
        starts, stops = np.r_[0, cuts], np.r_[cuts, len(prop)]
        self.by_property = (
            {
                int(prop[a]): (subj[a:b].astype(self.dtype), obj[a:b].astype(self.dtype))
                for a, b in zip(starts.tolist(), stops.tolist(), strict=True)
            }
            if len(prop)
            else {}
        )

    def save(self, folder: str | Path) -> int:
        """Write the columns of every relation, and their object-sorted copies (the subject
        side's), as ``.npy`` files :meth:`from_folder` maps: a suite's retrieval shards then share one
        sorted copy instead of each scanning and sorting every statement of its relations
        (rule prepare_retrieval). Returns the number of statements."""
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        props = sorted(self.by_property)
        sizes = [len(self.by_property[r][0]) for r in props]
        columns = {name: [] for name in _SAVED}
        for r in props:
            subj, obj = self.by_property[r]
            by_obj, subj_by_obj = self._columns(r, "subject")
            for name, col in zip(_SAVED, (subj, obj, by_obj, subj_by_obj), strict=True):
                columns[name].append(col)
            # The object-sorted copy is saved, not memoised here as well.
            self._by_object.pop(r, None)
        np.save(folder / "properties.npy", np.array(props, np.int64))
        np.save(folder / "starts.npy", np.r_[0, np.cumsum(sizes, dtype=np.int64)].astype(np.int64))
        for name, parts in columns.items():
            np.save(folder / f"{name}.npy", np.concatenate(parts) if parts else np.empty(0, self.dtype))
        return int(sum(sizes))

    @classmethod
    def from_folder(
        cls, folder: str | Path, relations: Iterable[int] | None = None, big_tie: int = BIG_TIE
    ) -> Cooccurrence:
        """The co-occurrence counts of a :meth:`save` folder, its columns memory-mapped (read
        only: the pages are the node's page cache, shared by the shards that map them), restricted
        to ``relations`` where given. Answers as the instance that was saved."""
        folder = Path(folder)
        missing = [n for n in ("properties", "starts", *_SAVED) if not (folder / f"{n}.npy").exists()]
        if missing:
            raise FileNotFoundError(
                f"{folder}: no {missing[0]}.npy (an interrupted prepare_retrieval); rerun it"
            )
        self = cls(None, big_tie)
        props = np.load(folder / "properties.npy").tolist()
        starts = np.load(folder / "starts.npy").tolist()
        cols = {name: np.load(folder / f"{name}.npy", mmap_mode="r") for name in _SAVED}
        self.dtype = cols["subject"].dtype.type
        wanted = None if relations is None else {int(r) for r in relations}
        for i, r in enumerate(props):
            if wanted is not None and r not in wanted:
                continue
            a, b = starts[i], starts[i + 1]
            self.by_property[r] = (cols["subject"][a:b], cols["object"][a:b])
            self._by_object[r] = (cols["by_object"][a:b], cols["subject_by_object"][a:b])
        return self

    def statements(self) -> int:
        """Statements held (of the relations held)."""
        return int(sum(len(s) for s, _ in self.by_property.values()))

    def _columns(self, r: int, side: str) -> tuple[np.ndarray, np.ndarray]:
        """``(anchor column, found column)`` of relation ``r``, the anchor column sorted."""
        if side not in ("object", "subject"):
            raise ValueError(f"side must be 'object' or 'subject', not {side!r}")
        subj, obj = self.by_property.get(r, (np.empty(0, self.dtype), np.empty(0, self.dtype)))
        if side == "object":
            return subj, obj
        if r not in self._by_object:
            order = np.argsort(obj, kind="stable")
            self._by_object[r] = (obj[order], subj[order])
        return self._by_object[r]

    def _levels_of(self, omega: Omega, anchor: int, r: int, side: str) -> tuple[_Levels, np.ndarray]:
        """The memoised levels of the anchor's sibling set and the anchor's own found entities."""
        key_col, found_col = self._columns(r, side)
        types = omega.types_of(anchor)
        key = (r, side, tuple(types.tolist()))
        lv = self._counts.get(key)
        if lv is None:
            started = cpu_clock()
            rows = _rows_of(_fitting(omega.members(types), key_col.dtype), key_col)
            lv = self._remember(key, _Levels(*np.unique(found_col[rows], return_counts=True)))
            self.built_s += cpu_clock() - started
            self.built += 1
        # A typed anchor is one of its own siblings: its statements come off the counts.
        own = found_col[:0]
        if len(types) and anchor <= np.iinfo(key_col.dtype).max:
            # The anchor in the column's own dtype: a Python int would make searchsorted copy it.
            at = key_col.dtype.type(anchor)
            own = found_col[np.searchsorted(key_col, at, "left") : np.searchsorted(key_col, at, "right")]
        return lv, own

    def _remember(self, key: tuple, lv: _Levels) -> _Levels:
        """Memoise ``lv`` under ``key``, emptying the memo first when it is full."""
        if len(self._counts) > 4096 or self._parts > _MEMO_PARTS or self._held > _MEMO_ENTITIES:
            self._counts.clear()
            self._held, self._parts = 0, 0
        self._counts[key] = lv
        self._held += len(lv.ents)
        return lv

    def _admissible(self, omega: Omega, lv: _Levels, types: tuple) -> _Levels:
        """``lv`` restricted to the entities declaring one of ``types`` (Ω's clause 1 for the
        slot's anchor), memoised in ``lv``: facts of a relation share a few such pairs of type
        sets, and a hub's sibling set (every subject of (·, P17, country)) is mostly of other
        types, which Ω would reject one by one, fact after fact."""
        sub = lv.within.get(types)
        if sub is None:
            started = cpu_clock()
            members = _fitting(omega.members(np.array(types, np.int64)), lv.ents.dtype)
            # Intersect from the smaller side: a binary search per entity of it.
            if len(members) < len(lv.ents):
                idx = np.searchsorted(lv.ents, members[in_sorted(lv.ents, members)])
            else:
                idx = np.flatnonzero(in_sorted(members, lv.ents))
            sub = lv.within[types] = _Levels(lv.ents[idx], lv.counts[idx])
            self._held += len(idx)
            self._parts += 1
            self.built_s += cpu_clock() - started
            self.built += 1
        return sub

    def _moves(self, lv: _Levels, sub: _Levels, anchor: int, own: np.ndarray) -> tuple:
        """``(moved, base, now, change)``: the anchor's own found entities that are in ``sub``,
        their frequency in ``lv`` and without the anchor's statements, and the net change of
        each level's whole size. A hub anchor's (a country's subjects, tens of thousands at 1M
        entities), which every fact of that object would redo, is memoised in ``lv``."""
        got = lv.moves.get(anchor)
        if got is None:
            moved, by = np.unique(own, return_counts=True)
            base = lv.counts[np.searchsorted(lv.ents, moved)] if len(moved) else moved
            now = base - by
            values, at = np.unique(np.concatenate([base, now]), return_inverse=True)
            net = np.bincount(at, np.repeat([-1.0, 1.0], len(moved)), minlength=len(values))
            got = (moved, base, now, dict(zip(values.tolist(), net.astype(np.int64).tolist(), strict=True)))
            if len(own) > _HUB_OWN:
                lv.moves[anchor] = got
                self._held += len(own)
        moved, base, now, change = got
        if sub is lv:
            return got
        # Intersect from the smaller side (a hub's moves against a small admissible part).
        if len(sub.ents) < len(moved):
            mine = np.searchsorted(moved, sub.ents[in_sorted(moved, sub.ents)])
        else:
            mine = np.flatnonzero(in_sorted(sub.ents, moved))
        return moved[mine], base[mine], now[mine], change

    def counts(self, omega: Omega, s: int, r: int, o: int, side: str) -> tuple[np.ndarray, np.ndarray]:
        """``(entities, frequencies)`` of Algorithm 1 for one fact (sorted ids, frequency ≥ 1)."""
        lv, own = self._levels_of(omega, s if side == "object" else o, r, side)
        counts = lv.counts.copy()
        np.subtract.at(counts, np.searchsorted(lv.ents, own), 1)
        keep = counts > 0
        return lv.ents[keep], counts[keep]

    def levels(
        self, omega: Omega, fact_id: str, s: int, r: int, o: int, side: str, within: tuple | None = None
    ):
        """The ranking of one side as lists of ``(entity, frequency)``, most frequent first (no
        Ω yet): one list per frequency level, ties by ``stable_hash(fact_id, side, entity)``; a
        level above ``big_tie`` entities in blocks of its per-fact rotation (module docstring).

        ``within``: declared types; only the entities declaring one of them are listed, in the
        same order (whether a level is a big tie still follows its whole size)."""
        anchor = s if side == "object" else o
        lv, own = self._levels_of(omega, anchor, r, side)
        sub = lv if within is None else self._admissible(omega, lv, within)
        moved, base, now, change = self._moves(lv, sub, anchor, own)
        for level in arrays.union(sub.values, now[now > 0])[::-1].tolist():
            size = lv.size(level) + change.get(level, 0)
            members = sub.level(level)
            gone = moved[base == level]
            come = moved[now == level]
            if size <= 0 or len(members) - len(gone) + len(come) <= 0:
                continue
            if size <= self.big_tie:
                tied = arrays.union(members[~in_sorted(gone, members)], come)
                hashed = stable_hashes((fact_id, side), tied.tolist())
                yield [(int(e), level) for e in tied[np.argsort(hashed, kind="stable")].tolist()]
            else:
                started = cpu_clock()
                order = sub.hash_order(level, r, side)
                self.built_s += cpu_clock() - started
                yield from sub.rotation(level, order, (r, side), stable_hash(fact_id, side), gone, come)

    def ranked(self, omega: Omega, fact_id: str, s: int, r: int, o: int, side: str) -> list[tuple[int, int]]:
        """All ``(entity, frequency)`` alternatives of one side, most frequent first (no Ω yet)."""
        return [pair for level in self.levels(omega, fact_id, s, r, o, side) for pair in level]

    def alternatives(
        self, omega: Omega, fact_id: str, s: int, r: int, o: int, n: int = 10, side: str = "object"
    ) -> list[tuple[int, int, float]]:
        """Top ``n`` Ω-valid alternatives ``(entity, frequency, relevance)``, self-scenarios left out.

        A self-scenario is the fact's subject as the object-side alternative or its object as the
        subject-side one ((Angola, diplomatic relation, Angola) for a fact of P530). Algorithm 1
        (Appendix B) takes s out of its own siblings (e ≠ s) but says nothing of s among their
        objects, which a symmetric relation always yields (the siblings' statements point back
        at s); the released PRobELM groups hold none (0 of 51,616 alternatives of the four
        cut-offs, 50 groups of the symmetric P451 among them). So such a candidate is left out
        where it would have been taken, the next one takes its place, and the count per side is
        kept in ``self_left_out``.
        """
        admit = omega.filter if side == "object" else omega.filter_subjects
        itself = s if side == "object" else o
        # Ω admits only entities sharing a declared type with the slot's true filler (clause 1):
        # listing those only, in the same order, gives the same first n.
        within = tuple(omega.types_of(o if side == "object" else s).tolist())
        found: list[tuple[int, int]] = []
        for level in self.levels(omega, fact_id, s, r, o, side, within):
            need = n - len(found)
            if need <= 0:
                break
            freq = dict(level)
            # One more than needed: the self-scenario, when admitted, leaves its place to the next.
            admitted = admit(s, r, o, [e for e, _ in level], need + 1)
            if itself in admitted[:need]:
                self.self_left_out[side] += 1
            found += [(e, freq[e]) for e in admitted if e != itself][:need]
        return [(e, f, float(n + 1 - i)) for i, (e, f) in enumerate(found, start=1)]


#: Column files of :meth:`Cooccurrence.save`: per relation (``starts.npy`` bounds), subject and
#: object sorted by (subject, object), then the object-sorted copy and its subjects.
_SAVED = ("subject", "object", "by_object", "subject_by_object")


def _distinct_sorted(*columns: np.ndarray) -> bool:
    """Whether rows of ``columns`` are strictly ascending (sorted lexicographically, distinct)."""
    if len(columns[0]) < 2:
        return True
    greater = np.zeros(len(columns[0]) - 1, dtype=bool)
    equal = np.ones(len(columns[0]) - 1, dtype=bool)
    for col in columns:
        greater |= equal & (col[1:] > col[:-1])
        equal &= col[1:] == col[:-1]
    return bool(greater.all())


def _fitting(sorted_ids: np.ndarray, dtype) -> np.ndarray:
    """Sorted ids as ``dtype``, without those too large for it (they cannot be in its column)."""
    return sorted_ids[: np.searchsorted(sorted_ids, np.iinfo(dtype).max, "right")].astype(dtype, copy=False)


def _rows_of(members: np.ndarray, key_col: np.ndarray) -> np.ndarray:
    """Rows of the sorted ``key_col`` whose value is one of the sorted ``members``: a scan of the
    column or a binary search per member, whichever is shorter (a type may be far smaller than a
    relation, or the reverse)."""
    if len(members) * 20 >= len(key_col):
        return np.flatnonzero(in_sorted(members, key_col))
    lo, hi = np.searchsorted(key_col, members, "left"), np.searchsorted(key_col, members, "right")
    has = hi > lo
    lo, hi = lo[has], hi[has]
    return arrays.ranges(lo, hi - lo)


class _Levels:
    """Algorithm 1's counts over one sibling set, grouped by frequency once."""

    def __init__(self, ents: np.ndarray, counts: np.ndarray) -> None:
        self.ents, self.counts = ents, counts
        order = np.lexsort((ents, -counts))
        self.by_level = ents[order]
        self.values, first = np.unique(-counts[order], return_index=True)
        self.values = -self.values
        ends = np.append(first[1:], len(order))[: len(first)]
        self.bounds = dict(
            zip(self.values.tolist(), zip(first.tolist(), ends.tolist(), strict=True), strict=True)
        )
        self._hashed: dict[tuple, tuple[np.ndarray, np.ndarray]] = {}
        # The admissible parts of these levels per declared type set (Cooccurrence._admissible)
        # and the moves of hub anchors (Cooccurrence._moves).
        self.within: dict[tuple, _Levels] = {}
        self.moves: dict[tuple, tuple] = {}

    def level(self, value: int) -> np.ndarray:
        """Entities of frequency ``value`` (sorted ids; empty when none)."""
        lo, hi = self.bounds.get(value, (0, 0))
        return self.by_level[lo:hi]

    def size(self, value: int) -> int:
        """Number of entities of frequency ``value``."""
        lo, hi = self.bounds.get(value, (0, 0))
        return hi - lo

    def hash_order(self, value: int, r: int, side: str) -> tuple[np.ndarray, np.ndarray]:
        """``(hashes, entities)`` of level ``value`` ascending by ``stable_hash(r, side, e)``
        (memoised: every fact reading this big level shares it)."""
        key = (value, r, side)
        if key not in self._hashed:
            members = self.level(value)
            h = stable_hashes((r, side), members.tolist())
            order = np.argsort(h, kind="stable")
            self._hashed[key] = (h[order], members[order])
        return self._hashed[key]

    def rotation(
        self, value: int, order: tuple, parts: tuple, offset: int, gone: np.ndarray, come: np.ndarray
    ):
        """A big level in blocks, ascending ``(stable_hash(*parts, e) - offset) mod 2^64`` (``order``
        from :meth:`hash_order`, ``parts`` = ``(r, side)``), without ``gone`` and with ``come``
        (the anchor's own entities moving levels)."""
        h, ents = order
        off = np.uint64(offset)
        start, size = int(np.searchsorted(h, off)), len(h)
        # Read from the first hash at or above the offset, wrapping round: keys stay ascending.
        extra = stable_hashes(parts, come.tolist()) - off
        block, lo = 256, 0
        while lo < size or len(come):
            hi = min(lo + block, size)
            idx = (start + np.arange(lo, hi)) % max(size, 1)
            part_e, part_h = ents[idx], h[idx] - off
            last = part_h[-1] if 0 < hi < size else np.uint64(2**64 - 1)
            keep = ~in_sorted(gone, part_e)
            take = extra <= last
            part_e = np.concatenate([part_e[keep], come[take]])
            part_h = np.concatenate([part_h[keep], extra[take]])
            come, extra = come[~take], extra[~take]
            if len(part_e):
                yield [(int(e), value) for e in part_e[np.argsort(part_h, kind="stable")].tolist()]
            lo, block = hi, block * 2
