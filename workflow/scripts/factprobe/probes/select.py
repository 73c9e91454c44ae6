"""Fact selection for probing suites (distractors-knowledge-measure §3.1, probelm-plausibility §3).

* truthy statements at the dump date: statements valid at it (:func:`factprobe.validity.valid_at`:
  not deprecated, ``start <= t < end``, ``point_in_time <= t``); of those, preferred rank wins
  over normal per (subject, property) (Wikidata's "truthy" view);
* a fact needs a subject and an object labelled in every language of the suite, and the object
  must differ from the subject (else the prompt would contain its answer);
* one fact per (subject, relation): the object is the hash-first labelled valid object, and
  ``objects`` lists every valid object of (s, r) at the dump date, ascending by id (N-M relations, §3.1 Ω);
* popularity = subject sitelinks; per relation, facts are cut into ``strata`` equal-count bins
  by popularity and each bin gives ``n_facts / strata`` facts, taken in ``stable_hash`` order
  (paper 1 samples "various levels of popularity");
* ``split`` is a hash-chosen taught / untaught half, used by the built-in control model.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa

from factprobe.contracts import fact_id, id_int, id_ints, pid, pid_series, qid, qid_series
from factprobe.hashing import hash_fraction, stable_hash
from factprobe.validity import valid_at


def truthy_claims(claims: pd.DataFrame, dump_date: int) -> pd.DataFrame:
    """Statements that hold at ``dump_date`` (int YYYYMMDD), truthy rank only.

    ``claims`` has the extraction columns ``subject, property, object, rank, start, end,
    point_in_time``. Returns ``subject, property, object`` deduplicated.
    """
    live = claims[valid_at(claims, dump_date).to_numpy()]
    best = live.groupby(["subject", "property"])["rank"].transform("max")
    out = live[live["rank"] == best][["subject", "property", "object"]]
    return out.drop_duplicates().sort_values(["property", "subject", "object"]).reset_index(drop=True)


def item_sitelinks(entities: pd.DataFrame) -> pd.Series:
    """Sitelink count per integer item id (items and properties share the integer space)."""
    items = entities[entities["kind"] == "item"]
    return items.drop_duplicates("id").set_index("id")["sitelinks"]


def labelled_entities(labels: pd.DataFrame, languages: list[str]) -> set[str]:
    """Entities ("Q42") with a label (not only an alias) in every language of ``languages``."""
    main = labels[(labels["source"] == "label") & labels["lang"].isin(languages)]
    counts = main.groupby("entity")["lang"].nunique()
    return set(counts[counts == len(set(languages))].index)


def _labelled_ints(labelled: set[str] | np.ndarray) -> np.ndarray:
    """Integer item ids of a labelled set given as string ids or already as ints."""
    if isinstance(labelled, np.ndarray):
        return labelled.astype(np.int64, copy=False)
    return id_ints(e for e in labelled if e.startswith("Q"))


def candidate_facts(
    truthy: pd.DataFrame,
    relations: list[str],
    labelled: set[str] | np.ndarray,
    sitelinks: pd.Series,
    seed: object = 0,
    allowed: set[str] | pd.Index | None = None,
) -> pd.DataFrame:
    """Every probe-able fact: one row per (subject, relation) with a labelled subject and object.

    ``truthy`` uses integer ids (extraction tables); ``labelled``: string ids or an int array
    (:func:`factprobe.scan.labelled_ids`); ``sitelinks`` maps integer subject id to
    its sitelink count; ``allowed`` (fact ids), when given, limits the object chosen for a fact
    (plausibility suites: only new facts) while ``objects`` still lists every valid object;
    a unique ``pd.Index`` of them keeps its hash table between calls, so a relation given in
    parts pays for it once, not per part as ``isin`` would.
    Returns the ``facts`` columns except ``stratum`` and ``split``.
    """
    props = [id_int(r) for r in relations]
    rows = truthy[truthy["property"].isin(props)][["subject", "property", "object"]]
    # Integer work first: string ids are only built for the chosen facts.
    ids = _labelled_ints(labelled)
    # A fact whose object is its subject (a country's P17 is itself) would print the answer in the prompt.
    ok = rows[rows["subject"].isin(ids) & rows["object"].isin(ids) & (rows["subject"] != rows["object"])]
    if allowed is not None:
        key = fact_id(qid_series(ok["subject"]), pid_series(ok["property"]), qid_series(ok["object"]))
        ok = ok[(allowed.get_indexer(key) >= 0) if isinstance(allowed, pd.Index) else key.isin(allowed)]
    # Only (s, r) pairs with several candidate objects need the hash that picks one.
    several = ok.groupby(["subject", "property"])["object"].transform("size").to_numpy() > 1
    h = np.zeros(len(ok), dtype=np.uint64)
    h[several] = [
        stable_hash(seed, "object", qid(s), pid(p), qid(o))
        for s, p, o in zip(
            ok["subject"][several], ok["property"][several], ok["object"][several], strict=True
        )
    ]
    ok = ok.assign(h=h)
    ok = ok.sort_values(["subject", "property", "h"]).drop_duplicates(["subject", "property"])
    # Every valid object of the chosen (s, r), in ascending id order (pyarrow's grouped list keeps input order).
    pairs = rows.merge(ok[["subject", "property"]], on=["subject", "property"])
    pairs = pairs.sort_values(["subject", "property", "object"])
    grouped = (
        pa.Table.from_pandas(pairs, preserve_index=False)
        .group_by(["subject", "property"], use_threads=False)
        .aggregate([("object", "list")])
        .to_pandas()
    )
    ok = ok.merge(grouped, on=["subject", "property"], how="left").sort_values(["subject", "property"])
    s_ids, p_ids, o_ids = qid_series(ok["subject"]), pid_series(ok["property"]), qid_series(ok["object"])
    facts = pd.DataFrame(
        {
            "fact_id": fact_id(s_ids, p_ids, o_ids),
            "subject": s_ids,
            "property": p_ids,
            "object": o_ids,
            "objects": [[qid(o) for o in objs] for objs in ok["object_list"]],
            "popularity": ok["subject"].map(sitelinks).fillna(0).astype("int64").to_numpy(),
        }
    )
    return facts.reset_index(drop=True)


def stratify(facts: pd.DataFrame, strata: int) -> pd.Series:
    """Equal-count popularity bins per relation: 0 = least popular; ties broken by fact_id."""
    out = pd.Series(0, index=facts.index, dtype="int64")
    for _, group in facts.groupby("property"):
        order = group.sort_values(["popularity", "fact_id"]).index
        bins = (np.arange(len(order)) * strata) // max(len(order), 1)
        out.loc[order] = bins
    return out


def sample_facts(facts: pd.DataFrame, n_facts: int | None, strata: int, seed: object = 0) -> pd.DataFrame:
    """Up to ``n_facts`` facts per relation, ``n_facts // strata`` (remainder to the top bins) per bin.

    Within a bin facts are taken in ``stable_hash(seed, fact_id)`` order, so the sample does
    not depend on the input order. ``n_facts=None`` keeps every fact.
    """
    facts = facts.copy()
    facts["stratum"] = stratify(facts, strata)
    if n_facts is None:
        return facts
    facts["_h"] = [stable_hash(seed, "sample", f) for f in facts["fact_id"]]
    keep = []
    for (_, stratum), group in facts.groupby(["property", "stratum"]):
        quota = n_facts // strata + (1 if stratum >= strata - n_facts % strata else 0)
        keep.append(group.sort_values("_h").head(quota))
    if not keep:
        return facts.drop(columns="_h").iloc[0:0]
    return pd.concat(keep).drop(columns="_h")


def assign_split(fact_ids: pd.Series, seed: object = 0) -> pd.Series:
    """Hash-chosen half: ``taught`` (the control model learns it) or ``untaught``."""
    return pd.Series(
        ["taught" if hash_fraction(seed, "split", f) < 0.5 else "untaught" for f in fact_ids],
        index=fact_ids.index,
        dtype="object",
    )


def finish_facts(facts: pd.DataFrame, dump: str, seed: object = 0) -> pd.DataFrame:
    """Add ``split`` and ``dump`` and put the ``facts`` contract columns first, sorted by fact_id."""
    facts = facts.sort_values("fact_id").reset_index(drop=True)
    facts["split"] = assign_split(facts["fact_id"], seed)
    facts["dump"] = dump
    cols = ["fact_id", "subject", "property", "object", "objects", "popularity", "stratum", "split", "dump"]
    return facts[cols + [c for c in facts.columns if c not in cols]]


class SelectionError(ValueError):
    """A suite selects nothing (or asks for relations the dump lacks); the message names suite, dump, relations."""


def relations_in_dump(
    suite: str,
    dump: str,
    claims_path: str,
    relations: list[str],
    present: set[int],
    mode: str = "error",
) -> list[str]:
    """``relations`` that have at least one claim in the dump (``present``: integer property ids).

    A relation without any claim in the dump is a config mistake (a typo, a property
    introduced after the dump, a dump cut down to properties): with ``mode="error"`` (the
    default, ``suites.<s>.missing_relations``) it raises :class:`SelectionError`; with
    ``mode="warn"`` the caller logs the returned difference and drops it.
    """
    absent = [r for r in relations if id_int(r) not in present]
    if absent and mode != "warn":
        raise SelectionError(
            f"suites.{suite}: relation(s) {absent} have no claim in dump {dump} ({claims_path}). "
            f"Fix the ids in suites.{suite}.relations, pick another dump, or set "
            f"suites.{suite}.missing_relations: warn to drop them with a warning."
        )
    return [r for r in relations if r not in absent]


def no_facts_error(
    suite: str,
    dump: str,
    claims_path: str,
    relations: list[str],
    truthy: pd.DataFrame,
    labelled: set[str] | np.ndarray,
    languages: list[str],
    allowed: set[str] | None = None,
) -> SelectionError:
    """The error for a suite that selected 0 facts, with the count at each filter so the cause shows."""
    props = [id_int(r) for r in relations]
    rows = truthy[truthy["property"].isin(props)]
    per_relation = {pid(p): int(n) for p, n in rows["property"].value_counts().sort_index().items()}
    ids = _labelled_ints(labelled)
    both = int((rows["subject"].isin(ids) & rows["object"].isin(ids)).sum())
    parts = [
        f"suites.{suite}: 0 facts selected from dump {dump} ({claims_path}) for relations {relations}.",
        f"Truthy item claims of these relations at {dump}: {len(rows)} {per_relation or ''}".rstrip() + ";",
        f"with subject and object labelled in {languages}: {both}.",
    ]
    if allowed is not None:
        parts.append(f"Facts new in the diff after the cut-off: {len(allowed)}.")
    parts.append(
        "Check suites.<s>.relations/languages (and for plausibility suites diff_old/cutoff/changes), "
        "and that the dump holds items, not only properties."
    )
    return SelectionError(" ".join(parts))
