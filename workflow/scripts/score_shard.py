"""Rule script: score one shard of a suite's (prompt, candidate form) pairs with one model."""

import sys

sys.path.insert(0, snakemake.scriptdir)  # the workflow's own library first, not an installed copy

import torch
from factprobe import contracts
from factprobe.lm import CachingLM, RequestCache, load_model
from factprobe.rulelog import rule_logger
from factprobe.scoring.failclosed import CheckedLM, ScoringJob, require_finite_scores
from factprobe.scoring.suite import build_pairs, score_pairs, shard_of, topk_table
from factprobe.suite_tables import load_suite_tables

log = rule_logger(snakemake)
torch.set_num_threads(max(1, snakemake.threads))  # the job's threads, not every core of the node
inp, params = snakemake.input, snakemake.params

tables = load_suite_tables(inp)
prompts, candidates, forms = tables.prompts, tables.candidates, tables.forms
shard, shards = int(params.shard), int(params.shards)
prompts = prompts[[shard_of(p, shards) == shard for p in prompts["prompt_id"]]]
log.info("shard %d/%d: %d prompts", shard, shards, len(prompts))
sentence = params.mode == "sentence"
# Subject swaps (sentence-mode suites only: PROBELM §4.1 ranks whole sentences) are prompts of
# their own, scored in the shard of the prompt they swap.
swaps = contracts.read("subject_swaps", inp.subject_swaps) if "subject_swaps" in inp.keys() else None
if swaps is not None:
    swaps = swaps[[shard_of(p, shards) == shard for p in swaps["group_prompt_id"]]]
# Sentence mode scores whole scenario sentences: the template's ending too, one label per entity.
pairs = build_pairs(
    prompts,
    candidates,
    forms,
    tuple(params.no_space_languages),
    swaps=swaps,
    ending=sentence,
    sentence_forms=params.sentence_forms if sentence else "all",
)
model = load_model(
    params.model,
    model_dir=inp.model,
    end_marker=params.end_marker,
    token_budget=int(params.token_budget),
    no_space_langs=params.no_space_languages,
)
# The check sits inside the cache: a NaN, an infinity or a missing result stops the job before
# it is cached or written.
job = ScoringJob(snakemake.wildcards.model, snakemake.wildcards.suite)
lm = CachingLM(CheckedLM(model, job), RequestCache(params.cache))
log.info("scoring mode: %s", "whole sentence (PROBELM §4.1)" if sentence else "continuation")
scores = score_pairs(lm, pairs, sentence=sentence, first_token=params.sentence_first_token)
require_finite_scores(scores, job)
contracts.write("score_shard", scores, snakemake.output.scores)
log.info("wrote %d scores", len(scores))
topk = topk_table(lm, prompts, int(params.topk))
contracts.write("topk", topk, snakemake.output.topk)
log.info("wrote top-%d first tokens of %d prompts", int(params.topk), topk["prompt_id"].nunique())
