"""Typed settings: one dataclass per config section, the only place where defaults live.

``workflow/schemas/config.<section>.schema.yaml`` validates the YAML (types, ranges, enums) and
carries the same keys and defaults (``tests/unit/test_settings.py`` checks that they agree).
``common.smk`` builds one ``Config`` at parse time and resolves per-suite settings once
(``suite_*`` of :mod:`factprobe.config_rules`); rules receive them as plain dicts (Snakemake only tracks changes of
builtin-typed params), and rule scripts turn them back into these classes with ``load_settings``.

Light on purpose: only the standard library is imported, so the Snakefile parses without the
scientific stack.
"""

from __future__ import annotations

import copy
import csv
import types
import typing
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields, is_dataclass
from pathlib import Path
from typing import Any

from factprobe import registries  # every extension point: standard library only
from factprobe.registry import RegistryError


class ConfigError(ValueError):
    """Configuration or registry problem; the message names the file and the key or row."""


class InvalidValue(ConfigError):
    """A settings class's check of one of its keys failed; :func:`load_settings` names the file and the key."""

    def __init__(self, key: str, message: str):
        super().__init__(message)
        self.key = key


def check_strategy_names(key: str, names: list[str] | None) -> None:
    """Every name in ``names`` is a registered distractor strategy (per-model ones included),
    checked where the list is written, whether or not a suite uses it."""
    bad = registries.unknown(list(names)) if names is not None else []
    if bad:
        raise InvalidValue(
            key,
            f"unknown distractor strategy name(s) {bad}; valid names: {registries.choices()} "
            "(temp is the former name of temp+sem)",
        )
    missing = registries.unknown_tables(registries.tables_of(list(names or [])))
    if missing:
        raise InvalidValue(
            key,
            f"distractor strategies {list(names or [])} read table(s) {missing} that no module registered "
            f"(a plugin registers one with register_table); registered tables: {list(registries.TABLES)}",
        )


def check_own_settings(given: dict[str, dict]) -> None:
    """``strategy_settings`` names strategies that declare settings, with keys and types they
    declare (:func:`factprobe.registries.strategy_settings`)."""
    try:
        registries.strategy_settings(list(given), given)
    except RegistryError as err:
        raise InvalidValue("strategy_settings", str(err)) from None


def _default(value: Any) -> Any:
    """A mutable default, copied for every instance."""
    return field(default_factory=lambda: copy.deepcopy(value))


# --- one class per section ----------------------------------------------------------------


@dataclass(frozen=True)
class Extract:
    """``extract``: labels kept, malformed-line tolerance, unit of parse work, classes left out."""

    languages: list[str]
    max_bad_fraction: float
    chunk_mb: int
    exclude: list[str] = _default([])


@dataclass(frozen=True)
class Diff:
    """``diff``: where single-value relations come from."""

    single_value: str
    single_value_list: str


@dataclass(frozen=True)
class TemplateSet:
    """``templates.sets.<name>``: one named set of templates."""

    format: str
    path: str
    language: str = "en"
    gender: str = "MASC"
    functions: str = "skip"
    checked_only: bool = False

    def files(self, languages: list[str]) -> list[str]:
        """Files the set reads for ``languages`` (the Snakemake inputs of ``build_probes``), laid
        out as its format's entry says (:attr:`factprobe.registries.TemplateFormat.files`)."""
        path, layout = Path(self.path), registries.TEMPLATE_FORMATS[self.format].files
        if layout == "language_files":
            return [str(path / f"{lang}.yaml") for lang in languages]
        if layout == "relation_files":
            return sorted(str(p) for p in path.glob("P*.jsonl"))
        if layout == "language_folders":
            return sorted(str(p) for lang in languages for p in (path / lang).glob("P*.jsonl"))
        return [str(path)]

    def languages(self) -> list[str] | None:
        """Languages the set has templates for, where its format's entry says
        (:attr:`factprobe.registries.TemplateFormat.languages`): the ``<lang>.yaml`` files, the
        ``<lang>/`` folders holding ``P*.jsonl``, a CSV's language columns or the set's
        ``language``; None when the folder or file is absent (its job names it)."""
        path, source = Path(self.path), registries.TEMPLATE_FORMATS[self.format].languages
        if source == "files":
            return sorted(p.stem for p in path.glob("*.yaml"))
        if source == "folders":
            if not path.is_dir():
                return None
            return sorted(p.name for p in path.iterdir() if p.is_dir() and any(p.glob("P*.jsonl")))
        if source == "header":
            try:
                with open(path, newline="", encoding="utf-8-sig") as fh:
                    header = next(csv.reader(fh), [])
            except OSError:
                return None
            return [c.strip() for c in header[2:]]  # columns pid, relation, <lang>...
        return [self.language]


@dataclass(frozen=True)
class Templates:
    """``templates``: the named template sets suites pick from."""

    sets: dict[str, TemplateSet]


@dataclass(frozen=True)
class SuiteTemplates:
    """``suites.<s>.templates``: which sets, styles, ids; first ``max_per_relation`` per key."""

    sets: list[str] = _default(["team"])
    styles: list[str] | None = None
    ids: list[str] | None = None
    max_per_relation: int | None = None


@dataclass(frozen=True)
class FewShot:
    """``suites.<s>.few_shot``: BELIEF-ICL contexts (belief-myriadlama §3.1)."""

    settings: list[str] = _default(["none"])
    instruction: str | dict[str, str] = "Complete each sentence with the correct fact."


@dataclass(frozen=True)
class Changes:
    """``suites.<s>.changes``: which diff rows are a plausibility suite's new facts."""

    statuses: list[str] = _default(["new"])
    rules: list[str] = _default([])


@dataclass(frozen=True)
class Timeline:
    """``suites.<s>.timeline``: dated slices of a timeline suite (probes/timeline.py)."""

    by: str = "statement_date"
    edges: list[int] = _default([])
    bins: int = 5
    measure: str = "k_avg"
    strategy: str | None = None
    n: int | None = None
    penalty: float = 2.0
    per_bin: int | None = None
    popularity_edges: list[float] = _default([])
    min_facts: int = 20
    sharp_width: float = 1.0
    subject_threshold: float = 0.75
    subject_min_facts: int = 1
    confident: float = 0.8
    anchors: int = 2


@dataclass(frozen=True)
class DistractorOverride:
    """``suites.<s>.distractors`` and ``distractors.by_kind.<kind>``: None = inherit."""

    strategies: list[str] | None = None
    n: int | None = None
    pool_size: int | None = None
    search: str | None = None
    # Strategies' own settings, by strategy and key, over the section's (key by key).
    strategy_settings: dict[str, dict] | None = None

    def __post_init__(self) -> None:
        check_strategy_names("strategies", self.strategies)
        check_own_settings(self.strategy_settings or {})


@dataclass(frozen=True)
class SuiteScoring:
    """``suites.<s>.scoring`` and ``scoring.by_mode.<mode>``: None = inherit (``suite_end_marker``)."""

    end_marker: str | None = None


@dataclass(frozen=True)
class SuiteSource:
    """``suites.<s>.source``: where a suite's facts and prompts come from.

    ``dump`` (default): facts sampled from the dump, prompts from templates. ``fluent-mlama``: the
    released Fluent-mLAMA sentences (``probes/fluent.py``) read by build_probes; the dump still
    gives distractors. ``probelm``: PRobELM's ``{MMYYYY}.json`` groups and ``prompts.csv``
    (``probes/released.py``), imported whole by rule import_released instead of build_probes and
    retrieve_distractors (:attr:`imported`). ``triples``: the facts listed in ``path``
    (``probes/importers.read_triples``; distractors paper §4.2), labels from the dump.
    ``verbalization-pairs``: the §4.3 flawed / corrected verbalizations of ``path``
    (``probes/importers.import_verbalization_pairs``). ``myriadlama``: the MyriadLAMA release's
    facts, subject expressions and templates (``probes/listed.myriadlama_suite``).
    """

    format: str = "dump"
    path: str = ""
    months: list[str] = _default([])
    verbalizations: list[str] = _default(["template", "gt", "chatgpt"])

    def __post_init__(self) -> None:
        # The source-format registry is the only list (factprobe.registries.SOURCES).
        try:
            registries.source_entry(self.format, "format")
        except RegistryError as err:
            raise InvalidValue("format", str(err)) from None

    @property
    def entry(self) -> registries.SourceFormat:
        """The format's registry entry: what a suite of this format reads, needs and allows."""
        return registries.SOURCES[self.format]

    @property
    def imported(self) -> bool:
        """Probes and candidates come whole from the release (rule import_released)."""
        return registries.SOURCES[self.format].imported

    @property
    def listed(self) -> bool:
        """The facts are listed in the file ``path`` (an input of build_probes)."""
        return registries.SOURCES[self.format].listed

    def files(self) -> list[str]:
        """The released PRobELM files read (Snakemake inputs): the months' data files, then
        prompts.csv; no ``months`` = every ``MMYYYY.json`` in ``path``."""
        folder = Path(self.path)
        months = list(self.months) or sorted(
            p.stem for p in folder.glob("*.json") if len(p.stem) == 6 and p.stem.isdigit()
        )
        return [str(folder / f"{m}.json") for m in months] + [str(folder / "prompts.csv")]


@dataclass(frozen=True)
class Suite:
    """``suites.<s>``: one probing suite."""

    kind: str
    dump: str
    # Required unless the source format's entry allows leaving it out (relations_optional,
    # checked by config_rules.check_cross_keys); empty then = every relation of the release or the listed file.
    relations: list[str] = _default([])
    description: str = ""
    diff_old: str | None = None
    cutoff: str | None = None
    changes: Changes = _default(Changes())
    languages: list[str] = _default(["en"])
    n_facts: int | None = None
    label_dumps: list[str] | None = None
    strata: int = 1
    # probes/sample.py: relation_strata (per relation, equal-count bins) or popularity_bins (paper 1's reference).
    sampler: str = "relation_strata"
    seed: int | str = 0
    templates: SuiteTemplates = _default(SuiteTemplates())
    subject_aliases: int = 0
    few_shot: FewShot = _default(FewShot())
    distractors: DistractorOverride = _default(DistractorOverride())
    scoring: SuiteScoring = _default(SuiteScoring())
    # True: greedy answer + scoring.samples samples per prompt (BELIEF-ICL); "greedy": the greedy
    # continuation alone; "beams": B(c), a beam search per width of scoring.beam_widths (the
    # overlap baselines of the distractors paper, Table 2, §4.2).
    generate: bool | str = False
    temporal_only: bool = False
    layout: str = "cloze"
    mask_token: str = "[MASK]"
    missing_relations: str = "error"
    # None = the kind's default (CORRECT_SET_DEFAULTS): fluent-mLAMA Table 1 for multilingual suites.
    correct_set: str | None = None
    source: SuiteSource = _default(SuiteSource())
    timeline: Timeline | None = None


@dataclass(frozen=True)
class Hnsw:
    """``distractors.sem.hnsw``: nmslib HNSW parameters."""

    M: int = 32  # noqa: N815 (the config key)
    ef_construction: int = 200
    ef_search: int = 200
    post: int = 2


@dataclass(frozen=True)
class Sem:
    """``distractors.sem``: the semantic index and its search."""

    weighting: str = "tfidf"
    reverse_features: bool = False
    bag: str = "sets"
    namespace: str = "shared"
    bm25_k1: float = 1.2
    bm25_b: float = 0.75
    search: str = "exact"
    hnsw: Hnsw = _default(Hnsw())
    recall_queries: int = 1000
    recall_k: int = 50


@dataclass(frozen=True)
class Appropt:
    """``distractors.appropt``: None = the suite's n, width n, the suite's first language."""

    n: int | None = None
    width: int | None = None
    lang: str | None = None
    styles: list[str] = _default(["completion", "statement", "question"])
    # Cap on one fact's candidate pool (the first Ω-valid type members by sitelinks).
    max_candidates: int | None = 100_000


@dataclass(frozen=True)
class Distractors:
    """``distractors``: defaults of every suite (config/README.md, section distractors)."""

    strategies: list[str] = _default(["random", "sem", "temp+sem"])
    n: int = 10
    by_kind: dict[str, DistractorOverride] = _default({})
    form_threshold: float | None = 90
    valid_ranks: str = "non_deprecated"
    pool_size: int = 50
    shards: int = 1
    sem: Sem = _default(Sem())
    appropt: Appropt = _default(Appropt())
    # Settings a strategy declares itself (factprobe.registries.Strategy.settings), by strategy:
    # the built-ins' (cooccur n and sides, temp+sem earlier_dump, pool source) as a plugin's;
    # every strategy that declares some, its defaults filled in.
    strategy_settings: dict[str, dict] = _default({})

    def __post_init__(self) -> None:
        check_strategy_names("strategies", self.strategies)
        check_own_settings(self.strategy_settings)
        own = registries.strategy_settings(registries.choices(), self.strategy_settings)
        object.__setattr__(self, "strategy_settings", own)


@dataclass(frozen=True)
class Retrieve:
    """One suite's resolved distractor settings (``suite_retrieve``; no defaults: all resolved)."""

    strategies: list[str]
    n: int
    pool_size: int
    search: str
    languages: list[str]
    dump: str
    form_threshold: float | None
    valid_ranks: str
    ef_search: int
    # Pool source dataset on a Fluent-mLAMA release suite: the release the string pools come from.
    dataset: str = ""
    # The own settings of each strategy that declares some, defaults filled in
    # (registries.strategy_settings): what its retriever reads, e.g. ["cooccur"]["n"].
    strategy_settings: dict[str, dict] = _default({})

    def __post_init__(self) -> None:
        # The strategy registry is the only list (factprobe.registries.STRATEGIES); ``temp`` is
        # the former name of the Temp+Sem list (distractors paper §3.3).
        object.__setattr__(self, "strategies", registries.canonical(self.strategies))
        bad = registries.unknown(self.strategies, per_model=False)
        if bad:
            raise ConfigError(
                f"unknown distractor strategies {bad}; retrieval runs {registries.choices(per_model=False)}, "
                f"and the per-model ones {registries.choices(per_model=True)} run in their own rule"
            )
        own = registries.strategy_settings(self.strategies, self.strategy_settings)
        object.__setattr__(self, "strategy_settings", own)

    def own(self, strategy: str) -> dict:
        """The settings strategy ``strategy`` declares, resolved."""
        return self.strategy_settings[strategy]


@dataclass(frozen=True)
class Scoring:
    """``scoring``: how each (suite, model) is scored."""

    models: list[str] = _default([])
    shards: int = 1
    end_marker: str = "eos"
    by_mode: dict[str, SuiteScoring] = _default({})
    token_budget: int = 4096
    no_space_languages: list[str] = _default(["zh", "ja", "th", "lo", "km", "my", "bo"])
    include_translated: bool = True
    sentence_kinds: list[str] = _default(["plausibility"])
    # Scenario sentences (scoring/suite.py): one label per entity; first token
    # scored after BOS (or EOS in its place).
    sentence_forms: str = "label"
    sentence_first_token: str = "conditioned"
    samples: int = 100
    # BELIEF-ICL §3.2: prompts (one per pair, per prompt group) that get the samples; None = all.
    confidence_prompts: int | None = None
    max_new_tokens: int = 12
    # Distractors paper §4.2: the beam widths of B(c) for suites with generate: beams.
    beam_widths: list[int] = _default([1, 2, 5, 10, 20, 30, 50, 100])
    generation_batch_size: int = 16
    topk: int = 100


@dataclass(frozen=True)
class Control:
    """``control``: the builtin:control positive-control model."""

    suites: list[str] = _default([])
    steps: int = 600
    batch_size: int = 32
    lr: float = 3e-3
    n_layer: int = 2
    n_embd: int = 128
    n_head: int = 4
    vocab_size: int = 2000
    max_forms: int = 3
    seed: int = 0
    prior_copies: int = 1
    fact_repeats: int = 2
    taught_until: str | None = None
    # Timeline suites: {YYYYMMDD slice end: share of the slice's facts taught} (a gradual cut-off, a gap).
    taught_fractions: dict[str, float] = _default({})
    # Timeline suites: share of subjects (hash-chosen) none of whose facts is taught.
    untaught_subjects: float = 0.0


@dataclass(frozen=True)
class HumanAlignment:
    """``metrics.human_alignment``: agreement with human judgements (distractors paper §4.2)."""

    path: str = ""
    suites: list[str] = _default([])
    folds: int = 3


@dataclass(frozen=True)
class Metrics:
    """``metrics``: measure settings; ``families`` chooses the measures per suite kind."""

    families: dict[str, list[str]]
    ns: list[int] = _default([1, 2, 3, 5, 10])
    # Fluent-mLAMA Table 1 (metrics/fluent.py): "relation" = the paper's macro over relations,
    # short-GT facts out; "facts" = the mean over all facts, the default because the short-GT rule
    # needs the authors' GT sentences, which a dump-built suite lacks.
    ranking_average: str = "facts"
    # BELIEF §5.1: N = 50,000 samplings; the demo config sets a small N.
    belief_samplings: int = 50_000
    belief_bins: int = 10
    robustness_pair: list[str] = _default(["template", "sentence"])
    # Fewer than n distractors: K at n undefined (reference implementation) or "available".
    short_lists: str = "undefined"
    human_alignment: HumanAlignment = _default(HumanAlignment())
    # Settings a family declares itself (factprobe.registries.Family.settings), by family: the
    # built-ins' (knowledge precision_ns, ranking ties, overlap encoder, ...) as a plugin's,
    # each family that declares some with its defaults filled in.
    family_settings: dict[str, dict] = _default({})

    def __post_init__(self) -> None:
        try:
            own = registries.family_settings(list(registries.FAMILIES), self.family_settings)
        except RegistryError as err:
            raise InvalidValue("family_settings", str(err)) from None
        object.__setattr__(self, "family_settings", own)

    def own(self, family: str) -> dict:
        """The settings family ``family`` declares, resolved."""
        return self.family_settings[family]


@dataclass(frozen=True)
class Report:
    """``report``: the HTML page and its control-model panel."""

    title: str = "factprobe report"
    control_model: str = "control"
    control_strategy: str = "random"
    taught_target: float = 0.9
    chance: float = 0.5
    chance_band: float = 0.15
    dpi: int = 90
    # Percentile bootstrap over facts (factprobe.metrics.uncertainty): intervals and paired tests.
    bootstrap_samples: int = 1000
    bootstrap_seed: int = 0
    confidence_level: float = 0.95


#: Fluent-mLAMA Appendix A instruction; {source}/{target} are the languages' English names.
LLM_INSTRUCTION = (
    "You are a professional {source}-{target} translator. You are given {source} sentences about "
    "subjects and objects. You are also given translations of subjects and objects separately. You "
    "need to translate full sentences to {target}. When translating, you have to use the translated "
    "subjects and objects. Pay special attention to grammatical agreement between the words in the "
    "translated sentences. When translating, follow the examples:"
)


@dataclass(frozen=True)
class Translate:
    """``translate``: sentence-level verbalization of multilingual suites."""

    backend: str = "seq2seq"
    model: str | None = ""
    models: dict[str, str] = _default({})
    source_lang: str = "en"
    languages: list[str] = _default([])
    styles: list[str] = _default(["statement"])
    subject: str = "prefix"
    object: str = "substitute"
    min_score: float = 80
    num_beams: int = 4
    max_new_tokens: int = 128
    batch_size: int = 32
    device: str = "auto"
    dtype: str = "float32"
    lang_codes: dict[str, str] = _default({})
    cache: str = "results/cache/translate"
    llm: str = ""
    few_shot: dict[str, list[dict[str, str]]] = _default({})
    llm_instruction: str = LLM_INSTRUCTION
    language_names: dict[str, str] = _default({})
    word_order: str = "strict"
    # backend llm: the authors' {lang}_{relation}.txt few-shot prompts (Fluent-mLAMA release), and
    # whether a chat model's template wraps the prompt (auto) or not (never).
    prompt_dir: str = ""
    chat_template: str = "never"

    def generation_key(self) -> str:
        """Decoding settings in the translation cache key (they change the output)."""
        return f"beams={self.num_beams};max_new={self.max_new_tokens}"


@dataclass(frozen=True)
class Export:
    """``export``: suites as lm-evaluation-harness tasks and Hugging Face datasets."""

    eos_text: str = "<|endoftext|>"


@dataclass(frozen=True)
class Config:
    """The whole config/config.yaml."""

    dumps: str
    models: str
    extract: Extract
    diff: Diff
    templates: Templates
    suites: dict[str, Suite] = _default({})
    distractors: Distractors = _default(Distractors())
    scoring: Scoring = _default(Scoring())
    control: Control = _default(Control())
    metrics: Metrics = _default(Metrics(families={}))
    report: Report = _default(Report())
    translate: Translate = _default(Translate())
    export: Export = _default(Export())


# --- loading -------------------------------------------------------------------------------


def _convert(hint: Any, value: Any, where: str) -> Any:
    if is_dataclass(hint):
        return load_settings(hint, value, where)
    if typing.get_origin(hint) is dict:
        inner = typing.get_args(hint)[1]
        if is_dataclass(inner):
            return {k: load_settings(inner, v, f"{where}.{k}") for k, v in (value or {}).items()}
    if typing.get_origin(hint) in (typing.Union, types.UnionType) and value is not None:
        classes = [a for a in typing.get_args(hint) if is_dataclass(a)]
        if classes:
            return load_settings(classes[0], value, where)
    return copy.deepcopy(value)


def load_settings(cls: type, data: Any, where: str = "config") -> Any:
    """An instance of the settings dataclass ``cls`` from a (validated) config mapping.

    Absent keys take the class defaults; an unknown or missing required key raises
    ``ConfigError`` naming ``where``. An instance of ``cls`` is returned as is.
    """
    if isinstance(data, cls):
        return data
    data = {} if data is None else dict(data)
    hints = typing.get_type_hints(cls)
    names = [f.name for f in fields(cls)]
    unknown = sorted(set(data) - set(names))
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {unknown}; allowed: {names}")
    try:
        return cls(**{k: _convert(hints[k], v, f"{where}.{k}") for k, v in data.items()})
    except TypeError as err:
        raise ConfigError(f"{where}: {err}") from None
    except InvalidValue as err:
        raise ConfigError(f"{where}.{err.key}: {err}") from None


def plain(settings: Any) -> Any:
    """Builtin-typed copy (dicts and lists) of a settings object, for rule params."""
    return asdict(settings) if is_dataclass(settings) else copy.deepcopy(settings)


#: ``distractors.sem`` as the index rules' params (``sem_bags``, ``build_sem_index``) name it, in
#: order: (param, field; ``hnsw.`` = of the ``hnsw`` block). A job's params are part of its record,
#: so renaming one would rebuild every index.
SEM_PARAMS = (
    ("weighting", "weighting"),
    ("reverse", "reverse_features"),
    ("bag", "bag"),
    ("namespace", "namespace"),
    ("bm25_k1", "bm25_k1"),
    ("bm25_b", "bm25_b"),
    ("hnsw_m", "hnsw.M"),
    ("ef_construction", "hnsw.ef_construction"),
    ("ef_search", "hnsw.ef_search"),
    ("post", "hnsw.post"),
    ("recall_queries", "recall_queries"),
    ("recall_k", "recall_k"),
)


def sem_settings(params: Mapping) -> Sem:
    """The ``distractors.sem`` section of the index rules' params (:func:`sem_index`), as the index
    builders take it (``search`` is no index setting: left at its default)."""
    fields = {f: params[param] for param, f in SEM_PARAMS}
    hnsw = Hnsw(**{f.removeprefix("hnsw."): v for f, v in fields.items() if f.startswith("hnsw.")})
    return Sem(**{f: v for f, v in fields.items() if not f.startswith("hnsw.")}, hnsw=hnsw)
