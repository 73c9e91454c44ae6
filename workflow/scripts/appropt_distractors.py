"""Rule script appropt_distractors: ApprOpt distractors of one suite for one model."""

import logging

import torch
from factprobe.distractors.appropt import appropt_distractors
from factprobe.distractors.retrieve import check_columns, forms_of_candidates, load_suite_omega
from factprobe.io import read_table, write_frame
from factprobe.lm import HFCausalLM

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
log = logging.getLogger("appropt_distractors")
p = snakemake.params.settings
torch.set_num_threads(max(1, snakemake.threads))
facts, entity_forms, _claims, omega = load_suite_omega(snakemake.input, p)
prompts = read_table(snakemake.input.prompts).to_pandas()
check_columns(prompts, ["prompt_id", "fact_id", "lang", "style", "text", "context"], snakemake.input.prompts)
control = snakemake.input.control if "control" in snakemake.input.keys() else None
lm = HFCausalLM.from_row(p["model"], control, no_space_langs=snakemake.params.no_space_languages)
out = appropt_distractors(lm, facts, prompts, entity_forms, omega, p["n"], p["lang"], p["styles"], p["width"])
short = (out.drop_duplicates("fact_id")["found"] < p["n"]).sum() if len(out) else 0
log.info(
    "%d distractors for %d facts; %d facts with fewer than n=%d",
    len(out),
    out["fact_id"].nunique(),
    short,
    p["n"],
)
write_frame(out, snakemake.output.candidates)
write_frame(forms_of_candidates(out, entity_forms), snakemake.output.forms)
