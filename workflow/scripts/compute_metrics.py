"""Rule script: every measure of one (suite, model) -> per-fact and suite-level tables."""

import logging

from factprobe.io import write_frame
from factprobe.metrics.pipeline import compute_suite_metrics, read_inputs
from factprobe.settings import Metrics, load

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
keys = ("scores", "prompts", "candidates", "facts", "generations", "forms", "split")
inputs = read_inputs({key: snakemake.input.get(key) for key in keys})
# Only the keys the suite's families read arrive (settings.suite_metrics); the rest keep defaults.
measures = dict(snakemake.params.settings)
families = measures.pop("families")
settings = load(Metrics, {**measures, "families": {}}, "metrics")
per_fact, suite = compute_suite_metrics(inputs, settings, families)
write_frame(per_fact, snakemake.output.per_fact)
write_frame(suite, snakemake.output.suite)
