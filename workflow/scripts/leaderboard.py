"""Rule script: every suite's summary.csv -> leaderboard.csv (models side by side)."""

import sys

sys.path.insert(0, snakemake.scriptdir)  # the workflow's own library first, not an installed copy

from factprobe.io import atomic_path
from factprobe.metrics.pipeline import leaderboard, read_summary
from factprobe.rulelog import rule_logger

log = rule_logger(snakemake)
summaries = {
    suite: read_summary(path)
    for suite, path in zip(snakemake.params.suites, snakemake.input.summaries, strict=True)
}
board = leaderboard(summaries)
log.info("%d leaderboard rows over %d suite(s)", len(board), len(summaries))
with atomic_path(snakemake.output.board) as tmp:
    board.to_csv(tmp, index=False)
