"""Rule script: every measure of one (suite, model) -> per-fact and suite-level tables."""

import sys

sys.path.insert(0, snakemake.scriptdir)  # the workflow's own library first, not an installed copy

from factprobe.io import write_frame
from factprobe.metrics.pipeline import Settings, compute_suite_metrics, read_inputs
from factprobe.rulelog import rule_logger

log = rule_logger(snakemake)
inputs = read_inputs(snakemake.input)
settings = Settings.from_config(snakemake.params.settings)
per_fact, suite = compute_suite_metrics(inputs, settings, snakemake.params.families)
write_frame(per_fact, snakemake.output.per_fact)
write_frame(suite, snakemake.output.suite)
