"""Rule script: greedy + sampled answers per prompt (BELIEF-ICL generation mode)."""

import logging

from factprobe.io import read_table, write_frame
from factprobe.lm import HFCausalLM
from factprobe.scoring.generate import generate_answers

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
params = snakemake.params
prompts = read_table(snakemake.input.prompts).to_pandas()
lm = HFCausalLM.from_row(
    params.model, control_dir=snakemake.input.get("control"), generation_batch_size=int(params.batch_size)
)
answers = generate_answers(lm, prompts, samples=int(params.samples), max_new_tokens=int(params.max_new_tokens))
write_frame(answers, snakemake.output.generations)
