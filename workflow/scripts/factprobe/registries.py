"""Every extension point of factprobe in one light module: what can be named in the config.

Six registries, each ``name -> entry`` (a seventh, of measures, in :mod:`factprobe.measures`):

* :data:`STRATEGIES`: distractor strategies (``distractors.strategies``);
* :data:`TABLES`: the tables a strategy reads besides the facts and Ω (``tables=``);
* :data:`FAMILIES`: measure families (``metrics.families``); the measures they write (direction,
  chance level, label) are the registry :data:`factprobe.measures.MEASURES`, built the same way;
* :data:`BACKENDS`: model backends (the ``backend`` column of ``config/models.tsv``);
* :data:`SOURCES`: where a suite's facts and prompts come from (``suites.<s>.source.format``);
* :data:`TEMPLATE_FORMATS`: how a template set is read (``templates.sets.<name>.format``).

Built-in entries name their code as ``"module:attribute"`` strings, imported on first use, so
this module is standard library only: ``factprobe.settings`` reads it while the Snakefile is
parsed, and importing it runs no implementation (:mod:`factprobe.plumbing.code_inputs` follows the
strings, per registry, to the library files a job runs). New entries come from plugins
(:mod:`factprobe.plugins`), imported when a registry is first read, never on import.

Each is a :class:`factprobe.registry.Registry` (the machinery every registry uses): a name is
registered once, a second registration fails naming both sources unless it says
``override=True``; then the run log says which entry replaced which. A strategy may declare its
own settings (:class:`Setting`), the built-in ones as plugins: ``distractors.strategy_settings.<name>``
sets them, they are checked against the declared defaults' types and reach the retriever as
``ctx.settings.strategy_settings[<name>]`` (``ctx.settings.own(<name>)``). A measure family
likewise: ``metrics.family_settings.<name>``, read as ``frame.settings.own(<name>)``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

# Setting is also imported from here on purpose: plugin authors take it with the decorators it is
# given to (``from factprobe.registries import Setting, strategy``, CONTRIBUTING.md).
from factprobe.registry import (
    Registry,
    RegistryError,
    Setting,
    declared_settings,
    imported,
    own_settings,
    refuse_keywords,
    source_of,
)

# --- distractor strategies -----------------------------------------------------------------


@dataclass(frozen=True)
class Strategy:
    """A distractor strategy: its retriever (callable or ``"module:attribute"``) and its needs.

    A retriever is called per fact, ``retriever(ctx, i, fact_id, (s, r, o))``, and returns
    candidate rows (:func:`factprobe.distractors.retrieve.rows`); ``ctx`` is the suite's
    :class:`factprobe.distractors.retrieve.Context`. ``prepare(ctx)`` runs once before the first
    fact. ``tables``: the names of the :data:`TABLES` it reads (``ctx.tables[name]``): retrieval
    plans their files and loads them only for suites running a strategy that names them.
    ``per_model``: its own rule per (suite, model) (ApprOpt). ``every_subject`` (callable or
    ``"module:attribute"``): given the retrieve settings, whether Ω holds every subject of the
    relations. ``settings``: its own settings, name -> :class:`Setting`.
    """

    name: str
    retriever: Callable | str | None
    prepare: Callable | str | None = None
    per_model: bool = False
    tables: tuple[str, ...] = ()
    every_subject: Callable[[Mapping[str, Any]], bool] | str | None = None
    aliases: tuple[str, ...] = field(default_factory=tuple)
    settings: Mapping[str, Setting] = field(default_factory=dict)

    def code(self, what: str = "retriever") -> Callable | None:
        """The retriever (or ``prepare``) as a callable, importing its module on first use."""
        return imported(getattr(self, what))


#: name -> :class:`Strategy`.
STRATEGIES: Registry[Strategy] = Registry("distractor strategy")


def register_strategy(
    name: str, retriever: Callable | str | None, override: bool = False, **needs: Any
) -> Strategy:
    """Add strategy ``name``; ``needs`` are :class:`Strategy` fields (its own knobs: ``settings``)."""
    _check_strategy_keywords(name, needs)
    needs["settings"] = declared_settings(needs.get("settings"))
    needs["tables"] = tuple(needs.get("tables", ()))
    return STRATEGIES.add(name, Strategy(name, retriever, **needs), source_of(retriever), override)


def _check_strategy_keywords(name: str, needs: Mapping[str, Any]) -> None:
    allowed = tuple(f for f in Strategy.__dataclass_fields__ if f not in ("name", "retriever"))
    refuse_keywords("distractor strategy", name, needs, allowed)
    tables = needs.get("tables", ())
    if isinstance(tables, str) or not all(isinstance(t, str) for t in tables):
        raise RegistryError(
            f"distractor strategy {name!r}: tables= is a tuple of table names, e.g. tables=({tables!r},)"
        )


def strategy(name: str, override: bool = False, **needs: Any) -> Callable[[Callable], Callable]:
    """Decorator form of :func:`register_strategy`: ``@strategy("mine", tables=("cooccur",))``."""

    _check_strategy_keywords(name, needs)

    def add(fn: Callable) -> Callable:
        register_strategy(name, fn, override, **needs)
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
    """Whether any of the strategies ``names`` has ``need`` (per_model; the tables they read are
    :func:`tables_of`)."""
    return any(getattr(STRATEGIES[n], need) for n in canonical(names) if n in STRATEGIES)


def tables_of(names: list[str]) -> list[str]:
    """The :data:`TABLES` the strategies ``names`` read, each once, in the order they name them."""
    return list(dict.fromkeys(t for n in canonical(names) if n in STRATEGIES for t in STRATEGIES[n].tables))


def needs_every_subject(settings: Mapping[str, Any]) -> bool:
    """Whether Ω must hold every subject of the relations for these retrieve settings."""
    return any(
        imported(STRATEGIES[n].every_subject)(settings)
        for n in canonical(list(settings.get("strategies", [])))
        if n in STRATEGIES and STRATEGIES[n].every_subject is not None
    )


def strategy_setting(settings: Mapping[str, Any], name: str, key: str) -> Any:
    """Setting ``key`` of strategy ``name`` in resolved retrieve settings (a ``Retrieve`` as a
    dict): its ``strategy_settings`` entry, else the declared default."""
    own = (settings.get("strategy_settings") or {}).get(name, {})
    return own[key] if key in own else STRATEGIES[name].settings[key].default


def strategy_settings(names: list[str], given: Mapping[str, Mapping]) -> dict[str, dict]:
    """The own settings of each strategy of ``names`` that declares some (defaults overridden by
    ``given``, ``distractors.strategy_settings``); ``given`` naming a strategy without settings
    fails."""
    return own_settings(STRATEGIES, canonical(names), given)


_STRATEGY = "factprobe.distractors.strategies"
# One line per built-in strategy (distractors paper §3.3, PROBELM App. B, fluent-mLAMA §3.1);
# a knob of one strategy alone is its own setting, as a plugin's (config/README.md, distractors).
_EARLIER = "also count objects only absent from this dump, seen in an earlier one (no end date)"
_POOL_SOURCE = (
    "relation (its objects in the dump), suite (the suite's) or dataset (fluent-mLAMA §3.3 strings)"
)
register_strategy("random", f"{_STRATEGY}:random_rows")
register_strategy("sem", f"{_STRATEGY}:sem_rows", prepare=f"{_STRATEGY}:sem_lists", tables=("sem_index",))
register_strategy(
    "temp+sem",
    f"{_STRATEGY}:temp_sem_rows",
    prepare=f"{_STRATEGY}:sem_lists",
    tables=("sem_index", "temporal"),
    aliases=("temp",),
    settings={"earlier_dump": Setting(False, _EARLIER)},
)
register_strategy(
    "cooccur",
    f"{_STRATEGY}:cooccur_rows",
    prepare=f"{_STRATEGY}:cooccur_relevance",
    tables=("cooccur",),
    every_subject="factprobe.distractors.every_subject:subject_side",
    settings={
        "n": Setting(10, "alternatives per fact and side (PROBELM Algorithm 1)"),
        "sides": Setting(["object", "subject"], "object (swap o, keep s) and/or subject (swap s, keep o)"),
    },
)
register_strategy(
    "pool",
    f"{_STRATEGY}:pool_rows",
    prepare=f"{_STRATEGY}:relation_pools",
    tables=("entity_forms",),
    every_subject="factprobe.distractors.every_subject:relation_pool",
    settings={"source": Setting("relation", _POOL_SOURCE)},
)
register_strategy("appropt", None, per_model=True)  # rule appropt_distractors (factprobe.distractors.appropt)


# --- tables strategies read ----------------------------------------------------------------


@dataclass(frozen=True)
class Table:
    """A table distractor strategies read besides the suite's facts and Ω, named in a strategy's
    ``tables=``: a retrieval job plans and loads it only when a strategy of its suite names it.

    ``paths(settings, outputs)`` (callable or ``"module:attribute"``; standard library only, it
    runs while the Snakefile is parsed): the files the retrieval job reads for it, ``{input
    name: path}``, given the suite's retrieve settings (``dump``, ``strategies``, ...) and
    ``outputs``, the workflow's output path templates a table may read (``sem_index``,
    ``temporal``: :func:`factprobe.plumbing.run_inputs.retrieve_job_inputs`); None: it reads no file of
    its own. ``load(job)``: the table, at job time, from a
    :class:`factprobe.distractors.tables.TableJob` (the job's inputs, settings, facts, ...);
    strategies read it as ``ctx.tables[name]``."""

    name: str
    load: Callable | str
    paths: Callable | str | None = None

    def code(self, what: str = "load") -> Callable | None:
        """The loader (or ``paths``) as a callable, importing its module on first use."""
        return imported(getattr(self, what))


#: name -> :class:`Table`.
TABLES: Registry[Table] = Registry("strategy table")


def register_table(
    name: str, load: Callable | str, paths: Callable | str | None = None, override: bool = False, **wrong: Any
) -> Table:
    """Add table ``name``: ``load`` reads it in the job, ``paths`` names its files at parse time."""
    refuse_keywords("strategy table", name, wrong, ("paths", "override"))
    return TABLES.add(name, Table(name, load, paths), source_of(load), override)


def table(
    name: str, paths: Callable | str | None = None, override: bool = False, **wrong: Any
) -> Callable[[Callable], Callable]:
    """Decorator form of :func:`register_table` on the loader: ``@table("mine", paths=my_paths)``."""
    refuse_keywords("strategy table", name, wrong, ("paths", "override"))

    def add(fn: Callable) -> Callable:
        register_table(name, fn, paths, override)
        return fn

    return add


def table_entry(name: str, where: str = "distractors.strategies") -> Table:
    """The entry of table ``name``; unknown names fail naming ``where`` and the choices."""
    if name not in TABLES:
        raise RegistryError(
            f"{where}: no table {name!r} is registered (a plugin registers one with register_table); "
            f"registered tables: {list(TABLES)}"
        )
    return TABLES[name]


def unknown_tables(names: list[str]) -> list[str]:
    """Names that are not registered tables."""
    return [n for n in names if n not in TABLES]


_TABLE = "factprobe.distractors.tables"
# One line per built-in table (distractors paper §3.3, PROBELM App. B, fluent-mLAMA §3.1).
register_table("sem_index", f"{_TABLE}:load_sem_index", f"{_TABLE}:sem_index_paths")
register_table("temporal", f"{_TABLE}:load_temporal", f"{_TABLE}:temporal_paths")
register_table("cooccur", f"{_TABLE}:load_cooccur")
register_table("entity_forms", f"{_TABLE}:load_entity_forms")


# --- measure families and measures ---------------------------------------------------------


@dataclass(frozen=True)
class Family:
    """A measure family: its function (callable or ``"module:attribute"``), taking the suite's
    :class:`factprobe.metrics.pipeline.SuiteFrame` and returning ``(per-fact tables, suite-level
    tables)``, and ``reads``, the ``metrics`` settings it reads (a change of one reruns only its
    suites). ``settings``: knobs the family declares itself, name -> :class:`Setting`, as a
    strategy does, set in ``metrics.family_settings.<family>`` and read as
    ``frame.settings.own(<family>)`` (built-in families and plugins alike)."""

    name: str
    function: Callable | str
    reads: tuple[str, ...] = ()
    settings: Mapping[str, Setting] = field(default_factory=dict)

    def code(self) -> Callable:
        """The function, importing its module on first use."""
        return imported(self.function)


#: family name -> :class:`Family` (in registration order: the order families run in).
FAMILIES: Registry[Family] = Registry("measure family")


def register_family(
    name: str,
    function: Callable | str,
    reads: tuple[str, ...] = (),
    override: bool = False,
    settings: Mapping[str, Any] | None = None,
    **wrong: Any,
) -> Family:
    """Add family ``name``: ``reads`` the ``metrics`` keys it reads, ``settings`` its own knobs."""
    refuse_keywords("measure family", name, wrong, ("reads", "override", "settings"))
    if isinstance(settings, list | tuple):
        raise RegistryError(
            f"measure family {name!r}: settings= declares its own knobs (name -> Setting); "
            f"the metrics keys it reads, {list(settings)}, go in reads="
        )
    entry = Family(name, function, tuple(reads), declared_settings(settings))
    return FAMILIES.add(name, entry, source_of(function), override)


def family(
    name: str,
    reads: tuple[str, ...] = (),
    override: bool = False,
    settings: Mapping[str, Any] | None = None,
    **wrong: Any,
) -> Callable[[Callable], Callable]:
    """Decorator form of :func:`register_family`: ``@family("mine", settings={"k": Setting(1)})``."""
    refuse_keywords("measure family", name, wrong, ("reads", "override", "settings"))

    def add(fn: Callable) -> Callable:
        register_family(name, fn, reads, override, settings)
        return fn

    return add


def family_settings(names: list[str], given: Mapping[str, Mapping]) -> dict[str, dict]:
    """The own settings of each family of ``names`` that declares some (defaults overridden by
    ``given``, ``metrics.family_settings``); ``given`` naming a family without any fails."""
    return own_settings(FAMILIES, names, given)


def unknown_families(names: list[str]) -> list[str]:
    """Names that are not registered families."""
    return [n for n in names if n not in FAMILIES]


_FAMILY = "factprobe.metrics.families"
# One line per family (the order they run in). reads=: the metrics keys a family shares with
# other families or rules; a knob of one family alone is its own setting, as a plugin's
# (config/README.md, section metrics).
# ties: "fail" by default, a tie is not counted as known; "correct_first" is the Fluent-mLAMA
# authors' stable sort. combined_strategies: retrieval writes Temp+Sem as strategy temp+sem
# already (§3.3), so extra concatenations only on request.
_PRECISION_NS = "n of the Precision@n baseline (distractors paper Table 2); at most scoring.topk"
_COMBINED = "extra derived lists, name -> strategies concatenated in order (temp+sem is retrieval's)"
_TIES = "a distractor tying the best correct form ranks above it (fail) or below it (correct_first)"
_ROUGE_UNITS = "units of ROUGE-L's LCS: words (Lin 2004) or characters (the reference's)"
_ENCODER = "BERTScore encoder: a models.tsv row or a local folder; empty = ROUGE-L only"
register_family(
    "knowledge",
    f"{_FAMILY}:knowledge",
    ("ns", "short_lists"),
    settings={
        "precision_ns": Setting([1, 5, 10], _PRECISION_NS),
        "combined_strategies": Setting({}, _COMBINED),
    },
)
register_family(
    "ranking",
    f"{_FAMILY}:ranking",
    ("ranking_average",),
    settings={
        "recall_ns": Setting([1, 2, 3, 4, 5], "n of R@n (Fluent-mLAMA §3.3)"),
        "ties": Setting("fail", _TIES),
    },
)
register_family(
    "plausibility",
    f"{_FAMILY}:plausibility",
    settings={
        "strategies": Setting(["cooccur"], "strategies of the less plausible scenarios (PROBELM §3.2)")
    },
)
register_family("belief", f"{_FAMILY}:belief", ("belief_samplings", "belief_bins"))
register_family("belief_icl", f"{_FAMILY}:belief_icl", ("belief_samplings", "belief_bins"))
register_family(
    "overlap",
    "factprobe.metrics.overlap:overlap",
    settings={
        "rouge_units": Setting("words", _ROUGE_UNITS),
        "encoder": Setting("", _ENCODER),
        "layer": Setting(None, "BERTScore's hidden layer (0 = embeddings; null = the last)"),
        "idf": Setting(False, "idf weighting over the suite's object names (Zhang et al. 2020 §3)"),
    },
)


# --- model backends ------------------------------------------------------------------------

#: backend name -> the class (or ``"module:attribute"``, imported on first use). A backend class
#: implements :class:`factprobe.lm.api.LM` and a classmethod ``from_row(row, model_dir, **settings)``.
BACKENDS: Registry[type | str] = Registry("model backend")
#: The backend of a models.tsv row without a ``backend`` cell.
DEFAULT_BACKEND = "hf"


def register_backend(name: str, cls: type | str, override: bool = False) -> None:
    """Add backend ``name``."""
    BACKENDS.add(name, cls, source_of(cls), override)


def backend(name: str, override: bool = False) -> Callable[[type], type]:
    """Class decorator: ``@backend("mine")`` registers the class as backend ``mine``."""

    def add(cls: type) -> type:
        register_backend(name, cls, override)
        return cls

    return add


def backend_class(name: str, where: str = "config/models.tsv") -> type:
    """The class of backend ``name`` (imported on first use); unknown names fail naming ``where``."""
    if name not in BACKENDS:
        raise KeyError(f"{where}: unknown backend {name!r}; choose from {sorted(BACKENDS)}")
    return imported(BACKENDS[name])


def row_backend(row: Any) -> str:
    """The backend of a models.tsv row (a dict or a ``ModelSpec``): its cell, else ``hf``."""
    value = row.get("backend") if isinstance(row, dict) else getattr(row, "backend", "")
    return str(value or DEFAULT_BACKEND)


register_backend("hf", "factprobe.lm.hf:HFCausalLM")
register_backend("masked", "factprobe.lm.masked:MaskedLM")


# --- suite source formats ------------------------------------------------------------------


@dataclass(frozen=True)
class SourceFormat:
    """Where a suite's facts and prompts come from (``suites.<s>.source.format``).

    ``builder``: ``builder(name, suite, sets, (claims, entities, label_files), forms_path,
    memory_mb) -> (facts, prompts)``, writing the entity forms to ``forms_path``; None for the
    dump (sampled by :func:`factprobe.probes.build.build_suite` itself) and for imported formats.
    ``imported``: probes and candidates come whole from the release (rule import_released, not
    build_probes and retrieval). ``listed``: the facts are listed in the file ``source.path``
    (an input of build_probes). ``sampled``: the facts are sampled from the dump and verbalized
    by the suite's templates (translated for a multilingual suite). ``judged``: the listed file
    also carries human judgements of its facts (the human alignment, distractors paper §4.2).
    ``paired``: flawed / corrected verbalizations of each fact (Table 4, §4.3). ``release_pool``:
    a pool of ``source: dataset`` reads the suite's own release (Fluent-mLAMA §3.1).
    """

    name: str
    builder: Callable | str | None = None
    imported: bool = False
    listed: bool = False
    sampled: bool = False
    judged: bool = False
    paired: bool = False
    release_pool: bool = False

    @property
    def relations_optional(self) -> bool:
        """Whether a suite of this format may leave out ``relations``: the release or the listed
        file gives its facts (relations, when given, filter them)."""
        return self.listed or self.imported

    def code(self) -> Callable | None:
        """The builder, importing its module on first use."""
        return imported(self.builder)


#: format name -> :class:`SourceFormat`.
SOURCES: Registry[SourceFormat] = Registry("suite source format")


def register_source(
    name: str, builder: Callable | str | None = None, override: bool = False, **fields: Any
) -> SourceFormat:
    """Add source format ``name``; ``fields`` are :class:`SourceFormat` fields."""
    return SOURCES.add(
        name, SourceFormat(name, builder, **fields), source_of(builder) if builder else name, override
    )


def source_format(name: str, override: bool = False, **fields: Any) -> Callable[[Callable], Callable]:
    """Decorator form of :func:`register_source`: ``@source_format("mine", listed=True)``."""

    def add(fn: Callable) -> Callable:
        register_source(name, fn, override, **fields)
        return fn

    return add


def source_entry(name: str, where: str = "suites") -> SourceFormat:
    """The entry of format ``name``; unknown names fail naming ``where`` and the choices."""
    if name not in SOURCES:
        raise RegistryError(f"{where}: unknown source format {name!r}; choose from {list(SOURCES)}")
    return SOURCES[name]


_PROBES = "factprobe.probes"
# One line per built-in source format (config/README.md, suites).
register_source("dump", sampled=True)
register_source("fluent-mlama", f"{_PROBES}.fluent_suite:fluent_mlama_suite", release_pool=True)
register_source("triples", f"{_PROBES}.listed:triples_suite", listed=True, judged=True)
register_source("verbalization-pairs", f"{_PROBES}.listed:pairs_suite", listed=True, paired=True)
register_source("myriadlama", f"{_PROBES}.listed:myriadlama_suite", listed=True)
register_source("probelm", imported=True)


# --- template formats ----------------------------------------------------------------------


@dataclass(frozen=True)
class TemplateFormat:
    """How a template set of this format is read (``templates.sets.<name>.format``).

    ``loader``: ``loader(name, set_cfg, languages) -> [Template]`` (callable or
    ``"module:attribute"``), ``set_cfg`` the set's :class:`factprobe.settings.TemplateSet`.
    ``files``: what build_probes reads, an input per file: ``language_files``
    (``<path>/<lang>.yaml``), ``relation_files`` (``<path>/P*.jsonl``), ``language_folders``
    (``<path>/<lang>/P*.jsonl``) or ``path`` (the path itself). ``languages``: where its languages
    are read: ``files`` (the language files' names), ``folders`` (the language folders holding
    ``P*.jsonl``), ``header`` (a CSV's columns after ``pid, relation``) or ``setting`` (the set's
    ``language``). ``licence``: SPDX-style id of its templates (the dataset card); None: the
    code's own for the bundled ``resources/templates``, else ``other``.
    """

    name: str
    loader: Callable | str
    files: str = "path"
    languages: str = "setting"
    licence: str | None = "other"

    def code(self) -> Callable:
        """The loader, importing its module on first use."""
        return imported(self.loader)


#: format name -> :class:`TemplateFormat`.
TEMPLATE_FORMATS: Registry[TemplateFormat] = Registry("template format")


def register_template_format(
    name: str, loader: Callable | str, override: bool = False, **fields: Any
) -> TemplateFormat:
    """Add template format ``name``; ``fields`` are :class:`TemplateFormat` fields."""
    return TEMPLATE_FORMATS.add(name, TemplateFormat(name, loader, **fields), source_of(loader), override)


def template_format(name: str, override: bool = False, **fields: Any) -> Callable[[Callable], Callable]:
    """Decorator form of :func:`register_template_format`: ``@template_format("mine")``."""

    def add(fn: Callable) -> Callable:
        register_template_format(name, fn, override, **fields)
        return fn

    return add


def template_entry(name: str, where: str = "templates.sets") -> TemplateFormat:
    """The entry of template format ``name``; unknown names fail naming ``where`` and the choices."""
    if name not in TEMPLATE_FORMATS:
        raise RegistryError(
            f"{where}: unknown template format {name!r}; choose from {list(TEMPLATE_FORMATS)}"
        )
    return TEMPLATE_FORMATS[name]


_SETS = "factprobe.probes.suite_plan"
# One line per built-in template format (config/README.md, templates; docs/templates-format.md).
register_template_format("yaml", f"{_SETS}:yaml_set", files="language_files", languages="files", licence=None)
register_template_format("pararel", f"{_SETS}:pararel_set", files="relation_files", licence="mit")
register_template_format("mpararel", f"{_SETS}:mpararel_set", files="language_folders", languages="folders")
register_template_format("lama", f"{_SETS}:lama_set", licence="cc-by-nc-4.0")
register_template_format("xfactr", f"{_SETS}:xfactr_set", languages="header")
register_template_format("myriadlama", f"{_SETS}:myriadlama_set")

#: Which registry each public name reads or fills: :mod:`factprobe.plumbing.code_inputs` makes a module
#: that imports a name depend on the code of that registry's built-in entries only.
KINDS = {
    "STRATEGIES": (
        "STRATEGIES",
        "Strategy",
        "register_strategy",
        "strategy",
        "canonical",
        "unknown",
        "choices",
        "needs",
        "needs_every_subject",
        "strategy_setting",
        "strategy_settings",
        "tables_of",
    ),
    "TABLES": ("TABLES", "Table", "register_table", "table", "table_entry", "unknown_tables"),
    "FAMILIES": (
        "FAMILIES",
        "Family",
        "register_family",
        "family",
        "unknown_families",
        "family_settings",
    ),
    "BACKENDS": (
        "BACKENDS",
        "register_backend",
        "backend",
        "backend_class",
        "row_backend",
        "DEFAULT_BACKEND",
    ),
    "SOURCES": ("SOURCES", "SourceFormat", "register_source", "source_format", "source_entry"),
    "TEMPLATE_FORMATS": (
        "TEMPLATE_FORMATS",
        "TemplateFormat",
        "register_template_format",
        "template_format",
        "template_entry",
    ),
}
