"""Rule script: build one probing suite's facts, prompts and entity_forms tables."""

import sys

sys.path.insert(0, snakemake.scriptdir)  # the workflow's own library first, not an installed copy

from factprobe.io import write_frame
from factprobe.probes.build import build_suite
from factprobe.rulelog import rule_logger

log = rule_logger(snakemake)
facts, prompts, forms = build_suite(
    snakemake.wildcards.suite,
    dict(snakemake.params.suite),
    dict(snakemake.params.sets),
    snakemake.input.claims,
    snakemake.input.entities,
    list(snakemake.input.labels),
    snakemake.input.get("changes"),
)
write_frame(facts, snakemake.output.facts)
write_frame(prompts, snakemake.output.prompts)
write_frame(forms, snakemake.output.entity_forms)
