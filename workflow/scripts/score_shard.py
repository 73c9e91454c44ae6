"""Rule script: score one shard of a suite's (prompt, candidate form) pairs with one model."""

import logging

import pandas as pd
from factprobe.io import read_table, write_frame
from factprobe.lm import CachingLM, HFCausalLM, RequestCache
from factprobe.scoring.suite import build_pairs, score_pairs, shard_of, topk_table

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
log = logging.getLogger("score_shard")
inp, params = snakemake.input, snakemake.params


def frames(*names):
    """Concatenate the named inputs that this job has (translations and ApprOpt are optional)."""
    parts = [read_table(inp[name]).to_pandas() for name in names if name in inp.keys()]
    return pd.concat(parts, ignore_index=True) if len(parts) > 1 else parts[0]


prompts = frames("prompts", "translated_prompts")
candidates = frames("candidates", "appropt")
forms = frames("forms", "translated_forms", "appropt_forms")
shard, shards = int(params.shard), int(params.shards)
prompts = prompts[[shard_of(p, shards) == shard for p in prompts["prompt_id"]]]
log.info("shard %d/%d: %d prompts", shard, shards, len(prompts))
pairs = build_pairs(prompts, candidates, forms, tuple(params.no_space_languages))
model = HFCausalLM.from_row(
    params.model,
    control_dir=inp.get("control"),
    end_marker=params.end_marker,
    token_budget=int(params.token_budget),
    no_space_langs=params.no_space_languages,
)
lm = CachingLM(model, RequestCache(params.cache))
scores = score_pairs(lm, pairs)
write_frame(scores, snakemake.output.scores)
log.info("wrote %d scores", len(scores))
topk = topk_table(lm, prompts, int(params.topk))
write_frame(topk, snakemake.output.topk)
log.info("wrote top-%d first tokens of %d prompts", int(params.topk), topk["prompt_id"].nunique())
