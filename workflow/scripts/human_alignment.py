"""Rule script: every model's per-fact measures of one suite vs human scores -> Kendall τ (§4.2)."""

import logging

from factprobe.io import atomic_path, read_table
from factprobe.metrics.meta import alignment_for_models, read_human

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
human = read_human(snakemake.input.human)
facts = read_table(snakemake.input.facts).to_pandas()
tables = {
    model: read_table(path).to_pandas()
    for model, path in zip(snakemake.params.models, snakemake.input.per_fact, strict=True)
}
table = alignment_for_models(tables, human, facts, int(snakemake.params.folds), str(snakemake.input.human))
logging.info("%d human scores; %d alignment rows", len(human), len(table))
with atomic_path(snakemake.output.table) as tmp:
    table.to_csv(tmp, index=False)
