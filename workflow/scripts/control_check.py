"""Rule script: the control model's per-fact table -> the taught/untaught check of one suite."""

import sys

sys.path.insert(0, snakemake.scriptdir)  # the workflow's own library first, not an installed copy

from factprobe import contracts
from factprobe.io import read_table
from factprobe.metrics.pipeline import control_check
from factprobe.plumbing.rulelog import rule_logger

log = rule_logger(snakemake)
check = control_check(read_table(snakemake.input.per_fact).to_pandas(), **snakemake.params.settings)
for row in check[check["verdict"] != ""].itertuples():
    log.info(
        "%s Avg@%d (%s): %.3f over %d facts, target %.2f..%.2f: %s",
        row.split,
        row.n,
        row.strategy,
        row.value,
        row.facts,
        row.low,
        row.high,
        row.verdict,
    )
contracts.write_csv("control_check", check, snakemake.output.check)
