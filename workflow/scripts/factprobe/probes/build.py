"""Build one probing suite: the ``facts``, ``prompts`` and ``entity_forms`` tables (contracts.md).

Kinds: ``knowledge`` (distractors-knowledge-measure §3), ``multiprompt`` (belief-myriadlama §2:
every template × subject form, optional BELIEF-ICL contexts §3.1), ``plausibility``
(probelm-plausibility §3: facts new in a dump diff after a model cut-off) and ``multilingual``
(template verbalization per language; sentence translation is the ``translate`` stage).
The kinds share one pipeline and differ in where facts come from and in their defaults.
"""

from __future__ import annotations

import logging
import tempfile
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
from tqdm import tqdm

from factprobe import arrays, contracts, scan
from factprobe.settings import Suite, SuiteTemplates, TemplateSet, load

from .fewshot import DemoPool, context, parse_setting
from .importers import import_lama, import_mpararel, import_myriadlama, import_pararel, import_xfactr
from .layouts import check_layout, target_text
from .layouts import usable as layout_usable
from .sample import sampler_for
from .select import (
    candidate_facts,
    finish_facts,
    new_since,
    no_facts_error,
    relations_in_dump,
)
from .templates import Template, TemplateError, check_unique, load_templates
from .verbalize import forms_index, subject_forms

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


def released_suite(name: str, suite: Suite) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Facts, prompts and forms of a suite read from the Fluent-mLAMA release (``probes/fluent.py``);
    ``n_facts`` keeps that many facts per relation, the first in ``stable_hash(seed, fact_id)`` order."""
    from factprobe.hashing import stable_hash

    from .fluent import import_fluent_mlama

    src = suite.source
    facts, prompts, forms = import_fluent_mlama(
        src.path, list(suite.languages), list(suite.relations), list(src.verbalizations), suite.seed
    )
    if facts.empty:
        raise ValueError(f"suites.{name}: the release at {src.path} has no facts for {suite.relations}")
    if suite.n_facts is not None:
        order = facts["fact_id"].map(lambda f: stable_hash(suite.seed, f))
        keep = facts.assign(_o=order).sort_values("_o").groupby("property").head(suite.n_facts)
        facts = facts[facts["fact_id"].isin(set(keep["fact_id"]))].reset_index(drop=True)
        prompts = prompts[prompts["fact_id"].isin(set(facts["fact_id"]))].reset_index(drop=True)
    log.info("suite %s: %d facts, %d prompts from the Fluent-mLAMA release", name, len(facts), len(prompts))
    return facts, prompts, forms


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
    """
    if forms_path is None:
        with tempfile.TemporaryDirectory(prefix="factprobe-forms-") as tmp:
            facts, prompts, _ = build_suite(
                name,
                suite,
                sets,
                claims_path,
                entities_path,
                label_files,
                changes_path,
                temporal_path,
                Path(tmp) / "entity_forms.parquet",
                memory_mb,
            )
            forms = contracts.read("entity_forms", Path(tmp) / "entity_forms.parquet")
        return facts, prompts, forms
    suite = load(Suite, suite, f"suites.{name}")
    sets = {key: load(TemplateSet, value, f"templates.sets.{key}") for key, value in sets.items()}
    kind, dump, languages, relations = (
        suite.kind,
        str(suite.dump),
        list(suite.languages),
        list(suite.relations),
    )
    seed, k_alias = suite.seed, suite.subject_aliases
    if suite.source.format == "fluent-mlama":
        facts, prompts, forms = released_suite(name, suite)
        contracts.write("entity_forms", forms, forms_path)
        return facts, prompts, None
    # Prompt layout (probes/layouts.py): cloze, mask_qa (BELIEF-ICL App. E) or qa (App. D).
    layout, mask = suite.layout, suite.mask_token
    check_layout(layout, f"suites.{name}.layout")
    settings, instruction = list(suite.few_shot.settings), suite.few_shot.instruction
    if isinstance(instruction, str):
        instructions = dict.fromkeys(languages, instruction)
    else:
        missing = [lang for lang in languages if lang not in instruction]
        if missing:
            raise ValueError(f"suites.{name}.few_shot.instruction: no instruction for language(s) {missing}")
        instructions = dict(instruction)

    # Templates first: a misnamed file should fail before any table is read.
    spec = suite.templates
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
    usable = [t for t in chosen if layout_usable(t, layout)]
    skipped = [t for t in chosen if not layout_usable(t, layout)]
    log.info(
        "suite %s: %d templates selected, %d usable in layout %s, %d skipped: %s",
        name,
        len(chosen),
        len(usable),
        layout,
        len(skipped),
        [t.id for t in skipped],
    )
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

    # Out of core (issue 15 item 2): the forms stream to their output; the property column to
    # check the relations, then only the truthy statements of the suite's relations (selection
    # never looks at other properties) and the labels and sitelinks of their entities.
    con = scan.connect(memory_mb=memory_mb)
    n_forms = scan.write_entity_forms(label_files, languages, forms_path, con)
    present = relations_in_dump(
        name,
        dump,
        claims_path,
        relations,
        scan.properties_in(claims_path, con),
        suite.missing_relations,
    )
    if len(present) < len(relations):
        log.warning(
            "suite %s: relations without any claim in dump %s are dropped (missing_relations: warn): %s",
            name,
            dump,
            [r for r in relations if r not in present],
        )
        covered = [r for r in covered if r in present]
    log.info("suite %s: %d forms written", name, n_forms)
    parsed = [(s, *parse_setting(s)) for s in settings]
    with_demos = any(k for _, _, k in parsed)
    # Candidates, strata and the sample are per relation (select.py), so the relations are read
    # one at a time: the job holds one relation's truthy statements, not the suite's (issue 15).
    # Demonstration pools need every relation's candidates and keep them.
    picks = suite.changes if kind == "plausibility" else None
    if suite.temporal_only and temporal_path is None:
        raise ValueError(f"suites.{name}.temporal_only needs the temporal view of dump {dump}")
    pools, n_candidates = [], 0
    sampler = sampler_for(suite, seed, entities_path, con)  # probes/sample.py (suites.<s>.sampler)
    for rel in covered:
        candidates = relation_candidates(
            name,
            rel,
            dump,
            claims_path,
            entities_path,
            forms_path,
            languages,
            seed,
            con,
            picks,
            changes_path,
            suite.cutoff,
            temporal_path if suite.temporal_only else None,
        )
        n_candidates += len(candidates)
        sampler.add(candidates)
        if with_demos:
            pools.append(candidates)
        del candidates
    sampled = sampler.finish()
    facts = pd.concat(sampled, ignore_index=True) if sampled else pd.DataFrame()
    if facts.empty:
        # Fail here, naming the cause, rather than with an empty table in a later stage.
        rel_ids = [int(r[1:]) for r in covered]
        truthy = scan.scan_valid(claims_path, int(dump), "truthy", rel_ids, None, con)
        labelled = scan.labelled_ids(
            forms_path, languages, arrays.union(truthy["subject"], truthy["object"]), con
        )
        allowed = None
        if picks is not None:
            allowed = set()
            for rel in covered:
                allowed |= allowed_facts(rel, changes_path, picks, suite.cutoff, con)
        raise no_facts_error(name, dump, claims_path, covered, truthy, labelled, languages, allowed)
    facts = finish_facts(facts, dump, seed)
    log.info(
        "suite %s: %d candidate facts, %d sampled; per relation: %s",
        name,
        n_candidates,
        len(facts),
        facts["property"].value_counts().sort_index().to_dict(),
    )
    if with_demos:
        # In candidate_facts' order over every relation: (integer subject, property).
        candidates = pd.concat(pools, ignore_index=True)
        del pools
        order = np.lexsort(
            (candidates["property"].str[1:].astype(int), candidates["subject"].str[1:].astype(int))
        )
        candidates = candidates.iloc[order].reset_index(drop=True)
    # Forms of the entities prompts can name (subjects; with demonstrations, the pool's facts),
    # not of every labelled entity: the dump-sized part of this job at scale (issue 15).
    named = set(facts["subject"])
    if with_demos:
        named |= set(candidates["subject"]) | set(candidates["object"])
    index = forms_index(scan.scan_forms(forms_path, contracts.id_ints(sorted(named)), con))
    con.close()
    pool = None
    if with_demos:
        label_of = {key: forms[0][0] for key, forms in index.items() if forms[0][1] == "label"}
        pool = DemoPool(candidates[["fact_id", "subject", "property", "object"]], label_of, by_key)
    rows = []
    short = Counter()
    for fact in tqdm(facts.itertuples(index=False), total=len(facts), desc=f"prompts {name}", mininterval=5):
        for lang in languages:
            forms = subject_forms(index, fact.subject, lang, k_alias)
            for template in by_lang_rel.get((lang, fact.property), []):
                for shots, mode, k in parsed:
                    key = (seed, fact.fact_id, template.id, lang, shots)
                    demos = (
                        pool.draw(mode, k, template, fact.subject, fact.property, lang, key, layout, mask)
                        if k
                        else []
                    )
                    if len(demos) < k:
                        short[shots] += 1
                    ctx = context(instructions[lang], demos, mode)
                    for i, form in enumerate(forms):
                        rows.append(
                            (
                                f"{fact.fact_id}|{template.id}|{lang}|{i}|{shots}",
                                fact.fact_id,
                                lang,
                                template.id,
                                template.style,
                                form,
                                target_text(template, form, layout, mask),
                                ctx,
                                "template",
                                shots,
                                i,
                                fact.property,
                                [d.fact_id for d in demos],
                            )
                        )
    if short:
        log.warning(
            "suite %s: fewer demonstrations than asked (pool too small) for %s prompts", name, dict(short)
        )
    prompts = pd.DataFrame(rows, columns=contracts.columns("prompts"))
    prompts["subject_form_index"] = prompts["subject_form_index"].astype("int32")
    log.info(
        "suite %s: %d prompts (%s)",
        name,
        len(prompts),
        prompts.groupby(["lang", "style", "shots"]).size().to_dict(),
    )
    return facts, prompts, None


def allowed_facts(rel: str, changes_path: str, picks, cutoff, con) -> set[str]:
    """Fact ids of relation ``rel`` that a plausibility suite may pick: new in the diff and not
    dated on or before the cut-off (probelm-plausibility §3, :func:`select.new_since`)."""
    changes = scan.table_of_relations(
        "changes",
        changes_path,
        [int(rel[1:])],
        ["subject", "property", "object", "status", "rule", "start", "point_in_time"],
        con,
        any_of={"status": list(picks.statuses), "rule": list(picks.rules)},
    )
    new = new_since(changes, int(cutoff), tuple(picks.statuses), tuple(picks.rules))
    return set(contracts.fact_ids_of(new))


def relation_candidates(
    name: str,
    rel: str,
    dump: str,
    claims_path: str,
    entities_path: str,
    forms_path: str,
    languages: list[str],
    seed: object,
    con,
    picks=None,
    changes_path: str | None = None,
    cutoff=None,
    temporal_path: str | None = None,
) -> pd.DataFrame:
    """Every probe-able fact of one relation (:func:`select.candidate_facts`): its truthy
    statements (the same rule as Ω's truthy validity, :func:`scan.scan_valid`), with the labels
    and sitelinks of their entities; ``picks`` (plausibility): only facts new in the diff after
    ``cutoff``; ``temporal_path`` (``temporal_only``): only facts with a temporal distractor (S′)."""
    truthy = (
        scan.scan_valid(claims_path, int(dump), "truthy", [int(rel[1:])], None, con)
        .sort_values(["property", "subject", "object"])
        .reset_index(drop=True)
    )
    subjects = truthy["subject"].to_numpy(np.int64)
    labelled = scan.labelled_ids(forms_path, languages, arrays.union(subjects, truthy["object"]), con)
    sitelinks = scan.sitelinks_of(entities_path, arrays.unique(subjects), con)
    allowed = None
    if picks is not None:
        allowed = allowed_facts(rel, changes_path, picks, cutoff, con)
    candidates = candidate_facts(truthy, [rel], labelled, sitelinks, seed, allowed=allowed)
    log.info(
        "suite %s, %s: %d truthy statements at %s, %d of their entities labelled in %s, %d candidate facts%s",
        name,
        rel,
        len(truthy),
        dump,
        len(labelled),
        languages,
        len(candidates),
        "" if allowed is None else f" ({len(allowed)} new in the diff after the cut-off, {picks})",
    )
    if temporal_path is not None:
        from factprobe.distractors.temporal import with_temporal_distractors

        temporal = scan.table_of_relations(
            "temporal", temporal_path, [int(rel[1:])], contracts.columns("temporal"), con
        )
        before = len(candidates)
        candidates = with_temporal_distractors(candidates, temporal)
        log.info(
            "suite %s, %s: S′ keeps %d of %d candidate facts (with a temporal distractor)",
            name,
            rel,
            len(candidates),
            before,
        )
    return candidates
