"""Rule script: every measure of one (suite, model) -> per-fact and suite-level tables."""

import sys

sys.path.insert(0, snakemake.scriptdir)  # the workflow's own library first, not an installed copy

from factprobe import contracts
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
contracts.write("fact_metrics", per_fact, snakemake.output.per_fact)
contracts.write("suite_metrics", suite, snakemake.output.suite)
