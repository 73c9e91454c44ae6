"""Rule script: stream one Wikidata dump into the extraction tables (all five or none)."""

import sys

sys.path.insert(0, snakemake.scriptdir)  # the workflow's own library first, not an installed copy

import json
import signal
from pathlib import Path

from factprobe.io import atomic_path
from factprobe.plumbing.rulelog import rule_logger
from factprobe.wikidata.download import verify_local
from factprobe.wikidata.reader import extract_dump

# Snakemake stops jobs with SIGTERM: exit through Python so the temp tables are removed.
signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
log = rule_logger(snakemake)
try:
    dump = snakemake.wildcards.dump
    # Verified before the first byte is parsed: a damaged dump fails here, naming its registry.
    verify_local(
        snakemake.input.dump,
        snakemake.params.checksum,
        Path("results/cache/checksums") / f"{dump}.json",
        f"{snakemake.config.get('dumps', 'config/dumps.tsv')} (dump {dump})",
    )
    stats = extract_dump(
        snakemake.input.dump,
        Path(snakemake.output.entities).parent,
        snakemake.params.languages,
        max_bad_fraction=snakemake.params.max_bad_fraction,
        workers=snakemake.threads,
        chunk_bytes=snakemake.params.chunk_mb << 20,
        exclude=snakemake.params.get("exclude", []),
    )
except Exception:
    log.exception("extraction of %s failed", snakemake.input.dump)
    raise
summary = stats.malformed_summary(snakemake.input.dump, snakemake.log[0])
if summary:
    print(summary, file=sys.stderr)  # the console, besides the job log
# Unknown shapes (new datatypes, snak types, entity kinds) are counted, never fatal: shown here.
print(stats.shapes_summary(snakemake.input.dump), file=sys.stderr)
with atomic_path(snakemake.output.stats) as tmp:
    tmp.write_text(json.dumps(stats.summary_record(), indent=1) + "\n")
