"""Rule script: every measure of one (suite, model) -> per-fact and suite-level tables."""

import sys

sys.path.insert(0, snakemake.scriptdir)  # the workflow's own library first, not an installed copy

from factprobe.io import write_frame
from factprobe.metrics.pipeline import compute_suite_metrics, read_inputs
from factprobe.rulelog import rule_logger
from factprobe.settings import Metrics, load

log = rule_logger(snakemake)
inputs = read_inputs(snakemake.input)
# Only the keys the suite's families read arrive (settings.suite_metrics); the rest keep defaults.
measures = dict(snakemake.params.settings)
families = measures.pop("families")
settings = load(Metrics, {**measures, "families": {}}, "metrics")
per_fact, suite = compute_suite_metrics(inputs, settings, families)
write_frame(per_fact, snakemake.output.per_fact)
write_frame(suite, snakemake.output.suite)
