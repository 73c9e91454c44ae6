"""Build one probing suite: the ``facts``, ``prompts`` and ``entity_forms`` tables (contracts.md).

Kinds: ``knowledge`` (distractors-knowledge-measure §3), ``multiprompt`` (belief-myriadlama §2:
every template × subject form, optional BELIEF-ICL contexts §3.1), ``plausibility``
(probelm-plausibility §3: facts new in a dump diff after a model cut-off) and ``multilingual``
(template verbalization per language; sentence translation is the ``translate`` stage).
The kinds share one pipeline and differ in where facts come from and in their defaults: the
templates are planned first (:mod:`.suite_plan`), the facts sampled from the dump's statements
(:mod:`.fact_candidates`), then verbalized (:mod:`.suite_prompts`). A source format of its own
(:data:`factprobe.registries.SOURCES`: a release, a list of facts) builds the suite instead.
"""

from __future__ import annotations

import logging
import tempfile
import time
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from factprobe import contracts, scan
from factprobe.registries import SOURCES
from factprobe.settings import Suite, TemplateSet, load_settings

from .demopool import SpilledPool, fill
from .fact_candidates import SelectionPaths, relations_present, sample_suite
from .suite_plan import SuitePlan, plan_suite
from .suite_prompts import demo_requests, suite_prompts
from .verbalize import forms_index

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class DumpTables:
    """The tables a suite is built from: the dump's ``claims`` and ``entities`` (None for a suite
    that reads a release alone), the ``labels`` of every dump its forms come from, the ``changes``
    of a diff (plausibility), the dump's ``temporal`` view (``temporal_only``), and a timeline
    suite's ``timeline_changes`` (each consecutive pair of dumps up to its dump)."""

    claims: str | None
    entities: str | None
    labels: list[str]
    changes: str | None = None
    temporal: str | None = None
    timeline_changes: tuple[str, ...] = ()


def build_suite(
    name: str,
    suite: Suite | dict,
    sets: dict[str, TemplateSet | dict],
    tables: DumpTables,
    forms_path: str | Path | None = None,
    memory_mb: int | None = None,
    threads: int = 1,
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame | None]:
    """Facts, prompts and entity forms of suite ``name`` (config ``suites.<name>``, as settings or a mapping).

    ``temporal_only: true`` (with ``tables.temporal``, the dump's temporal view) samples from the
    facts that have a temporal distractor: the distractors paper's S′ (§4.1, Fig. 2).

    Out of core: the entity forms of every labelled entity stream from the
    label tables into ``forms_path`` through DuckDB (bounded by ``memory_mb``, spilling beyond),
    and the job reads back only what it needs: which of its relations' entities are labelled,
    the sitelinks of their subjects, the forms of the entities its prompts name, the changes and
    temporal rows of its relations. With ``forms_path`` the returned forms are ``None``; without
    it they are written to a temporary file and returned as a frame.

    ``threads``: DuckDB's threads and the processes that select each part's candidates
    (:func:`sample_suite`); the output does not depend on them (the knowledge suite's
    job is on the full-size critical path).
    """
    if forms_path is None:
        # The forms go to a temporary file, read back as a frame.
        with tempfile.TemporaryDirectory(prefix="factprobe-forms-") as tmp:
            forms_file = Path(tmp) / "entity_forms.parquet"
            facts, prompts, _ = build_suite(name, suite, sets, tables, forms_file, memory_mb, threads)
            return facts, prompts, contracts.read("entity_forms", forms_file)
    suite = load_settings(Suite, suite, f"suites.{name}")
    sets = {key: load_settings(TemplateSet, value, f"templates.sets.{key}") for key, value in sets.items()}
    builder = SOURCES[suite.source.format].code()
    if builder is not None:
        # A format of its own (factprobe.registries.SOURCES): a release or a list of facts.
        release_tables = (tables.claims, tables.entities, tables.labels)
        facts, prompts = builder(name, suite, sets, release_tables, forms_path, memory_mb)
        return facts, prompts, None
    # Templates first: a misnamed file should fail before any table is read.
    plan = plan_suite(name, suite, sets)
    paths = SelectionPaths(
        tables.claims,
        tables.entities,
        str(forms_path),
        tables.changes,
        tables.temporal,
        tuple(tables.timeline_changes),
    )
    facts, prompts = dump_suite(plan, paths, tables.labels, memory_mb, threads)
    return facts, prompts, None


def dump_suite(
    plan: SuitePlan, paths: SelectionPaths, label_files: list[str], memory_mb: int | None, threads: int
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Facts and prompts of a suite sampled from the dump's statements (source format ``dump``),
    its entity forms streamed from ``label_files`` to ``paths.forms``.

    Out of core: the forms stream to their output; the property column to
    check the relations, then only the truthy statements of the suite's relations (selection
    never looks at other properties) and the labels and sitelinks of their entities. DuckDB's
    queries run on the job's threads; each part's candidates in as many processes.
    """
    name = plan.name
    started, main_cpu = time.perf_counter(), time.thread_time()
    con = scan.connect(threads=threads, memory_mb=memory_mb)
    n_forms = scan.write_entity_forms(label_files, plan.languages, paths.forms, con)
    covered = relations_present(plan, paths.claims, con)
    log.info("suite %s: %d forms written", name, n_forms)
    with SpilledPool(con) if plan.with_demos else nullcontext() as spilled:
        facts = sample_suite(plan, covered, paths, con, spilled, threads)
        # Forms of the entities prompts name (subjects; demonstrations load their own, demopool.fill),
        # not of every labelled entity: the dump-sized part of this job at scale.
        index = forms_index(
            scan.scan_forms(paths.forms, contracts.id_ints(sorted(set(facts["subject"]))), con)
        )
        pool = None
        if spilled is not None:
            pool = fill(spilled, list(demo_requests(plan, facts)), plan.by_key, paths.forms, con)
    con.close()
    prompts = suite_prompts(plan, facts, pool, index)
    # benchmarks/scale.py: what runs on this thread (Python, and DuckDB's share of its queries)
    # does not divide over the job's threads; the parts' CPU (sample_suite) and DuckDB's other
    # threads do.
    log.info(
        "suite %s: built in %.2f s, CPU %.2f s on the main thread",
        name,
        time.perf_counter() - started,
        time.thread_time() - main_cpu,
    )
    return facts, prompts
