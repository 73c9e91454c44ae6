"""Build one probing suite: the ``facts``, ``prompts`` and ``entity_forms`` tables (contracts.md).

Kinds: ``knowledge`` (distractors-knowledge-measure §3), ``multiprompt`` (belief-myriadlama §2:
every template × subject form, optional BELIEF-ICL contexts §3.1), ``plausibility``
(probelm-plausibility §3: facts new in a dump diff after a model cut-off) and ``multilingual``
(template verbalization per language; sentence translation is the ``translate`` stage).
The kinds share one pipeline and differ in where facts come from and in their defaults.
"""

from __future__ import annotations

import logging
import pickle
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pandas as pd
import pyarrow as pa
from tqdm import tqdm

from factprobe import arrays, contracts, io, parallel, scan
from factprobe.diff.rules import new_since, statement_date
from factprobe.registries import SOURCES
from factprobe.settings import Suite, SuiteTemplates, TemplateSet, load

from .demopool import SpilledPool, fill
from .fewshot import DemoPool, context, parse_setting
from .importers import import_lama, import_mpararel, import_myriadlama, import_pararel, import_xfactr
from .layouts import check_layout, target_text
from .layouts import usable as layout_usable
from .sample import sampler_for
from .select import (
    candidate_facts,
    finish_facts,
    no_facts_error,
    relations_in_dump,
)
from .templates import Template, TemplateError, check_unique, load_templates
from .verbalize import ending, forms_index, subject_forms

log = logging.getLogger(__name__)


def load_template_set(name: str, set_cfg: TemplateSet, languages: list[str]) -> list[Template]:
    """Templates of one configured set (``templates.sets.<name>``) in ``languages``."""
    fmt, path = set_cfg.format, set_cfg.path
    if fmt == "yaml":
        out = []
        for lang in languages:
            out.extend(load_templates(Path(path) / f"{lang}.yaml"))
        return out
    if fmt == "xfactr":
        wanted = [lang for lang in languages]
        found, skipped = import_xfactr(path, wanted, set_cfg.gender, set_cfg.functions)
        for line in skipped:
            log.info("template set %s: skipped %s", name, line)
        return found
    if fmt == "mpararel":
        return import_mpararel(path, languages, set_cfg.checked_only)
    lang = set_cfg.language
    if lang not in languages:
        return []
    if fmt == "pararel":
        return import_pararel(path, lang)
    if fmt == "lama":
        return import_lama(path, lang)
    if fmt == "myriadlama":
        return import_myriadlama(path, lang)
    raise TemplateError(f"templates.sets.{name}: unknown format {fmt!r}")


def select_templates(templates: list[Template], spec: SuiteTemplates, relations: list[str]) -> list[Template]:
    """Filter one set by relation, ``styles`` and ``ids``; keep its first ``max_per_relation`` per (lang, relation, style)."""
    styles, ids, cap = spec.styles, set(spec.ids or []), spec.max_per_relation
    out, counts = [], Counter()
    for t in templates:
        if t.relation not in relations or (styles and t.style not in styles) or (ids and t.id not in ids):
            continue
        key = (t.lang, t.relation, t.style)
        if cap is not None and counts[key] >= cap:
            continue
        counts[key] += 1
        out.append(t)
    return out


@dataclass(frozen=True)
class SuitePlan:
    """What a suite's settings and templates decide before any table is read."""

    name: str
    suite: Suite
    languages: list[str]
    instructions: dict[str, str]
    #: ``(setting, mode, k)`` of each few-shot setting (:func:`fewshot.parse_setting`).
    shots: list[tuple[str, str, int]]
    #: Usable templates by ``(lang, relation, style)`` (demonstrations) and ``(lang, relation)``.
    by_key: dict[tuple[str, str, str], list[Template]]
    by_lang_rel: dict[tuple[str, str], list[Template]]
    #: Relations with a usable template in every language.
    covered: list[str]

    @property
    def with_demos(self) -> bool:
        return any(k for _, _, k in self.shots)


def build_suite(
    name: str,
    suite: Suite | dict,
    sets: dict[str, TemplateSet | dict],
    claims_path: str,
    entities_path: str,
    label_files: list[str],
    changes_path: str | None = None,
    temporal_path: str | None = None,
    forms_path: str | Path | None = None,
    memory_mb: int | None = None,
    threads: int = 1,
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame | None]:
    """Facts, prompts and entity forms of suite ``name`` (config ``suites.<name>``, as settings or a mapping).

    ``temporal_only: true`` (with ``temporal_path``, the dump's temporal view) samples from the
    facts that have a temporal distractor: the distractors paper's S′ (§4.1, Fig. 2).

    Out of core (issue 15 item 2): the entity forms of every labelled entity stream from the
    label tables into ``forms_path`` through DuckDB (bounded by ``memory_mb``, spilling beyond),
    and the job reads back only what it needs: which of its relations' entities are labelled,
    the sitelinks of their subjects, the forms of the entities its prompts name, the changes and
    temporal rows of its relations. With ``forms_path`` the returned forms are ``None``; without
    it they are written to a temporary file and returned as a frame.

    ``threads``: DuckDB's threads and the processes that select each part's candidates
    (:func:`sample_suite`); the output does not depend on them (issue 31: the knowledge suite's
    job is on the full-size critical path).
    """
    if forms_path is None:
        with tempfile.TemporaryDirectory(prefix="factprobe-forms-") as tmp:
            forms_file = Path(tmp) / "entity_forms.parquet"
            paths = (claims_path, entities_path, label_files, changes_path, temporal_path)
            facts, prompts, _ = build_suite(name, suite, sets, *paths, forms_file, memory_mb, threads)
            return facts, prompts, contracts.read("entity_forms", forms_file)
    suite = load(Suite, suite, f"suites.{name}")
    sets = {key: load(TemplateSet, value, f"templates.sets.{key}") for key, value in sets.items()}
    builder = SOURCES[suite.source.format].load()
    if builder is not None:
        # A format of its own (factprobe.registries.SOURCES): a release or a list of facts.
        facts, prompts = builder(
            name, suite, sets, (claims_path, entities_path, label_files), forms_path, memory_mb
        )
        return facts, prompts, None
    # Templates first: a misnamed file should fail before any table is read.
    plan = plan_suite(name, suite, sets)
    # Out of core (issue 15 item 2): the forms stream to their output; the property column to
    # check the relations, then only the truthy statements of the suite's relations (selection
    # never looks at other properties) and the labels and sitelinks of their entities.
    # DuckDB's queries on the job's threads; each part's candidates in as many processes.
    started, main_cpu = time.perf_counter(), time.thread_time()
    con = scan.connect(threads=threads, memory_mb=memory_mb)
    n_forms = scan.write_entity_forms(label_files, plan.languages, forms_path, con)
    covered = relations_present(plan, claims_path, con)
    log.info("suite %s: %d forms written", name, n_forms)
    paths = SelectionPaths(claims_path, entities_path, str(forms_path), changes_path, temporal_path)
    with SpilledPool(con) if plan.with_demos else nullcontext() as spilled:
        facts = sample_suite(plan, covered, paths, con, spilled, threads)
        # Forms of the entities prompts name (subjects; demonstrations load their own, demopool.fill),
        # not of every labelled entity: the dump-sized part of this job at scale (issue 15).
        index = forms_index(
            scan.scan_forms(forms_path, contracts.id_ints(sorted(set(facts["subject"]))), con)
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
    return facts, prompts, None


def plan_suite(name: str, suite: Suite, sets: dict[str, TemplateSet]) -> SuitePlan:
    """The suite's layout checked, its instructions per language and its usable templates.

    Prompt layout (probes/layouts.py): cloze, mask_qa (BELIEF-ICL App. E) or qa (App. D).
    """
    languages, relations = list(suite.languages), list(suite.relations)
    check_layout(suite.layout, f"suites.{name}.layout")
    instruction = suite.few_shot.instruction
    if isinstance(instruction, str):
        instructions = dict.fromkeys(languages, instruction)
    else:
        missing = [lang for lang in languages if lang not in instruction]
        if missing:
            raise ValueError(f"suites.{name}.few_shot.instruction: no instruction for language(s) {missing}")
        instructions = dict(instruction)
    usable = usable_templates(name, suite, sets)
    by_key: dict[tuple[str, str, str], list[Template]] = {}
    by_lang_rel: dict[tuple[str, str], list[Template]] = {}
    for t in usable:
        by_key.setdefault((t.lang, t.relation, t.style), []).append(t)
        by_lang_rel.setdefault((t.lang, t.relation), []).append(t)
    covered = [r for r in relations if all((lang, r) in by_lang_rel for lang in languages)]
    if len(covered) < len(relations):
        log.warning(
            "suite %s: relations without a usable template in every language %s are dropped: %s",
            name,
            languages,
            sorted(set(relations) - set(covered)),
        )
    if not covered:
        raise TemplateError(
            f"suites.{name}: no relation of {relations} has a usable template in every "
            f"language {languages}; add templates or change relations/styles/ids"
        )
    shots = [(s, *parse_setting(s)) for s in suite.few_shot.settings]
    return SuitePlan(name, suite, languages, instructions, shots, by_key, by_lang_rel, covered)


def usable_templates(name: str, suite: Suite, sets: dict[str, TemplateSet]) -> list[Template]:
    """The templates ``suites.<name>.templates`` selects from its sets that the layout can use."""
    spec, languages, relations = suite.templates, list(suite.languages), list(suite.relations)
    chosen: list[Template] = []
    for set_name in spec.sets:
        if set_name not in sets:
            raise TemplateError(
                f"suites.{name}.templates.sets: {set_name!r} is not in templates.sets ({sorted(sets)})"
            )
        chosen.extend(
            select_templates(load_template_set(set_name, sets[set_name], languages), spec, relations)
        )
    check_unique(chosen)
    usable = [t for t in chosen if layout_usable(t, suite.layout)]
    skipped = [t for t in chosen if not layout_usable(t, suite.layout)]
    log.info(
        "suite %s: %d templates selected, %d usable in layout %s, %d skipped: %s",
        name,
        len(chosen),
        len(usable),
        suite.layout,
        len(skipped),
        [t.id for t in skipped],
    )
    return usable


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
    and the job holds a few parts, not a relation (issues 15, 31). Each part's candidates and
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
    sampler = sampler_for(suite, seed, paths.entities, con)
    counts: dict[str, Counter] = {rel: Counter() for rel in covered}
    started, cpu = time.perf_counter(), 0.0
    with tempfile.TemporaryDirectory(prefix="factprobe-relations-") as tmp:
        contexts = RelationContexts(paths, picks, suite.cutoff, suite.temporal_only, con, Path(tmp))
        dated = [contexts.allowed(rel) for rel in covered] if picks is not None else []
        tasks = part_tasks(plan, covered, paths, con, contexts, sampler, want=pool is not None)
        for done in parallel.ordered_map(candidate_task, tasks, workers):
            part = done.value
            cpu += done.cpu_s
            counts[part.rel].update(part.counts)
            sampler.register(part.rel, part.spill_path, part.spilled)
            if pool is not None:
                pool.add(part.candidates)
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
    sampled = sampler.finish()
    facts = pd.concat(sampled, ignore_index=True) if sampled else pd.DataFrame()
    if facts.empty:
        # Fail here, naming the cause, rather than with an empty table in a later stage.
        raise explain_no_facts(plan, covered, paths, picks, con)
    facts = finish_facts(facts, dump, seed)
    if dated:
        # Plausibility: each fact's date and diff status (docs/contracts.md, facts).
        facts = facts.merge(pd.concat(dated, ignore_index=True), on="fact_id", how="left")
    log.info(
        "suite %s: %d candidate facts, %d sampled; per relation: %s",
        name,
        sum(c["candidates"] for c in counts.values()),
        len(facts),
        facts["property"].value_counts().sort_index().to_dict(),
    )
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


def demo_requests(plan: SuitePlan, facts: pd.DataFrame) -> Iterator[tuple]:
    """The arguments of every demonstration draw the suite's prompts make
    (:meth:`fewshot.DemoPool.draw`, in :func:`fact_prompt_rows`' key)."""
    suite = plan.suite
    for fact in facts[["fact_id", "subject", "property"]].itertuples(index=False):
        for lang in plan.languages:
            for template in plan.by_lang_rel.get((lang, fact.property), []):
                for shots, mode, k in plan.shots:
                    if k:
                        key = (suite.seed, fact.fact_id, template.id, lang, shots)
                        args = (mode, k, template, fact.subject, fact.property, lang, key)
                        yield (*args, suite.layout, suite.mask_token)


def suite_prompts(plan: SuitePlan, facts: pd.DataFrame, pool: DemoPool | None, index: dict) -> pd.DataFrame:
    """The ``prompts`` table: every fact × language × template × few-shot setting × subject form.

    ``pool`` (with demonstrations) is the pool the demonstrations are drawn from;
    ``index`` the forms of the entities prompts name (:func:`verbalize.forms_index`).
    """
    rows, short = [], Counter()
    for fact in tqdm(
        facts.itertuples(index=False), total=len(facts), desc=f"prompts {plan.name}", mininterval=5
    ):
        for lang in plan.languages:
            rows += fact_prompt_rows(plan, fact, lang, index, pool, short)
    if short:
        log.warning(
            "suite %s: fewer demonstrations than asked (pool too small) for %s prompts",
            plan.name,
            dict(short),
        )
    prompts = pd.DataFrame(rows, columns=contracts.columns("prompts"))
    prompts["subject_form_index"] = prompts["subject_form_index"].astype("int32")
    if plan.suite.kind == "plausibility":
        prompts["ending"] = scenario_endings(plan, prompts)
    log.info(
        "suite %s: %d prompts (%s)",
        plan.name,
        len(prompts),
        prompts.groupby(["lang", "style", "shots"]).size().to_dict(),
    )
    return prompts


def scenario_endings(plan: SuitePlan, prompts: pd.DataFrame) -> pd.Series:
    """Per prompt, its template's text after ``[Y]`` (e.g. "."): a plausibility suite's scored
    sentence is prompt + object form + this ending (probelm-plausibility §4.1; docs/contracts.md)."""
    by_id = {
        (t.lang, t.id): ending(t, plan.suite.layout)
        for templates in plan.by_lang_rel.values()
        for t in templates
    }
    keys = zip(prompts["lang"], prompts["template_id"], strict=True)
    return pd.Series([by_id[key] for key in keys], index=prompts.index, dtype=object)


def fact_prompt_rows(plan: SuitePlan, fact, lang: str, index: dict, pool, short: Counter) -> list[tuple]:
    """The prompt rows of one fact in one language (``short`` counts settings the pool could not fill)."""
    suite = plan.suite
    layout, mask, seed = suite.layout, suite.mask_token, suite.seed
    forms = subject_forms(index, fact.subject, lang, suite.subject_aliases)
    rows = []
    for template in plan.by_lang_rel.get((lang, fact.property), []):
        for shots, mode, k in plan.shots:
            key = (seed, fact.fact_id, template.id, lang, shots)
            demos = (
                pool.draw(mode, k, template, fact.subject, fact.property, lang, key, layout, mask)
                if k
                else []
            )
            if len(demos) < k:
                short[shots] += 1
            ctx = context(plan.instructions[lang], demos, mode)
            demo_ids = [d.fact_id for d in demos]
            for i, form in enumerate(forms):
                text = target_text(template, form, layout, mask)
                prompt_id = f"{fact.fact_id}|{template.id}|{lang}|{i}|{shots}"
                rows.append(
                    (prompt_id, fact.fact_id, lang, template.id, template.style, form, text, ctx)
                    + ("template", shots, i, fact.property, demo_ids)
                )
    return rows


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
#: job holds one part, not the relation (P31 is 2.9 M statements at 4 M entities; issue 31 item 5).
PART_ROWS = 250_000


class CandidatePart(NamedTuple):
    """One part of a relation's candidates and the sitelinks of their objects."""

    #: :func:`select.candidate_facts` of the part (``popularity``: the subject's sitelinks).
    candidates: pd.DataFrame
    #: Sitelinks per integer object id of the part (objects without an item row left out),
    #: joined in the same DuckDB query as the subjects' (:func:`scan.scan_truthy_parts`):
    #: ``popularity_bins`` adds the object's popularity, and reading the entities file again
    #: for every part would cost parts × entities (issue 31 item 5).
    object_sitelinks: pd.Series


def relation_candidate_parts(
    name: str,
    rel: str,
    dump: str,
    claims_path: str,
    entities_path: str,
    forms_path: str,
    languages: list[str],
    seed: object,
    con,
    allowed: pd.DataFrame | None = None,
    temporal_path: str | None = None,
    part_rows: int = PART_ROWS,
) -> Iterator[CandidatePart]:
    """Every probe-able fact of one relation (:func:`select.candidate_facts`), in parts by
    ascending subject: its truthy statements (the same rule as Ω's truthy validity,
    :func:`scan.scan_valid`, streamed by :func:`scan.scan_truthy_parts`), with the labels and
    sitelinks of their subjects and objects (:class:`CandidatePart`); ``allowed`` (plausibility,
    :func:`allowed_facts`): only facts new in the diff after the cut-off; ``temporal_path``
    (``temporal_only``): only facts with a temporal distractor (S′). The parts put together are
    the relation's candidates in one call. :func:`sample_suite` streams every relation of a
    suite at once and runs :func:`part_candidates` on each part as this does."""
    # Built once per relation, used by every part: per-part work stays linear in the part.
    allowed_ids = None if allowed is None else pd.Index(allowed["fact_id"].unique())
    pairs = None if temporal_path is None else temporal_pairs(rel, temporal_path, con)
    counts = Counter()
    parts = scan.scan_truthy_parts(
        claims_path, int(dump), [contracts.id_int(rel)], forms_path, languages, entities_path, con, part_rows
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
