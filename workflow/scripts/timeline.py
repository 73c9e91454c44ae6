"""Rule script: a timeline suite's facts and per-fact metrics -> timeline.csv, its popularity
profile, each model's post-cut-off suite (after_cutoff.csv), cut-off profile
(cutoff_profile.csv) and calibration per slice (slice_calibration.csv)."""

import sys

sys.path.insert(0, snakemake.scriptdir)  # the workflow's own library first, not an installed copy

from factprobe import contracts
from factprobe.measures import fact_headline
from factprobe.metrics.cutoff_profile import profile_table
from factprobe.metrics.slice_calibration import calibration_table
from factprobe.metrics.timeline import after_cutoff_table, timeline_table
from factprobe.plumbing.rulelog import rule_logger
from factprobe.probes.timeline import popularity_profile

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
# the profile refits the change point per replicate: at most 200 of them
profiles = profile_table(
    per_fact,
    facts,
    dict(snakemake.params.block),
    dict(snakemake.params.declared),
    samples=min(int(boot["bootstrap_samples"]), 200),
    seed=int(boot["bootstrap_seed"]),
    level=float(boot["confidence_level"]),
)
for row in profiles.itertuples():
    log.info(
        "%s: profile on %s facts: %s, cut-off %s (%s..%s), decay %.1f slices / %.0f days; %s",
        row.model,
        row.curve,
        row.shape,
        row.cutoff or "-",
        row.cutoff_low or "-",
        row.cutoff_high or "-",
        row.decay_slices,
        row.decay_days,
        row.reason,
    )
contracts.write_text("cutoff_profile", profiles, snakemake.output.cutoff_profile)
confidence = {
    model: contracts.read("candidate_confidence", path)
    for model, path in zip(snakemake.params.models, snakemake.input.confidence, strict=True)
}
calibration = calibration_table(confidence, facts, dict(snakemake.params.block), profiles)
contracts.write_text("slice_calibration", calibration, snakemake.output.calibration)
