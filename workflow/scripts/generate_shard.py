"""Rule script: greedy + sampled answers per prompt of one shard (BELIEF-ICL generation mode;
greedy only for ``generate: greedy`` suites, params.samples = 0; B(c) beams per width for
``generate: beams`` suites, each prompt to its object's longest form + 5 tokens)."""

import sys

sys.path.insert(0, snakemake.scriptdir)  # the workflow's own library first, not an installed copy

import torch
from factprobe import contracts
from factprobe.lm import load_model
from factprobe.plumbing.rulelog import rule_logger
from factprobe.scoring.failclosed import CheckedLM, ScoringJob
from factprobe.scoring.generate import beam_answers, beam_limits, confidence_sample, generate_answers
from factprobe.scoring.suite import shard_of

log = rule_logger(snakemake)
torch.set_num_threads(max(1, snakemake.threads))  # the job's threads, not every core of the node
params = snakemake.params
prompts = contracts.read("prompts", snakemake.input.prompts)
shard, shards = int(params.shard), int(params.shards)
# BELIEF-ICL §3.2: which prompts get the sampled answers, drawn over the whole suite (not the shard).
sample_ids = confidence_sample(prompts, params.confidence_prompts)
# The score shards' split: a prompt's answers come from the same shard index as its scores.
prompts = prompts[[shard_of(p, shards) == shard for p in prompts["prompt_id"]]]
log.info("shard %d/%d: %d prompts", shard, shards, len(prompts))
model = load_model(
    params.model, model_dir=snakemake.input.model, generation_batch_size=int(params.batch_size)
)
# An answer whose log-probability is not a finite number stops the job (factprobe.scoring.failclosed).
lm = CheckedLM(model, ScoringJob(snakemake.wildcards.model, snakemake.wildcards.suite))
if params.beam_widths:  # generate: beams, B(c) of the distractors paper (Table 2, §4.2)
    # The reference's length rule: each prompt's object's longest form + 5 tokens.
    limits = beam_limits(
        model.tokenizer,
        prompts,
        contracts.read("facts", snakemake.input.facts),
        contracts.read("forms", snakemake.input.forms),
        tuple(params.no_space_languages),
        fallback=int(params.max_new_tokens),
    )
    log.info("beam token limits: %d to %d", min(limits.values(), default=0), max(limits.values(), default=0))
    answers = beam_answers(lm, prompts, [int(w) for w in params.beam_widths], limits=limits)
else:
    answers = generate_answers(
        lm,
        prompts,
        samples=int(params.samples),
        max_new_tokens=int(params.max_new_tokens),
        sample_ids=sample_ids,
    )
contracts.write("generations", answers, snakemake.output.generations)
