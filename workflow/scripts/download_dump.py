"""Rule script: resumable, checksum-verified download of one registered dump."""

import sys

sys.path.insert(0, snakemake.scriptdir)  # the workflow's own library first, not an installed copy

from factprobe.rulelog import rule_logger
from factprobe.wikidata.download import download

log = rule_logger(snakemake)
try:
    download(snakemake.params.url, snakemake.output.dump, snakemake.params.checksum or None)
except Exception:
    log.exception("download of %s failed", snakemake.params.url)
    raise
