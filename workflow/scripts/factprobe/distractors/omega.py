"""Ω(f): the set of admissible distractors of a fact (distractors paper §3.3).

An entity o* is a distractor of f = (s, r, o) when
  1. it shares a *declared* type with o (P31/P279 values, not the whole hierarchy: footnote †),
  2. (s, r, o*) is not a valid fact at the dump date, and
  3. it shares no form (label or alias) with o: Λ(o) ∩ Λ(o*) = ∅, compared case-insensitively,
     and a rapidfuzz ``ratio`` at or above ``form_threshold`` also counts as shared.
A fourth, practical clause keeps only entities with at least one form (an entity without a
surface form cannot be scored).

Entities are int64 ids (Q42 -> 42) inside this module; string ids only at the table boundary.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
from rapidfuzz import fuzz, process

from factprobe import arrays, contracts
from factprobe.contracts import id_ints
from factprobe.validity import valid_at

#: Unions of several declared types :meth:`Omega.members` keeps (least recently used dropped).
MEMBERS_CACHE = 4096
# (subject, property) packed into one int64 key: subject ids < 2**39, property ids < 2**24.
_PROP_BITS = 24


def pair_keys(subjects, properties) -> np.ndarray:
    """``(subject, property)`` pairs packed into int64 keys (one sortable array, no tuples)."""
    return (np.asarray(subjects, dtype=np.int64) << _PROP_BITS) | np.asarray(properties, dtype=np.int64)


def load_types(type_files: Iterable[str | Path]) -> pd.DataFrame:
    """Declared types ``id, type`` of every entity, from the newest dump that types it.

    ``type_files`` are ``results/wikidata/{dump}/types.parquet``; the dump is the parent folder
    name. Like labels (contracts.md), the demo dumps are samples, so an entity is typed by the
    newest dump that has any P31/P279 for it and types are never mixed across dates.
    """
    frames = []
    for path in type_files:
        frame = contracts.read("types", path, ["id", "type"])
        frame["dump"] = Path(path).parent.name
        frames.append(frame)
    if not frames:
        return pd.DataFrame({"id": pd.Series(dtype="int64"), "type": pd.Series(dtype="int64")})
    types = pd.concat(frames, ignore_index=True)
    newest = types.groupby("id")["dump"].transform("max")
    types = types[types["dump"] == newest][["id", "type"]].drop_duplicates()
    return types.astype("int64").sort_values(["id", "type"]).reset_index(drop=True)


def valid_objects(claims: pd.DataFrame, date: int, ranks: str = "non_deprecated") -> pd.DataFrame:
    """Statements ``subject, property, object`` valid at ``date`` (YYYYMMDD int).

    Validity: :func:`factprobe.validity.valid_at` (the diff's and the probes' rule; it once
    read ends inclusively and unknown months/days generously here). ``ranks``: ``truthy`` keeps the best
    rank of (s, p) among the qualifier-valid statements (a preferred current value demotes
    normal-ranked former ones, which may then serve as temporal distractors);
    ``non_deprecated`` keeps every rank ≥ 1.
    """
    c = claims[valid_at(claims, date).to_numpy()]
    if ranks == "truthy":
        best = c.groupby(["subject", "property"])["rank"].transform("max")
        c = c[c["rank"] == best]
    elif ranks != "non_deprecated":
        raise ValueError(f"ranks must be 'truthy' or 'non_deprecated', not {ranks!r}")
    return c[["subject", "property", "object"]].astype("int64").drop_duplicates().reset_index(drop=True)


def normalise_form(form: str) -> str:
    """Case-insensitive comparison key of a form (Unicode casefold, trimmed)."""
    return form.casefold().strip()


class Omega:
    """Ω(f) membership tests over integer ids; build with :meth:`from_tables`.

    ``types``: ``id, type`` (declared). ``forms``: ``entity`` (int), ``form``, or the Arrow table
    of :func:`factprobe.scan.scan_forms_table` (``id``, ``form``, sorted by id). ``valid``:
    ``subject, property, object`` valid at the dump date (all ints). ``form_threshold``:
    rapidfuzz ratio (0–100) at or above which two forms count as shared; ``None`` = exact only.

    Only sorted arrays are kept, not the tables (the state of one retrieval job is
    the types, forms and valid statements of its relations; a second copy as frames doubled it).
    """

    def __init__(
        self,
        types: pd.DataFrame,
        forms: pd.DataFrame | pa.Table,
        valid: pd.DataFrame,
        form_threshold: float | None = 90.0,
    ) -> None:
        self.form_threshold = form_threshold
        t = types.sort_values(["id", "type"])
        ids = t["id"].to_numpy(dtype=np.int64)
        tys = t["type"].to_numpy(dtype=np.int64)
        del t
        uid, start = np.unique(ids, return_index=True)
        self._by_id = (uid, np.append(start, len(ids)), tys)
        order = np.lexsort((ids, tys))
        ty_sorted, id_by_type = tys[order], ids[order]
        # One row per (type, id): a type's members are then its slice, sorted and distinct.
        once = arrays.first_of_pairs(ty_sorted, id_by_type)
        ty_sorted, id_by_type = ty_sorted[once], id_by_type[once]
        id_by_type.flags.writeable = False  # members() hands out views of it
        utype, tstart = np.unique(ty_sorted, return_index=True)
        self._by_type = (utype, np.append(tstart, len(ty_sorted)), id_by_type)
        # Forms are normalised lazily, only for the entities Ω is asked about.
        if isinstance(forms, pa.Table):
            ent = forms["id"].to_numpy()
            raw = forms["form"].combine_chunks()
            if len(ent) > 1 and not (np.diff(ent) >= 0).all():
                raise ValueError("Omega: an Arrow forms table must be sorted by id (scan_forms_table)")
        else:
            ent = forms["entity"].to_numpy(dtype=np.int64)
            order = np.argsort(ent, kind="stable")
            ent, raw = ent[order], pa.array(forms["form"].to_numpy(dtype=object)[order], pa.string())
        self._forms = (ent, raw, {})
        self._form_ids = arrays.unique(ent)
        self._valid = valid_arrays(valid)
        # ``property, object`` of every statement of the relations valid at the dump date, whoever
        # the subject (same-relation pools), when ``valid`` holds some subjects' only (a loader
        # sets it; None: ``valid`` is whole).
        self.dump_objects: pd.DataFrame | None = None

    @property
    def valid(self) -> pd.DataFrame:
        """The valid statements ``subject, property, object`` (ints), in (subject, property) order."""
        keys, objects = self._valid
        return pd.DataFrame(
            {"subject": keys >> _PROP_BITS, "property": keys & ((1 << _PROP_BITS) - 1), "object": objects}
        )

    @classmethod
    def from_tables(
        cls,
        types: pd.DataFrame,
        entity_forms: pd.DataFrame | pa.Table,
        valid: pd.DataFrame,
        form_threshold: float | None = 90.0,
    ) -> Omega:
        """From ``load_types``, an ``entity_forms`` table (string ids, or the Arrow table of
        :func:`factprobe.scan.scan_forms_table`) and ``valid_objects``."""
        if isinstance(entity_forms, pa.Table):
            return cls(types, entity_forms, valid, form_threshold)
        forms = pd.DataFrame(
            {"entity": id_ints(entity_forms["entity"]), "form": entity_forms["form"].to_numpy()}
        )
        return cls(types, forms, valid, form_threshold)

    @classmethod
    def from_arrays(
        cls,
        by_id: tuple[np.ndarray, np.ndarray, np.ndarray],
        by_type: tuple[np.ndarray, np.ndarray, np.ndarray],
        forms: pa.Table,
        form_ids: np.ndarray,
        valid: pd.DataFrame | tuple[np.ndarray, np.ndarray],
        form_threshold: float | None = 90.0,
    ) -> Omega:
        """Ω over types and forms already in the layout ``__init__`` builds (``(ids, starts,
        values)`` by entity and by type; ``forms`` sorted by ``id``; ``form_ids`` its distinct
        ids), e.g. memory-mapped from a retrieval preparation (:func:`factprobe.distractors.
        retrieval_inputs.prepare_universe`): nothing is sorted or copied, so a shard reads only the
        pages of the entities it asks about. ``valid``: statements, or their
        :func:`valid_arrays` (a preparation's, mapped)."""
        omega = cls.__new__(cls)
        omega.form_threshold = form_threshold
        omega._by_id, omega._by_type = by_id, by_type
        omega._forms = (forms["id"].to_numpy(), forms["form"].combine_chunks(), {})
        omega._form_ids = form_ids
        # A preparation's valid statements come already sorted (retrieval_inputs.map_valid).
        omega._valid = valid if isinstance(valid, tuple) else valid_arrays(valid)
        omega.dump_objects = None
        return omega

    def layout(self) -> dict[str, np.ndarray]:
        """The sorted arrays of types and form ids that :meth:`from_arrays` takes back."""
        (uid, start, tys), (utype, tstart, ids) = self._by_id, self._by_type
        return {
            "id_ids": uid,
            "id_starts": start,
            "id_types": tys,
            "type_types": utype,
            "type_starts": tstart,
            "type_ids": ids,
            "form_ids": self._form_ids,
        }

    @property
    def forms_read(self) -> int:
        """Entities whose forms Ω has read and normalised so far (since its memo was last cleared)."""
        return len(self._forms[2])

    # --- single clauses -------------------------------------------------------------------
    def types_of(self, entity: int) -> np.ndarray:
        """Declared types of ``entity`` (empty when untyped)."""
        uid, start, tys = self._by_id
        i = np.searchsorted(uid, entity)
        if i >= len(uid) or uid[i] != entity:
            return np.empty(0, dtype=np.int64)
        return tys[start[i] : start[i + 1]]

    def type_rows(self, entities: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(position, type)`` of every declared type of every entity, vectorised: position
        ``i`` of ``entities`` once per type of ``entities[i]`` (none when untyped), in position
        order; the rows :meth:`types_of` gives one entity at a time."""
        uid, start, tys = self._by_id
        ent = np.asarray(entities, dtype=np.int64)
        if len(uid) == 0 or len(ent) == 0:
            return np.empty(0, np.int64), np.empty(0, np.int64)
        i = np.minimum(np.searchsorted(uid, ent), len(uid) - 1)
        found = uid[i] == ent
        lo = np.where(found, start[i], 0)
        width = np.where(found, start[i + 1] - start[i], 0)
        owner = np.repeat(np.arange(len(ent), dtype=np.int64), width)
        return owner, tys[arrays.ranges(lo, width)]

    def members(self, types: np.ndarray) -> np.ndarray:
        """Sorted unique entities declaring any of ``types`` (read-only).

        One type's members are its slice of the by-type table, a view built in O(log types):
        a giant class (scholarly articles, ~40 % of items) is never copied or sorted again.
        Unions of several types are memoised (facts share objects' types), least recently
        used dropped first past :data:`MEMBERS_CACHE` sets (the cache once emptied itself
        whole when full, rebuilding every union, giant classes' included).
        """
        key = tuple(sorted({int(t) for t in types}))
        if len(key) <= 1:
            return self._members(np.asarray(key, dtype=np.int64))
        cache = self.__dict__.setdefault("_members_cache", {})
        got = cache.pop(key, None)
        if got is None:
            got = self._members(np.asarray(key, dtype=np.int64))
            got.flags.writeable = False
            while len(cache) >= MEMBERS_CACHE:
                del cache[next(iter(cache))]
        cache[key] = got  # most recently used last
        return got

    def _members(self, types: np.ndarray) -> np.ndarray:
        """:meth:`members` computed afresh: the union of the types' slices (one slice, a view)."""
        utype, start, ids = self._by_type
        idx = np.searchsorted(utype, types)
        parts = [
            ids[start[i] : start[i + 1]]
            for i, t in zip(idx, types, strict=True)
            if i < len(utype) and utype[i] == t
        ]
        if not parts:
            return ids[:0]
        if len(parts) == 1:
            return parts[0]
        return arrays.unique(np.concatenate(parts))

    def same_type(self, o: int, candidates: np.ndarray) -> np.ndarray:
        """Clause 1, vectorised: which candidates share a declared type with ``o``."""
        return in_sorted(self.members(self.types_of(o)), candidates)

    def valid_for(self, s: int, r: int) -> set:
        """Objects valid for (s, r) at the dump date."""
        keys, objects = self._valid
        key = int(pair_keys(s, r))
        lo, hi = np.searchsorted(keys, key, "left"), np.searchsorted(keys, key, "right")
        return set(objects[lo:hi].tolist())

    def valid_with(self, subjects: np.ndarray, r: int, o: int) -> np.ndarray:
        """Which ``subjects`` s* have (s*, r, o) valid at the dump date, vectorised: ``o in
        valid_for(s*, r)`` for each, without a Python loop over the candidates."""
        keys, objects = self._valid
        want = pair_keys(subjects, np.full(len(subjects), r, np.int64))
        lo, hi = np.searchsorted(keys, want, "left"), np.searchsorted(keys, want, "right")
        width = hi - lo
        owner = np.repeat(np.arange(len(want)), width)
        at = arrays.ranges(lo, width)
        out = np.zeros(len(want), dtype=bool)
        out[owner[objects[at] == o]] = True
        return out

    def forms_of(self, entity: int) -> tuple:
        """Normalised forms of ``entity`` (distinct, first occurrence first)."""
        ents, raw, memo = self._forms
        entity = int(entity)
        got = memo.get(entity)
        if got is None:
            lo, hi = np.searchsorted(ents, entity, "left"), np.searchsorted(ents, entity, "right")
            got = tuple(dict.fromkeys(normalise_form(str(f)) for f in raw[lo:hi].to_pylist()))
            if len(memo) > 1_000_000:
                memo.clear()
            memo[entity] = got
        return got

    def has_form(self, candidates: np.ndarray) -> np.ndarray:
        """Clause 4, vectorised: which candidates have at least one form."""
        return in_sorted(self._form_ids, candidates)

    def shares_form(self, o: int, candidates: np.ndarray) -> np.ndarray:
        """Clause 3 (negated), vectorised: which candidates share a form with ``o``."""
        mine = self.forms_of(o)
        out = np.zeros(len(candidates), dtype=bool)
        if not mine:
            return out
        mine_set = set(mine)
        owner, theirs = [], []
        for i, e in enumerate(candidates.tolist()):
            fs = self.forms_of(e)
            if mine_set.intersection(fs):
                out[i] = True
            elif self.form_threshold is not None:
                owner.extend([i] * len(fs))
                theirs.extend(fs)
        if theirs and self.form_threshold is not None:
            sim = process.cdist(
                list(mine), theirs, scorer=fuzz.ratio, score_cutoff=self.form_threshold, workers=1
            )
            hit = (sim >= self.form_threshold).any(axis=0)
            out[np.asarray(owner)[hit]] = True
        return out

    # --- Ω(f) -------------------------------------------------------------------------------
    def clauses(self, s: int, r: int, o: int, candidates: Sequence[int]) -> pd.DataFrame:
        """One row per candidate with a boolean column per clause (for tests and logs)."""
        cand = np.asarray(candidates, dtype=np.int64)
        invalid = self.valid_for(s, r) | {o}
        return pd.DataFrame(
            {
                "entity": cand,
                "type": self.same_type(o, cand),
                "not_valid": ~np.isin(cand, np.fromiter(invalid, dtype=np.int64, count=len(invalid))),
                "no_shared_form": ~self.shares_form(o, cand),
                "has_form": self.has_form(cand),
            }
        )

    def filter(
        self, s: int, r: int, o: int, candidates: Sequence[int], limit: int | None = None
    ) -> list[int]:
        """Ω-valid candidates in their given order, de-duplicated, at most ``limit``.

        The fact's own subject passes when it fits the clauses (a country is no neighbour of
        itself): §3.3 defines Ω(f) by those clauses alone, and the reference's retrievers remove
        only the valid objects of (s, r) and the entities named by a label of o.

        The list is read in growing blocks, the cheap clauses first and the fuzzy form test on
        their survivors, so a long ranked list (a whole type at 1M entities) stops as soon as
        ``limit`` are found: the work is bounded by ``limit`` and Ω's rejections, not by the
        length of the list.
        """
        invalid = self.valid_for(s, r) | {o}
        bad = np.sort(np.fromiter(invalid, dtype=np.int64, count=len(invalid)))

        def admit(part: np.ndarray) -> np.ndarray:
            part = part[self.same_type(o, part) & ~in_sorted(bad, part)]
            part = part[self.has_form(part)]
            return part[~self.shares_form(o, part)]

        return _first_admitted(candidates, admit, limit)

    def filter_subjects(
        self, s: int, r: int, o: int, candidates: Sequence[int], limit: int | None = None
    ) -> list[int]:
        """Ω mirrored onto the subject slot (PROBELM's subject-side swaps, Appendix B).

        s* shares a declared type with s, (s*, r, o) is not valid at the dump date, s* shares
        no form with s and has a form.
        """

        def admit(part: np.ndarray) -> np.ndarray:
            part = part[self.same_type(s, part) & (part != s)]
            part = part[~self.valid_with(part, r, o)]
            part = part[self.has_form(part)]
            return part[~self.shares_form(s, part)]

        return _first_admitted(candidates, admit, limit)


def valid_arrays(valid: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """``(keys, objects)`` of valid statements sorted by their (subject, property) key."""
    key = pair_keys(valid["subject"].to_numpy(dtype=np.int64), valid["property"].to_numpy(dtype=np.int64))
    order = np.argsort(key, kind="stable")
    return key[order], valid["object"].to_numpy(dtype=np.int64)[order]


def in_sorted(sorted_unique: np.ndarray, values: Sequence[int]) -> np.ndarray:
    """Which ``values`` occur in a sorted unique int64 array: a binary search per value, so the
    cost follows ``values``, not the (possibly type-sized) array, unlike ``np.isin``."""
    values = np.asarray(values)
    if values.dtype != sorted_unique.dtype or values.dtype.kind != "i":
        # Lists and mixed widths compare as int64; arrays of the same width (int32 columns of
        # Cooccurrence) as they are, since searchsorted copies the wider side.
        values = values.astype(np.int64)
    if len(sorted_unique) == 0:
        return np.zeros(len(values), dtype=bool)
    i = np.minimum(np.searchsorted(sorted_unique, values), len(sorted_unique) - 1)
    return sorted_unique[i] == values


def _first_admitted(candidates: Sequence[int], admit, limit: int | None) -> list[int]:
    """The first ``limit`` distinct candidates (first occurrence, given order) that ``admit``
    keeps; ``admit`` maps a block of distinct candidates to its admitted ones, in order."""
    cand = np.asarray(candidates, dtype=np.int64)
    if limit is not None and limit <= 0:
        return []
    out: list[int] = []
    seen = np.empty(0, dtype=np.int64)
    block = max(64, 4 * (limit or 0))
    lo = 0
    while lo < len(cand):
        part = cand[lo : lo + block] if limit is not None else cand
        lo += len(part)
        _, first = np.unique(part, return_index=True)
        part = part[np.sort(first)]
        part = part[~in_sorted(seen, part)]
        if limit is not None:
            seen = arrays.union(seen, part)
        out.extend(admit(part).tolist())
        if limit is not None and len(out) >= limit:
            return out[:limit]
        block *= 2
    return out


def facts_valid(facts: pd.DataFrame) -> pd.DataFrame:
    """``subject, property, object`` of every object the probe builder lists as valid for (s, r)."""
    f = facts[["subject", "property", "object", "objects"]].copy()
    f["objects"] = [
        list(v) + [o] if v is not None else [o] for v, o in zip(f["objects"], f["object"], strict=True)
    ]
    f = f.explode("objects")
    return pd.DataFrame(
        {
            "subject": id_ints(f["subject"]),
            "property": id_ints(f["property"]),
            "object": id_ints(f["objects"]),
        }
    ).drop_duplicates()


def suite_omega(
    facts: pd.DataFrame,
    entity_forms: pd.DataFrame,
    claims: pd.DataFrame,
    type_files: Iterable[str | Path],
    dump: str,
    valid_ranks: str = "non_deprecated",
    form_threshold: float | None = 90.0,
) -> Omega:
    """Ω of one suite: types of every enabled dump, statements of the suite's dump valid at its
    date plus every object the probe builder lists as valid for (s, r)."""
    valid = pd.concat([valid_objects(claims, int(dump), valid_ranks), facts_valid(facts)]).drop_duplicates()
    return Omega.from_tables(load_types(type_files), entity_forms, valid, form_threshold)
