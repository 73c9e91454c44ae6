"""Rule script export_hf: one suite as a Hugging Face datasets Parquet folder with a card."""

import logging

from factprobe.export.hf import dataset_card, suite_tables, write_hf_dataset

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
log = logging.getLogger("export_hf")
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
