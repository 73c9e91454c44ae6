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
        "`snakefile:` at <clone>/workflow/Snakefile (README.md, section Running)"
    )
WORKFLOW_ROOT = Path(_HERE).resolve().parents[1]
SCRIPTS = WORKFLOW_ROOT / "workflow" / "scripts"
sys.path.insert(0, str(SCRIPTS))
# Only the light settings/registry modules (stdlib, pyyaml, jsonschema): parsing needs no science stack.
from factprobe import run_settings as R  # noqa: E402
from factprobe import settings as S  # noqa: E402
from factprobe import distractors as D  # noqa: E402 (strategy registry)
from factprobe.registry import (  # noqa: E402
    check_dumps,
    check_models,
    config_source,
    library_modules,
    read_config,
    read_registry,
    resolve_config_paths,
    resolve_dump_paths,
    resolve_path,
)
from factprobe.diskspace import input_scaled, input_size_mb  # noqa: E402
from factprobe.distractors.semplan import dump_parts  # noqa: E402
from factprobe.profiles import auto_loaded_default, profile_mix_error  # noqa: E402

SCHEMAS = WORKFLOW_ROOT / "workflow" / "schemas"

# `--profile profiles/slurm` would run the cluster job with the local profile on top of it.
_MIX = profile_mix_error(
    sys.argv,
    os.environ,
    [Path("~/.config/snakemake").expanduser()],
    auto_loaded_default(os.environ, Path.cwd()),
)
if _MIX is not None:
    raise WorkflowError(_MIX)

# Everything is validated here, at parse time, so bad config fails before any job runs.
# Errors name the config file(s) actually given (--configfile), not always config/config.yaml.
CONFIG_SOURCE = config_source(
    workflow.overwrite_configfiles,
    workflow.configfiles,
    replaced=workflow.config_settings.replace_workflow_config,
)
CFG = read_config(
    resolve_config_paths(config, WORKFLOW_ROOT),
    SCHEMAS / "config.schema.yaml",
    CONFIG_SOURCE,
)
DUMPS = check_dumps(
    resolve_dump_paths(
        read_registry(CFG.dumps, SCHEMAS / "dumps.schema.yaml", key="dump"),
        WORKFLOW_ROOT,
    ),
    CFG.dumps,
)
MODELS = check_models(
    read_registry(CFG.models, SCHEMAS / "models.schema.yaml", key="name"), CFG.models
)
ENABLED = [row["dump"] for row in DUMPS if row["enabled"]]
DUMP_ROWS = {row["dump"]: row for row in DUMPS}
MODEL_ROWS = {row["name"]: row for row in MODELS}
S.check_cross_keys(CFG, ENABLED, CONFIG_SOURCE)
S.check_languages(CFG, CONFIG_SOURCE)
SUITES = CFG.suites
MULTILINGUAL_SUITES = [s for s, block in SUITES.items() if block.kind == "multilingual"]
# Suites imported from a released benchmark (rule import_released) vs built from the dump
# (build_probes + retrieve_distractors): disjoint wildcard constraints pick the rule.
RELEASED_SUITES = R.suite_pattern(R.released_suites(CFG), "no-released-suite")
BUILT_SUITES = R.suite_pattern(R.built_suites(CFG), "no-built-suite")
# One list for every consumer of the encoding rule: scoring, ApprOpt, control training.
NO_SPACE_LANGUAGES = CFG.scoring.no_space_languages

# Settings resolved once in the library (factprobe.run_settings, tested in Python) and handed
# to rules as plain dicts with lookup().
RUN = R.resolve(CFG, DUMP_ROWS, MODEL_ROWS)
MT_ROWS = RUN.mt_rows
SCORE_MODELS = RUN.score_models
MODEL_PARAMS = RUN.model_params
PREPARE_PARAMS = RUN.prepare_params
SUITE_PARAMS = RUN.suite_params
SUITE_TEMPLATE_SETS = RUN.template_sets
DISTRACTOR_SETTINGS = RUN.distractors
RETRIEVE_SETTINGS = RUN.retrieve
APPROPT_SETTINGS = RUN.appropt
METRICS_SETTINGS = RUN.metrics
CORRECT_SETS = RUN.correct_sets
SCORING_MODES = RUN.scoring_modes
END_MARKERS = RUN.end_markers
# Samples per prompt in generation mode: none for a greedy-only suite (generate: greedy).
GENERATION_SAMPLES = {
    s: 0 if SUITES[s].generate == "greedy" else CFG.scoring.samples for s in SUITES
}
MODEL_CUTOFFS = RUN.model_cutoffs
SEM_INDEX_SETTINGS = RUN.sem_index
SEM_ROWS = RUN.sem_rows
# Memory (MB) and runtime (min) of the jobs that grow with their inputs: floor + factor x input
# MB, doubled on a retry. Factors: benchmarks/scale.py (config/README.md, "Profiles").
# mem_mb is capped at 64 GB (issue 15's per-job bound; a retry asks twice that).
probes_mem_mb = input_scaled("mem_mb", 40, 2000, "build_probes", 64000)
probes_runtime = input_scaled("runtime", 0.2, 30, "build_probes")
# Parts of each dump's semantic index (issue 31 item 3): one per semplan.PART_DUMP_BYTES of
# dump file, so that a sem_bags job counts a bounded number of non-zeros.
SEM_PARTS = {dump: dump_parts(row["path"]) for dump, row in DUMP_ROWS.items()}


def sem_parts_of(wildcards):
    """Number of parts of the dump's index (the share of the claims a sem_bags job counts)."""
    return SEM_PARTS[wildcards.dump]


sem_bags_mem_mb = input_scaled("mem_mb", 60, 2000, "sem_bags", 64000, sem_parts_of)
sem_bags_runtime = input_scaled("runtime", 2, 30, "sem_bags", None, sem_parts_of)
# The merge holds the vocabulary and a block of rows (the HNSW graph, when searched, the matrix).
sem_index_mem_mb = input_scaled("mem_mb", 4, 2000, "build_sem_index", 64000)
sem_index_runtime = input_scaled("runtime", 0.5, 30, "build_sem_index")
retrieve_mem_mb = input_scaled("mem_mb", 4, 2000, "retrieve_distractors", 64000)
retrieve_runtime = input_scaled("runtime", 0.05, 30, "retrieve_distractors")
# Per dump: whether any suite searches its semantic index with HNSW (else the graph is not built).
SEM_HNSW = {
    dump: any(
        r["search"] == "hnsw" and r["dump"] == dump
        for r in RETRIEVE_SETTINGS.values()
        if D.needs(r["strategies"], "index")
    )
    for dump in DUMP_ROWS
}
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
    """Library inputs of a rule: every factprobe module its script imports, directly or not.

    A script's imports are invisible to Snakemake's code trigger; with these as inputs, editing
    a module reruns exactly the rules whose scripts import it (config/README.md, "When jobs rerun").
    """
    files = [SCRIPTS / f for f in library_modules(SCRIPTS / script, SCRIPTS)]
    # Relative inside the working directory (the clone), absolute for a workflow used from elsewhere.
    return [
        os.path.relpath(f) if f.is_relative_to(Path.cwd()) else str(f) for f in files
    ]


def bundled(path):
    """A file of the workflow's own resources, unless the working directory has its own copy."""
    return resolve_path(path, WORKFLOW_ROOT)


def is_control(model):
    """Whether a models.tsv row is the workflow-trained builtin:control model."""
    return MODEL_ROWS[model]["source"] == "builtin:control"


def control_model(suite):
    """Directory of the control model of ``suite`` (one per suite, rule train_control)."""
    return rules.train_control.output.model.format(suite=suite)


def model_folder(suite, model):
    """The folder a job loads ``model`` from: the suite's trained control model, or the folder
    rule prepare_model made from the models.tsv row (jobs never read a source directly).
    """
    if is_control(model):
        return control_model(suite)
    return rules.prepare_model.output.model.format(model=model)


def translate_inputs(wildcards):
    """The translating models' folders: translate.backend llm, the causal LM's (prepared, or the
    suite's control model); seq2seq, those of the models.tsv rows named in translate.model(s).
    """
    if CFG.translate.backend == "llm":
        if not CFG.translate.llm:
            return {}
        return {"llm": model_folder(wildcards.suite, CFG.translate.llm)}
    if not MT_ROWS:
        return {}
    return {"mt_models": [model_folder(wildcards.suite, m) for m in MT_ROWS]}


def model_source_files(wildcards):
    """Local files of a models.tsv source (a folder or a .gguf file); none for hub ids and
    installed packages, whose content is pinned by the row's revision / the package version.
    """
    source = MODEL_ROWS[wildcards.model]["source"]
    if source.startswith(("builtin:", "pypi:")) or not os.path.exists(source):
        return {}
    return {"source": source}


# --- download / extract ------------------------------------------------------------------


def dump_file(wildcards):
    """Dump file of a registry row: its local path in place, else the downloaded copy."""
    row = DUMP_ROWS[wildcards.dump]
    if "path" in row:
        return row["path"]
    ext = dump_ext(row["url"]) if "url" in row else row["format"]  # a `source` row
    return rules.download_dump.output.dump.format(dump=wildcards.dump, ext=ext)


def local_dump_checksum(wildcards):
    """Checksum of a dump used in place (``path`` row), verified by its extraction job: parsing
    (and so ``snakemake -n``) never reads a dump. Downloads are verified by download_dump.
    """
    row = DUMP_ROWS[wildcards.dump]
    return row.get("checksum", "") if "path" in row else ""


def dump_ext(name):
    """Extension of a dump file name or URL: json, json.gz or json.bz2."""
    for ext in ("json.bz2", "json.gz", "json"):
        if name.split("?")[0].endswith(f".{ext}"):
            return ext
    raise ValueError(f"cannot tell the format of {name}")


def extract_table(name, dump):
    """Path of extraction table ``name`` of a registered ``dump``."""
    if dump not in DUMP_ROWS:
        raise ValueError(
            f"{CFG.dumps}: dump {dump} is not registered; add a row or fix the target"
        )
    return getattr(rules.extract_dump.output, name).format(dump=dump)


# --- diff --------------------------------------------------------------------------------


def diff_inputs(wildcards):
    """Both dumps' claims, entities and properties tables, plus the bundled single-value list."""
    if int(wildcards.old) >= int(wildcards.new):
        raise ValueError(
            f"diff {wildcards.old}_{wildcards.new}: the old dump must be the earlier one"
        )
    files = {
        f"{side}_{name}": extract_table(name, getattr(wildcards, side))
        for side in ("old", "new")
        for name in ("claims", "entities", "properties")
    }
    if CFG.diff.single_value in ("list", "both"):
        files["single_value_list"] = CFG.diff.single_value_list
    return files


def temporal_earlier(wildcards):
    """Claims of every enabled dump before this one (objects present only there are "past")."""
    return [extract_table("claims", d) for d in ENABLED if d < wildcards.dump]


# --- probes ------------------------------------------------------------------------------


def suite_dumps(suite):
    """Dumps whose labels and types a suite reads: ``label_dumps``, else its dump (+ diff_old)."""
    return S.suite_dumps(SUITES[suite])


def released_inputs(wildcards):
    """The released files of an imported suite, the labels, entities and properties of its dumps."""
    suite = SUITES[wildcards.suite]
    return {
        "released": suite.source.files(),
        "labels": [extract_table("labels", d) for d in suite_dumps(wildcards.suite)],
        "entities": extract_table("entities", suite.dump),
        "properties": extract_table("properties", suite.dump),
        "lib": library("import_released.py"),
    }


def probe_inputs(wildcards):
    """Extraction tables of the suite's dump, labels of its label dumps, templates, the diff."""
    suite = SUITES[wildcards.suite]
    files = {
        "claims": extract_table("claims", suite.dump),
        "entities": extract_table("entities", suite.dump),
        "labels": [extract_table("labels", d) for d in suite_dumps(wildcards.suite)],
        "templates": [
            path
            for entry in SUITE_TEMPLATE_SETS[wildcards.suite].values()
            for path in S.load(S.TemplateSet, entry).files(suite.languages)
        ],
        "lib": library("build_probes.py"),
    }
    if suite.kind == "plausibility":
        files["changes"] = rules.diff_dumps.output.changes.format(
            old=suite.diff_old, new=suite.dump
        )
    if suite.temporal_only:
        files["temporal"] = rules.temporal_view.output.temporal.format(dump=suite.dump)
    # A listed-facts file is an input where it exists (edits rerun the suite); a missing one
    # fails build_probes with an error naming it, so paper configs plan without the data.
    if suite.source.format in ("triples", "verbalization-pairs") and os.path.exists(
        suite.source.path
    ):
        files["source"] = suite.source.path
    return files


# --- distractors -------------------------------------------------------------------------


def uses_appropt(suite):
    return D.needs(DISTRACTOR_SETTINGS[suite]["strategies"], "per_model")


def omega_inputs(suite):
    """Tables Ω(f) needs: the suite's probes, types of its label dumps, the suite's claims."""
    return {
        "facts": rules.build_probes.output.facts.format(suite=suite),
        "entity_forms": rules.build_probes.output.entity_forms.format(suite=suite),
        "types": [extract_table("types", d) for d in suite_dumps(suite)],
        "claims": extract_table("claims", SUITES[suite].dump),
    }


def sem_index_types(wildcards):
    """Types of the dumps the searching suites type entities from (the index's candidate rows)."""
    return [extract_table("types", d) for d in SEM_ROWS[wildcards.dump]["type_dumps"]]


def sem_index_parts(wildcards):
    """The sem_bags folders of a dump's index, parts 0..P-1 (SEM_PARTS)."""
    out = rules.sem_bags.output.bags
    return [
        out.format(dump=wildcards.dump, part=p)
        for p in range(SEM_PARTS[wildcards.dump])
    ]


def retrieve_inputs(wildcards):
    """One job (distractors.shards 1): as retrieve_shard_inputs; else the suite's shards and facts."""
    if CFG.distractors.shards == 1:
        return retrieve_shard_inputs(wildcards)
    out = rules.retrieve_shard.output
    shards = range(CFG.distractors.shards)
    return {
        "facts": rules.build_probes.output.facts.format(suite=wildcards.suite),
        "shards": [
            out.candidates.format(suite=wildcards.suite, shard=s) for s in shards
        ],
        "shard_forms": [
            out.forms.format(suite=wildcards.suite, shard=s) for s in shards
        ],
        "lib": library("retrieve_distractors.py"),
    }


def retrieve_shard_inputs(wildcards):
    """Ω tables, plus the semantic index (sem, temp) and the temporal view (temp) when used."""
    files = omega_inputs(wildcards.suite)
    files["lib"] = library("retrieve_distractors.py")
    settings = DISTRACTOR_SETTINGS[wildcards.suite]
    if D.needs(settings["strategies"], "index"):
        files["index"] = rules.build_sem_index.output.index.format(
            dump=settings["dump"]
        )
    if D.needs(settings["strategies"], "temporal"):
        files["temporal"] = rules.temporal_view.output.temporal.format(
            dump=settings["dump"]
        )
    return files


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


def score_inputs(wildcards):
    """Probe tables of the suite (+ translations, + per-model ApprOpt), the model, the library."""
    suite = wildcards.suite
    files = {
        "prompts": rules.build_probes.output.prompts.format(suite=suite),
        "candidates": rules.retrieve_distractors.output.candidates.format(suite=suite),
        "forms": rules.retrieve_distractors.output.forms.format(suite=suite),
        "lib": library("score_shard.py"),
    }
    if suite in MULTILINGUAL_SUITES and CFG.scoring.include_translated:
        files["translated_prompts"] = rules.translate_prompts.output.prompts.format(
            suite=suite
        )
        files["translated_forms"] = rules.translate_prompts.output.forms.format(
            suite=suite
        )
    if uses_appropt(suite):
        appropt = rules.appropt_distractors.output
        files["appropt"] = appropt.candidates.format(suite=suite, model=wildcards.model)
        files["appropt_forms"] = appropt.forms.format(
            suite=suite, model=wildcards.model
        )
    files["model"] = model_folder(suite, wildcards.model)
    return files


def generate_inputs(wildcards):
    """Prompts of the suite and the model's folder (generation needs no candidates)."""
    return {
        "prompts": rules.build_probes.output.prompts.format(suite=wildcards.suite),
        "lib": library("generate_shard.py"),
        "model": model_folder(wildcards.suite, wildcards.model),
    }


def generate_shard_files(wildcards):
    """Every generation shard of one (suite, model), gathered by generate_suite."""
    out = rules.generate_shard.output.generations
    keys = {"suite": wildcards.suite, "model": wildcards.model}
    return {"shards": [out.format(shard=s, **keys) for s in range(CFG.scoring.shards)]}


def score_shard_files(wildcards):
    """Every shard of one (suite, model) (scores and top-k tables), gathered by score_suite."""
    out = rules.score_shard.output
    shards = range(CFG.scoring.shards)
    keys = {"suite": wildcards.suite, "model": wildcards.model}
    return {
        "shards": [out.scores.format(shard=s, **keys) for s in shards],
        "topk_shards": [out.topk.format(shard=s, **keys) for s in shards],
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
        files["generations"] = rules.generate_suite.output.generations.format(
            suite=suite, model=model
        )
    encoder = CFG.metrics.overlap.encoder
    if "overlap" in METRICS_SETTINGS[suite]["families"] and encoder in MODEL_PARAMS:
        # BERTScore's encoder named by a models.tsv row: its prepared folder.
        files["encoder"] = rules.prepare_model.output.model.format(model=encoder)
    return files


def suite_metric_tables(wildcards):
    """Per-fact and suite-level tables of every model on one suite."""
    out = rules.compute_metrics.output
    return {
        "per_fact": [
            out.per_fact.format(suite=wildcards.suite, model=m) for m in SCORE_MODELS
        ],
        "suite": [
            out.suite.format(suite=wildcards.suite, model=m) for m in SCORE_MODELS
        ],
    }


def human_file(wildcards):
    """Judged triples of a suite's human alignment (§4.2): metrics.human_alignment.path, else the
    suite's own `source: triples` file."""
    return CFG.metrics.human_alignment.path or SUITES[wildcards.suite].source.path


def human_cloze_tables(wildcards):
    """Every model's measures by number of cloze sentences on one suite (§5.1 Fig. 4)."""
    return [
        f"results/metrics/{wildcards.suite}/{m}.cloze.parquet" for m in SCORE_MODELS
    ]


def report_control_suites():
    """Suites whose control check feeds the taught-vs-untaught panel: knowledge measure computed
    and facts taught to the control model (config control.suites)."""
    if CFG.report.control_model not in SCORE_MODELS:
        return []
    return [
        s
        for s in SUITES
        if "knowledge" in S.suite_families(CFG, s) and s in CFG.control.suites
    ]


def bootstrap_settings():
    """Config report keys of the bootstrap intervals (leaderboard, control check)."""
    return R.report_settings(CFG, R.BOOTSTRAP_KEYS)


def control_check_settings():
    """Config report keys the control check reads (so report.dpi does not rerun it)."""
    return R.report_settings(CFG, R.CONTROL_CHECK_KEYS)


def report_control_model_suites():
    """Suites whose trained control model the report fingerprints (when one is scored)."""
    return list(SUITES) if any(is_control(m) for m in SCORE_MODELS) else []


def report_dumps():
    """The dumps of the report's provenance: those every suite reads."""
    return R.dumps_read_by(CFG, SUITES)


def extracted_report_dumps():
    """The report's dumps that the run extracts (suites built from a dump, not imported ones)."""
    return R.dumps_read_by(CFG, R.built_suites(CFG))


def report_provenance():
    """Parse-time part of the report's provenance block: dumps.tsv rows the suites use, suites,
    models.tsv rows, manifest paths, factprobe version, config hash (render adds fact counts,
    malformed lines skipped per dump, manifests and the control model's fingerprint)."""
    from factprobe.report import provenance as P
    from factprobe.wikidata.resolve import record_paths

    used = report_dumps()
    return {
        "version": P.factprobe_version(SCRIPTS.parents[1]),
        "config_hash": P.config_hash(S.plain(CFG)),
        "dumps": P.dump_records(
            DUMP_ROWS,
            used,
            [Path.cwd(), WORKFLOW_ROOT],
            record_paths(DUMP_ROWS, rules.download_dump.output.dump),
        ),
        "suites": [
            {
                "suite": suite,
                "kind": block.kind,
                "dump": block.dump,
                "dump date": P.dump_date(block.dump),
                "models": ", ".join(SCORE_MODELS),
            }
            for suite, block in SUITES.items()
        ],
    }


def report_inputs(wildcards):
    """Leaderboard (+ paired comparison), every suite's summary and facts, the control model's
    control_check tables and trained folders (provenance)."""
    name = CFG.report.control_model
    files = {
        "board": rules.leaderboard.output.board,
        "paired": rules.leaderboard.output.paired,
        "facts": expand(rules.build_probes.output.facts, suite=list(SUITES)),
        "control_models": [control_model(s) for s in report_control_model_suites()],
        "summaries": expand(rules.summarize_metrics.output.summary, suite=list(SUITES)),
        "control": expand(
            rules.control_check.output.check,
            suite=report_control_suites(),
            model=name,
        ),
        "lib": library("render_report.py"),
        "human": HUMAN_TARGETS,
        "human_curves": HUMAN_CURVE_TARGETS,
        "extract_stats": expand(
            rules.extract_dump.output.stats, dump=extracted_report_dumps()
        ),
    }
    return files
