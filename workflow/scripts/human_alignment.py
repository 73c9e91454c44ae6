"""Rule script: every model's per-fact measures of one suite vs human scores -> Kendall τ (§4.2)."""

import sys

sys.path.insert(0, snakemake.scriptdir)  # the workflow's own library first, not an installed copy

from factprobe import contracts
from factprobe.io import atomic_path
from factprobe.metrics.meta import alignment_for_models, read_human
from factprobe.rulelog import rule_logger

log = rule_logger(snakemake)
human = read_human(snakemake.input.human)
facts = contracts.read("facts", snakemake.input.facts)
tables = {
    model: contracts.read("fact_metrics", path)
    for model, path in zip(snakemake.params.models, snakemake.input.per_fact, strict=True)
}
table = alignment_for_models(tables, human, facts, int(snakemake.params.folds), str(snakemake.input.human))
log.info("%d human scores; %d alignment rows", len(human), len(table))
with atomic_path(snakemake.output.table) as tmp:
    table.to_csv(tmp, index=False)
