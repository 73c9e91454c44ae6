"""Rule script: one suite's per-model tables -> summary.csv (model x measure)."""

import sys

sys.path.insert(0, snakemake.scriptdir)  # the workflow's own library first, not an installed copy

import pandas as pd
from factprobe import contracts
from factprobe.io import read_table
from factprobe.metrics.pipeline import summarize
from factprobe.rulelog import rule_logger

log = rule_logger(snakemake)
# metrics.ranking_average of the suite (absent when its families have no ranking).
average = dict(snakemake.params.settings).get("ranking_average", "facts")
parts = [
    summarize(model, read_table(fact).to_pandas(), read_table(suite).to_pandas(), average)
    for model, fact, suite in zip(
        snakemake.params.models, snakemake.input.per_fact, snakemake.input.suite, strict=True
    )
]
summary = pd.concat(parts, ignore_index=True)
log.info("%d summary rows for %d model(s)", len(summary), len(parts))
contracts.write_csv("summary", summary, snakemake.output.summary)
