"""Rule script: metric tables -> results/report/index.html (self-contained)."""

import sys

sys.path.insert(0, snakemake.scriptdir)  # the workflow's own library first, not an installed copy

from pathlib import Path

import pandas as pd
from factprobe.io import atomic_path
from factprobe.metrics.pipeline import read_control_check, read_summary
from factprobe.report.html import build_report
from factprobe.rulelog import rule_logger
from factprobe.settings import Report, load

log = rule_logger(snakemake)
summaries = {
    s: read_summary(p) for s, p in zip(snakemake.params.suites, snakemake.input.summaries, strict=True)
}
board = read_summary(snakemake.input.board)
control = {
    suite: read_control_check(path)
    for suite, path in zip(snakemake.params.control_suites, snakemake.input.control, strict=True)
}
# Human alignment (§4.2) when a judgement file is configured: results/metrics/{suite}/human_alignment.csv.
human = {Path(p).parent.name: pd.read_csv(p, keep_default_na=False) for p in snakemake.input.get("human", [])}
page = build_report(summaries, board, control, load(Report, snakemake.params.settings, "report"), human)
log.info("report: %d suite(s), %d control table(s), %d bytes", len(summaries), len(control), len(page))
with atomic_path(snakemake.output.html) as tmp:
    tmp.write_text(page, encoding="utf-8")
