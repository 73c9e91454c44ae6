"""One suite's candidates: the object of every fact plus the distractors of each strategy.

Output columns (contracts.md): ``fact_id, entity, role (object/distractor), strategy, rank,
relevance`` and, added here, ``side`` (object/subject: which slot the entity fills; only
``cooccur`` has subject-side rows), ``source`` (temporal/sem inside ``temp+sem``), ``lang`` (the
pool's language for ``pool``, else null) and ``score`` (co-occurrence frequency for
``cooccur``). The object row of a fact has strategy ``object`` and rank 0; distractors are
ranked from 1 within (fact, strategy, side, lang).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
from tqdm import tqdm

from factprobe import arrays, contracts, parallel, scan
from factprobe.contracts import id_ints
from factprobe.distractors.cooccur import Cooccurrence
from factprobe.distractors.omega import Omega, suite_omega  # noqa: F401 (re-export)
from factprobe.distractors.pool import is_string_entity, string_forms
from factprobe.distractors.semantic.index import SemIndex
from factprobe.hashing import stable_hash
from factprobe.registries import STRATEGIES, tables_of
from factprobe.settings import Retrieve

log = logging.getLogger(__name__)


def fact_ids(facts: pd.DataFrame) -> list[tuple[int, int, int]]:
    """``(s, r, o)`` integer triples of a facts table."""
    return list(
        zip(
            id_ints(facts["subject"]).tolist(),
            id_ints(facts["property"]).tolist(),
            id_ints(facts["object"]).tolist(),
            strict=True,
        )
    )


def rows(fact_id: str, ents: list[int], strategy: str, **extra) -> list[dict]:
    """Distractor rows of one fact and strategy, ranked from 1 in list order."""
    return [
        {
            "fact_id": fact_id,
            "entity": contracts.qid(e),
            "role": "distractor",
            "strategy": strategy,
            "rank": i,
            **extra,
        }
        for i, e in enumerate(ents, start=1)
    ]


@dataclass
class Context:
    """What a retriever may read for one suite (:data:`factprobe.registries.STRATEGIES`).

    ``triples`` and ``ids`` are the facts retrieved (one shard's); ``facts`` is every fact (the
    same-relation pools take them all). ``tables``: the tables the suite's strategies name
    (:data:`factprobe.registries.TABLES`), by name; the built-in ones also as :attr:`index`,
    :attr:`past`, :attr:`cooccur` and :attr:`entity_forms`. ``shared``: structures a strategy's
    ``prepare`` builds once; ``built``: seconds and count of those structures (logged apart from
    per-fact work); ``object_relevance``: the relevance of each fact's object row (None unless a
    strategy grades).
    """

    facts: pd.DataFrame
    omega: Omega
    settings: Retrieve
    triples: list[tuple[int, int, int]]
    ids: list[str]
    tables: dict[str, Any] = field(default_factory=dict)
    shared: dict = field(default_factory=dict)
    built: dict = field(default_factory=lambda: {"s": 0.0, "n": 0})
    object_relevance: float | None = None

    @property
    def index(self) -> SemIndex | None:
        """Table ``sem_index``: the dump's semantic index."""
        return self.tables.get("sem_index")

    @property
    def past(self) -> dict | None:
        """Table ``temporal``: the past objects of each fact's (s, r)."""
        return self.tables.get("temporal")

    @property
    def cooccur(self) -> Cooccurrence | None:
        """Table ``cooccur``: co-occurrence counts of the relations' statements."""
        return self.tables.get("cooccur")

    @property
    def entity_forms(self) -> pd.DataFrame | pa.Table | None:
        """Table ``entity_forms``: the suite's entity forms."""
        return self.tables.get("entity_forms")


def object_rows(ctx: Context) -> list[dict]:
    """The object row of every fact: strategy ``object``, rank 0."""
    return [
        {
            "fact_id": fid,
            "entity": contracts.qid(o),
            "role": "object",
            "strategy": "object",
            "rank": 0,
            "relevance": ctx.object_relevance,
            "side": "object",
        }
        for fid, (_, _, o) in zip(ctx.ids, ctx.triples, strict=True)
    ]


def retrieve(
    facts: pd.DataFrame,
    omega: Omega,
    settings: Retrieve,
    tables: Mapping[str, Any] | None = None,
    only: Iterable[str] | None = None,
) -> pd.DataFrame:
    """The candidates table of one suite (see the module docstring for columns): the object rows,
    then each fact's rows of every strategy in ``settings.strategies`` order, each strategy's from
    its retriever in :data:`factprobe.registries.STRATEGIES`.

    ``tables``: ``name -> table`` (:func:`factprobe.distractors.tables.load_tables`); the
    strategies' context holds those they name (``tables=``), no other.

    ``only``: the fact ids of one retrieval shard; the other facts still make the same-relation
    pools (strategy ``pool``), so a shard's rows are those of the whole run for its facts.
    """
    started = parallel.cpu_clock()
    mine = facts if only is None else facts[facts["fact_id"].isin(set(only))]
    given = tables or {}
    named = {name: given[name] for name in tables_of(settings.strategies) if name in given}
    ctx = Context(facts, omega, settings, fact_ids(mine), mine["fact_id"].tolist(), named)
    cooccur = ctx.cooccur
    entries = [STRATEGIES[name] for name in settings.strategies]
    # Structures built once per relation or type set (pools, type slices, co-occurrence levels),
    # timed apart from the per-fact work: their number does not grow with the facts.
    left0: dict[str, int] = {}
    if cooccur is not None:
        built0 = (cooccur.built_s, cooccur.built)
        left0 = dict(cooccur.self_left_out)
    for entry in entries:
        prepare = entry.code("prepare")
        if prepare is not None:
            prepare(ctx)
    out_rows = object_rows(ctx)
    counts = {s: 0 for s in settings.strategies}
    retrievers = [(entry.name, entry.code()) for entry in entries]
    facts_todo = list(zip(ctx.ids, ctx.triples, strict=True))
    for i, (fid, triple) in enumerate(tqdm(facts_todo, desc="distractors", mininterval=5)):
        for name, retriever in retrievers:
            got = retriever(ctx, i, fid, triple)
            counts[name] += len(got)
            out_rows.extend(got)
    if cooccur is not None:
        ctx.built["s"] += cooccur.built_s - built0[0]
        ctx.built["n"] += cooccur.built - built0[1]
    _log_timing(started, ctx, counts)
    kept = self_candidates(ctx, out_rows)
    if kept or cooccur is not None:
        # distractors paper §3.3: Ω(f) admits s (the reference keeps it); PROBELM's co-occurrence
        # alternatives leave it out (Cooccurrence.alternatives).
        left = {} if cooccur is None else {k: v - left0.get(k, 0) for k, v in cooccur.self_left_out.items()}
        log.info("self-candidates: kept per strategy %s; left out of cooccur per side %s", kept, left)
    return candidates_frame(out_rows)


def self_candidates(ctx: Context, out_rows: list[dict]) -> dict[str, int]:
    """Distractor rows per strategy that are the fact's own subject (object side) or own object
    (subject side): Ω(f) of the distractors paper (§3.3) admits them, as its reference does."""
    ends = {
        fid: (contracts.qid(s), contracts.qid(o)) for fid, (s, _, o) in zip(ctx.ids, ctx.triples, strict=True)
    }
    kept: dict[str, int] = {}
    for row in out_rows:
        if row["role"] != "distractor" or row["fact_id"] not in ends:
            continue
        subject, obj = ends[row["fact_id"]]
        if row["entity"] == (obj if row.get("side") == "subject" else subject):
            kept[row["strategy"]] = kept.get(row["strategy"], 0) + 1
    return kept


def _log_timing(started: float, ctx: Context, counts: dict[str, int]) -> None:
    built = ctx.built
    took = parallel.cpu_clock() - started - built["s"]
    # benchmarks/scale.py reads this line: the per-fact cost, apart from loading and building,
    # in CPU seconds (the job's own, whatever runs beside it).
    log.info(
        "candidates: %d facts in %.2f s of CPU (%.2f ms per fact, %.2f s in exact semantic search) after "
        "%.2f s building %d pools, type slices and co-occurrence levels; distractor rows per strategy %s",
        len(ctx.ids),
        took,
        1000 * took / max(len(ctx.ids), 1),
        built.get("search_s", 0.0),
        built["s"],
        built["n"],
        counts,
    )


def candidates_frame(out_rows: list[dict]) -> pd.DataFrame:
    """The candidates contract frame of retrieved rows, with its dtypes."""
    out = pd.DataFrame(out_rows, columns=contracts.columns("candidates"))
    out["rank"] = out["rank"].astype("int32")
    out["relevance"] = out["relevance"].astype("float64")
    out["score"] = out["score"].astype("float64")
    for col in ("side", "source", "lang"):
        out[col] = out[col].astype("string")
    return out


def forms_of_candidates(candidates: pd.DataFrame, entity_forms: pd.DataFrame | pa.Table) -> pd.DataFrame:
    """Every form (``entity, lang, form, source``) of every candidate entity, objects included.

    ``entity_forms``: the contract frame, or the Arrow table of :func:`scan.scan_forms_table`
    (sorted by entity, file order within one, so the rows and order below are the same)."""
    strings = is_string_entity(candidates["entity"])
    pooled = string_forms(candidates[strings]) if strings.any() else None
    candidates = candidates[~strings]
    if isinstance(entity_forms, pa.Table):
        wanted = arrays.unique(id_ints(candidates["entity"].unique()))
        keep = scan.forms_frame(entity_forms.take(rows_of_ids(entity_forms["id"].to_numpy(), wanted)))
    else:
        keep = entity_forms[entity_forms["entity"].isin(set(candidates["entity"]))]
    # String distractors (pool source: dataset) have their one form: the string itself.
    if pooled is not None:
        keep = pd.concat([keep[["entity", "lang", "form", "source"]], pooled], ignore_index=True)
    return (
        keep[["entity", "lang", "form", "source"]]
        .drop_duplicates()
        .sort_values(["entity", "lang"], kind="stable")
        .reset_index(drop=True)
    )


def rows_of_ids(ids: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """Row positions, in table order, of the rows of a table sorted by ``ids`` whose id is in
    ``wanted`` (sorted unique): a binary search per wanted id, so a memory-mapped table is read
    at those rows only (the filter of every row it replaces read the whole id column)."""
    lo, hi = np.searchsorted(ids, wanted, "left"), np.searchsorted(ids, wanted, "right")
    return arrays.ranges(lo, hi - lo)


def shard_plan(facts: pd.DataFrame, shards: int) -> np.ndarray:
    """Retrieval shard (0..shards-1) of each fact: ``stable_hash(subject, "retrieve-shard")``
    modulo ``shards``.

    Cutting by subject, not by relation, divides a suite whose facts sit in one relation as
    evenly as one with many (the plan that kept relations whole left 44-90 % of a suite's rows
    in its largest shard at 1M entities). Every fact of a subject lands in one shard, so each
    (s, r) of a shard is whole: Ω's true objects of (s, r) are the statements of the shard's
    own subjects, and a shard reads only those (:func:`load_suite_omega`). The hash depends on
    the subject id alone, so every job computes the same plan from the facts table.
    """
    if shards < 1:
        raise ValueError(f"distractors.shards must be >= 1, not {shards}")
    subjects, inverse = np.unique(facts["subject"].to_numpy(dtype=object).astype(str), return_inverse=True)
    hashed = np.array([stable_hash(s, "retrieve-shard") for s in subjects.tolist()], dtype=np.uint64)
    return (hashed % np.uint64(shards)).astype(np.int64)[inverse.reshape(-1)]


def gather_shards(facts: pd.DataFrame, shards: list[pd.DataFrame], forms: list[pd.DataFrame]):
    """``(candidates, forms)`` of the whole suite from its shards, in the row order of one job:
    object rows of every fact first, then each fact's distractor rows, facts in table order."""
    cand = pd.concat(shards, ignore_index=True)
    position = pd.Series(np.arange(len(facts)), index=facts["fact_id"].to_numpy())
    key = pd.DataFrame(
        {
            "_distractor": (cand["role"] != "object").to_numpy(),
            "_fact": position.loc[cand["fact_id"]].to_numpy(),
        }
    )
    order = key.sort_values(["_distractor", "_fact"], kind="stable").index
    cand = cand.loc[order].reset_index(drop=True)
    every = (
        pd.concat(forms, ignore_index=True)
        .drop_duplicates()
        .sort_values(["entity", "lang"], kind="stable")
        .reset_index(drop=True)
    )
    return cand, every


def count_found(candidates: pd.DataFrame) -> pd.DataFrame:
    """Distractors found per fact and strategy (may be below n: Ω can exhaust the type)."""
    d = candidates[candidates["role"] == "distractor"]
    return d.groupby(["fact_id", "strategy"]).size().rename("found").reset_index()
