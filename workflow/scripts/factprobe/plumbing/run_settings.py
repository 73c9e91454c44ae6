"""The run's settings, resolved once at parse time for the rules (``workflow/rules/common.smk``).

Every rule receives its settings as plain dicts through ``lookup()``: Snakemake's params trigger
compares builtin types only, so a changed setting reruns just the jobs that read it
(config/README.md, "When jobs rerun"). The per-suite rules of precedence live in
:mod:`factprobe.config_rules` (``suite_*``); this module applies them to every suite, model and dump
of one run. Light (stdlib + settings): it is imported while the workflow parses.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from factprobe import config_rules, registries
from factprobe import settings as S
from factprobe.settings import Config

#: Config ``report`` keys of the bootstrap intervals (leaderboard, control check).
BOOTSTRAP_KEYS = ("bootstrap_samples", "bootstrap_seed", "confidence_level")
#: Config ``report`` keys the control check reads (so ``report.dpi`` does not rerun it).
CONTROL_CHECK_KEYS = ("control_strategy", "taught_target", "chance_band", *BOOTSTRAP_KEYS)


@dataclass(frozen=True)
class RunSettings:
    """What the rules read, per suite / model / dump: ``RUN.<field>`` in the rule files, a few
    under names of their own (in brackets) in ``common.smk`` or in ``functions/<stage>.smk``."""

    mt_rows: list[str]  # seq2seq translators among models.tsv rows
    score_models: list[str]  # SCORE_MODELS
    model_params: dict[str, dict]  # models.tsv rows without bookkeeping
    prepare_params: dict[str, dict]  # what decides a prepared folder
    suite_params: dict[str, dict]  # plain suite blocks
    template_sets: dict[str, dict]  # template sets per suite
    distractors: dict[str, dict]  # DISTRACTOR_SETTINGS
    retrieve: dict[str, dict]  # RETRIEVE_SETTINGS
    appropt: dict[str, dict[str, dict]]  # APPROPT_SETTINGS: suite -> model -> settings
    metrics: dict[str, dict]  # per-suite metrics settings
    correct_sets: dict[str, str]  # suites.<s>.correct_set
    scoring_modes: dict[str, str]  # continuation or sentence
    end_markers: dict[str, str]  # END_MARKERS (per suite)
    model_cutoffs: dict[str, dict[str, dict]]  # MODEL_CUTOFFS: suite -> model -> cut-off
    sem_index: dict  # SEM_INDEX_SETTINGS
    sem_rows: dict[str, dict]  # SEM_ROWS: dump -> index rows
    sem_hnsw: dict[str, bool]  # dump -> whether a suite searches its index with HNSW
    control: dict  # CONTROL_PARAMS
    control_taught: dict[str, bool]  # CONTROL_TAUGHT
    generation_samples: dict[str, int]  # samples per prompt besides greedy, per suite
    generation_beams: dict[str, list[int]]  # B(c) beam widths per suite ([]: no beam search)
    bootstrap: dict  # report keys of the bootstrap intervals (leaderboard, summaries)
    control_check: dict  # report keys the control check reads


def translation_models(cfg: Config, model_rows: dict[str, dict]) -> list[str]:
    """Seq2seq translation models named by models.tsv rows: prepared like every model (offline
    afterwards) and never scored as causal LMs; none with ``translate.backend`` ``llm``."""
    if cfg.translate.backend != "seq2seq":
        return []
    return sorted({cfg.translate.model, *cfg.translate.models.values()} & set(model_rows))


def encoder_models(cfg: Config, model_rows: dict[str, dict]) -> list[str]:
    """The BERTScore encoder when ``metrics.family_settings.overlap.encoder`` names a models.tsv
    row: prepared like every model (offline afterwards) and never scored as a causal LM."""
    return sorted({cfg.metrics.own("overlap")["encoder"]} & set(model_rows))


def scored_models(cfg: Config, model_rows: dict[str, dict], mt_rows: list[str]) -> list[str]:
    """Models scored on every suite: ``scoring.models``, else every registry row but translators."""
    return cfg.scoring.models or [m for m in model_rows if m not in mt_rows]


def suite_pattern(names: list[str], none: str) -> str:
    """A wildcard constraint matching exactly ``names`` (``none``, which no suite is called, if empty)."""
    return "|".join(re.escape(s) for s in names) or none


def released_suites(cfg: Config) -> list[str]:
    """Suites imported from a released benchmark (rule import_released), in config order."""
    return [s for s, block in cfg.suites.items() if block.source.imported]


def built_suites(cfg: Config) -> list[str]:
    """Suites built from a dump (build_probes + retrieve_distractors), in config order."""
    return [s for s, block in cfg.suites.items() if not block.source.imported]


def reads_release_only(cfg: Config, suite: str) -> bool:
    """Whether a suite reads the Fluent-mLAMA release alone, no dump table: its prompts and forms
    come from the release (``source.format: fluent-mlama``) and its only distractors are the
    release's string pool (strategy ``pool``, ``source: dataset``), which needs neither Ω
    nor types. Such a suite plans no download or extraction, and no translation (its sentences
    are the release's)."""
    if not cfg.suites[suite].source.entry.release_pool:
        return False
    strategies = set(registries.canonical(list(config_rules.suite_distractors(cfg, suite)["strategies"])))
    return strategies == {"pool"} and bool(config_rules.suite_retrieve(cfg, suite).get("dataset"))


def release_only_suites(cfg: Config) -> list[str]:
    """The suites of :func:`reads_release_only`, in config order."""
    return [s for s in cfg.suites if reads_release_only(cfg, s)]


def translated_suites(cfg: Config) -> list[str]:
    """Multilingual suites whose prompts the translate stage turns into sentences: those built
    from templates (a released suite's sentences are the release's own)."""
    return [
        s for s, block in cfg.suites.items() if block.kind == "multilingual" and block.source.entry.sampled
    ]


def resolve(cfg: Config, dump_rows: dict[str, dict], model_rows: dict[str, dict]) -> RunSettings:
    """Every per-suite, per-model and per-dump setting of one run (``common.smk`` reads these)."""
    suites = cfg.suites
    mt_rows = translation_models(cfg, model_rows)
    return RunSettings(
        mt_rows=mt_rows,
        score_models=scored_models(cfg, model_rows, [*mt_rows, *encoder_models(cfg, model_rows)]),
        model_params={m: {k: v for k, v in row.items() if k != "_line"} for m, row in model_rows.items()},
        # A change to dtype, device or cutoff must not rerun (and so trip over the protected
        # output of) prepare_model: only these decide a prepared folder's weights.
        prepare_params={
            m: {k: row.get(k, "") for k in ("name", "source", "revision")} for m, row in model_rows.items()
        },
        suite_params={s: S.plain(block) for s, block in suites.items()},
        template_sets={s: config_rules.suite_template_sets(cfg, s) for s in suites},
        distractors={s: config_rules.suite_distractors(cfg, s) for s in suites},
        retrieve={s: config_rules.suite_retrieve(cfg, s) for s in suites},
        appropt={
            s: {m: config_rules.suite_appropt(cfg, s, row) for m, row in model_rows.items()} for s in suites
        },
        metrics={s: config_rules.suite_metrics(cfg, s) for s in suites},
        correct_sets={s: config_rules.suite_correct_set(cfg, s) for s in suites},
        scoring_modes={s: config_rules.suite_scoring_mode(cfg, s) for s in suites},
        end_markers={s: config_rules.suite_end_marker(cfg, s) for s in suites},
        model_cutoffs={
            s: {m: config_rules.suite_model_cutoff(cfg, s, row) for m, row in model_rows.items()}
            for s in suites
        },
        sem_index=config_rules.sem_index(cfg),
        sem_rows={dump: config_rules.sem_index_rows(cfg, dump) for dump in dump_rows},
        sem_hnsw={dump: searches_hnsw(cfg, dump) for dump in dump_rows},
        control=config_rules.control_params(cfg),
        control_taught={s: s in cfg.control.suites for s in suites},
        generation_samples={s: generation_samples(cfg, s) for s in suites},
        generation_beams={s: generation_beams(cfg, s) for s in suites},
        bootstrap=report_settings(cfg, BOOTSTRAP_KEYS),
        control_check=report_settings(cfg, CONTROL_CHECK_KEYS),
    )


def searches_hnsw(cfg: Config, dump: str) -> bool:
    """Whether a suite searches ``dump``'s semantic index with HNSW (else the graph is not built:
    its build grows as n^1.3)."""
    return any(
        r["search"] == "hnsw" and r["dump"] == dump
        for r in (config_rules.suite_retrieve(cfg, s) for s in cfg.suites)
        if "sem_index" in registries.tables_of(r["strategies"])
    )


#: Share of one retrieval job's state above its floor that every shard holds whatever its slice:
#: the pages of the suite's preparation it maps (types, forms, type slices; prepare_retrieval) and
#: the products it reads: about a third of one job's state above its imports, fitted at 1M
#: entities on the knowledge suite (benchmarks/RESULTS.md, "Retrieval shard memory").
RETRIEVE_SHARED = 0.35


def retrieve_shard_factor(strategies: list[str], shards: int, per_mb: float = 4.0) -> float:
    """MB of memory per MB of input of one retrieval shard: ``per_mb`` (one job's factor) times its
    slice of the state, ``RETRIEVE_SHARED + (1 - RETRIEVE_SHARED) / shards`` (a
    shard holds the statements of its own subjects). Strategies that read their relations'
    statements whole (co-occurrence, table ``cooccur``) do so in every shard: no division."""
    shared = 1.0 if "cooccur" in registries.tables_of(strategies) else RETRIEVE_SHARED
    return per_mb * (shared + (1 - shared) / shards)


def generation_samples(cfg: Config, suite: str) -> int:
    """Multinomial samples per prompt in generation mode: none for a greedy-only suite
    (``generate: greedy``), else ``scoring.samples``."""
    return 0 if cfg.suites[suite].generate in ("greedy", "beams") else cfg.scoring.samples


def generation_beams(cfg: Config, suite: str) -> list[int]:
    """Beam widths of B(c) (distractors paper §4.2) for a ``generate: beams`` suite, else none."""
    return list(cfg.scoring.beam_widths) if cfg.suites[suite].generate == "beams" else []


def dumps_read_by(cfg: Config, suites) -> list[str]:
    """The dumps ``suites`` read (their dump, label dumps, a plausibility suite's older dump)."""
    used: set[str] = set()
    for suite in suites:
        block = cfg.suites[suite]
        used.update(config_rules.suite_dumps(block), [block.dump])
        if block.kind == "plausibility" and block.diff_old:
            used.add(block.diff_old)
    return sorted(used)


def report_settings(cfg: Config, keys: tuple[str, ...]) -> dict:
    """The config ``report`` keys ``keys`` (what one rule reads of the section, so the others
    do not rerun it)."""
    return {k: v for k, v in S.plain(cfg.report).items() if k in keys}
