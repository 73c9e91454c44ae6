import functools
import os
import re
import sys
from pathlib import Path

from snakemake.exceptions import WorkflowError

# The workflow's own directory (repository root): code, schemas and bundled resources are read
# from here, data paths from the working directory (config/README.md, "Paths").
# workflow.basedir is the *main* Snakefile's directory, the user's one under `module`.
_HERE = str(workflow.current_basedir)
if not os.path.isdir(_HERE):
    raise WorkflowError(
        f"factprobe must be on the local file system (its rules import its library while "
        f"parsing), not {_HERE}: clone the repository at the tag and point the module's "
        "`snakefile:` at <clone>/workflow/Snakefile (docs/running.md)"
    )
WORKFLOW_ROOT = Path(_HERE).resolve().parents[1]
SCRIPTS = WORKFLOW_ROOT / "workflow" / "scripts"
sys.path.insert(0, str(SCRIPTS))
# Only the light settings/registry modules (stdlib, pyyaml, jsonschema): parsing needs no science stack.
from factprobe import run_inputs  # noqa: E402
from factprobe import run_settings  # noqa: E402
from factprobe import config_rules  # noqa: E402
from factprobe import settings  # noqa: E402
from factprobe import registries  # noqa: E402 (every extension point)
from factprobe.config_check import config_source, load_run, resolve_path  # noqa: E402
from factprobe.diskspace import input_scaled, input_size_mb  # noqa: E402
from factprobe.distractors.semantic.part_count import dump_parts  # noqa: E402
from factprobe.profiles import profile_mix_here  # noqa: E402

SCHEMAS = WORKFLOW_ROOT / "workflow" / "schemas"

# `--profile profiles/slurm` would run the cluster job with the local profile on top of it.
_MIX = profile_mix_here(sys.argv, os.environ, Path.cwd())
if _MIX is not None:
    raise WorkflowError(_MIX)

# Everything is validated here, at parse time, so bad config fails before any job runs.
# Errors name the config file(s) actually given (--configfile), not always config/config.yaml.
CONFIG_SOURCE = config_source(
    workflow.overwrite_configfiles,
    workflow.configfiles,
    replaced=workflow.config_settings.replace_workflow_config,
)
CFG, DUMPS, MODELS = load_run(config, WORKFLOW_ROOT, SCHEMAS, CONFIG_SOURCE)
ENABLED = [row["dump"] for row in DUMPS if row["enabled"]]
DUMP_ROWS = {row["dump"]: row for row in DUMPS}
MODEL_ROWS = {row["name"]: row for row in MODELS}
SUITES = CFG.suites
MULTILINGUAL_SUITES = [s for s, block in SUITES.items() if block.kind == "multilingual"]
# Multilingual suites the translate stage verbalizes (not a release's own sentences).
TRANSLATED_SUITES = run_settings.translated_suites(CFG)
# Suites that read the Fluent-mLAMA release alone: no download, extraction or translation.
RELEASE_ONLY = run_settings.release_only_suites(CFG)
# Suites imported from a released benchmark (rule import_released) vs built from the dump
# (build_probes + retrieve_distractors): disjoint wildcard constraints pick the rule.
RELEASED_SUITES = run_settings.suite_pattern(
    run_settings.released_suites(CFG), "no-released-suite"
)
BUILT_SUITES = run_settings.suite_pattern(
    run_settings.built_suites(CFG), "no-built-suite"
)
# One list for every consumer of the encoding rule: scoring, ApprOpt, control training.
NO_SPACE_LANGUAGES = CFG.scoring.no_space_languages

# Settings resolved once in the library (factprobe.run_settings, tested in Python) and handed
# to rules as plain dicts with lookup(): RUN.<field>, a few under names of their own.
RUN = run_settings.resolve(CFG, DUMP_ROWS, MODEL_ROWS)
SCORE_MODELS = RUN.score_models
DISTRACTOR_SETTINGS = RUN.distractors
RETRIEVE_SETTINGS = RUN.retrieve
APPROPT_SETTINGS = RUN.appropt
END_MARKERS = RUN.end_markers
MODEL_CUTOFFS = RUN.model_cutoffs
SEM_INDEX_SETTINGS = RUN.sem_index
SEM_ROWS = RUN.sem_rows
# Memory (MB) and runtime (min) of the jobs that grow with their inputs: floor + factor x input
# MB, doubled on a retry. Factors: benchmarks/scale.py (docs/profiles.md).
# mem_mb is capped at 64 GB (the per-job memory bound; a retry asks twice that).
# build_probes streams a relation in parts: its state stays ≈ 2 GB at full size by
# benchmarks/scale.py, so it asks for a core's share of a 16-core / 128 GB node; DuckDB spills beyond.
probes_mem_mb = input_scaled("mem_mb", 40, 2000, "build_probes", 8000)
probes_runtime = input_scaled("runtime", 0.2, 30, "build_probes")


def sem_parts_of(wildcards):
    """Parts of the dump's semantic index: one per semantic.part_count.PART_DUMP_BYTES of
    its file (in place or downloaded; 1 while not downloaded yet), so that a sem_bags job counts
    a bounded number of non-zeros."""
    return dump_parts(dump_file(wildcards))


sem_bags_mem_mb = input_scaled("mem_mb", 60, 2000, "sem_bags", 64000, sem_parts_of)
sem_bags_runtime = input_scaled("runtime", 2, 30, "sem_bags", None, sem_parts_of)
# The merge holds the vocabulary and a block of rows (the HNSW graph, when searched, the matrix).
sem_index_mem_mb = input_scaled("mem_mb", 4, 2000, "build_sem_index", 64000)
sem_index_runtime = input_scaled("runtime", 0.5, 30, "build_sem_index")
retrieve_mem_mb = input_scaled("mem_mb", 4, 2000, "retrieve_distractors", 64000)


def retrieve_shard_mem_mb(wildcards, input, attempt=1):
    """A retrieval shard's slice of one job's state (run_settings.retrieve_shard_factor)."""
    strategies = DISTRACTOR_SETTINGS[wildcards.suite]["strategies"]
    per_mb = run_settings.retrieve_shard_factor(strategies, CFG.distractors.shards)
    scaled = input_scaled("mem_mb", per_mb, 2000, "retrieve_shard", 64000)
    return scaled(wildcards, input, attempt)


retrieve_runtime = input_scaled("runtime", 0.05, 30, "retrieve_distractors")
CONTROL_PARAMS = RUN.control
CONTROL_TAUGHT = RUN.control_taught


wildcard_constraints:
    dump=r"\d{8}",
    old=r"\d{8}",
    new=r"\d{8}",
    suite="|".join(re.escape(s) for s in SUITES) or "no-suite-configured",
    # Model names may contain dots: "{model}.parquet" must not match "x.forms.parquet".
    model="|".join(re.escape(m) for m in MODEL_ROWS) or "no-model",


def library(script):
    """The code input of ``script``: its stamp of the factprobe modules it reaches
    (factprobe.run_inputs.library_inputs)."""
    return run_inputs.library_inputs(script, SCRIPTS, Path.cwd())


def bundled(path):
    """A file of the workflow's own resources, unless the working directory has its own copy."""
    return resolve_path(path, WORKFLOW_ROOT)


def model_folder(suite, model):
    """The folder a job loads ``model`` from: the suite's trained control model, or the folder
    rule prepare_model made from the models.tsv row (jobs never read a source directly).
    """
    control = run_inputs.is_control(MODEL_ROWS[model])
    out = rules.train_control if control else rules.prepare_model
    return out.output.model.format(suite=suite, model=model)


def translate_inputs(wildcards):
    folder = functools.partial(model_folder, wildcards.suite)
    return run_inputs.translating_models(CFG, RUN.mt_rows, folder)


def model_source_files(wildcards):
    return run_inputs.model_source_files(MODEL_ROWS[wildcards.model])


# --- download / extract / diff -----------------------------------------------------------


def dump_file(wildcards):
    return run_inputs.dump_file(
        DUMP_ROWS[wildcards.dump], rules.download_dump.output.dump
    )


def local_dump_checksum(wildcards):
    return run_inputs.local_dump_checksum(DUMP_ROWS[wildcards.dump])


def extract_exclude_params():
    """``{"exclude": [...]}`` when ``extract.exclude`` is set, else nothing (the rule's params then
    stay those of runs made before the key existed)."""
    return {"exclude": list(CFG.extract.exclude)} if CFG.extract.exclude else {}


def extract_table(name, dump):
    """Path of extraction table ``name`` of a registered ``dump``."""
    template = getattr(rules.extract_dump.output, name)
    return run_inputs.extract_path(template, dump, DUMP_ROWS, CFG.dumps)


def diff_inputs(wildcards):
    return run_inputs.diff_inputs(CFG, wildcards.old, wildcards.new, extract_table)


def temporal_earlier(wildcards):
    dumps = run_inputs.earlier_dumps(ENABLED, wildcards.dump)
    return [extract_table("claims", d) for d in dumps]


# --- probes ------------------------------------------------------------------------------


def suite_dumps(suite):
    """Dumps whose labels and types a suite reads: ``label_dumps``, else its dump (+ diff_old)."""
    return config_rules.suite_dumps(SUITES[suite])


def released_inputs(wildcards):
    lib = library("import_released.py")
    return run_inputs.released_inputs(CFG, wildcards.suite, extract_table, lib)


def probe_inputs(wildcards):
    paths = rules.diff_dumps.output.changes, rules.temporal_view.output.temporal
    args = CFG, wildcards.suite, RUN.template_sets, extract_table
    only = wildcards.suite in RELEASE_ONLY
    files = run_inputs.probe_inputs(
        *args, library("build_probes.py"), *paths, release_only=only
    )
    return {
        **files,
        **run_inputs.timeline_inputs(CFG, wildcards.suite, ENABLED, paths[0]),
    }


# --- distractors -------------------------------------------------------------------------


def uses_appropt(suite):
    return registries.needs(DISTRACTOR_SETTINGS[suite]["strategies"], "per_model")


def omega_inputs(suite):
    probes = rules.build_probes.output
    return run_inputs.omega_inputs(
        CFG, suite, probes, extract_table, suite in RELEASE_ONLY
    )


def sem_index_types(wildcards):
    """Types of the dumps the searching suites type entities from (the index's candidate rows)."""
    return [extract_table("types", d) for d in SEM_ROWS[wildcards.dump]["type_dumps"]]


def sem_index_parts(wildcards):
    """The sem_bags folders of a dump's index, parts 0..P-1 (sem_parts_of)."""
    out = rules.sem_bags.output.bags
    return [
        out.format(dump=wildcards.dump, part=p) for p in range(sem_parts_of(wildcards))
    ]


def retrieve_inputs(wildcards):
    """One job (distractors.shards 1): as retrieve_shard_inputs; else the suite's shards."""
    # A release-only suite has no Ω to shard by subject: one job.
    if CFG.distractors.shards == 1 or wildcards.suite in RELEASE_ONLY:
        return retrieve_shard_inputs(wildcards)
    facts, lib = rules.build_probes.output.facts, library("retrieve_distractors.py")
    out, shards = rules.retrieve_shard.output, CFG.distractors.shards
    return run_inputs.retrieve_gather_inputs(wildcards.suite, shards, facts, out, lib)


def table_outputs():
    """Output templates a strategy table may read (registries.TABLES, paths)."""
    return {
        "sem_index": rules.build_sem_index.output.index,
        "temporal": rules.temporal_view.output.temporal,
    }


def retrieve_shard_inputs(wildcards):
    retrieve = DISTRACTOR_SETTINGS[wildcards.suite]
    omega, lib = omega_inputs(wildcards.suite), library("retrieve_distractors.py")
    prepared = rules.prepare_retrieval.output.prepared
    shards = CFG.distractors.shards
    return run_inputs.retrieve_job_inputs(
        retrieve,
        omega,
        lib,
        table_outputs(),
        (
            None
            if wildcards.suite in RELEASE_ONLY
            else run_inputs.shard_prepared(wildcards.suite, shards, prepared)
        ),
    )


def prepare_retrieval_inputs(wildcards):
    """The Ω tables of a sharded suite's preparation, and its index where Sem searches exactly."""
    retrieve = RETRIEVE_SETTINGS[wildcards.suite]
    index, lib = rules.build_sem_index.output.index, library("prepare_retrieval.py")
    return run_inputs.prepare_inputs(
        retrieve, omega_inputs(wildcards.suite), lib, index
    )


def appropt_inputs(wildcards):
    """Ω tables, the suite's prompts, the model's folder, and the dump's entities (sitelinks:
    the prior that caps a huge type's candidate pool)."""
    files = omega_inputs(wildcards.suite)
    files["entities"] = extract_table("entities", SUITES[wildcards.suite].dump)
    files["lib"] = library("appropt_distractors.py")
    files["prompts"] = rules.build_probes.output.prompts.format(suite=wildcards.suite)
    files["model"] = model_folder(wildcards.suite, wildcards.model)
    return files


# --- scoring -----------------------------------------------------------------------------


def suite_table_inputs(suite):
    """The suite's probe tables scoring merges: prompts, candidates, forms (+ translations)."""
    probes, found = rules.build_probes.output, rules.retrieve_distractors.output
    files = {
        "prompts": probes.prompts.format(suite=suite),
        "candidates": found.candidates.format(suite=suite),
        "forms": found.forms.format(suite=suite),
    }
    if suite in TRANSLATED_SUITES and CFG.scoring.include_translated:
        translated = rules.translate_prompts.output
        files["translated_prompts"] = translated.prompts.format(suite=suite)
        files["translated_forms"] = translated.forms.format(suite=suite)
    return files


def swap_inputs(wildcards):
    """The suite's probe tables and facts (subject swaps: PROBELM Algorithm 1)."""
    files = suite_table_inputs(wildcards.suite)
    files["facts"] = rules.build_probes.output.facts.format(suite=wildcards.suite)
    files["lib"] = library("build_subject_swaps.py")
    return files


def score_inputs(wildcards):
    """Probe tables of the suite (+ translations, + subject swaps in sentence mode, + per-model
    ApprOpt), the model, the library."""
    suite, keys = wildcards.suite, {"suite": wildcards.suite, "model": wildcards.model}
    files = suite_table_inputs(suite)
    files["lib"] = library("score_shard.py")
    if RUN.scoring_modes[suite] == "sentence":
        swaps = rules.build_subject_swaps.output.swaps
        files["subject_swaps"] = swaps.format(suite=suite)
    if uses_appropt(suite):
        appropt = rules.appropt_distractors.output
        files["appropt"] = appropt.candidates.format(**keys)
        files["appropt_forms"] = appropt.forms.format(**keys)
    files["model"] = model_folder(suite, wildcards.model)
    return files


def generate_inputs(wildcards):
    """Prompts of the suite and the model's folder (generation needs no candidates); beam suites
    also their facts and forms (each prompt's token limit: its object's longest form + 5).
    """
    suite = wildcards.suite
    files = {
        "prompts": rules.build_probes.output.prompts.format(suite=suite),
        "lib": library("generate_shard.py"),
        "model": model_folder(suite, wildcards.model),
    }
    if RUN.generation_beams[suite]:
        files["facts"] = rules.build_probes.output.facts.format(suite=suite)
        files["forms"] = rules.retrieve_distractors.output.forms.format(suite=suite)
    return files


def generate_shard_files(wildcards):
    """Every generation shard of one (suite, model), gathered by generate_suite."""
    out, shards = rules.generate_shard.output.generations, range(CFG.scoring.shards)
    keys = {"suite": wildcards.suite, "model": wildcards.model}
    return {"shards": expand(out, shard=shards, **keys)}


def score_shard_files(wildcards):
    """Every shard of one (suite, model) (scores and top-k tables), gathered by score_suite."""
    out, shards = rules.score_shard.output, range(CFG.scoring.shards)
    keys = {"suite": wildcards.suite, "model": wildcards.model}
    return {
        "shards": expand(out.scores, shard=shards, **keys),
        "topk_shards": expand(out.topk, shard=shards, **keys),
    }


# --- metrics and report ------------------------------------------------------------------


def metrics_inputs(wildcards):
    """Tables one (suite, model) job reads; optional ones only where the suite produces them."""
    suite, model = wildcards.suite, wildcards.model
    files = {k: v for k, v in score_inputs(wildcards).items() if k != "model"}
    files.update(
        scores=rules.score_suite.output.scores.format(suite=suite, model=model),
        topk=rules.score_suite.output.topk.format(suite=suite, model=model),
        facts=rules.build_probes.output.facts.format(suite=suite),
        lib=library("compute_metrics.py"),
    )
    if SUITES[suite].generate:
        out = rules.generate_suite.output.generations
        files["generations"] = out.format(suite=suite, model=model)
    encoder = run_inputs.needs_encoder(
        CFG, RUN.metrics[suite]["families"], RUN.model_params
    )
    if encoder:  # BERTScore's encoder named by a models.tsv row: its prepared folder
        files["encoder"] = rules.prepare_model.output.model.format(model=encoder)
    if MODEL_ROWS[model].get("backend") == "masked":
        # BELIEF §2.1: a masked LM's prediction is matched by its own tokenizer
        files["tokenizer"] = model_folder(suite, model)
    return files


def suite_metric_tables(wildcards):
    """Per-fact and suite-level tables of every model on one suite."""
    out, suite = rules.compute_metrics.output, wildcards.suite
    return {
        "per_fact": expand(out.per_fact, suite=suite, model=SCORE_MODELS),
        "suite": expand(out.suite, suite=suite, model=SCORE_MODELS),
    }


def human_file(wildcards):
    return run_inputs.human_file(CFG, wildcards.suite)


def robustness_per_fact(wildcards):
    """Every model's per-fact table of one verbalization-pairs suite (Table 4)."""
    out = rules.compute_metrics.output.per_fact
    return expand(out, suite=wildcards.suite, model=SCORE_MODELS)


def robustness_alignment(wildcards):
    """The human_alignment.csv whose fold-best configurations Table 4 averages over."""
    return rules.human_alignment.output.table.format(suite=HUMAN_SUITES[0])


def human_cloze_tables(wildcards):
    """Every model's measures by number of cloze sentences on one suite (§5.1 Fig. 4)."""
    out = rules.cloze_subsets.output.cloze
    return expand(out, suite=wildcards.suite, model=SCORE_MODELS)


def report_provenance():
    """Parse-time part of the report's provenance block (factprobe.report.provenance)."""
    from factprobe.report import provenance as P
    from factprobe.wikidata.resolve import record_paths

    used = run_settings.dumps_read_by(CFG, SUITES)
    records = record_paths(DUMP_ROWS, rules.download_dump.output.dump)
    roots = [Path.cwd(), WORKFLOW_ROOT]
    dumps = P.dump_records(DUMP_ROWS, used, roots, records)
    plugins = P.plugin_records(*run_inputs.loaded_plugins(SCRIPTS))
    return P.run_provenance(
        WORKFLOW_ROOT,
        settings.plain(CFG),
        RUN.suite_params,
        SCORE_MODELS,
        dumps,
        plugins,
    )


def report_inputs(wildcards):
    """Leaderboard (+ paired comparison), every suite's summary and facts, the control model's
    control_check tables and trained folders (provenance)."""
    name = CFG.report.control_model
    suites = list(SUITES)
    checked = run_inputs.report_control_suites(CFG, SCORE_MODELS)
    trained = run_inputs.report_control_model_suites(CFG, SCORE_MODELS, MODEL_ROWS)
    extracted = run_settings.dumps_read_by(
        CFG, [s for s in run_settings.built_suites(CFG) if s not in RELEASE_ONLY]
    )
    return {
        "board": rules.leaderboard.output.board,
        "paired": rules.leaderboard.output.paired,
        "facts": expand(rules.build_probes.output.facts, suite=suites),
        "control_models": expand(rules.train_control.output.model, suite=trained),
        "summaries": expand(rules.summarize_metrics.output.summary, suite=suites),
        "control": expand(rules.control_check.output.check, suite=checked, model=name),
        "lib": library("render_report.py"),
        "human": HUMAN_TARGETS,
        "human_curves": HUMAN_CURVE_TARGETS,
        "timeline": TIMELINE_TARGETS,
        "robustness": ROBUSTNESS_TARGETS,
        "timeline_profiles": TIMELINE_PROFILES,
        "after_cutoff": AFTER_CUTOFF,
        "cutoff_profiles": CUTOFF_PROFILES,
        "calibration": SLICE_CALIBRATION,
        "extract_stats": expand(rules.extract_dump.output.stats, dump=extracted),
    }
