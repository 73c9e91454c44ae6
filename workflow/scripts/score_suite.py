"""Rule script: gather the score shards of one (suite, model) into the score table."""

import sys

sys.path.insert(0, snakemake.scriptdir)  # the workflow's own library first, not an installed copy

import pandas as pd
from factprobe import contracts
from factprobe.rulelog import rule_logger
from factprobe.scoring.suite import first_token_ranks

log = rule_logger(snakemake)
parts = [contracts.read("score_shard", path) for path in snakemake.input.shards]
scores = pd.concat(parts, ignore_index=True).sort_values(["prompt_id", "entity", "form"], kind="stable")
topk = pd.concat([contracts.read("topk", path) for path in snakemake.input.topk_shards], ignore_index=True)
scores["first_rank"] = first_token_ranks(scores, topk)
contracts.write("scores", scores, snakemake.output.scores)
contracts.write("topk", topk.sort_values(["prompt_id", "rank"], kind="stable"), snakemake.output.topk)
log.info("gathered %d shards: %d scores, %d prompts", len(parts), len(scores), scores["prompt_id"].nunique())
