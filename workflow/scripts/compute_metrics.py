"""Rule script: every measure of one (suite, model) -> per-fact and suite-level tables."""

import sys

sys.path.insert(0, snakemake.scriptdir)  # the workflow's own library first, not an installed copy

from factprobe import contracts
from factprobe.metrics.pipeline import compute_suite_metrics, read_inputs
from factprobe.rulelog import rule_logger
from factprobe.settings import Metrics, load_settings

log = rule_logger(snakemake)
inputs = read_inputs(snakemake.input)
# Only the keys the suite's families read arrive (config_rules.suite_metrics); the rest keep defaults.
measures = dict(snakemake.params.settings)
families = measures.pop("families")
if "encoder" in snakemake.input.keys():  # metrics.overlap.encoder names a models.tsv row: its folder
    measures["overlap"] = {**measures["overlap"], "encoder": snakemake.input.encoder}
settings = load_settings(Metrics, {**measures, "families": {}}, "metrics")
cutoff = dict(snakemake.params.cutoff)
extra = None
if cutoff:
    import pandas as pd
    from factprobe.metrics.plausibility import facts_new_to_model

    inputs.facts, counts = facts_new_to_model(inputs.facts, cutoff)
    model = snakemake.wildcards.model
    if counts["cutoff_after_dump"]:
        log.warning(
            "model %s: cut-off %s is on or after the newer dump %s; only facts dated after it count (%d)",
            model,
            cutoff["cutoff"],
            cutoff["dump"],
            counts["plausible_facts"],
        )
    log.info(
        "model %s: cut-off %s (%s): %d facts new to it, %d left out as seen before its cut-off",
        model,
        cutoff["cutoff"],
        cutoff["source"],
        counts["plausible_facts"],
        counts["facts_seen_by_model"],
    )
    extra = pd.DataFrame({"measure": list(counts), "value": list(counts.values())})
per_fact, suite = compute_suite_metrics(inputs, settings, families, snakemake.params.correct_set)
if extra is not None:
    from factprobe.metrics.common import conform_dataset_table

    suite = conform_dataset_table(pd.concat([suite, extra], ignore_index=True))
contracts.write("fact_metrics", per_fact, snakemake.output.per_fact)
contracts.write("suite_metrics", suite, snakemake.output.suite)
