"""Rule script appropt_distractors: ApprOpt distractors of one suite for one model."""

import sys

sys.path.insert(0, snakemake.scriptdir)  # the workflow's own library first, not an installed copy

import numpy as np
import torch
from factprobe import contracts, scan
from factprobe.distractors.appropt import appropt_distractors
from factprobe.distractors.retrieval_inputs import load_suite_omega
from factprobe.distractors.retrieve import forms_of_candidates
from factprobe.lm import load_model
from factprobe.plumbing.rulelog import rule_logger
from factprobe.settings import Appropt

log = rule_logger(snakemake)
p = snakemake.params.settings
torch.set_num_threads(max(1, snakemake.threads))
facts, forms_table, _claims, omega = load_suite_omega(snakemake.input, p)
entity_forms = scan.forms_frame(forms_table)
prompts = contracts.read("prompts", snakemake.input.prompts)
lm = load_model(
    p["model"],
    snakemake.input.model,
    end_marker=snakemake.params.end_marker,
    no_space_langs=snakemake.params.no_space_languages,
)


def sitelinks(ids: np.ndarray) -> np.ndarray:
    """The cap's prior: sitelinks of each id (0 when the dump does not list it)."""
    got = scan.sitelinks_of(snakemake.input.entities, ids)
    return got.reindex(ids, fill_value=0).to_numpy()


out = appropt_distractors(
    lm,
    facts,
    prompts,
    entity_forms,
    omega,
    Appropt(
        n=p["n"], width=p["width"], lang=p["lang"], styles=p["styles"], max_candidates=p["max_candidates"]
    ),
    prior=sitelinks,
)
lists = out.drop_duplicates("prompt_id")
log.info(
    "%d distractors for %d sentences of %d facts; %d sentences with fewer than n=%d",
    len(out),
    len(lists),
    out["fact_id"].nunique(),
    (lists["found"] < p["n"]).sum() if len(out) else 0,
    p["n"],
)
contracts.write("appropt", out, snakemake.output.candidates)
contracts.write("forms", forms_of_candidates(out, entity_forms), snakemake.output.forms)
