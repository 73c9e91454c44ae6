"""Rule script: every model's per-fact measures of one suite vs human scores -> Kendall τ (§4.2),
and the §5.1 curves (τ vs number of distractors, Fig. 3; vs number of cloze sentences, Fig. 4)."""

import sys

sys.path.insert(0, snakemake.scriptdir)  # the workflow's own library first, not an installed copy

from factprobe import contracts
from factprobe.metrics.meta import alignment_for_models, curves_for_models, read_human
from factprobe.plumbing.rulelog import rule_logger

log = rule_logger(snakemake)
human = read_human(snakemake.input.human)
facts = contracts.read("facts", snakemake.input.facts)
models = list(snakemake.params.models)
tables = {
    model: contracts.read("fact_metrics", path)
    for model, path in zip(models, snakemake.input.per_fact, strict=True)
}
cloze = {
    model: contracts.read("cloze_metrics", path)
    for model, path in zip(models, snakemake.input.cloze, strict=True)
}
folds = int(snakemake.params.folds)
table = alignment_for_models(tables, human, facts, folds, str(snakemake.input.human))
curves = curves_for_models(tables, cloze, human, facts, table, folds)
log.info("%d human scores; %d alignment rows; %d curve rows", len(human), len(table), len(curves))
contracts.write_csv("human_alignment", table, snakemake.output.table)
contracts.write_csv("human_alignment_curves", curves, snakemake.output.curves)
