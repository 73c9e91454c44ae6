# factprobe: factual-knowledge probing benchmarks from Wikidata dumps.
# Stages and data contracts: docs/contracts.md. Settings: config/README.md.
from snakemake.utils import min_version

min_version("9.0")


configfile: "config/config.yaml"


include: "workflow/rules/common.smk"
include: "workflow/rules/extract.smk"


rule all:
    input:
        expand(rules.extract_dump.output.claims, dump=ENABLED),
    default_target: True
