"""Rule script export_hf: one suite as a Hugging Face datasets Parquet folder with a card."""

import sys

sys.path.insert(0, snakemake.scriptdir)  # the workflow's own library first, not an installed copy

from factprobe.export.hf import dataset_card, suite_tables, write_hf_dataset
from factprobe.plumbing.rulelog import rule_logger

log = rule_logger(snakemake)
inp, card = snakemake.input, snakemake.params.card
suite = snakemake.wildcards.suite
files = {
    "facts": [inp.facts],
    "prompts": [inp[n] for n in ("prompts", "translated_prompts") if n in inp.keys()],
    "candidates": [inp.candidates],
    "forms": [inp[n] for n in ("forms", "translated_forms") if n in inp.keys()],
}
tables = suite_tables(files)
text = dataset_card(suite, card["settings"], card["dumps"], card["template_sets"], tables)
write_hf_dataset(tables, text, snakemake.output.dataset)
log.info("wrote %s", {name: t.num_rows for name, t in tables.items()})
