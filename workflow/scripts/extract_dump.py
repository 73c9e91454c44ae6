"""Rule script: stream one Wikidata dump into the extraction tables (all five or none)."""

import logging
import signal
import sys
from pathlib import Path

from factprobe.wikidata.reader import extract_dump

# Snakemake stops jobs with SIGTERM: exit through Python so the temp tables are removed.
signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
logging.basicConfig(
    filename=snakemake.log[0], level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s"
)
try:
    extract_dump(
        snakemake.input.dump,
        Path(snakemake.output.entities).parent,
        snakemake.params.languages,
        max_bad_fraction=snakemake.params.max_bad_fraction,
        workers=snakemake.threads,
        chunk_bytes=snakemake.params.chunk_mb << 20,
    )
except Exception:
    logging.exception("extraction of %s failed", snakemake.input.dump)
    raise
