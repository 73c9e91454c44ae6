"""Rules over one whole run's :class:`factprobe.settings.Config`: the per-suite rules of precedence
(``suite_*``: what each rule of a suite reads, resolved once at parse time by
:mod:`factprobe.plumbing.run_settings`) and the checks that span several keys or sections
(``check_*``, run by :mod:`factprobe.config_check` before any job).

Light on purpose, like :mod:`factprobe.settings`: only the standard library is imported, so
the Snakefile parses without the scientific stack.
"""

from __future__ import annotations

import copy
import datetime
from pathlib import Path

from factprobe import registries
from factprobe.registry import RegistryError
from factprobe.settings import (
    SEM_PARAMS,
    Config,
    ConfigError,
    DistractorOverride,
    Retrieve,
    Suite,
    SuiteScoring,
    plain,
)

# --- per-suite resolution (what each rule of a suite reads; a change reruns only those rules) ---


def suite_distractors(cfg: Config, suite: str) -> dict:
    """Strategies, n, pool size, search method, strategies' own settings, languages and dump
    of one suite.

    Precedence (config/README.md, section distractors): ``suites.<s>.distractors`` over
    ``distractors.by_kind.<kind>`` over the ``distractors`` section; a strategy's own settings
    key by key, each strategy that declares some with its defaults filled in.
    """
    section, block = cfg.distractors, cfg.suites[suite]
    layers = [block.distractors, section.by_kind.get(block.kind, DistractorOverride())]
    defaults = {
        "strategies": section.strategies,
        "n": section.n,
        "pool_size": section.pool_size,
        "search": section.sem.search,
    }
    merged = {
        key: copy.deepcopy(next((getattr(x, key) for x in layers if getattr(x, key) is not None), value))
        for key, value in defaults.items()
    }
    given = copy.deepcopy(section.strategy_settings)
    for layer in reversed(layers):
        for name, own in (layer.strategy_settings or {}).items():
            given[name] = {**given.get(name, {}), **copy.deepcopy(own)}
    merged["strategy_settings"] = registries.strategy_settings(merged["strategies"], given)
    return {**merged, "languages": list(block.languages), "dump": block.dump}


def suite_retrieve(cfg: Config, suite: str) -> dict:
    """Every setting the retrieve_distractors job of ``suite`` reads (``Retrieve`` as a dict)."""
    section, own = cfg.distractors, suite_distractors(cfg, suite)
    # Per-model strategies (ApprOpt) run in their own rule, not in retrieval.
    own["strategies"] = [s for s in own["strategies"] if not registries.needs([s], "per_model")]
    resolved = Retrieve(
        **own,
        form_threshold=section.form_threshold,
        valid_ranks=section.valid_ranks,
        ef_search=section.sem.hnsw.ef_search,
        dataset=_pool_dataset(cfg, suite, own["strategy_settings"]),
    )
    return plain(resolved)


def _pool_dataset(cfg: Config, suite: str, own: dict) -> str:
    """The Fluent-mLAMA release a pool of source ``dataset`` reads (the suite's own source),
    "" otherwise (the pool is then made from the suite's facts)."""
    source = cfg.suites[suite].source
    dataset = own.get("pool", {}).get("source") == "dataset"
    return source.path if dataset and source.entry.release_pool else ""


def suite_appropt(cfg: Config, suite: str, model_row: dict) -> dict:
    """ApprOpt settings of ``suite`` for one models.tsv row (distractors paper §3.3)."""
    section, own = cfg.distractors, suite_distractors(cfg, suite)
    appropt = section.appropt
    return {
        "n": own["n"] if appropt.n is None else appropt.n,
        "width": appropt.width,
        "lang": appropt.lang or own["languages"][0],
        "styles": list(appropt.styles),
        "max_candidates": appropt.max_candidates,
        "form_threshold": section.form_threshold,
        "valid_ranks": section.valid_ranks,
        "dump": own["dump"],
        "model": {k: v for k, v in model_row.items() if not k.startswith("_")},
    }


def suite_model_cutoff(cfg: Config, suite: str, model_row: dict) -> dict:
    """Per (plausibility suite, model): the cut-off its new facts are measured against (PROBELM
    §3.1: facts added after *the model's* cut-off), from models.tsv ``cutoff`` (YYYY-MM-DD), else
    the suite's own ``cutoff``; empty for other suite kinds."""
    block = cfg.suites[suite]
    if block.kind != "plausibility" or block.source.imported:
        # A released benchmark is chosen per cut-off already (PRobELM's {MMYYYY}.json files).
        return {}
    own = str(model_row.get("cutoff") or "").replace("-", "")
    if own and own < str(block.cutoff):
        # The probes stage already dropped facts dated on or before the suite's cut-off: the
        # ones between this model's cut-off and it (new to the model) would be lost silently.
        raise ConfigError(
            f"models.tsv: model {model_row.get('name', '?')} has cutoff {model_row.get('cutoff')}, "
            f"before suites.{suite}.cutoff {block.cutoff}: facts dated in between are new to it but "
            f"not in the suite; set suites.{suite}.cutoff to the earliest model cut-off ({own})"
        )
    return {
        "cutoff": own or str(block.cutoff),
        "source": "model" if own else "suite",
        "dump": block.dump,
        "diff_old": block.diff_old,
        "statuses": list(block.changes.statuses),
        "rules": list(block.changes.rules),
    }


def suite_scoring_mode(cfg: Config, suite: str) -> str:
    """``sentence`` for suites of a kind in ``scoring.sentence_kinds``, else ``continuation``."""
    return "sentence" if cfg.suites[suite].kind in cfg.scoring.sentence_kinds else "continuation"


def suite_end_marker(cfg: Config, suite: str) -> str:
    """What is scored after each form of ``suite``: ``suites.<s>.scoring.end_marker`` over
    ``scoring.by_mode.<mode>.end_marker`` (the suite's scoring mode) over ``scoring.end_marker``.

    The distractors paper scores λ + EOS (§3.2), the Fluent-mLAMA reference the object alone and
    PROBELM the scenario sentence, so one workflow run may need several markers.
    """
    own = cfg.suites[suite].scoring.end_marker
    if own is not None:
        return own
    by_mode = cfg.scoring.by_mode.get(suite_scoring_mode(cfg, suite), SuiteScoring())
    return by_mode.end_marker if by_mode.end_marker is not None else cfg.scoring.end_marker


#: Per suite kind when ``suites.<s>.correct_set`` is absent: the fluent-mLAMA rule for multilingual
#: suites; the other kinds keep every form (distractors paper §3.2 eq. 1 sums Pl over all forms
#: λ ∈ Λ(o), labels and aliases; BELIEF counts every object alias, belief-myriadlama §4.1).
CORRECT_SET_DEFAULTS = {"multilingual": "table1"}


def suite_correct_set(cfg: Config, suite: str) -> str:
    """``suites.<s>.correct_set``, else the kind's default (``CORRECT_SET_DEFAULTS``, else ``wide``)."""
    block = cfg.suites[suite]
    if block.correct_set is not None:
        return block.correct_set
    return CORRECT_SET_DEFAULTS.get(block.kind, "wide")


def sem_index_rows(cfg: Config, dump: str) -> dict:
    """Which rows the semantic index of ``dump`` holds: ``relations`` (P ids)
    of the suites that search it, whose objects' types bound the candidates, and ``type_dumps``,
    the dumps those suites type entities from; ``relations: None`` = every entity (a released
    suite's facts need not come from the dump's claims)."""
    relations: set[str] = set()
    type_dumps: set[str] = set()
    for name, suite in cfg.suites.items():
        retrieve = suite_retrieve(cfg, name)
        if str(retrieve["dump"]) != str(dump) or "sem_index" not in registries.tables_of(
            retrieve["strategies"]
        ):
            continue
        # A listed-facts suite with its relations named bounds the index like a dump-built one.
        listed = suite.source.listed and suite.relations
        if not suite.source.entry.sampled and not listed:
            return {"relations": None, "type_dumps": []}
        relations |= set(suite.relations)
        type_dumps |= {str(d) for d in suite_dumps(suite)}
    return {"relations": sorted(relations), "type_dumps": sorted(type_dumps)}


def suite_dumps(suite: Suite) -> list[str]:
    """Dumps whose labels and types a suite reads: ``label_dumps``, else its dump (+ diff_old)."""
    own = [suite.dump] + ([suite.diff_old] if suite.kind == "plausibility" and suite.diff_old else [])
    return suite.label_dumps or own


def sem_index(cfg: Config) -> dict:
    """The index rules' params: ``distractors.sem`` by :data:`SEM_PARAMS` (:func:`sem_settings`
    reads them back)."""
    sem = cfg.distractors.sem
    return {
        param: getattr(sem.hnsw if f.startswith("hnsw.") else sem, f.removeprefix("hnsw."))
        for param, f in SEM_PARAMS
    }


def suite_families(cfg: Config, suite: str) -> list[str]:
    """Measure families of a suite (``metrics.families`` of its kind)."""
    return list(cfg.metrics.families.get(cfg.suites[suite].kind, []))


def suite_metrics(cfg: Config, suite: str) -> dict:
    """The ``metrics`` keys the suite's families read (+ robustness_pair, read by every suite) and
    the own settings of those that declare some: a change of e.g. ``belief_bins`` reruns only
    suites with a BELIEF family."""
    families = suite_families(cfg, suite)
    # What each family reads: its factprobe.registries.FAMILIES entry (the registry of families).
    unknown = registries.unknown_families(families)
    if unknown:
        raise ConfigError(
            f"metrics.families.{cfg.suites[suite].kind}: unknown families {unknown}; "
            f"choose from {list(registries.FAMILIES)}"
        )
    keys = {"robustness_pair"} | {k for f in families for k in registries.FAMILIES[f].reads}
    values = plain(cfg.metrics)
    out = {"families": families, **{k: values[k] for k in sorted(keys)}}
    # Only where a family declares settings: a suite of BELIEF families alone has none.
    own = registries.family_settings(families, cfg.metrics.family_settings)
    return {**out, "family_settings": own} if own else out


def suite_template_sets(cfg: Config, suite: str) -> dict:
    """The ``templates.sets`` entries a suite uses, by name (plain dicts)."""
    return {name: plain(cfg.templates.sets[name]) for name in cfg.suites[suite].templates.sets}


def control_params(cfg: Config) -> dict:
    """Training settings of the control model (everything in ``control`` but ``suites``)."""
    return {k: v for k, v in plain(cfg.control).items() if k != "suites"}


# --- cross-key checks (what one section's JSON schema cannot express) ----------------------


def is_calendar_date(text: str, fmt: str = "%Y%m%d") -> bool:
    """Whether ``text`` is a real date in ``fmt`` (``%Y%m%d``, ``%Y-%m-%d``): not 20141301, not 2016-02-30."""
    try:
        datetime.datetime.strptime(text, fmt)
    except ValueError:
        return False
    return True


def timeline_dumps(suite: Suite, enabled: list[str]) -> list[str]:
    """The enabled dumps up to a timeline suite's dump, oldest first: its diff series."""
    return sorted(d for d in enabled if d <= suite.dump)


def check_timeline(suite: Suite, enabled: list[str], where: str) -> None:
    """A timeline suite has at least three dates: dumps up to its dump (``by: diff``) or edges
    (``by: statement_date``), the last edge not after the dump (its facts are true at the dump);
    its popularity edges ascend."""
    block = suite.timeline
    if block.by == "diff":
        dumps = timeline_dumps(suite, enabled)
        if len(dumps) < 3:
            raise ConfigError(
                f"{where}.timeline: by diff needs >= 3 enabled dumps up to {suite.dump}, got {dumps}"
            )
    else:
        check_statement_edges(suite, where)
    pops = list(block.popularity_edges)
    if any(b <= a for a, b in zip(pops, pops[1:], strict=False)):
        raise ConfigError(f"{where}.timeline.popularity_edges: need ascending values, got {pops}")
    # a slice sampled smaller than the profile's minimum could only give insufficient rows
    per_slice = block.per_bin * (len(pops) + 1) if block.per_bin is not None else suite.n_facts
    if per_slice is not None and per_slice < block.min_facts:
        raise ConfigError(
            f"{where}.timeline.min_facts: slices are sampled to {per_slice} facts, fewer than "
            f"min_facts={block.min_facts}; sample more facts per slice or lower min_facts"
        )


def check_statement_edges(suite: Suite, where: str) -> None:
    """``by: statement_date``: at least three ascending edges, the last not after the dump."""
    edges = [int(e) for e in suite.timeline.edges]
    if len(edges) < 3 or any(b <= a for a, b in zip(edges, edges[1:], strict=False)):
        raise ConfigError(f"{where}.timeline.edges: need >= 3 ascending YYYYMMDD dates, got {edges}")
    if edges[-1] > int(suite.dump):
        raise ConfigError(f"{where}.timeline.edges: {edges[-1]} is after the suite's dump {suite.dump}")


def slice_ends(suite: Suite, enabled: list[str]) -> list[str]:
    """The YYYYMMDD ends of a timeline suite's dated slices: every edge or dump after the first."""
    if suite.timeline.by == "diff":
        return timeline_dumps(suite, enabled)[1:]
    return [str(e) for e in suite.timeline.edges[1:]]


def check_control_fractions(cfg: Config, enabled: list[str], source: str) -> None:
    """Every ``control.taught_fractions`` key is the quoted end of a dated slice of a timeline
    suite in ``control.suites`` (a date that ends no slice would teach nothing, in silence)."""
    fractions = cfg.control.taught_fractions
    if not fractions:
        return
    ends = sorted(
        {
            end
            for name in cfg.control.suites
            if name in cfg.suites and cfg.suites[name].timeline is not None
            for end in slice_ends(cfg.suites[name], enabled)
        }
    )
    for key in fractions:
        if not isinstance(key, str) or not is_calendar_date(key):
            raise ConfigError(
                f"{source}: control.taught_fractions: key {key!r} is not a quoted YYYYMMDD date; write '{key}': ..."
            )
        if key not in ends:
            raise ConfigError(
                f"{source}: control.taught_fractions: {key} ends no dated slice of a timeline suite in "
                f"control.suites; slice ends: {ends or 'none (no timeline suite is in control.suites)'}"
            )


def check_cross_keys(cfg: Config, enabled: list[str], source: str = "config/config.yaml") -> None:
    """Template formats registered, suites' dumps enabled and template sets defined, relations and plausibility dates given
    where the source format's entry requires them, plausibility dates ordered, Precision@n within
    the top-k."""
    for name, template_set in cfg.templates.sets.items():
        # The template-format registry is the only list (plugin formats included).
        try:
            registries.template_entry(template_set.format, f"{source}: templates.sets.{name}.format")
        except RegistryError as err:
            raise ConfigError(str(err)) from None
    for name, suite in cfg.suites.items():
        where = f"{source}: suites.{name}"
        if suite.dump not in enabled:
            raise ConfigError(f"{where}.dump: {suite.dump} is not an enabled dump ({enabled})")
        for set_name in suite.templates.sets:
            if set_name not in cfg.templates.sets:
                raise ConfigError(f"{where}.templates.sets: {set_name!r} is not defined in templates.sets")
        for dump in suite.label_dumps or []:
            if dump not in enabled:
                raise ConfigError(f"{where}.label_dumps: {dump} is not an enabled dump ({enabled})")
        # What a format allows is a property of its registry entry, plugin formats included.
        entry = suite.source.entry
        if not suite.relations and not entry.relations_optional:
            raise ConfigError(
                f"{where}.relations: required for source format {entry.name!r} (only a format whose "
                "facts are listed or imported may leave it out); list the relations to probe"
            )
        if suite.kind == "plausibility" and not entry.imported and not (suite.diff_old and suite.cutoff):
            raise ConfigError(
                f"{where}.{'cutoff' if suite.diff_old else 'diff_old'}: a plausibility suite built from "
                "a dump needs diff_old and cutoff (the facts new between diff_old and dump, the model's "
                "cut-off in between); set both"
            )
        if suite.source.imported and suite.kind != "plausibility":
            raise ConfigError(
                f"{where}.source: format {suite.source.format} is a plausibility benchmark; set kind: plausibility"
            )
        if suite.kind == "plausibility" and not suite.source.imported:
            old, cut, new = suite.diff_old, suite.cutoff, suite.dump
            if cut and not is_calendar_date(str(cut)):
                raise ConfigError(f"{where}.cutoff: {cut} is not a calendar date; write YYYYMMDD (quoted)")
            if old not in enabled:
                raise ConfigError(f"{where}.diff_old: {old} is not an enabled dump ({enabled})")
            # The cut-off may precede diff_old (PROBELM §3.1: a model's cut-off, e.g. 2020-03, is
            # usually months before the older dump, 2020-10): additions between the dumps dated
            # after the cut-off are new to the model and stay.
            if not (old < new and cut < new):
                raise ConfigError(f"{where}: need diff_old < dump and cutoff < dump, got {old}, {cut}, {new}")
        if suite.timeline is not None:
            check_timeline(suite, enabled, where)
    check_control_fractions(cfg, enabled, source)
    precision = max(cfg.metrics.own("knowledge")["precision_ns"] or [1])
    if precision > cfg.scoring.topk:
        raise ConfigError(
            f"{source}: metrics.family_settings.knowledge.precision_ns asks for Precision@{precision} but scoring.topk is "
            f"{cfg.scoring.topk}; first-token ranks are only known within the top-k, so raise scoring.topk"
        )


#: Where the distractors paper's human scores are published: the file a judged suite reads.
HUMAN_SCORES_FILE = "wikidata_triples_to_human_scores.json (DistFactAssessLM, src/know/MinKAssess/)"


def check_human_alignment(cfg: Config, source: str = "config/config.yaml", workdir: str | Path = ".") -> None:
    """Every suite named in ``metrics.human_alignment.suites`` is defined and has its judged
    triples: ``metrics.human_alignment.path`` or the suite's own ``source: triples`` file, which
    must exist (relative to ``workdir``). A named suite is never dropped in silence: without the
    human scores the run stops and names the file to supply."""
    human = cfg.metrics.human_alignment
    where = f"{source}: metrics.human_alignment"
    for name in human.suites:
        if name not in cfg.suites:
            raise ConfigError(
                f"{where}.suites names {name!r}, which is not a suite; define it (kind: knowledge, "
                f"source: {{format: triples, path: <your copy of {HUMAN_SCORES_FILE}>}}) or drop the name"
            )
        path = human.path or (cfg.suites[name].source.path if cfg.suites[name].source.entry.judged else "")
        if not path:
            raise ConfigError(
                f"{where}: suite {name!r} has no judged triples; set its source to "
                f"{{format: triples, path: ...}} or metrics.human_alignment.path to {HUMAN_SCORES_FILE}"
            )
        if not (Path(workdir) / path).exists():
            raise ConfigError(
                f"{where}: the human scores of suite {name!r} are absent: {path} does not exist; "
                f"supply {HUMAN_SCORES_FILE} there (the project ships no annotation data) or drop "
                f"{name!r} from metrics.human_alignment.suites"
            )


#: Template formats that read one file or folder per suite language: a language they lack fails
#: (yaml: Snakemake's MissingInputException on ``<lang>.yaml``; mpararel, xfactr: the job).
PER_LANGUAGE_FORMATS = ("yaml", "mpararel", "xfactr")


def known_languages(cfg: Config) -> list[str]:
    """Languages ``extract.languages`` may name: those some configured template set has templates
    for, those of the suites (a released source brings its own) and the translation targets;
    any other language would only be extracted, never probed (config/README.md, ``extract``)."""
    known = {lang for ts in cfg.templates.sets.values() for lang in ts.languages() or []}
    known |= {lang for suite in cfg.suites.values() for lang in suite.languages}
    known |= {*cfg.translate.languages, cfg.translate.source_lang}
    return sorted(known)


def check_languages(cfg: Config, source: str = "config/config.yaml") -> None:
    """Every suite language is extracted and has templates; every extracted language is known.

    A suite built from the dump needs, for each of its languages, the file or folder of every
    per-language template set it uses, and at least one of its sets for that language.
    """
    extracted = list(cfg.extract.languages)
    for name, suite in cfg.suites.items():
        where = f"{source}: suites.{name}.languages"
        missing = [lang for lang in suite.languages if lang not in extracted]
        if missing:
            raise ConfigError(
                f"{where}: {missing} not in extract.languages {extracted}; add them to extract.languages"
            )
        if not suite.source.entry.sampled:
            continue  # prompts come from the released benchmark
        covered: set[str] = set()
        for set_name in suite.templates.sets:
            entry = cfg.templates.sets.get(set_name)
            langs = entry.languages() if entry is not None else None
            if langs is None:
                covered |= set(suite.languages)  # unknown here: the job checks it
                continue
            covered |= set(langs)
            lacking = [lang for lang in suite.languages if lang not in langs]
            if entry.format in PER_LANGUAGE_FORMATS and lacking:
                raise ConfigError(
                    f"{where}: template set {set_name!r} ({entry.path}) has no templates for {lacking}; "
                    f"supported languages: {langs}; add templates for them or remove them from the suite"
                )
        uncovered = [lang for lang in suite.languages if lang not in covered]
        if uncovered:
            raise ConfigError(
                f"{where}: no template set of suites.{name}.templates.sets {list(suite.templates.sets)} "
                f"has templates for {uncovered}; supported languages: {sorted(covered)}"
            )
    known = known_languages(cfg)
    unknown = [lang for lang in extracted if lang not in known]
    if unknown:
        raise ConfigError(
            f"{source}: extract.languages: unknown language(s) {unknown}; known (with templates, "
            f"a suite or a translation target): {known}; fix the code or add templates for it"
        )
