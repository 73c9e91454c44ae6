"""Rule script: a timeline suite's facts and per-fact metrics -> timeline.csv, its popularity
profile and each model's post-cut-off suite (after_cutoff.csv)."""

import sys

sys.path.insert(0, snakemake.scriptdir)  # the workflow's own library first, not an installed copy

from factprobe import contracts
from factprobe.measures import fact_headline
from factprobe.metrics.timeline import after_cutoff_table, timeline_table
from factprobe.probes.timeline import popularity_profile
from factprobe.rulelog import rule_logger

log = rule_logger(snakemake)
facts = contracts.read("facts", snakemake.input.facts)
per_fact = {
    model: contracts.read("fact_metrics", path)
    for model, path in zip(snakemake.params.models, snakemake.input.per_fact, strict=True)
}
boot = snakemake.params.bootstrap
table = timeline_table(
    per_fact,
    facts,
    dict(snakemake.params.block),
    dict(snakemake.params.declared),
    samples=int(boot["bootstrap_samples"]),
    seed=int(boot["bootstrap_seed"]),
    level=float(boot["confidence_level"]),
)
for row in table.drop_duplicates("model").itertuples():
    log.info(
        "%s: effective cut-off %s (index %d, interval %s..%s), declared %s",
        row.model,
        row.cutoff if row.cutoff_status == "within" else "none within the series",
        row.cutoff_index,
        row.cutoff_low,
        row.cutoff_high,
        row.declared_cutoff or "none",
    )
contracts.write_text("timeline", table, snakemake.output.timeline)
contracts.write_text("timeline_profile", popularity_profile(facts), snakemake.output.profile)
after = after_cutoff_table(
    per_fact,
    facts,
    dict(snakemake.params.declared),
    fact_headline(),
    samples=int(boot["bootstrap_samples"]),
    seed=int(boot["bootstrap_seed"]),
    level=float(boot["confidence_level"]),
)
for row in after.drop_duplicates("model").itertuples():
    log.info(
        "%s: %d facts after its cut-off %s (slices %s)",
        row.model,
        row.n_facts,
        row.declared_cutoff,
        row.slices,
    )
contracts.write_text("after_cutoff", after, snakemake.output.after_cutoff)
