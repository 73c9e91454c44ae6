"""Rule script: gather the score shards of one (suite, model) into the score table."""

import sys

sys.path.insert(0, snakemake.scriptdir)  # the workflow's own library first, not an installed copy

from factprobe import contracts
from factprobe.plumbing.rulelog import rule_logger
from factprobe.scoring.jobs import engine_metadata, gather_scores

log = rule_logger(snakemake)
parts = [contracts.read("score_shard", path) for path in snakemake.input.shards]
topk = [contracts.read("topk", path) for path in snakemake.input.topk_shards]
scores, topk = gather_scores(parts, topk)
contracts.write("scores", scores, snakemake.output.scores, engine_metadata())
contracts.write("topk", topk, snakemake.output.topk)
log.info("gathered %d shards: %d scores, %d prompts", len(parts), len(scores), scores["prompt_id"].nunique())
