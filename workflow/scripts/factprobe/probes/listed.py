"""Suites over a given list of facts (distractors-knowledge-measure §4.2-4.3).

* ``source: {format: triples}``: every listed triple (``importers.read_triples``) is a fact,
  N-M triples included (a dump-built suite keeps one hash-chosen object per (subject, relation);
  here each listed object is its own fact and ``objects`` holds every listed and truthy object of
  the pair). Each fact gets the relation's templates (``templates.max_per_relation`` of them per
  style: the paper's 5 cloze sentences per fact, §4.2) filled with the subject's labels from the
  suite's dump tables, as for dump-built suites. A triple whose relation has no template, or
  whose subject or object has no label in every suite language in the dump, is dropped and
  counted in the log (an error when nothing is left).
* ``source: {format: verbalization-pairs}``: the §4.3 released pairs
  (``importers.import_verbalization_pairs``): each kept fact is probed twice, verbalization
  ``flawed`` (the template's sentence) and ``corrected`` (the annotator's), the text before the
  answer (the object; the subject of a subject-final pair, reversed into (o, r, s) as the
  reference does). Entity forms: the dump's, else the release's label (the sentence names that label).
"""

from __future__ import annotations

import dataclasses
import logging
import tempfile
from pathlib import Path

import pandas as pd

from factprobe import contracts, scan
from factprobe.settings import Suite, TemplateSet

from .importers import import_myriadlama_facts, import_verbalization_pairs, read_triples
from .select import finish_facts
from .suite_plan import plan_suite
from .suite_prompts import suite_prompts
from .verbalize import forms_index

log = logging.getLogger(__name__)
PAIR_VERBALIZATIONS = ("flawed", "corrected")


def listed_facts(listed: pd.DataFrame, truthy: pd.DataFrame, sitelinks: pd.Series) -> pd.DataFrame:
    """One fact per listed (subject, property, object), string ids; ``objects`` = the listed and
    the dump's truthy (int-id ``truthy``) objects of its (subject, property), ascending by id;
    ``popularity`` = subject sitelinks (0 when the dump lacks it); ``stratum`` 0."""
    known: dict[tuple[str, str], set[str]] = {}
    for s, p, o in zip(listed["subject"], listed["property"], listed["object"], strict=True):
        known.setdefault((s, p), set()).add(o)
    for s, p, o in zip(truthy["subject"], truthy["property"], truthy["object"], strict=True):
        key = (contracts.qid(s), contracts.pid(p))
        if key in known:
            known[key].add(contracts.qid(o))
    subjects = listed["subject"].map(contracts.id_int)
    return pd.DataFrame(
        {
            "fact_id": contracts.fact_id(listed["subject"], listed["property"], listed["object"]),
            "subject": listed["subject"].to_numpy(),
            "property": listed["property"].to_numpy(),
            "object": listed["object"].to_numpy(),
            "objects": [
                sorted(known[(s, p)], key=contracts.id_int)
                for s, p in zip(listed["subject"], listed["property"], strict=True)
            ],
            "popularity": subjects.map(sitelinks).fillna(0).astype("int64").to_numpy(),
            "stratum": 0,
        }
    )


def dump_context(suite: Suite, listed: pd.DataFrame, claims_path: str, entities_path: str, con):
    """(truthy statements of the listed pairs' subjects and relations, subject sitelinks)."""
    subjects = sorted({contracts.id_int(s) for s in listed["subject"]})
    relations = sorted({contracts.id_int(p) for p in listed["property"]})
    truthy = scan.scan_valid(claims_path, int(suite.dump), "truthy", relations, subjects, con)
    return truthy, scan.sitelinks_of(entities_path, subjects, con)


def keep_labelled(name: str, listed: pd.DataFrame, labelled: set[str], counts: dict) -> pd.DataFrame:
    """The listed triples whose subject and object are labelled (``counts`` gets the drop)."""
    ok = listed["subject"].isin(labelled) & listed["object"].isin(labelled)
    counts["entity_not_in_dump"] = int((~ok).sum())
    if not ok.any():
        raise ValueError(
            f"suites.{name}: none of the {len(listed)} listed triples has a subject and an object "
            "labelled in the suite's languages in its label dumps; check suites.<s>.source.path, dump "
            "and label_dumps"
        )
    return listed[ok]


def triples_suite(
    name: str,
    suite: Suite,
    sets: dict[str, TemplateSet],
    paths: tuple[str, str, list[str]],
    forms_path: str | Path,
    memory_mb: int | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Facts and prompts of a ``source: {format: triples}`` suite (module docstring); the
    entity forms of the label dumps stream to ``forms_path``. ``paths``: claims, entities, labels."""
    claims_path, entities_path, label_files = paths
    listed = read_triples(suite.source.path)
    counts = {"listed": len(listed)}
    if suite.relations:
        counts["relation_not_in_suite"] = int((~listed["property"].isin(suite.relations)).sum())
        listed = listed[listed["property"].isin(suite.relations)]
    suite = dataclasses.replace(suite, relations=sorted(set(listed["property"]), key=contracts.id_int))
    plan = plan_suite(name, suite, sets)
    if plan.with_demos:
        raise ValueError(f"suites.{name}: a triples suite has no demonstration pool; drop few_shot.settings")
    counts["relation_without_template"] = int((~listed["property"].isin(plan.covered)).sum())
    listed = listed[listed["property"].isin(plan.covered)]
    con = scan.connect(memory_mb=memory_mb)
    scan.write_entity_forms(label_files, plan.languages, forms_path, con)
    ids = {contracts.id_int(e) for e in pd.concat([listed["subject"], listed["object"]])}
    labelled = {contracts.qid(i) for i in scan.labelled_ids(forms_path, plan.languages, sorted(ids), con)}
    listed = keep_labelled(name, listed, labelled, counts)
    truthy, sitelinks = dump_context(suite, listed, claims_path, entities_path, con)
    facts = finish_facts(listed_facts(listed, truthy, sitelinks), str(suite.dump), suite.seed)
    named = sorted({contracts.id_int(s) for s in facts["subject"]})
    index = forms_index(scan.scan_forms(forms_path, named, con))
    con.close()
    counts["facts"] = len(facts)
    log.info("suite %s: listed triples %s (source %s)", name, counts, suite.source.path)
    return facts, suite_prompts(plan, facts, None, index)


def pair_prompts(pairs: pd.DataFrame, facts: pd.DataFrame) -> pd.DataFrame:
    """Two prompts per kept pair: verbalization ``flawed`` and ``corrected`` (§4.3), English,
    statement style, the release's subject label, template id ``<P>.en.pairs<row>``."""
    rows = []
    kept = set(facts["fact_id"])
    for pair in pairs.itertuples(index=False):
        fid = contracts.fact_id(pair.subject, pair.property, pair.object)
        if fid not in kept:
            continue
        for verbalization in PAIR_VERBALIZATIONS:
            template_id = f"{pair.property}.en.pairs{pair.row}"
            prompt_id = f"{fid}|{template_id}|en|0|none|{verbalization}"
            text = getattr(pair, verbalization)
            rows.append(
                (prompt_id, fid, "en", template_id, "statement", pair.subject_label, text, "")
                + (verbalization, "none", 0, pair.property, [])
            )
    prompts = pd.DataFrame(rows, columns=contracts.columns("prompts"))
    prompts["subject_form_index"] = prompts["subject_form_index"].astype("int32")
    return prompts


def pair_forms(pairs: pd.DataFrame, dump_forms: pd.DataFrame) -> pd.DataFrame:
    """The dump's forms of the pairs' entities; an entity without an English label there gets the
    release's label (the label its sentence names)."""
    have = set(dump_forms.loc[(dump_forms["source"] == "label") & (dump_forms["lang"] == "en"), "entity"])
    extra = []
    for col, label in (("subject", "subject_label"), ("object", "object_label")):
        for entity, text in zip(pairs[col], pairs[label], strict=True):
            if entity not in have:
                have.add(entity)
                extra.append({"entity": entity, "lang": "en", "form": text, "source": "label"})
    extra_frame = pd.DataFrame(extra, columns=["entity", "lang", "form", "source"])
    forms = pd.concat([dump_forms, extra_frame.reindex(columns=dump_forms.columns)], ignore_index=True)
    return forms[contracts.columns("entity_forms")]


def pairs_suite(
    name: str,
    suite: Suite,
    sets: dict[str, TemplateSet],
    paths: tuple[str, str, list[str]],
    forms_path: str | Path,
    memory_mb: int | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Facts and prompts of a ``source: {format: verbalization-pairs}`` suite; entity forms
    (:func:`pair_forms`) written to ``forms_path``. ``sets``: unused (the pairs are the prompts),
    there for the one signature of :data:`factprobe.registries.SOURCES` builders."""
    if list(suite.languages) != ["en"]:
        raise ValueError(f"suites.{name}.languages: the verbalization pairs are English; set [en]")
    claims_path, entities_path, label_files = paths
    pairs, counts = import_verbalization_pairs(suite.source.path)
    log.info("suite %s: verbalization pairs per row outcome %s (%s)", name, counts, suite.source.path)
    if suite.relations:
        keep = pairs["property"].isin(suite.relations)
        log.info(
            "suite %s: %d pairs of relations outside suites.%s.relations left out",
            name,
            int((~keep).sum()),
            name,
        )
        pairs = pairs[keep]
    if pairs.empty:
        raise ValueError(f"suites.{name}: {suite.source.path} gives no usable verbalization pair")
    listed = pairs[["subject", "property", "object"]].drop_duplicates()
    con = scan.connect(memory_mb=memory_mb)
    truthy, sitelinks = dump_context(suite, listed, claims_path, entities_path, con)
    facts = finish_facts(listed_facts(listed, truthy, sitelinks), str(suite.dump), suite.seed)
    with tempfile.TemporaryDirectory(prefix="factprobe-pairs-") as tmp:
        all_forms = Path(tmp) / "forms.parquet"
        scan.write_entity_forms(label_files, ["en"], all_forms, con)
        ids = {contracts.id_int(e) for e in pd.concat([listed["subject"], listed["object"]])}
        dump_forms = scan.scan_forms(all_forms, sorted(ids), con)
    con.close()
    contracts.write("entity_forms", pair_forms(pairs, dump_forms), forms_path)
    return facts, pair_prompts(pairs, facts)


#: The template set name a ``source: myriadlama`` suite reads its release's templates under.
MYRIAD_SET = "myriadlama-release"


def myriadlama_suite(
    name: str,
    suite: Suite,
    sets: dict[str, TemplateSet],
    paths: tuple[str, str, list[str]],
    forms_path: str | Path,
    memory_mb: int | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Facts and prompts of a ``source: {format: myriadlama}`` suite (belief-myriadlama §4): the
    release's facts (:func:`~.importers.import_myriadlama_facts`: every object of a pair its own
    fact), its subject expressions as the subjects' forms (label = the first, the others aliases,
    ``subject_aliases`` of them per prompt as for a dump-built suite), and its relational
    templates (:func:`~.importers.import_myriadlama` on the same file) beside the suite's own
    template sets. ``relations`` keeps those relations' facts. Few-shot demonstrations are drawn
    from the release's facts (BELIEF-ICL §3.1). The forms are written to ``forms_path``; the
    dump's tables (``paths``) are not read."""
    from .fewshot import DemoPool

    path = suite.source.path
    if not Path(path).exists():
        raise ValueError(f"suites.{name}.source.path: {path} not found; export the MyriadLAMA release there")
    release, forms = import_myriadlama_facts(path, "en")
    if list(suite.languages) != ["en"]:
        raise ValueError(f"suites.{name}.languages: MyriadLAMA is English; set [en]")
    if suite.relations:
        release = release[release["property"].isin(suite.relations)]
    sets = {**sets, MYRIAD_SET: TemplateSet(format="myriadlama", path=path, language="en")}
    relations = sorted(set(release["property"]), key=contracts.id_int)
    templates = dataclasses.replace(suite.templates, sets=[*suite.templates.sets, MYRIAD_SET])
    suite = dataclasses.replace(suite, relations=relations, templates=templates)
    plan = plan_suite(name, suite, sets)
    release = release[release["property"].isin(plan.covered)]
    if release.empty:
        raise ValueError(f"suites.{name}: {path} gives no fact of a relation with a usable template")
    facts = finish_facts(release.assign(popularity=0, stratum=0), str(suite.dump), suite.seed)
    contracts.write("entity_forms", forms, forms_path)
    index = forms_index(forms)
    pool = None
    if plan.with_demos:
        labels = {(e, lang): f for e, lang, f, s in forms.itertuples(index=False) if s == "label"}
        pool = DemoPool(facts[["fact_id", "subject", "property", "object"]], labels, plan.by_key)
    log.info("suite %s: %d MyriadLAMA facts of %d relations (%s)", name, len(facts), len(relations), path)
    return facts, suite_prompts(plan, facts, pool, index)
