import re
import sys
from pathlib import Path

from snakemake.utils import min_version

min_version("9.0")

sys.path.insert(0, str(Path(workflow.basedir) / "workflow" / "scripts"))
from factprobe.probes.build import template_set_files  # noqa: E402
from factprobe.probes.config import check_suites  # noqa: E402
from factprobe.distractors.settings import (  # noqa: E402
    appropt_settings,
    retrieve_settings,
    sem_index_settings,
    suite_distractors,
)
from factprobe.registry import (  # noqa: E402
    check_cross_keys,
    check_dumps,
    read_registry,
    validate_config,
)

SCHEMAS = Path(workflow.basedir) / "workflow" / "schemas"

# Everything is validated here, at parse time, so bad config fails before any job runs.
validate_config(config, SCHEMAS / "config.schema.yaml")
check_cross_keys(config)
DUMPS = check_dumps(
    read_registry(config["dumps"], SCHEMAS / "dumps.schema.yaml", key="dump"),
    config["dumps"],
)
MODELS = read_registry(config["models"], SCHEMAS / "models.schema.yaml", key="name")
ENABLED = [row["dump"] for row in DUMPS if row["enabled"]]
DUMP_ROWS = {row["dump"]: row for row in DUMPS}
MODEL_ROWS = {row["name"]: row for row in MODELS}
SUITES = config.get("suites", {}) or {}
TEMPLATE_SETS = config["templates"].get("sets", {})
check_suites(SUITES, config["templates"], ENABLED)
MULTILINGUAL_SUITES = [
    s for s, block in SUITES.items() if block["kind"] == "multilingual"
]
# Models scored on every suite: scoring.models, else every registry row (registry order).
SCORE_MODELS = config["scoring"].get("models") or list(MODEL_ROWS)
# Settings resolved once and handed to rules with lookup(): a changed setting reruns only the
# jobs it concerns (params provenance).
MODEL_PARAMS = {
    m: {k: v for k, v in row.items() if k != "_line"} for m, row in MODEL_ROWS.items()
}
SUITE_TEMPLATE_SETS = {
    s: {n: TEMPLATE_SETS[n] for n in block.get("templates", {}).get("sets", ["team"])}
    for s, block in SUITES.items()
}
DISTRACTOR_SETTINGS = {s: suite_distractors(config, s) for s in SUITES}
RETRIEVE_SETTINGS = {s: retrieve_settings(config, s) for s in SUITES}
APPROPT_SETTINGS = {
    s: {m: appropt_settings(config, s, row) for m, row in MODEL_ROWS.items()}
    for s in SUITES
}
SEM_INDEX_SETTINGS = sem_index_settings(config)


wildcard_constraints:
    dump=r"\d{8}",
    old=r"\d{8}",
    new=r"\d{8}",
    suite="|".join(re.escape(s) for s in SUITES) or "no-suite-configured",
    # Model names may contain dots: "{model}.parquet" must not match "x.forms.parquet".
    model="|".join(re.escape(m) for m in MODEL_ROWS) or "no-model",


def library_files(stage):
    """Library modules of a stage, as inputs: the code trigger only sees the script itself."""
    folder = Path(workflow.basedir) / "workflow/scripts/factprobe" / stage
    return sorted(str(p.relative_to(workflow.basedir)) for p in folder.glob("*.py"))


def is_control(model):
    """Whether a models.tsv row is the workflow-trained builtin:control model."""
    return MODEL_ROWS[model]["source"] == "builtin:control"


# --- download / extract ------------------------------------------------------------------


def dump_file(wildcards):
    """Dump file of a registry row: its local path in place, else the downloaded copy."""
    row = DUMP_ROWS[wildcards.dump]
    if "path" in row:
        return row["path"]
    return rules.download_dump.output.dump.format(
        dump=wildcards.dump, ext=dump_ext(row["url"])
    )


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
            f"{config['dumps']}: dump {dump} is not registered; add a row or fix the target"
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
    if config["diff"]["single_value"] in ("list", "both"):
        files["single_value_list"] = config["diff"]["single_value_list"]
    return files


def temporal_earlier(wildcards):
    """Claims of every enabled dump before this one (objects present only there are "past")."""
    return [extract_table("claims", d) for d in ENABLED if d < wildcards.dump]


# --- probes ------------------------------------------------------------------------------


def probe_inputs(wildcards):
    """Extraction tables of the suite's dump, labels of every enabled dump, templates, the diff."""
    suite = SUITES[wildcards.suite]
    dump = suite["dump"]
    files = {
        "claims": extract_table("claims", dump),
        "entities": extract_table("entities", dump),
        "labels": [extract_table("labels", d) for d in ENABLED],
        "templates": [
            path
            for name in SUITE_TEMPLATE_SETS[wildcards.suite]
            for path in template_set_files(
                TEMPLATE_SETS[name], suite.get("languages", ["en"])
            )
        ],
        "lib": library_files("probes"),
    }
    if suite["kind"] == "plausibility":
        files["changes"] = rules.diff_dumps.output.changes.format(
            old=suite["diff_old"], new=dump
        )
    if suite.get("temporal_only", False):
        files["temporal"] = rules.temporal_view.output.temporal.format(dump=dump)
    return files


# --- distractors -------------------------------------------------------------------------


def uses_appropt(suite):
    return "appropt" in DISTRACTOR_SETTINGS[suite]["strategies"]


def omega_inputs(suite):
    """Tables Ω(f) needs: the suite's probes, types of every enabled dump, the suite's claims."""
    return {
        "facts": rules.build_probes.output.facts.format(suite=suite),
        "entity_forms": rules.build_probes.output.entity_forms.format(suite=suite),
        "types": [extract_table("types", d) for d in ENABLED],
        "claims": extract_table("claims", SUITES[suite]["dump"]),
        "lib": library_files("distractors"),
    }


def retrieve_inputs(wildcards):
    """Ω tables, plus the semantic index (sem, temp) and the temporal view (temp) when used."""
    files = omega_inputs(wildcards.suite)
    settings = DISTRACTOR_SETTINGS[wildcards.suite]
    if {"sem", "temp", "temp+sem"} & set(settings["strategies"]):
        files["index"] = rules.build_sem_index.output.index.format(
            dump=settings["dump"]
        )
    if {"temp", "temp+sem"} & set(settings["strategies"]):
        files["temporal"] = rules.temporal_view.output.temporal.format(
            dump=settings["dump"]
        )
    return files


def appropt_inputs(wildcards):
    """Ω tables, the suite's prompts, and the control model directory when it is the model."""
    files = omega_inputs(wildcards.suite)
    files["prompts"] = rules.build_probes.output.prompts.format(suite=wildcards.suite)
    if is_control(wildcards.model):
        files["control"] = rules.train_control.output.model
    return files


# --- scoring -----------------------------------------------------------------------------


def score_inputs(wildcards):
    """Probe tables of the suite (+ translations, + per-model ApprOpt), the model, the library."""
    suite = wildcards.suite
    files = {
        "prompts": rules.build_probes.output.prompts.format(suite=suite),
        "candidates": rules.retrieve_distractors.output.candidates.format(suite=suite),
        "forms": rules.retrieve_distractors.output.forms.format(suite=suite),
        "lib": library_files("scoring"),
    }
    if suite in MULTILINGUAL_SUITES and config["scoring"].get(
        "include_translated", True
    ):
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
    if is_control(wildcards.model):
        files["control"] = rules.train_control.output.model
    return files


def generate_inputs(wildcards):
    """Prompts of the suite and the model (generation needs no candidates)."""
    files = {
        "prompts": rules.build_probes.output.prompts.format(suite=wildcards.suite),
        "lib": library_files("scoring"),
    }
    if is_control(wildcards.model):
        files["control"] = rules.train_control.output.model
    return files


def score_shard_files(wildcards):
    """Every shard of one (suite, model) (scores and top-k tables), gathered by score_suite."""
    out = rules.score_shard.output
    shards = range(config["scoring"].get("shards", 1))
    keys = {"suite": wildcards.suite, "model": wildcards.model}
    return {
        "shards": [out.scores.format(shard=s, **keys) for s in shards],
        "topk_shards": [out.topk.format(shard=s, **keys) for s in shards],
    }


# --- metrics and report ------------------------------------------------------------------


def metrics_inputs(wildcards):
    """Tables one (suite, model) job reads; optional ones only where the suite produces them."""
    suite, model = wildcards.suite, wildcards.model
    score = score_inputs(wildcards)
    files = {
        "scores": rules.score_suite.output.scores.format(suite=suite, model=model),
        "topk": rules.score_suite.output.topk.format(suite=suite, model=model),
        "prompts": [score["prompts"]] + [score.get("translated_prompts")],
        "candidates": [score["candidates"]] + [score.get("appropt")],
        "facts": rules.build_probes.output.facts.format(suite=suite),
        "forms": [score["forms"]] + [score.get("translated_forms")],
        "lib": library_files("metrics"),
    }
    files = {
        k: [f for f in v if f] if isinstance(v, list) else v for k, v in files.items()
    }
    if SUITES[suite].get("generate", False):
        files["generations"] = rules.generate_suite.output.generations.format(
            suite=suite, model=model
        )
    if is_control(model):
        files["split"] = rules.train_control.output.split
    return files


def metrics_families(wildcards):
    """Measure families for the suite's kind (config metrics.families)."""
    return config["metrics"]["families"].get(SUITES[wildcards.suite]["kind"], [])


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


def report_control_suites():
    """Suites whose control-model table feeds the taught-vs-untaught panel (knowledge measure)."""
    if config["report"].get("control_model", "control") not in SCORE_MODELS:
        return []
    families = config["metrics"]["families"]
    return [
        s
        for s, block in SUITES.items()
        if "knowledge" in families.get(block["kind"], [])
    ]


def report_inputs(wildcards):
    """Leaderboard, every suite's summary, and the control model's per-fact tables + split."""
    name = config["report"].get("control_model", "control")
    files = {
        "board": rules.leaderboard.output.board,
        "summaries": expand(rules.summarize_metrics.output.summary, suite=list(SUITES)),
        "control": expand(
            rules.compute_metrics.output.per_fact,
            suite=report_control_suites(),
            model=name,
        ),
        "lib": library_files("report"),
        "human": HUMAN_TARGETS,
    }
    if files["control"]:
        files["split"] = rules.train_control.output.split
    return files
