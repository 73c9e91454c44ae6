"""Rule script: train builtin:control on the taught half of the configured suites' facts."""

import json
import logging
import shutil
from pathlib import Path

import pandas as pd
from factprobe.io import read_table, write_frame
from factprobe.scoring.control import fact_split, prior_docs, train_control, verbalizations

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
inp, settings = snakemake.input, dict(snakemake.params.settings)


def concat(paths):
    return pd.concat([read_table(p).to_pandas() for p in paths], ignore_index=True)


facts = concat(inp.facts)
split = fact_split(facts)
prompts = concat(inp.prompts)
forms = pd.concat([concat(inp.forms), concat(inp.candidate_forms)], ignore_index=True).drop_duplicates()
no_space = snakemake.params.no_space_languages
docs = verbalizations(facts, prompts, forms, max_forms=settings.pop("max_forms", 3), no_space_langs=no_space)
prior = prior_docs(
    facts, prompts, concat(inp.candidates), forms, copies=settings.pop("prior_copies", 1), no_space_langs=no_space
)
logging.info("%d fact documents (taught half), %d prior-balancing documents", len(docs), len(prior))
out = Path(snakemake.output.model)
tmp = out.with_name(out.name + ".tmp")
shutil.rmtree(tmp, ignore_errors=True)
repeats = settings.pop("fact_repeats", 2)  # facts are outnumbered by prior documents
stats = train_control(docs * repeats + prior, tmp, threads=snakemake.threads, **settings)
stats.update(fact_documents=len(docs), prior_documents=len(prior), taught=int((split["split"] == "taught").sum()), untaught=int((split["split"] == "untaught").sum()))
(tmp / "training.json").write_text(json.dumps(stats, indent=2))
write_frame(split, tmp / "split.parquet")
shutil.rmtree(out, ignore_errors=True)
tmp.rename(out)  # the directory appears complete or not at all
logging.info("control model: %s", stats)
