"""Rule script retrieve_distractors: candidates.parquet + forms.parquet of one suite."""

import logging

from factprobe.distractors.cooccur import Cooccurrence
from factprobe.distractors.retrieve import Settings, forms_of_candidates, load_suite_omega, retrieve
from factprobe.distractors.semantic import load_index
from factprobe.distractors.temporal import past_objects
from factprobe.io import read_table, write_frame

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
log = logging.getLogger("retrieve_distractors")
p = snakemake.params.settings
facts, entity_forms, claims, omega = load_suite_omega(snakemake.input, p)
settings = Settings(
    strategies=p["strategies"],
    n=p["n"],
    pool_size=p["pool_size"],
    cooccur_n=p["cooccur_n"],
    cooccur_sides=p["cooccur_sides"],
    languages=p["languages"],
    search=p["search"],
)
index = None
if "index" in snakemake.input.keys():
    index = load_index(snakemake.input.index, p["search"], p["ef_search"])
past = None
if "temporal" in snakemake.input.keys():
    past = past_objects(
        read_table(snakemake.input.temporal).to_pandas(), p["dump"], p.get("temporal_earlier_dump", False)
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
write_frame(candidates, snakemake.output.candidates)
write_frame(forms, snakemake.output.forms)
