"""Rule script: gather the score shards of one (suite, model) into the score table."""

import logging

import pandas as pd
from factprobe import contracts
from factprobe.scoring.suite import first_token_ranks

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, format="%(asctime)s %(message)s")
parts = [contracts.read("score_shard", path) for path in snakemake.input.shards]
scores = pd.concat(parts, ignore_index=True).sort_values(["prompt_id", "entity", "form"], kind="stable")
topk = pd.concat([contracts.read("topk", path) for path in snakemake.input.topk_shards], ignore_index=True)
scores["first_rank"] = first_token_ranks(scores, topk)
contracts.write("scores", scores, snakemake.output.scores)
contracts.write("topk", topk.sort_values(["prompt_id", "rank"], kind="stable"), snakemake.output.topk)
logging.info("gathered %d shards: %d scores, %d prompts", len(parts), len(scores), scores["prompt_id"].nunique())
