"""Rule script: a sentence-mode suite's subject swaps as prompts (PROBELM Algorithm 1)."""

import sys

sys.path.insert(0, snakemake.scriptdir)  # the workflow's own library first, not an installed copy

from factprobe import contracts
from factprobe.distractors.swaps import subject_swaps
from factprobe.plumbing.rulelog import rule_logger
from factprobe.suite_tables import load_suite_tables

log = rule_logger(snakemake)
tables = load_suite_tables(snakemake.input)
facts = contracts.read("facts", snakemake.input.facts)
swaps = subject_swaps(tables.prompts, tables.candidates, tables.forms, facts, snakemake.params.sentence_forms)
contracts.write("subject_swaps", swaps, snakemake.output.swaps)
log.info("wrote %d subject-swap prompts", len(swaps))
