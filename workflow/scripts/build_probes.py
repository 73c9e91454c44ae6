"""Rule script: build one probing suite's facts, prompts and entity_forms tables."""

import logging

from factprobe.io import write_frame
from factprobe.probes.build import build_suite

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, format="%(asctime)s %(message)s")
facts, prompts, forms = build_suite(
    snakemake.wildcards.suite,
    dict(snakemake.params.suite),
    dict(snakemake.params.sets),
    snakemake.input.claims,
    snakemake.input.entities,
    list(snakemake.input.labels),
    snakemake.input.get("changes"),
    snakemake.input.get("temporal"),
)
write_frame(facts, snakemake.output.facts)
write_frame(prompts, snakemake.output.prompts)
write_frame(forms, snakemake.output.entity_forms)
