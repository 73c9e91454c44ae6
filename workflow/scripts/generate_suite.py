"""Rule script: greedy + sampled answers per prompt (BELIEF-ICL generation mode)."""

import sys

sys.path.insert(0, snakemake.scriptdir)  # the workflow's own library first, not an installed copy

from factprobe import contracts
from factprobe.rulelog import rule_logger
from factprobe.scoring.generate import generate_answers
from factprobe.scoring.models import load_model

log = rule_logger(snakemake)
params = snakemake.params
prompts = contracts.read("prompts", snakemake.input.prompts)
loaded = load_model(params.model, control_dir=snakemake.input.get("control"))
answers = generate_answers(
    loaded.model,
    loaded.tokenizer,
    prompts,
    samples=int(params.samples),
    max_new_tokens=int(params.max_new_tokens),
    batch_size=int(params.batch_size),
)
contracts.write("generations", answers, snakemake.output.generations)
