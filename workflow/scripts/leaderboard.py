"""Rule script: every suite's summary.csv -> leaderboard.csv (models side by side)."""

import logging

from factprobe.io import atomic_path
from factprobe.metrics.pipeline import leaderboard, read_summary

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
summaries = {
    suite: read_summary(path)
    for suite, path in zip(snakemake.params.suites, snakemake.input.summaries, strict=True)
}
board = leaderboard(summaries)
logging.info("%d leaderboard rows over %d suite(s)", len(board), len(summaries))
with atomic_path(snakemake.output.board) as tmp:
    board.to_csv(tmp, index=False)
