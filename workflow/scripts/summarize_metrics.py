"""Rule script: one suite's per-model tables -> summary.csv (model x measure) and
headline.parquet (each headline value next to its bootstrap interval over facts)."""

import sys

sys.path.insert(0, snakemake.scriptdir)  # the workflow's own library first, not an installed copy

from factprobe import contracts
from factprobe.io import read_table
from factprobe.metrics.coverage import check_suite_scores
from factprobe.metrics.jobs import bootstrap_of, summarize_suite
from factprobe.plumbing.rulelog import rule_logger

log = rule_logger(snakemake)
# metrics.ranking_average of the suite (absent when its families have no ranking).
average = dict(snakemake.params.settings).get("ranking_average", "facts")
bootstrap = bootstrap_of(snakemake.params.bootstrap)
# Every model's scores cover every fact of the suite, else no summary (nor leaderboard) is made.
check_suite_scores(
    snakemake.wildcards.suite,
    list(snakemake.params.models),
    snakemake.input.facts,
    list(snakemake.input.scores),
)
summary, headline = summarize_suite(
    list(snakemake.params.models),
    [read_table(path).to_pandas() for path in snakemake.input.per_fact],
    [read_table(path).to_pandas() for path in snakemake.input.suite],
    average,
    bootstrap,
)
log.info(
    "%d summary rows for %d model(s); %d headline rows (B=%d)",
    len(summary),
    len(snakemake.params.models),
    len(headline),
    bootstrap.samples,
)
contracts.write_csv("summary", summary, snakemake.output.summary)
contracts.write("headline", headline, snakemake.output.headline)
