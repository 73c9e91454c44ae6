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
# Every library name the workflow's files use, imported once here. Only light modules (stdlib,
# pyyaml, jsonschema): parsing needs no science stack.
from factprobe.plumbing import run_inputs  # noqa: E402
from factprobe.plumbing import run_settings  # noqa: E402
from factprobe import settings  # noqa: E402
from factprobe import registries  # noqa: E402 (every extension point)
from factprobe.config_check import config_source, load_run, resolve_path  # noqa: E402
from factprobe.plumbing.diskspace import input_scaled, input_size_mb  # noqa: E402
from factprobe.distractors.semantic.part_count import dump_parts  # noqa: E402
from factprobe.plumbing.profiles import profile_mix_here  # noqa: E402

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
# Multilingual suites the translate stage verbalizes (not a release's own sentences).
TRANSLATED_SUITES = run_settings.translated_suites(CFG)
# Suites that read the Fluent-mLAMA release alone: no download, extraction or translation.
RELEASE_ONLY = run_settings.release_only_suites(CFG)
# Suites built from the dump (build_probes + retrieve_distractors), not imported from a
# released benchmark (probes.smk): disjoint wildcard constraints pick the rule.
BUILT_SUITES = run_settings.suite_pattern(
    run_settings.built_suites(CFG), "no-built-suite"
)
# One list for every consumer of the encoding rule: scoring, ApprOpt, control training.
NO_SPACE_LANGUAGES = CFG.scoring.no_space_languages

# Settings resolved once in the library (factprobe.plumbing.run_settings, tested in Python) and
# handed to rules as plain dicts with lookup(): RUN.<field>, a few under names of their own (those
# of one stage in functions/<stage>.smk).
RUN = run_settings.resolve(CFG, DUMP_ROWS, MODEL_ROWS)
SCORE_MODELS = RUN.score_models
END_MARKERS = RUN.end_markers
# Jobs whose memory (MB) and runtime (min) grow with their inputs ask for floor + factor x input
# MB, doubled on a retry (input_scaled, named in functions/<stage>.smk); factors from
# benchmarks/scale.py (docs/profiles.md). mem_mb is capped at 64 GB (the per-job memory bound; a
# retry asks twice that).


wildcard_constraints:
    dump=r"\d{8}",
    old=r"\d{8}",
    new=r"\d{8}",
    suite="|".join(re.escape(s) for s in SUITES) or "no-suite-configured",
    # Model names may contain dots: "{model}.parquet" must not match "x.forms.parquet".
    model="|".join(re.escape(m) for m in MODEL_ROWS) or "no-model",


def library(script):
    """The code input of ``script``: its stamp of the factprobe modules it reaches
    (factprobe.plumbing.run_inputs.library_inputs)."""
    return run_inputs.library_inputs(script, SCRIPTS, Path.cwd())
