"""Rule script: every measure of one (suite, model) -> per-fact and suite-level tables."""

import sys

sys.path.insert(0, snakemake.scriptdir)  # the workflow's own library first, not an installed copy

from factprobe import contracts
from factprobe.metrics.jobs import suite_measures
from factprobe.metrics.pipeline import read_inputs
from factprobe.plumbing.rulelog import rule_logger

log = rule_logger(snakemake)
inputs = read_inputs(snakemake.input)
# Only the keys the suite's families read arrive (config_rules.suite_metrics); the rest keep defaults.
# metrics.family_settings.overlap.encoder names a models.tsv row: its folder.
encoder = snakemake.input.encoder if "encoder" in snakemake.input.keys() else None
per_fact, suite = suite_measures(
    inputs,
    snakemake.params.settings,
    snakemake.params.correct_set,
    dict(snakemake.params.cutoff),
    snakemake.wildcards.model,
    encoder,
)
contracts.write("fact_metrics", per_fact, snakemake.output.per_fact)
contracts.write("suite_metrics", suite, snakemake.output.suite)
