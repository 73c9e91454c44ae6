"""Same-relation pools (fluent-mLAMA paper §3.1): objects of the relation, in hash order.

§3.1: "we put the maximum boundaries on the number of distractors by sampling 50 entities from
the total pool of objects for a particular relation"; the reference code (``processor.py``)
sorts the pool by a SHA-256 hash to "stabilize the random sample". The pool of a relation and
language is, with ``distractors.strategy_settings.pool.source``:

* ``relation`` (default, the paper): every object of the relation in the dump, i.e. of the
  statements valid at the suite's dump date (Ω's ``valid`` table, ``distractors.valid_ranks``),
  plus the suite's own objects;
* ``suite``: only the objects of the suite's sampled facts of the relation (the former rule; a
  small suite then draws its distractors from a few dozen objects).

Either pool keeps the objects with a form in the language, sorted by
``stable_hash(property, lang, entity)`` ("hash order"); a fact takes the first ``n`` (50 by
default) that are in Ω(f).

* ``dataset`` (the paper's pool; §3.3 "50 distractors sampled from the same language-relation
  subset of the dataset", App. B): the candidates are *strings*, not entities. The pool of a
  language and relation is every object label, inflected object and alias of that subset (the
  release's ``<lang>_<PID>`` file for a Fluent-mLAMA suite, :func:`factprobe.probes.fluent.
  release_string_pools`; the suite's facts' objects otherwise, :func:`suite_string_pools`),
  sorted by SHA-256 of the string read as an integer (the authors' ``processor.py``
  ``stable_sample``); a fact removes its own correct strings (its object's label, inflections and
  aliases) and takes the first ``n``. Each sampled string is one competitor: its candidate entity
  is ``str:<string>`` (:func:`string_entity`), whose one form is the string itself. Ω does not
  filter this pool (the authors only remove the fact's own correct strings).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from factprobe import arrays
from factprobe.contracts import id_int, id_ints, qid
from factprobe.distractors.omega import Omega, in_sorted
from factprobe.hashing import sha256_order, stable_hashes

#: Candidate entity id prefix of a string distractor (strategy pool, source dataset).
STRING_PREFIX = "str:"


def relation_pools(
    facts: pd.DataFrame,
    forms: pd.DataFrame | pa.Table,
    languages: list[str],
    statements: pd.DataFrame | None = None,
) -> dict[tuple[str, str], np.ndarray]:
    """``(property, lang) -> objects in hash order`` from a facts table and its entity forms.

    ``statements`` (integer ``subject, property, object``; e.g. ``Omega.valid``) adds every object
    of the suite's relations in the dump (pool ``source: relation``); ``None`` keeps the pool to
    the suite's facts (``source: suite``).
    """
    have = _labelled(forms)
    by_property: dict[int, np.ndarray] = {}
    if statements is not None and len(statements):
        wanted = [id_int(p) for p in facts["property"].unique()]
        st = statements[statements["property"].isin(wanted)]
        by_property = {int(p): g["object"].to_numpy(np.int64) for p, g in st.groupby("property")}
    pools = {}
    for prop, group in facts.groupby("property", sort=True):
        own = id_ints(group["object"])
        dump = by_property.get(id_int(prop), np.empty(0, np.int64))
        objects = arrays.unique(np.concatenate([own, dump]))
        for lang in languages:
            keep = objects[in_sorted(have.get(lang, np.empty(0, np.int64)), objects)]
            hashed = stable_hashes((prop, lang), [qid(e) for e in keep.tolist()])
            pools[(prop, lang)] = keep[np.argsort(hashed, kind="stable")]
    return pools


def _labelled(forms: pd.DataFrame | pa.Table) -> dict[str, np.ndarray]:
    """Sorted unique ids of the entities with a form, per language (contract frame or the
    Arrow table of :func:`factprobe.scan.scan_forms_table`)."""
    if isinstance(forms, pa.Table):
        lang, ids = forms["lang"].cast(pa.string()), forms["id"]
        return {
            k: arrays.unique(ids.filter(pc.equal(lang, k)).to_numpy()) for k in pc.unique(lang).to_pylist()
        }
    lang, ids = forms["lang"].to_numpy(dtype=object), id_ints(forms["entity"])
    return {str(k): arrays.unique(ids[lang == k]) for k in pd.unique(lang)}


class TypedPool:
    """A relation's pool (hash order) with, per declared type, the positions of its members.

    Ω's first clause keeps only the entities sharing a declared type with the fact's object o,
    and in a relation whose objects are of many types (P47, shares border with: countries,
    regions, cities of every class) few pool entries are of o's type. Read in hash order, a fact
    whose object is of a small class went through the whole pool before finding its ``n`` (or
    finding fewer): per-fact work that grew with the relation, i.e. with the dump (benchmarks/RESULTS.md,
    "Same-relation pool"). Here a fact reads only the
    entries of o's types, in the same hash order (:meth:`sharing_type`), so its work follows
    what Ω admits or rejects among same-type entries, not the pool's size.
    """

    def __init__(self, entities: np.ndarray, omega: Omega) -> None:
        self.entities = np.asarray(entities, dtype=np.int64)
        owner, types = omega.type_rows(self.entities)
        order = np.lexsort((owner, types))
        types, owner = types[order], owner[order]
        # A (type, position) row listed twice in the types table counts once.
        keep = arrays.first_of_pairs(types, owner)
        types, self._positions = types[keep], owner[keep]
        self._types, start = np.unique(types, return_index=True)
        self._start = np.append(start, len(types))

    def __len__(self) -> int:
        return len(self.entities)

    def positions(self, t: int) -> np.ndarray:
        """Sorted positions (hash order) of the pool's entries declaring type ``t``."""
        i = np.searchsorted(self._types, t)
        if i >= len(self._types) or self._types[i] != t:
            return np.empty(0, np.int64)
        return self._positions[self._start[i] : self._start[i + 1]]

    def sharing_type(self, types: np.ndarray, first: int = 64):
        """The pool's entries declaring any of ``types``, in pool order, as consecutive blocks
        of growing size (``first``, then doubling): each entry once, and no block read before
        the caller asks for it.

        With several types, a block ends at a cut: the smallest of each unfinished type's
        ``m``-th next position; every position up to the cut, of any type, is in the block.
        """
        lists = [p for p in (self.positions(int(t)) for t in types) if len(p)]
        at = [0] * len(lists)
        m = max(int(first), 1)
        while any(a < len(p) for a, p in zip(at, lists, strict=True)):
            open_ = [(a, p) for a, p in zip(at, lists, strict=True) if a < len(p)]
            cut = min(p[min(a + m, len(p)) - 1] for a, p in open_)
            parts = []
            for j, (a, p) in enumerate(zip(at, lists, strict=True)):
                end = a if a >= len(p) else int(np.searchsorted(p, cut, "right"))
                parts.append(p[a:end])
                at[j] = max(a, end)
            picked = parts[0] if len(parts) == 1 else arrays.unique(np.concatenate(parts))
            yield self.entities[picked]
            m *= 2


def pool_distractors(
    omega: Omega, pool: np.ndarray | TypedPool, s: int, r: int, o: int, n: int = 50
) -> list[int]:
    """The first ``n`` Ω-valid objects of the relation's pool, in hash order.

    A :class:`TypedPool` gives the same list: Ω's clauses are decided entry by entry, and an
    entry of none of o's declared types fails clause 1, so the first ``n`` admitted of o's
    same-type entries (pool order) are the first ``n`` admitted of the whole pool.
    """
    if not isinstance(pool, TypedPool):
        return omega.filter(s, r, o, pool, n)
    out: list[int] = []
    if n <= 0:
        return out
    for block in pool.sharing_type(omega.types_of(o), first=max(64, 4 * n)):
        out += omega.filter(s, r, o, block, n - len(out))
        if len(out) >= n:
            break
    return out


# --------------------------------------------------------------------------- string pools (dataset)


def string_distractors(pool: Sequence[str], correct: Collection[str], n: int = 50) -> list[str]:
    """The first ``n`` strings of a SHA-256-ordered ``pool`` that are not among ``correct`` (the
    authors remove the fact's correct strings, then sort and cut: the same list)."""
    out = []
    for s in pool:
        if s not in correct:
            out.append(s)
            if len(out) == n:
                break
    return out


def string_entity(form: str) -> str:
    """Candidate entity id of a string distractor: ``str:`` + the string (read back by
    :func:`string_forms`)."""
    return STRING_PREFIX + form


def is_string_entity(entities: pd.Series) -> pd.Series:
    """Which candidate entities are string distractors."""
    return entities.astype(str).str.startswith(STRING_PREFIX)


def string_forms(candidates: pd.DataFrame) -> pd.DataFrame:
    """The forms rows (``entity, lang, form, source``) of the string distractors of a candidates
    table: one per (entity, lang), the string itself, source ``pool``."""
    rows = candidates[is_string_entity(candidates["entity"])][["entity", "lang"]].drop_duplicates()
    return pd.DataFrame(
        {
            "entity": rows["entity"].astype(str),
            "lang": rows["lang"].astype(str),
            "form": rows["entity"].astype(str).str[len(STRING_PREFIX) :],
            "source": "pool",
        }
    ).reset_index(drop=True)


def suite_string_pools(
    facts: pd.DataFrame, forms: pd.DataFrame, languages: list[str]
) -> tuple[dict[tuple[str, str], list[str]], dict[tuple[str, str], set[str]]]:
    """``(pools, correct)`` of a dump-built suite: per (property, lang) every form (label, alias,
    inflected) of the objects of the suite's facts of the relation, SHA-256 ordered; per
    (fact_id, lang) the forms of the fact's objects."""
    by_entity = forms.groupby(["entity", "lang"])["form"].agg(set).to_dict()
    pools, correct = {}, {}
    for prop, group in facts.groupby("property", sort=True):
        for lang in languages:
            strings: set[str] = set()
            for fid, objects in zip(group["fact_id"], group["objects"], strict=True):
                own = set().union(*(by_entity.get((o, lang), set()) for o in objects))
                correct[(fid, lang)] = own
                strings |= own
            pools[(prop, lang)] = sha256_order(strings)
    return pools, correct


def dataset_pools(
    facts: pd.DataFrame, forms: pd.DataFrame | pa.Table, languages: list[str], release: str = ""
) -> tuple[dict[tuple[str, str], list[str]], dict[tuple[str, str], set[str]]]:
    """``(pools, correct)`` of pool ``source: dataset``: from the Fluent-mLAMA release at
    ``release`` (a suite with ``source.format: fluent-mlama``), else from the suite's own facts
    and entity forms."""
    if release:
        from factprobe.probes.fluent import release_string_pools

        relations = sorted(set(facts["property"]))
        return release_string_pools(release, languages, relations)
    if isinstance(forms, pa.Table):
        from factprobe.scan import forms_frame

        forms = forms_frame(forms)
    return suite_string_pools(facts, forms, languages)
