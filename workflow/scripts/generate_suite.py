"""Rule script: greedy + sampled answers per prompt (BELIEF-ICL generation mode)."""

import logging

from factprobe import contracts
from factprobe.scoring.generate import generate_answers
from factprobe.scoring.models import load_model

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
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
