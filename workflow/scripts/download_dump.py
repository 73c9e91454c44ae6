"""Rule script: resumable, checksum-verified download of one registered dump."""

import logging

from factprobe.wikidata.download import download

logging.basicConfig(
    filename=snakemake.log[0], level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s"
)
try:
    download(snakemake.params.url, snakemake.output.dump, snakemake.params.checksum or None)
except Exception:
    logging.exception("download of %s failed", snakemake.params.url)
    raise
