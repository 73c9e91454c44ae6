"""factprobe.distractors: the registry of distractor strategies (issue 25 item 1).

:data:`STRATEGIES` is the only list of strategies: config validation (``settings.Retrieve``),
the rules' input functions (semantic index, temporal view, per-model jobs), the retrieval job
and its statement scans all read it. A strategy is a retriever plus what it needs:

* ``per_model``: it runs once per (suite, model) in its own rule (ApprOpt), not in retrieval;
* ``index``: it reads the dump's semantic index (rule build_sem_index);
* ``temporal``: it reads the temporal view of the suite's dump (rule temporal_view);
* ``statements``: it reads the suite's relations' statements (co-occurrence);
* ``every_subject``: given the suite's retrieve settings, whether Ω must hold every subject of
  the suite's relations, not only the facts' own.

A retriever is called per fact, ``retriever(ctx, i, fact_id, (s, r, o))``, and returns candidate
rows (:func:`factprobe.distractors.retrieve.rows`); ``ctx`` is the suite's
:class:`factprobe.distractors.retrieve.Context`. An optional ``prepare(ctx)`` runs once before
the first fact (structures shared by every fact). Built-in entries name their functions as
``"module:attribute"`` strings, loaded on first use, so this module stays standard-library only:
the Snakefile reads it while parsing. New strategies: ``@strategy("name", index=True)`` on a
retriever in any module (a plugin: :mod:`factprobe.plugins`).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Strategy:
    """One registry entry: the retriever (callable or ``"module:attribute"``) and its needs."""

    name: str
    retriever: Callable | str | None
    prepare: Callable | str | None = None
    per_model: bool = False
    index: bool = False
    temporal: bool = False
    statements: bool = False
    every_subject: Callable[[Mapping[str, Any]], bool] | None = None
    aliases: tuple[str, ...] = field(default_factory=tuple)

    def load(self, what: str = "retriever") -> Callable | None:
        """The retriever (or ``prepare``) as a callable, importing its module on first use."""
        ref = getattr(self, what)
        if isinstance(ref, str):
            module, _, attr = ref.partition(":")
            return getattr(importlib.import_module(module), attr)
        return ref


#: name -> :class:`Strategy`; filled by :func:`register` / :func:`strategy` only.
STRATEGIES: dict[str, Strategy] = {}


def register(name: str, retriever: Callable | str | None, **needs: Any) -> Strategy:
    """Add (or replace) strategy ``name``; ``needs`` are :class:`Strategy` fields."""
    entry = Strategy(name, retriever, **needs)
    STRATEGIES[name] = entry
    return entry


def strategy(name: str, **needs: Any) -> Callable[[Callable], Callable]:
    """Decorator form of :func:`register`: ``@strategy("mine", index=True)`` on a retriever."""

    def add(fn: Callable) -> Callable:
        register(name, fn, **needs)
        return fn

    return add


def canonical(names: list[str]) -> list[str]:
    """Former names replaced by the current ones (``temp`` -> ``temp+sem``), duplicates dropped."""
    alias = {a: s.name for s in STRATEGIES.values() for a in s.aliases}
    return list(dict.fromkeys(alias.get(n, n) for n in names))


def unknown(names: list[str], per_model: bool | None = None) -> list[str]:
    """Names (after :func:`canonical`) that are not registered strategies (of the given kind)."""
    return [
        n
        for n in canonical(names)
        if n not in STRATEGIES or (per_model is not None and STRATEGIES[n].per_model != per_model)
    ]


def choices(per_model: bool | None = None) -> list[str]:
    """Registered names (of the given kind), for error messages."""
    return [n for n, s in STRATEGIES.items() if per_model is None or s.per_model == per_model]


def needs(names: list[str], need: str) -> bool:
    """Whether any of the strategies ``names`` has ``need`` (index, temporal, statements, per_model)."""
    return any(getattr(STRATEGIES[n], need) for n in canonical(names) if n in STRATEGIES)


def needs_every_subject(settings: Mapping[str, Any]) -> bool:
    """Whether Ω must hold every subject of the relations for these retrieve settings."""
    return any(
        STRATEGIES[n].every_subject(settings)
        for n in canonical(list(settings.get("strategies", [])))
        if n in STRATEGIES and STRATEGIES[n].every_subject is not None
    )


def _subject_side(settings: Mapping[str, Any]) -> bool:
    # The subject side of co-occurrence takes other subjects of the relation (PROBELM App. B).
    return "subject" in settings.get("cooccur_sides", [])


def _relation_pool(settings: Mapping[str, Any]) -> bool:
    # pool_source relation: every object of the relation in the dump, whoever its subject (not
    # Fluent-mLAMA's pool, which is pool_source dataset: strings of the dataset's subset, §3.3).
    return settings.get("pool_source", "relation") == "relation"


_BUILTIN = "factprobe.distractors.strategies"
# One line per built-in strategy (distractors paper §3.3, PROBELM App. B, fluent-mLAMA §3.1).
register("random", f"{_BUILTIN}:random_rows")
register("sem", f"{_BUILTIN}:sem_rows", prepare=f"{_BUILTIN}:sem_lists", index=True)
register(
    "temp+sem",
    f"{_BUILTIN}:temp_sem_rows",
    prepare=f"{_BUILTIN}:sem_lists",
    index=True,
    temporal=True,
    aliases=("temp",),
)
register(
    "cooccur",
    f"{_BUILTIN}:cooccur_rows",
    prepare=f"{_BUILTIN}:cooccur_relevance",
    statements=True,
    every_subject=_subject_side,
)
register("pool", f"{_BUILTIN}:pool_rows", prepare=f"{_BUILTIN}:relation_pools", every_subject=_relation_pool)
register("appropt", None, per_model=True)  # rule appropt_distractors (factprobe.distractors.appropt)

from factprobe.plugins import load_plugins  # noqa: E402  (after the registry: plugins fill it)

load_plugins()
