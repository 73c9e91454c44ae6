"""Rule script: one suite's per-model tables -> summary.csv (model x measure) and
headline.parquet (each headline value next to its bootstrap interval over facts)."""

import sys

sys.path.insert(0, snakemake.scriptdir)  # the workflow's own library first, not an installed copy

import pandas as pd
from factprobe import contracts
from factprobe.io import read_table
from factprobe.metrics.coverage import check_suite_scores
from factprobe.metrics.pipeline import Bootstrap, headline_per_fact, headline_table, summarize
from factprobe.rulelog import rule_logger

log = rule_logger(snakemake)
# metrics.ranking_average of the suite (absent when its families have no ranking).
average = dict(snakemake.params.settings).get("ranking_average", "facts")
settings = snakemake.params.bootstrap
bootstrap = Bootstrap(settings["bootstrap_samples"], settings["bootstrap_seed"], settings["confidence_level"])
# Every model's scores cover every fact of the suite, else no summary (nor leaderboard) is made.
check_suite_scores(
    snakemake.wildcards.suite,
    list(snakemake.params.models),
    snakemake.input.facts,
    list(snakemake.input.scores),
)
parts, per_model = [], {}
for model, fact, suite in zip(
    snakemake.params.models, snakemake.input.per_fact, snakemake.input.suite, strict=True
):
    per_fact = read_table(fact).to_pandas()
    parts.append(summarize(model, per_fact, read_table(suite).to_pandas(), average))
    per_model[model] = headline_per_fact(per_fact)
summary = pd.concat(parts, ignore_index=True)
headline = headline_table(summary, per_model, bootstrap)
log.info(
    "%d summary rows for %d model(s); %d headline rows (B=%d)",
    len(summary),
    len(parts),
    len(headline),
    bootstrap.samples,
)
contracts.write_csv("summary", summary, snakemake.output.summary)
contracts.write("headline", headline, snakemake.output.headline)
