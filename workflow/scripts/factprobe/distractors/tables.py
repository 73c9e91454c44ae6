"""The built-in tables of :data:`factprobe.registries.TABLES`: what a distractor strategy reads
besides the suite's facts and Ω, each with the files it names at parse time (``*_paths``) and its
loader in the retrieval job (``load_*``), and :func:`load_tables`, which loads those the suite's
strategies name.

Light at import (the standard library): the Snakefile calls the ``*_paths`` functions while it
plans a suite's retrieval inputs (:func:`factprobe.plumbing.run_inputs.retrieve_job_inputs`); the loaders
import what they read when they run.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from factprobe.registries import table_entry

if TYPE_CHECKING:
    import pandas as pd


@dataclass
class TableJob:
    """What a table's loader may read in one retrieval job (or shard).

    ``inputs``: the rule's inputs (Snakemake's named list, or a mapping), with the files the
    tables' ``paths`` named; ``settings``: the suite's retrieve settings (a dict); ``facts``: the
    facts of the job's relations; ``only``: the fact ids of a shard (None: every fact);
    ``prepared``: the suite's preparation folder (rule prepare_retrieval) or None;
    ``statements``: the relations' statements Ω's loader scanned with its own tables (where
    ``cooccur`` is read and no preparation holds them); ``entity_forms``: the suite's entity
    forms as Ω's loader read them."""

    inputs: Any
    settings: Mapping[str, Any]
    facts: pd.DataFrame
    only: Iterable[str] | None = None
    prepared: str | None = None
    statements: pd.DataFrame | None = None
    entity_forms: Any = None

    @property
    def mine(self) -> pd.DataFrame:
        """The job's own facts (a shard's, else every fact)."""
        if self.only is None:
            return self.facts
        return self.facts[self.facts["fact_id"].isin(set(self.only))]

    def path(self, name: str) -> str:
        """Input ``name`` of the job; a table whose ``paths`` did not name it fails saying so."""
        # A Snakemake named list is a list: asked by key, since ``inputs.index`` is list.index.
        keys = self.inputs.keys() if callable(getattr(self.inputs, "keys", None)) else vars(self.inputs)
        if name not in keys:
            raise KeyError(
                f"retrieval job: no input {name!r}; the table reading it must name it in its paths "
                f"(factprobe.registries.register_table), inputs are {sorted(keys)}"
            )
        return self.inputs[name] if hasattr(self.inputs, "__getitem__") else getattr(self.inputs, name)


def load_tables(names: Iterable[str], job: TableJob) -> dict[str, Any]:
    """``name -> table`` of each of ``names``, loaded by its registered loader."""
    return {name: table_entry(name).code()(job) for name in names}


def sem_index_paths(settings: Mapping[str, Any], outputs: Mapping[str, str]) -> dict[str, str]:
    """The semantic index of the suite's dump (rule build_sem_index)."""
    return {"index": outputs["sem_index"].format(dump=settings["dump"])}


def load_sem_index(job: TableJob):
    """The dump's semantic index (distractors paper §3.3, Sem); a shard maps its suite's type
    slices and ranked objects, computed once by the preparation."""
    from factprobe.distractors.retrieval_inputs import prepared_index
    from factprobe.distractors.semantic.index import load_index

    index = load_index(job.path("index"), job.settings["search"], job.settings["ef_search"])
    return prepared_index(index, job.prepared)


def temporal_paths(settings: Mapping[str, Any], outputs: Mapping[str, str]) -> dict[str, str]:
    """The temporal view of the suite's dump (rule temporal_view)."""
    return {"temporal": outputs["temporal"].format(dump=settings["dump"])}


def load_temporal(job: TableJob) -> dict:
    """The past objects of each of the job's facts' (s, r) (distractors paper §3.3, Temp)."""
    from factprobe.distractors.temporal import past_of_facts
    from factprobe.registries import strategy_setting

    earlier = strategy_setting(job.settings, "temp+sem", "earlier_dump")
    return past_of_facts(job.path("temporal"), job.mine, job.settings["dump"], earlier)


def load_cooccur(job: TableJob):
    """Co-occurrence counts of the suite's relations' statements (PROBELM App. B): mapped from the
    preparation where it holds them, else built from the statements Ω's loader scanned (from its
    ``claims`` input, in the same pass: the table names no file of its own)."""
    from factprobe.distractors.retrieval_inputs import suite_cooccurrence

    return suite_cooccurrence(job.statements, job.facts, job.prepared)


def load_entity_forms(job: TableJob):
    """The suite's entity forms, as Ω's loader read them (its ``entity_forms`` input): the
    same-relation pools of fluent-mLAMA §3.1 are made of them."""
    return job.entity_forms
