"""Rule script: metric tables -> results/report/index.html (self-contained)."""

import logging
from pathlib import Path

import pandas as pd
from factprobe.io import atomic_path, read_table
from factprobe.metrics.pipeline import attach_split, read_summary
from factprobe.report.html import ReportSettings, build_report

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, format="%(asctime)s %(name)s %(message)s")


summaries = {
    s: read_summary(p) for s, p in zip(snakemake.params.suites, snakemake.input.summaries, strict=True)
}
board = read_summary(snakemake.input.board)
split = read_table(snakemake.input.split).to_pandas() if snakemake.input.get("split") else None
control = {}
for suite, path in zip(snakemake.params.control_suites, snakemake.input.control, strict=True):
    table = read_table(path).to_pandas()
    if split is not None:
        # The control model's own record of what it was taught overrides facts.split.
        table = table.assign(split=table["split"].replace("", None)) if "split" in table else table
        facts = table[["fact_id", "split"]].drop_duplicates("fact_id") if "split" in table else None
        table = attach_split(table, facts, split)
    control[suite] = table
# Human alignment (§4.2) when a judgement file is configured: results/metrics/{suite}/human_alignment.csv.
human = {Path(p).parent.name: pd.read_csv(p, keep_default_na=False) for p in snakemake.input.get("human", [])}
page = build_report(summaries, board, control, ReportSettings.from_config(snakemake.params.settings), human)
logging.info("report: %d suite(s), %d control table(s), %d bytes", len(summaries), len(control), len(page))
with atomic_path(snakemake.output.html) as tmp:
    tmp.write_text(page, encoding="utf-8")
