"""Rule script: score one shard of a suite's (prompt, candidate form) pairs with one model."""

import sys

sys.path.insert(0, snakemake.scriptdir)  # the workflow's own library first, not an installed copy

import torch
from factprobe import contracts
from factprobe.lm import CachingLM, RequestCache, load_model
from factprobe.plumbing.rulelog import rule_logger
from factprobe.scoring.failclosed import CheckedLM, ScoringJob
from factprobe.scoring.jobs import ScoreSettings, engine_metadata, score_prompts, shard_prompts, shard_swaps
from factprobe.suite_tables import load_suite_tables

log = rule_logger(snakemake)
torch.set_num_threads(max(1, snakemake.threads))  # the job's threads, not every core of the node
inp, params = snakemake.input, snakemake.params

tables = load_suite_tables(inp)
settings = ScoreSettings(
    mode=params.mode,
    end_marker=params.end_marker,
    token_budget=int(params.token_budget),
    no_space_languages=tuple(params.no_space_languages),
    topk=int(params.topk),
    shards=int(params.shards),
    sentence_forms=params.sentence_forms,
    sentence_first_token=params.sentence_first_token,
)
shard = int(params.shard)
prompts = shard_prompts(tables.prompts, shard, settings.shards)
log.info("shard %d/%d: %d prompts", shard, settings.shards, len(prompts))
# Subject swaps (sentence-mode suites only: PROBELM §4.1 ranks whole sentences) are prompts of
# their own, scored in the shard of the prompt they swap.
swaps = contracts.read("subject_swaps", inp.subject_swaps) if "subject_swaps" in inp.keys() else None
model = load_model(
    params.model,
    model_dir=inp.model,
    end_marker=settings.end_marker,
    token_budget=settings.token_budget,
    no_space_langs=settings.no_space_languages,
)
# The check sits inside the cache: a NaN, an infinity or a missing result stops the job before
# it is cached or written.
job = ScoringJob(snakemake.wildcards.model, snakemake.wildcards.suite)
lm = CachingLM(CheckedLM(model, job), RequestCache(params.cache))
log.info("scoring mode: %s", "whole sentence (PROBELM §4.1)" if settings.sentence else "continuation")
scores, topk = score_prompts(
    lm,
    prompts,
    tables.candidates,
    tables.forms,
    settings,
    job,
    swaps=shard_swaps(swaps, shard, settings.shards),
)
contracts.write("score_shard", scores, snakemake.output.scores, engine_metadata())
log.info("wrote %d scores", len(scores))
contracts.write("topk", topk, snakemake.output.topk)
log.info("wrote top-%d first tokens of %d prompts", settings.topk, topk["prompt_id"].nunique())
