"""Rule script: train the builtin:control model of one suite on the taught half of its facts."""

import sys

sys.path.insert(0, snakemake.scriptdir)  # the workflow's own library first, not an installed copy

from factprobe.reproducible import use_reproducible_cpu

# Before torch loads: the same weights on any x86-64 CPU with AVX2 (factprobe/reproducible.py).
reproducible = use_reproducible_cpu()

import json
from pathlib import Path

import torch
from factprobe import contracts
from factprobe.io import atomic_dir
from factprobe.plumbing.rulelog import rule_logger
from factprobe.scoring.control import fact_split, prior_docs, timeline_split, train_control, verbalizations
from factprobe.suite_tables import read_concat

log = rule_logger(snakemake)
log.info(
    "reproducible CPU settings: %s (ATen kernels: %s)", reproducible, torch.backends.cpu.get_cpu_capability()
)
inp, settings = snakemake.input, dict(snakemake.params.settings)

concat = read_concat  # the suites' tables, concatenated in order

facts = contracts.read("facts", inp.facts)
# Known knowledge over time (timeline suites): a cut-off, taught fractions, unknown subjects.
over_time = {k: settings.pop(k) for k in ("taught_until", "taught_fractions", "untaught_subjects")}
if not snakemake.params.taught:  # a suite outside control.suites: the model is taught none of it
    facts = facts.assign(split="untaught")
elif snakemake.params.timeline:
    facts = timeline_split(
        facts, over_time["taught_until"], over_time["taught_fractions"], over_time["untaught_subjects"]
    )
split = fact_split(facts)
prompts = concat(inp.prompts)
forms = concat([inp.forms, inp.candidate_forms]).drop_duplicates()
no_space = snakemake.params.no_space_languages
docs = verbalizations(facts, prompts, forms, max_forms=settings.pop("max_forms"), no_space_langs=no_space)
prior = prior_docs(
    facts,
    prompts,
    concat(inp.candidates),
    forms,
    copies=settings.pop("prior_copies"),
    no_space_langs=no_space,
)
log.info("%d fact documents (taught half), %d prior-balancing documents", len(docs), len(prior))
out = Path(snakemake.output.model)
repeats = settings.pop("fact_repeats")  # facts are outnumbered by prior documents
# One thread whatever the job got: the thread count changes the order of sums, hence the weights.
with atomic_dir(out) as tmp:  # the directory appears complete or not at all
    stats = train_control(docs * repeats + prior, tmp, threads=1, **settings)
    stats.update(
        fact_documents=len(docs),
        prior_documents=len(prior),
        taught=int((split["split"] == "taught").sum()),
        untaught=int((split["split"] == "untaught").sum()),
    )
    (tmp / "training.json").write_text(json.dumps(stats, indent=2))
    contracts.write("split", split, tmp / "split.parquet")
log.info("control model: %s", stats)
