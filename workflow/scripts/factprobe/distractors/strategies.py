"""The built-in retrievers of :data:`factprobe.registries.STRATEGIES`, one per strategy.

Each is called per fact as ``retriever(ctx, i, fact_id, (s, r, o))`` and returns that fact's
candidate rows (:func:`factprobe.distractors.retrieve.rows`); the ``prepare`` functions build,
once per suite, what every fact shares (semantic lists, relation pools, co-occurrence levels).
"""

from __future__ import annotations

import numpy as np

from factprobe.contracts import pid
from factprobe.distractors.pool import (
    TypedPool,
    dataset_pools,
    pool_distractors,
    string_distractors,
    string_entity,
)
from factprobe.distractors.pool import relation_pools as _relation_pools
from factprobe.distractors.random import random_distractors
from factprobe.distractors.retrieval_inputs import SEM_LIST_FACTOR
from factprobe.distractors.retrieve import Context, rows
from factprobe.distractors.semantic.search import sem_distractors
from factprobe.distractors.temporal import temp_sem
from factprobe.parallel import cpu_clock

Triple = tuple[int, int, int]


def random_rows(ctx: Context, i: int, fid: str, fact: Triple) -> list[dict]:
    """Random distractors of Ω(f) (distractors paper §3.3)."""
    s, r, o = fact
    return rows(fid, random_distractors(ctx.omega, fid, s, r, o, ctx.settings.n), "random", side="object")


def sem_lists(ctx: Context) -> None:
    """The semantic neighbours of every fact, shared by ``sem`` and ``temp+sem``."""
    if "sem_lists" in ctx.shared:
        return
    if ctx.index is None:
        raise ValueError("strategies sem/temp+sem need the semantic index of the suite's dump")
    # Temp+Sem may drop sem items already in the temporal list, hence 2n.
    n, search = SEM_LIST_FACTOR * ctx.settings.n, ctx.settings.search
    ctx.shared["sem_lists"] = sem_distractors(ctx.index, ctx.omega, ctx.triples, n, search, built=ctx.built)


def sem_rows(ctx: Context, i: int, fid: str, fact: Triple) -> list[dict]:
    """Semantic distractors (distractors paper §3.3, Sem)."""
    return rows(fid, ctx.shared["sem_lists"][i][: ctx.settings.n], "sem", side="object")


def temp_sem_rows(ctx: Context, i: int, fid: str, fact: Triple) -> list[dict]:
    """Temporal distractors topped up by semantic ones (distractors paper §3.3, Temp+Sem)."""
    s, r, o = fact
    past = (ctx.past or {}).get((s, r), [])
    pairs = temp_sem(ctx.omega, past, ctx.shared["sem_lists"][i], s, r, o, ctx.settings.n)
    got = rows(fid, [e for e, _ in pairs], "temp+sem", side="object")
    return [dict(row, source=src) for row, (_, src) in zip(got, pairs, strict=True)]


def cooccur_relevance(ctx: Context) -> None:
    """The object row's relevance above every co-occurrence level (PROBELM Algorithm 1)."""
    if ctx.cooccur is None:
        raise ValueError("strategy cooccur needs the dump's statements")
    ctx.object_relevance = float(ctx.settings.own("cooccur")["n"] + 1)


def cooccur_rows(ctx: Context, i: int, fid: str, fact: Triple) -> list[dict]:
    """Co-occurrence alternatives on each configured side (PROBELM App. B, Algorithm 1)."""
    s, r, o = fact
    got: list[dict] = []
    own = ctx.settings.own("cooccur")
    for side in own["sides"]:
        alts = ctx.cooccur.alternatives(ctx.omega, fid, s, r, o, own["n"], side)
        got += [
            dict(row, relevance=rel, score=float(freq))
            for row, (_, freq, rel) in zip(
                rows(fid, [e for e, _, _ in alts], "cooccur", side=side), alts, strict=True
            )
        ]
    return got


def relation_pools(ctx: Context) -> None:
    """Same-relation pools per (relation, language) (fluent-mLAMA §3.1), or the strings of the
    language-relation subset (pool ``source: dataset``, §3.3 and App. B)."""
    if ctx.entity_forms is None:
        raise ValueError("strategy pool needs the suite's entity_forms")
    settings, source = ctx.settings, ctx.settings.own("pool")["source"]
    t0 = cpu_clock()
    if source == "dataset":
        pools = dataset_pools(ctx.facts, ctx.entity_forms, settings.languages, settings.dataset)
    else:
        # All objects of the relation in the dump (Ω's valid statements, or the distinct objects
        # a loader read when Ω holds some subjects' only), or the suite's.
        dump_objects = None
        if source == "relation":
            dump_objects = ctx.omega.valid if ctx.omega.dump_objects is None else ctx.omega.dump_objects
        pools = _relation_pools(ctx.facts, ctx.entity_forms, settings.languages, dump_objects)
        # Indexed by declared type once, so that a fact reads its object's types' entries only.
        pools = {key: TypedPool(pool, ctx.omega) for key, pool in pools.items()}
    ctx.built["s"] += cpu_clock() - t0
    ctx.built["n"] += len(pools)
    ctx.shared["pools"] = pools


def pool_rows(ctx: Context, i: int, fid: str, fact: Triple) -> list[dict]:
    """Distractors drawn from the relation's pool, per language (fluent-mLAMA §3.1); with
    ``source: dataset`` sampled strings, each a ``str:<string>`` entity (§3.3)."""
    if ctx.settings.own("pool")["source"] == "dataset":
        return _string_pool_rows(ctx, fid, fact)
    s, r, o = fact
    got: list[dict] = []
    for lang in ctx.settings.languages:
        pool = ctx.shared["pools"].get((pid(r), lang), np.empty(0, np.int64))
        picked = pool_distractors(ctx.omega, pool, s, r, o, ctx.settings.pool_size)
        got += rows(fid, picked, "pool", side="object", lang=lang)
    return got


def _string_pool_rows(ctx: Context, fid: str, fact: Triple) -> list[dict]:
    strings, correct = ctx.shared["pools"]
    prop = pid(fact[1])
    got: list[dict] = []
    for lang in ctx.settings.languages:
        picked = string_distractors(
            strings.get((prop, lang), []), correct.get((fid, lang), set()), ctx.settings.pool_size
        )
        got += [
            dict(row, entity=string_entity(form))
            for row, form in zip(
                rows(fid, [0] * len(picked), "pool", side="object", lang=lang), picked, strict=True
            )
        ]
    return got
