"""A dump-built suite's facts: the candidate statements of its relations, streamed in parts
whose candidates are selected in forked processes and taken back in order, then sampled
(:func:`sample_suite`)."""

from __future__ import annotations

import logging
import pickle
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pandas as pd
import pyarrow as pa

from factprobe import arrays, contracts, io, parallel, scan
from factprobe.diff.rules import new_since, statement_date

from .demopool import SpilledPool
from .sample import sampler_for
from .select import (
    candidate_facts,
    finish_facts,
    no_facts_error,
    relations_in_dump,
)
from .suite_plan import SuitePlan
from .timeline import timeline_sampler

log = logging.getLogger(__name__)


def relations_present(plan: SuitePlan, claims_path: str, con) -> list[str]:
    """The covered relations that have claims in the dump (``missing_relations`` decides whether
    a missing one fails or is dropped with a warning)."""
    name, suite, relations = plan.name, plan.suite, list(plan.suite.relations)
    dump = str(suite.dump)
    present = relations_in_dump(
        name, dump, claims_path, relations, scan.properties_in(claims_path, con), suite.missing_relations
    )
    if len(present) < len(relations):
        log.warning(
            "suite %s: relations without any claim in dump %s are dropped (missing_relations: warn): %s",
            name,
            dump,
            [r for r in relations if r not in present],
        )
        return [r for r in plan.covered if r in present]
    return list(plan.covered)


@dataclass(frozen=True)
class SelectionPaths:
    """The tables fact selection reads: the dump's claims and entities, the forms written so far,
    the diff (plausibility) and the temporal view (``temporal_only``)."""

    claims: str
    entities: str
    forms: str
    changes: str | None = None
    temporal: str | None = None
    #: a timeline suite by diff: the changes of each consecutive pair of dumps up to its dump
    timeline_changes: tuple[str, ...] = ()


def sample_suite(
    plan: SuitePlan,
    covered: list[str],
    paths: SelectionPaths,
    con,
    pool: SpilledPool | None = None,
    workers: int = 1,
) -> pd.DataFrame:
    """The suite's sampled facts; with demonstrations, every relation's candidates go to ``pool``.

    Candidates, strata and the sample are per relation (select.py) and per (subject, relation)
    within one, so the suite's truthy statements stream in parts from one DuckDB query
    (:func:`scan.scan_truthy_tables`, which reads the forms and entities once for every relation)
    and the job holds a few parts, not a relation. Each part's candidates and
    the sampler's spill of them (:func:`part_candidates`) run in ``workers`` forked processes
    (:func:`factprobe.parallel.ordered_map`), taken back in the stream's order, so the sample does
    not depend on ``workers``. The samplers and the demonstration pool spill what they keep.
    """
    name, suite = plan.name, plan.suite
    dump, seed = str(suite.dump), suite.seed
    picks = suite.changes if suite.kind == "plausibility" else None
    if suite.temporal_only and paths.temporal is None:
        raise ValueError(f"suites.{name}.temporal_only needs the temporal view of dump {dump}")
    # probes/sample.py (suites.<s>.sampler)
    if suite.timeline is not None:  # probes/timeline.py: dated slices, popularity-matched
        sampler = timeline_sampler(suite, covered, paths.claims, paths.timeline_changes, con)
    else:
        sampler = sampler_for(suite, seed, paths.entities, con)
    counts: dict[str, Counter] = {rel: Counter() for rel in covered}
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="factprobe-relations-") as tmp:
        contexts = RelationContexts(paths, picks, suite.cutoff, suite.temporal_only, con, Path(tmp))
        dated = [contexts.allowed(rel) for rel in covered] if picks is not None else []
        tasks = part_tasks(plan, covered, paths, con, contexts, sampler, want=pool is not None)
        cpu = take_parts(tasks, workers, sampler, pool, counts)
    release_context()
    for rel in covered:
        log_relation(name, rel, dump, plan.languages, counts[rel], contexts.n_allowed.get(rel))
    log.info(
        "suite %s: candidate parts: %d in %.2f s, CPU %.2f s in %d process(es)",
        name,
        sum(c["parts"] for c in counts.values()),
        time.perf_counter() - started,
        cpu,
        workers,
    )
    facts = sampled_facts(plan, sampler, covered, paths, picks, dated, con)
    log.info(
        "suite %s: %d candidate facts, %d sampled; per relation: %s",
        name,
        sum(c["candidates"] for c in counts.values()),
        len(facts),
        facts["property"].value_counts().sort_index().to_dict(),
    )
    return facts


def take_parts(tasks, workers: int, sampler, pool: SpilledPool | None, counts: dict[str, Counter]) -> float:
    """Each part's candidates in the stream's order: counted, its spill registered with the
    sampler and its candidates added to the demonstration pool; returns the parts' CPU seconds."""
    cpu = 0.0
    for done in parallel.ordered_map(candidate_task, tasks, workers):
        part = done.value
        cpu += done.cpu_s
        counts[part.rel].update(part.counts)
        sampler.register(part.rel, part.spill_path, part.spilled)
        if pool is not None:
            pool.add(part.candidates)
    return cpu


def sampled_facts(
    plan: SuitePlan, sampler, covered: list[str], paths: SelectionPaths, picks, dated: list, con
) -> pd.DataFrame:
    """The sampler's facts, finished (:func:`finish_facts`), with each plausibility fact's date
    and diff status; none fails, naming the cause (:func:`explain_no_facts`)."""
    sampled = sampler.finish()
    facts = pd.concat(sampled, ignore_index=True) if sampled else pd.DataFrame()
    if facts.empty:
        # Fail here, naming the cause, rather than with an empty table in a later stage.
        raise explain_no_facts(plan, covered, paths, picks, con)
    facts = finish_facts(facts, str(plan.suite.dump), plan.suite.seed)
    if dated:
        # Plausibility: each fact's date and diff status (docs/contracts.md, facts).
        facts = facts.merge(pd.concat(dated, ignore_index=True), on="fact_id", how="left")
    return facts


def explain_no_facts(plan: SuitePlan, covered: list[str], paths: SelectionPaths, picks, con) -> ValueError:
    """The error of a suite that sampled no fact, with the counts that say why (:func:`no_facts_error`)."""
    dump = str(plan.suite.dump)
    rel_ids = [contracts.id_int(r) for r in covered]
    truthy = scan.scan_valid(paths.claims, int(dump), "truthy", rel_ids, None, con)
    labelled = scan.labelled_ids(
        paths.forms, plan.languages, arrays.union(truthy["subject"], truthy["object"]), con
    )
    allowed = None
    if picks is not None:
        allowed = set()
        for rel in covered:
            allowed |= set(allowed_facts(rel, paths.changes, picks, plan.suite.cutoff, con)["fact_id"])
    return no_facts_error(plan.name, dump, paths.claims, covered, truthy, labelled, plan.languages, allowed)


def allowed_facts(rel: str, changes_path: str, picks, cutoff, con) -> pd.DataFrame:
    """Facts of relation ``rel`` that a plausibility suite may pick: new in the diff and not
    dated on or before the cut-off (probelm-plausibility §3, :func:`factprobe.diff.rules.new_since`).

    Returns ``fact_id``, ``date`` (the statement's start or point in time, YYYYMMDD; missing when
    undated) and ``status`` (the diff's): the facts table carries them so that the metrics stage
    can apply each model's own cut-off without reading the diff.
    """
    changes = scan.table_of_relations(
        "changes",
        changes_path,
        [contracts.id_int(rel)],
        ["subject", "property", "object", "status", "rule", "start", "point_in_time"],
        con,
        any_of={"status": list(picks.statuses), "rule": list(picks.rules)},
    )
    new = new_since(changes, int(cutoff), tuple(picks.statuses), tuple(picks.rules))
    rows = changes.merge(new, on=["subject", "property", "object"]).drop_duplicates(
        ["subject", "property", "object"]
    )
    return pd.DataFrame(
        {
            "fact_id": contracts.fact_ids_of(rows).to_numpy(),
            "date": statement_date(rows).astype("Int32").to_numpy(),
            "status": rows["status"].astype(str).to_numpy(),
        }
    )


#: Truthy statements of a relation handled at once (about; cut at a subject's end): fact
#: selection is per (subject, relation) and per entity, so a relation goes part by part and the
#: job holds one part, not the relation (P31 is 2.9 M statements at 4 M entities).
PART_ROWS = 250_000


class CandidatePart(NamedTuple):
    """One part of a relation's candidates and the sitelinks of their objects."""

    #: :func:`select.candidate_facts` of the part (``popularity``: the subject's sitelinks).
    candidates: pd.DataFrame
    #: Sitelinks per integer object id of the part (objects without an item row left out),
    #: joined in the same DuckDB query as the subjects' (:func:`scan.scan_truthy_parts`):
    #: ``popularity_bins`` adds the object's popularity, and reading the entities file again
    #: for every part would cost parts × entities.
    object_sitelinks: pd.Series


def relation_candidate_parts(
    name: str,
    rel: str,
    dump: str,
    paths: SelectionPaths,
    languages: list[str],
    seed: object,
    con,
    allowed: pd.DataFrame | None = None,
    part_rows: int = PART_ROWS,
) -> Iterator[CandidatePart]:
    """Every probe-able fact of one relation (:func:`select.candidate_facts`), in parts by
    ascending subject: its truthy statements (the same rule as Ω's truthy validity,
    :func:`scan.scan_valid`, streamed by :func:`scan.scan_truthy_parts`), with the labels and
    sitelinks of their subjects and objects (:class:`CandidatePart`), read from ``paths`` (the
    claims, entities and forms written so far); ``allowed`` (plausibility, :func:`allowed_facts`):
    only facts new in the diff after the cut-off; ``paths.temporal`` (``temporal_only``): only
    facts with a temporal distractor (S′). The parts put together are
    the relation's candidates in one call. :func:`sample_suite` streams every relation of a
    suite at once and runs :func:`part_candidates` on each part as this does."""
    # Built once per relation, used by every part: per-part work stays linear in the part.
    allowed_ids = None if allowed is None else pd.Index(allowed["fact_id"].unique())
    pairs = None if paths.temporal is None else temporal_pairs(rel, paths.temporal, con)
    counts = Counter()
    parts = scan.scan_truthy_parts(
        paths.claims,
        int(dump),
        [contracts.id_int(rel)],
        paths.forms,
        languages,
        paths.entities,
        con,
        part_rows,
    )
    for part in parts:
        got, n = part_candidates(part, rel, seed, allowed_ids, pairs)
        counts.update(n)
        yield got
    log_relation(name, rel, dump, languages, counts, None if allowed is None else len(allowed))


def temporal_pairs(rel: str, temporal_path: str, con) -> set[tuple[int, int]]:
    """The (subject, property) pairs of ``rel`` with a temporal distractor (S′, ``temporal_only``)."""
    from factprobe.diff.temporal import temporal_distractor_pairs

    temporal = scan.table_of_relations(
        "temporal", temporal_path, [contracts.id_int(rel)], contracts.columns("temporal"), con
    )
    return temporal_distractor_pairs(temporal)


def part_candidates(
    part: pd.DataFrame, rel: str, seed: object, allowed_ids: pd.Index | None, pairs: set | None
) -> tuple[CandidatePart, Counter]:
    """One part of :func:`scan.scan_truthy_parts` (statements of ``rel`` only) as candidates
    (:func:`select.candidate_facts`; ``pairs``: only those with a temporal distractor) with
    their objects' sitelinks, and the part's counts for the relation's log line."""
    truthy = part[["subject", "property", "object"]]
    s_lab, o_lab = part["s_labelled"].to_numpy(bool), part["o_labelled"].to_numpy(bool)
    labelled = arrays.union(part["subject"].to_numpy()[s_lab], part["object"].to_numpy()[o_lab])
    linked = part[part["sitelinks"].notna().to_numpy()].drop_duplicates("subject")
    sitelinks = linked.set_index("subject")["sitelinks"]
    linked = part[part["o_sitelinks"].notna().to_numpy()].drop_duplicates("object")
    object_sitelinks = linked.set_index("object")["o_sitelinks"].rename("sitelinks")
    candidates = candidate_facts(truthy, [rel], labelled, sitelinks, seed, allowed=allowed_ids)
    counts = Counter(parts=1, truthy=len(truthy), labelled=len(labelled), candidates=len(candidates))
    if pairs is not None:
        from factprobe.diff.temporal import with_pairs

        candidates = with_pairs(candidates, pairs)
        counts.update(temporal=len(candidates))
    return CandidatePart(candidates, object_sitelinks), counts


def log_relation(
    name: str, rel: str, dump: str, languages: list[str], counts: Counter, n_allowed: int | None
) -> None:
    """The log line of one relation's selection: its statements, parts and candidates."""
    log.info(
        "suite %s, %s: %d truthy statements at %s in %d part(s), %d of their entities labelled in %s "
        "(per part), %d candidate facts%s%s",
        name,
        rel,
        counts["truthy"],
        dump,
        counts["parts"],
        counts["labelled"],
        languages,
        counts["candidates"],
        "" if n_allowed is None else f" ({n_allowed} new in the diff after the cut-off)",
        "" if "temporal" not in counts else f"; S′ keeps {counts['temporal']} (with a temporal distractor)",
    )


class RelationContexts:
    """What every part of a relation needs besides its statements (``allowed`` fact ids of a
    plausibility suite, S′ pairs of ``temporal_only``), built once per relation in the job's
    process and pickled to ``folder``, from which the processes running the parts load it once
    per relation (:func:`candidate_task`) rather than receive it with every part."""

    def __init__(self, paths: SelectionPaths, picks, cutoff, temporal_only: bool, con, folder: Path):
        self.paths, self.picks, self.cutoff, self.con, self.folder = paths, picks, cutoff, con, folder
        self.temporal = paths.temporal if temporal_only else None
        self.frames: dict[str, pd.DataFrame] = {}
        self.n_allowed: dict[str, int] = {}

    def allowed(self, rel: str) -> pd.DataFrame:
        """:func:`allowed_facts` of ``rel`` (plausibility), kept for the facts' dates."""
        if rel not in self.frames:
            self.frames[rel] = allowed_facts(rel, self.paths.changes, self.picks, self.cutoff, self.con)
            self.n_allowed[rel] = len(self.frames[rel])
        return self.frames[rel]

    def path(self, rel: str) -> str:
        """The pickled context of ``rel``, written on first use."""
        path = self.folder / f"{rel}.pickle"
        if not path.exists():
            allowed = None if self.picks is None else pd.Index(self.allowed(rel)["fact_id"].unique())
            pairs = None if self.temporal is None else temporal_pairs(rel, self.temporal, self.con)
            with io.atomic_path(path) as tmp, open(tmp, "wb") as f:
                pickle.dump((allowed, pairs), f, protocol=pickle.HIGHEST_PROTOCOL)
        return str(path)


class PartTask(NamedTuple):
    """One part of one relation's statements and where its candidates are spilled."""

    rel: str
    part: pa.Table  # scan.scan_truthy_tables' columns
    seed: object
    context: str
    spill: object  # the sampler's spiller (probes/sample.py)
    spill_path: str
    want_candidates: bool


class PartDone(NamedTuple):
    rel: str
    spill_path: str
    spilled: object
    counts: Counter
    candidates: pd.DataFrame | None


def part_tasks(plan: SuitePlan, covered, paths: SelectionPaths, con, contexts, sampler, want: bool):
    """The suite's truthy statements of its ``covered`` relations, in parts
    (:func:`scan.scan_truthy_tables`, by property then subject, read by a background thread so
    that DuckDB streams beside this one), as :class:`PartTask`: Arrow tables, which the processes
    running them convert. A part holding the end of one relation and the start of the next is
    split between them."""
    rel_ids = {contracts.id_int(rel): rel for rel in covered}
    args = (paths.claims, int(plan.suite.dump), list(rel_ids), paths.forms, plan.languages, paths.entities)
    spill = sampler.spiller()
    for part in parallel.prefetch(scan.scan_truthy_tables(*args, con, PART_ROWS)):
        props = part.column("property").to_numpy()
        cuts = (np.flatnonzero(props[1:] != props[:-1]) + 1).tolist()
        for lo, hi in zip([0, *cuts], [*cuts, len(props)], strict=True):
            rel = rel_ids[int(props[lo])]
            rows = part.slice(lo, hi - lo) if cuts else part
            yield PartTask(rel, rows, plan.suite.seed, contexts.path(rel), spill, sampler.reserve(), want)


#: The context a process running parts loaded last: ``(path, (allowed ids, pairs))``.
_CONTEXT: tuple[str, tuple] | None = None


def release_context() -> None:
    """Drop the context :func:`candidate_task` keeps (in this process, where it ran inline)."""
    global _CONTEXT
    _CONTEXT = None


def candidate_task(task: PartTask) -> PartDone:
    """:func:`part_candidates` of one part and the sampler's spill of them (in a worker process)."""
    global _CONTEXT
    if _CONTEXT is None or _CONTEXT[0] != task.context:
        with open(task.context, "rb") as f:
            _CONTEXT = (task.context, pickle.load(f))
    allowed_ids, pairs = _CONTEXT[1]
    got, counts = part_candidates(task.part.to_pandas(), task.rel, task.seed, allowed_ids, pairs)
    spilled = task.spill(got.candidates, got.object_sitelinks, task.spill_path)
    return PartDone(
        task.rel, task.spill_path, spilled, counts, got.candidates if task.want_candidates else None
    )


def relation_candidates(*args, **kwargs) -> pd.DataFrame:
    """:func:`relation_candidate_parts` put together: one relation's candidates in one frame."""
    parts = [part.candidates for part in relation_candidate_parts(*args, **kwargs)]
    if parts:
        return pd.concat(parts, ignore_index=True)
    none = pd.DataFrame({c: np.zeros(0, np.int64) for c in ("subject", "property", "object")})
    return candidate_facts(none, [args[1]], np.zeros(0, np.int64), pd.Series(dtype="int64"))
