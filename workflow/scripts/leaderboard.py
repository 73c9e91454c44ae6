"""Rule script: every suite's headline.parquet -> leaderboard.csv (values and their bootstrap
intervals from that one table, ranked), and the per-fact tables -> paired.csv (paired bootstrap
comparison of every two models)."""

import sys

sys.path.insert(0, snakemake.scriptdir)  # the workflow's own library first, not an installed copy

from itertools import product

from factprobe import contracts
from factprobe.io import read_table
from factprobe.metrics.jobs import bootstrap_of
from factprobe.metrics.pipeline import headline_per_fact, leaderboard, paired_comparisons
from factprobe.plumbing.rulelog import rule_logger

log = rule_logger(snakemake)
suites, models = snakemake.params.suites, snakemake.params.models
headlines = {
    suite: contracts.read("headline", path)
    for suite, path in zip(suites, snakemake.input.headlines, strict=True)
}
per_fact = {suite: {} for suite in suites}
# expand() order: suite-major, then model (rule leaderboard in metrics.smk).
for (suite, model), path in zip(product(suites, models), snakemake.input.per_fact, strict=True):
    per_fact[suite][model] = headline_per_fact(read_table(path).to_pandas())
bootstrap = bootstrap_of(snakemake.params.bootstrap)
board = leaderboard(headlines)
paired = paired_comparisons(per_fact, bootstrap)
log.info(
    "%d leaderboard rows over %d suite(s); %d paired comparisons (B=%d)",
    len(board),
    len(headlines),
    len(paired),
    bootstrap.samples,
)
contracts.write_csv("leaderboard", board, snakemake.output.board)
contracts.write_csv("paired", paired, snakemake.output.paired)
