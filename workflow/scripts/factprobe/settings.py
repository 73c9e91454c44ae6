"""Typed settings: one dataclass per config section, the only place where defaults live.

``workflow/schemas/config.<section>.schema.yaml`` validates the YAML (types, ranges, enums) and
carries the same keys and defaults (``tests/unit/test_settings.py`` checks that they agree).
``common.smk`` builds one ``Config`` at parse time and resolves per-suite settings once
(``suite_*`` below); rules receive them as plain dicts (Snakemake only tracks changes of
builtin-typed params), and rule scripts turn them back into these classes with ``load``.

Light on purpose: only the standard library is imported, so the Snakefile parses without the
scientific stack.
"""

from __future__ import annotations

import copy
import csv
import datetime
import types
import typing
from dataclasses import asdict, dataclass, field, fields, is_dataclass
from pathlib import Path
from typing import Any

from factprobe import registries  # every extension point: standard library only

KINDS = ("knowledge", "multiprompt", "plausibility", "multilingual")


class ConfigError(ValueError):
    """Configuration or registry problem; the message names the file and the key or row."""


class InvalidValue(ConfigError):
    """A settings class's check of one of its keys failed; :func:`load` names the file and the key."""

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
        """Files the set reads for ``languages`` (the Snakemake inputs of ``build_probes``)."""
        path = Path(self.path)
        if self.format == "yaml":
            return [str(path / f"{lang}.yaml") for lang in languages]
        if self.format == "pararel":
            return sorted(str(p) for p in path.glob("P*.jsonl"))
        if self.format == "mpararel":
            return sorted(str(p) for lang in languages for p in (path / lang).glob("P*.jsonl"))
        return [str(path)]

    def languages(self) -> list[str] | None:
        """Languages the set has templates for, read from its files: ``yaml`` the ``<lang>.yaml``
        files, ``mpararel`` the ``<lang>/`` folders holding ``P*.jsonl``, ``xfactr`` the CSV's
        language columns, the single-language formats their ``language``; None when a folder or
        file of a ``mpararel`` / ``xfactr`` set is absent (its job names it)."""
        path = Path(self.path)
        if self.format == "yaml":
            return sorted(p.stem for p in path.glob("*.yaml"))
        if self.format == "mpararel":
            if not path.is_dir():
                return None
            return sorted(p.name for p in path.iterdir() if p.is_dir() and any(p.glob("P*.jsonl")))
        if self.format == "xfactr":
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


@dataclass(frozen=True)
class DistractorOverride:
    """``suites.<s>.distractors`` and ``distractors.by_kind.<kind>``: None = inherit."""

    strategies: list[str] | None = None
    n: int | None = None
    pool_size: int | None = None
    search: str | None = None
    pool_source: str | None = None

    def __post_init__(self) -> None:
        check_strategy_names("strategies", self.strategies)


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
        except registries.RegistryError as err:
            raise InvalidValue("format", str(err)) from None

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
    # Required unless ``source`` is set (the schema checks); empty with a source = every relation.
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
class Cooccur:
    """``distractors.cooccur``: PROBELM Algorithm 1."""

    n: int = 10
    sides: list[str] = _default(["object", "subject"])


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
class Temporal:
    """``distractors.temporal``: which objects count as temporal distractors (§3.3)."""

    earlier_dump: bool = False


@dataclass(frozen=True)
class Distractors:
    """``distractors``: defaults of every suite (config/README.md, section distractors)."""

    strategies: list[str] = _default(["random", "sem", "temp+sem"])
    n: int = 10
    by_kind: dict[str, DistractorOverride] = _default({})
    form_threshold: float | None = 90
    valid_ranks: str = "non_deprecated"
    pool_size: int = 50
    # Every object of the relation in the dump (entities, Ω-filtered; "suite": the suite's facts').
    # Not Fluent-mLAMA's pool, which is "dataset" (§3.3: strings of the dataset's language-relation
    # subset): a dump-built suite has no released subset, and entity candidates keep all their forms.
    pool_source: str = "relation"
    shards: int = 1
    cooccur: Cooccur = _default(Cooccur())
    sem: Sem = _default(Sem())
    appropt: Appropt = _default(Appropt())
    temporal: Temporal = _default(Temporal())
    # Settings a strategy declares itself (factprobe.registries.Strategy.settings), by strategy.
    strategy_settings: dict[str, dict] = _default({})

    def __post_init__(self) -> None:
        check_strategy_names("strategies", self.strategies)
        try:
            registries.strategy_settings(list(self.strategy_settings), self.strategy_settings)
        except registries.RegistryError as err:
            raise InvalidValue("strategy_settings", str(err)) from None


@dataclass(frozen=True)
class Retrieve:
    """One suite's resolved distractor settings (``suite_retrieve``; no defaults: all resolved)."""

    strategies: list[str]
    n: int
    pool_size: int
    search: str
    languages: list[str]
    dump: str
    cooccur_n: int
    cooccur_sides: list[str]
    form_threshold: float | None
    valid_ranks: str
    ef_search: int
    temporal_earlier_dump: bool = False
    pool_source: str = "relation"
    # pool_source dataset on a Fluent-mLAMA release suite: the release the string pools come from.
    dataset: str = ""
    # The own settings of the strategies that declare some (registries.strategy_settings).
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


@dataclass(frozen=True)
class HumanAlignment:
    """``metrics.human_alignment``: agreement with human judgements (distractors paper §4.2)."""

    path: str = ""
    suites: list[str] = _default([])
    folds: int = 3


@dataclass(frozen=True)
class Overlap:
    """``metrics.overlap``: the ROUGE-L and BERTScore baselines (distractors paper Table 2, §4.2)."""

    rouge_units: str = "words"
    # A models.tsv row (prepared, never scored) or a local folder; "" = BERTScore off (ROUGE-L only).
    encoder: str = ""
    layer: int | None = None
    idf: bool = False


@dataclass(frozen=True)
class Metrics:
    """``metrics``: measure settings; ``families`` chooses the measures per suite kind."""

    families: dict[str, list[str]]
    ns: list[int] = _default([1, 2, 3, 5, 10])
    precision_ns: list[int] = _default([1, 5, 10])
    recall_ns: list[int] = _default([1, 2, 3, 4, 5])
    # Fluent-mLAMA Table 1 (metrics/fluent.py): "relation" = the paper's macro over relations,
    # short-GT facts out; "facts" = the mean over all facts, the default because the short-GT rule
    # needs the authors' GT sentences, which a dump-built suite lacks.
    ranking_average: str = "facts"
    # A distractor tying the best correct form: ranks above it ("fail", the default: a tie is not
    # counted as known) or below ("correct_first", the Fluent-mLAMA authors' stable sort).
    ranking_ties: str = "fail"
    # Retrieval writes Temp+Sem as strategy temp+sem already (§3.3); extra concatenations only on request.
    combined_strategies: dict[str, list[str]] = _default({})
    plausibility_strategies: list[str] = _default(["cooccur"])
    # BELIEF §5.1: N = 50,000 samplings; the demo config sets a small N.
    belief_samplings: int = 50_000
    belief_bins: int = 10
    robustness_pair: list[str] = _default(["template", "sentence"])
    # Fewer than n distractors: K at n undefined (reference implementation) or "available".
    short_lists: str = "undefined"
    human_alignment: HumanAlignment = _default(HumanAlignment())
    overlap: Overlap = _default(Overlap())
    # Settings a family declares itself (factprobe.registries.Family.own), by family.
    family_settings: dict[str, dict] = _default({})

    def __post_init__(self) -> None:
        try:
            registries.family_settings(list(self.family_settings), self.family_settings)
        except registries.RegistryError as err:
            raise InvalidValue("family_settings", str(err)) from None


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
        return load(hint, value, where)
    if typing.get_origin(hint) is dict:
        inner = typing.get_args(hint)[1]
        if is_dataclass(inner):
            return {k: load(inner, v, f"{where}.{k}") for k, v in (value or {}).items()}
    if typing.get_origin(hint) in (typing.Union, types.UnionType) and value is not None:
        classes = [a for a in typing.get_args(hint) if is_dataclass(a)]
        if classes:
            return load(classes[0], value, where)
    return copy.deepcopy(value)


def load(cls: type, data: Any, where: str = "config") -> Any:
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


# --- per-suite resolution (what each rule of a suite reads; a change reruns only those rules) ---


def suite_distractors(cfg: Config, suite: str) -> dict:
    """Strategies, n, pool size, search method, languages and dump of one suite.

    Precedence (config/README.md, section distractors): ``suites.<s>.distractors`` over
    ``distractors.by_kind.<kind>`` over the ``distractors`` section.
    """
    section, block = cfg.distractors, cfg.suites[suite]
    layers = [block.distractors, section.by_kind.get(block.kind, DistractorOverride())]
    defaults = {
        "strategies": section.strategies,
        "n": section.n,
        "pool_size": section.pool_size,
        "search": section.sem.search,
        "pool_source": section.pool_source,
    }
    merged = {
        key: copy.deepcopy(next((getattr(x, key) for x in layers if getattr(x, key) is not None), value))
        for key, value in defaults.items()
    }
    return {**merged, "languages": list(block.languages), "dump": block.dump}


def suite_retrieve(cfg: Config, suite: str) -> dict:
    """Every setting the retrieve_distractors job of ``suite`` reads (``Retrieve`` as a dict)."""
    section, own = cfg.distractors, suite_distractors(cfg, suite)
    # Per-model strategies (ApprOpt) run in their own rule, not in retrieval.
    own["strategies"] = [s for s in own["strategies"] if not registries.needs([s], "per_model")]
    resolved = Retrieve(
        **own,
        cooccur_n=section.cooccur.n,
        cooccur_sides=list(section.cooccur.sides),
        form_threshold=section.form_threshold,
        valid_ranks=section.valid_ranks,
        ef_search=section.sem.hnsw.ef_search,
        temporal_earlier_dump=section.temporal.earlier_dump,
        dataset=_pool_dataset(cfg, suite, own["pool_source"]),
        strategy_settings=registries.strategy_settings(own["strategies"], section.strategy_settings),
    )
    params = plain(resolved)
    # Left out when no strategy declares settings: the params of existing runs stay as they were.
    if not params["strategy_settings"]:
        del params["strategy_settings"]
    return params


def _pool_dataset(cfg: Config, suite: str, pool_source: str) -> str:
    """The Fluent-mLAMA release a ``pool_source: dataset`` pool reads (the suite's own source),
    "" otherwise (the pool is then made from the suite's facts)."""
    source = cfg.suites[suite].source
    return source.path if pool_source == "dataset" and source.format == "fluent-mlama" else ""


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


#: Scoring modes (rule score_shard): the form's continuation, or the whole sentence (PROBELM §4.1).
SCORING_MODES = ("continuation", "sentence")


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


#: Which forms of a correct object count (fluent-mLAMA): ``table1`` = label + inflected forms
#: (Table 1, §3.2), ``wide`` = label + inflected forms + aliases (§5.2, Appendix E).
CORRECT_SETS = ("table1", "wide")
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
        if str(retrieve["dump"]) != str(dump) or not registries.needs(retrieve["strategies"], "index"):
            continue
        # A listed-facts suite with its relations named bounds the index like a dump-built one.
        listed = suite.source.listed and suite.relations
        if suite.source.format != "dump" and not listed:
            return {"relations": None, "type_dumps": []}
        relations |= set(suite.relations)
        type_dumps |= {str(d) for d in suite_dumps(suite)}
    return {"relations": sorted(relations), "type_dumps": sorted(type_dumps)}


def suite_dumps(suite: Suite) -> list[str]:
    """Dumps whose labels and types a suite reads: ``label_dumps``, else its dump (+ diff_old)."""
    own = [suite.dump] + ([suite.diff_old] if suite.kind == "plausibility" and suite.diff_old else [])
    return suite.label_dumps or own


def sem_index(cfg: Config) -> dict:
    """Keyword arguments of ``sem_index.build_index`` (``distractors.sem``)."""
    sem = cfg.distractors.sem
    return {
        "weighting": sem.weighting,
        "reverse": sem.reverse_features,
        "bag": sem.bag,
        "namespace": sem.namespace,
        "bm25_k1": sem.bm25_k1,
        "bm25_b": sem.bm25_b,
        "hnsw_m": sem.hnsw.M,
        "ef_construction": sem.hnsw.ef_construction,
        "ef_search": sem.hnsw.ef_search,
        "post": sem.hnsw.post,
        "recall_queries": sem.recall_queries,
        "recall_k": sem.recall_k,
    }


def suite_families(cfg: Config, suite: str) -> list[str]:
    """Measure families of a suite (``metrics.families`` of its kind)."""
    return list(cfg.metrics.families.get(cfg.suites[suite].kind, []))


def suite_metrics(cfg: Config, suite: str) -> dict:
    """The ``metrics`` keys the suite's families read (+ robustness_pair, read by every suite):
    a change of e.g. ``belief_bins`` reruns only suites with a BELIEF family."""
    families = suite_families(cfg, suite)
    # What each family reads: its factprobe.registries.FAMILIES entry (the registry of families).
    unknown = registries.unknown_families(families)
    if unknown:
        raise ConfigError(
            f"metrics.families.{cfg.suites[suite].kind}: unknown families {unknown}; "
            f"choose from {list(registries.FAMILIES)}"
        )
    keys = {"robustness_pair"} | {k for f in families for k in registries.FAMILIES[f].settings}
    values = plain(cfg.metrics)
    out = {"families": families, **{k: values[k] for k in sorted(keys)}}
    # Only where a family declares settings: the params of other runs stay as they were.
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
    (``by: statement_date``), the last edge not after the dump (its facts are true at the dump)."""
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


def check_statement_edges(suite: Suite, where: str) -> None:
    """``by: statement_date``: at least three ascending edges, the last not after the dump."""
    edges = [int(e) for e in suite.timeline.edges]
    if len(edges) < 3 or any(b <= a for a, b in zip(edges, edges[1:], strict=False)):
        raise ConfigError(f"{where}.timeline.edges: need >= 3 ascending YYYYMMDD dates, got {edges}")
    if edges[-1] > int(suite.dump):
        raise ConfigError(f"{where}.timeline.edges: {edges[-1]} is after the suite's dump {suite.dump}")


def check_cross_keys(cfg: Config, enabled: list[str], source: str = "config/config.yaml") -> None:
    """Suites' dumps enabled and template sets defined, plausibility dates ordered, Precision@n
    within the top-k."""
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
    precision = max(cfg.metrics.precision_ns or [1])
    if precision > cfg.scoring.topk:
        raise ConfigError(
            f"{source}: metrics.precision_ns asks for Precision@{precision} but scoring.topk is "
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
        path = human.path or (
            cfg.suites[name].source.path if cfg.suites[name].source.format == "triples" else ""
        )
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
        if suite.source.format != "dump":
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
