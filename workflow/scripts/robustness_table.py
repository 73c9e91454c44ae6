"""Rule script: Table 4 (distractors paper §4.3) of a verbalization-pairs suite: per model and
measure family, Kendall τ between the flawed and the corrected verbalization under each fold's
best configuration of Table 3 (the human-alignment suite's human_alignment.csv)."""

import sys

sys.path.insert(0, snakemake.scriptdir)  # the workflow's own library first, not an installed copy

import pandas as pd
from factprobe import contracts
from factprobe.metrics.meta import robustness_for_models
from factprobe.plumbing.rulelog import rule_logger

log = rule_logger(snakemake)
models = list(snakemake.params.models)
tables = {
    model: contracts.read("fact_metrics", path)
    for model, path in zip(models, snakemake.input.per_fact, strict=True)
}
# Empty strategy cells (Probability, ROUGE-L, ...) stay "" as the per-fact tables write them.
alignment = pd.read_csv(snakemake.input.alignment, keep_default_na=False)
first, second = snakemake.params.pair
table = robustness_for_models(tables, alignment, first, second)
log.info("%d Table 4 rows from %s", len(table), snakemake.input.alignment)
contracts.write_text("robustness", table, snakemake.output.table)
