"""Rule script: every measure of one (suite, model) -> per-fact and suite-level tables."""

import logging

from factprobe.io import write_frame
from factprobe.metrics.pipeline import Settings, compute_suite_metrics, read_inputs

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
keys = ("scores", "prompts", "candidates", "facts", "generations", "forms", "split", "topk")
inputs = read_inputs({key: snakemake.input.get(key) for key in keys})
settings = Settings.from_config(snakemake.params.settings)
per_fact, suite = compute_suite_metrics(inputs, settings, snakemake.params.families)
write_frame(per_fact, snakemake.output.per_fact)
write_frame(suite, snakemake.output.suite)
