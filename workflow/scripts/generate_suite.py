"""Rule script: gather the generation shards of one (suite, model) into the generations table."""

import sys

sys.path.insert(0, snakemake.scriptdir)  # the workflow's own library first, not an installed copy

import pandas as pd
from factprobe import contracts
from factprobe.plumbing.rulelog import rule_logger

log = rule_logger(snakemake)
parts = [contracts.read("generations", path) for path in snakemake.input.shards]
answers = pd.concat(parts, ignore_index=True).sort_values(["prompt_id", "sample"], kind="stable")
contracts.write("generations", answers.reset_index(drop=True), snakemake.output.generations)
log.info(
    "gathered %d shards: %d answers, %d prompts", len(parts), len(answers), answers["prompt_id"].nunique()
)
