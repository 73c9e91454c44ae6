"""Rule script retrieve_distractors: candidates.parquet + forms.parquet of one suite."""

import sys

sys.path.insert(0, snakemake.scriptdir)  # the workflow's own library first, not an installed copy

from factprobe import contracts
from factprobe.distractors.cooccur import Cooccurrence
from factprobe.distractors.retrieve import forms_of_candidates, load_suite_omega, retrieve
from factprobe.distractors.semantic import load_index
from factprobe.distractors.temporal import past_objects
from factprobe.rulelog import rule_logger
from factprobe.settings import Retrieve, load

log = rule_logger(snakemake)
p = snakemake.params.settings
facts, entity_forms, claims, omega = load_suite_omega(snakemake.input, p, snakemake.threads)
settings = load(Retrieve, p, f"distractors of suite {snakemake.wildcards.suite}")
index = None
if "index" in snakemake.input.keys():
    index = load_index(snakemake.input.index, p["search"], p["ef_search"])
past = None
if "temporal" in snakemake.input.keys():
    past = past_objects(
        contracts.read("temporal", snakemake.input.temporal), p["dump"], p["temporal_earlier_dump"]
    )
cooccur = Cooccurrence(claims[claims["rank"] >= 1]) if "cooccur" in settings.strategies else None
log.info("%d facts, %d entity forms, strategies %s", len(facts), len(entity_forms), settings.strategies)
candidates = retrieve(facts, omega, settings, index, past, cooccur, entity_forms)
forms = forms_of_candidates(candidates, entity_forms)
found = candidates[candidates["role"] == "distractor"].groupby(["strategy"]).size()
log.info(
    "distractors per strategy: %s; %d forms of %d entities",
    found.to_dict(),
    len(forms),
    forms["entity"].nunique(),
)
contracts.write("candidates", candidates, snakemake.output.candidates)
contracts.write("forms", forms, snakemake.output.forms)
