"""Rule script: metric tables -> results/report/index.html (self-contained)."""

import logging

import pandas as pd
from factprobe.io import atomic_path, read_table
from factprobe.metrics.pipeline import attach_split, read_summary
from factprobe.report.html import build_report
from factprobe.settings import Report, load

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, format="%(asctime)s %(name)s %(message)s")


summaries = {
    s: read_summary(p) for s, p in zip(snakemake.params.suites, snakemake.input.summaries, strict=True)
}
board = read_summary(snakemake.input.board)
# One split file per control suite (one control model per suite); a triple has one split.
paths = snakemake.input.get("split") or []
paths = [paths] if isinstance(paths, str) else list(paths)
split = pd.concat([read_table(p).to_pandas() for p in paths]).drop_duplicates() if paths else None
control = {}
for suite, path in zip(snakemake.params.control_suites, snakemake.input.control, strict=True):
    table = read_table(path).to_pandas()
    if split is not None:
        # The control model's own record of what it was taught overrides facts.split.
        table = table.assign(split=table["split"].replace("", None)) if "split" in table else table
        facts = table[["fact_id", "split"]].drop_duplicates("fact_id") if "split" in table else None
        table = attach_split(table, facts, split)
    control[suite] = table
page = build_report(summaries, board, control, load(Report, snakemake.params.settings, "report"))
logging.info("report: %d suite(s), %d control table(s), %d bytes", len(summaries), len(control), len(page))
with atomic_path(snakemake.output.html) as tmp:
    tmp.write_text(page, encoding="utf-8")
