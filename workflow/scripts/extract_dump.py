"""Rule script: stream one Wikidata dump into the extraction tables."""

import logging
from pathlib import Path

from factprobe.wikidata.reader import extract_dump

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, format="%(asctime)s %(message)s")
extract_dump(
    snakemake.input.dump,
    Path(snakemake.output.entities).parent,
    snakemake.params.languages,
    snakemake.params.max_bad_fraction,
)
