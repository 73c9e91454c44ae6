"""Same-relation pools (fluent-mLAMA paper §3.1): objects of the relation, in hash order.

§3.1: "we put the maximum boundaries on the number of distractors by sampling 50 entities from
the total pool of objects for a particular relation"; the reference code (``processor.py``)
sorts the pool by a SHA-256 hash to "stabilize the random sample". The pool of a relation and
language is, with ``distractors.pool_source``:

* ``relation`` (default, the paper): every object of the relation in the dump, i.e. of the
  statements valid at the suite's dump date (Ω's ``valid`` table, ``distractors.valid_ranks``),
  plus the suite's own objects;
* ``suite``: only the objects of the suite's sampled facts of the relation (the former rule; a
  small suite then draws its distractors from a few dozen objects).

Either pool keeps the objects with a form in the language, sorted by
``stable_hash(property, lang, entity)`` ("hash order"); a fact takes the first ``n`` (50 by
default) that are in Ω(f).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from factprobe import arrays
from factprobe.contracts import id_int, id_ints
from factprobe.distractors.omega import Omega, in_sorted
from factprobe.hashing import stable_hashes

POOL_SOURCES = ("relation", "suite")


def relation_pools(
    facts: pd.DataFrame,
    forms: pd.DataFrame | pa.Table,
    languages: list[str],
    statements: pd.DataFrame | None = None,
) -> dict[tuple[str, str], np.ndarray]:
    """``(property, lang) -> objects in hash order`` from a facts table and its entity forms.

    ``statements`` (integer ``subject, property, object``; e.g. ``Omega.valid``) adds every object
    of the suite's relations in the dump (``pool_source: relation``); ``None`` keeps the pool to
    the suite's facts (``pool_source: suite``).
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
            hashed = stable_hashes((prop, lang), [f"Q{e}" for e in keep.tolist()])
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


def pool_distractors(omega: Omega, pool: np.ndarray, s: int, r: int, o: int, n: int = 50) -> list[int]:
    """The first ``n`` Ω-valid objects of the relation's pool, in hash order."""
    return omega.filter(s, r, o, pool, n)
