# factprobe: factual-knowledge probing benchmarks from Wikidata dumps.
# Stages and data contracts: docs/contracts.md. Settings: config/README.md.
from snakemake.utils import min_version

min_version("9.19")  # = the snakemake pin of pyproject.toml


configfile: "config/config.yaml"


include: "workflow/rules/common.smk"
include: "workflow/rules/download.smk"
include: "workflow/rules/extract.smk"
include: "workflow/rules/diff.smk"
include: "workflow/rules/probes.smk"
include: "workflow/rules/translate.smk"
include: "workflow/rules/distractors.smk"
include: "workflow/rules/control.smk"
include: "workflow/rules/models.smk"
include: "workflow/rules/score.smk"
include: "workflow/rules/metrics.smk"
include: "workflow/rules/report.smk"
include: "workflow/rules/export.smk"


rule all:
    default_target: True
    input:
        report=rules.render_report.output.html,
        diffs=DIFF_TARGETS,
        human=HUMAN_TARGETS,
