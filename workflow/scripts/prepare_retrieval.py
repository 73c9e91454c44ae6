"""Rule script prepare_retrieval: the types and forms every retrieval shard of a suite reads,
written once in the layout Ω searches, and the relations' statements where co-occurrence counts
them (distractors.retrieval_inputs.prepare_universe of the library)."""

import sys

sys.path.insert(0, snakemake.scriptdir)  # the workflow's own library first, not an installed copy

from factprobe import io, scan
from factprobe.distractors.retrieval_inputs import prepare_universe
from factprobe.plumbing.rulelog import log_resident, rule_logger

log = rule_logger(snakemake)
mem_mb = int(snakemake.resources.get("mem_mb", 4000))
memory_mb = scan.duckdb_mb(mem_mb)
with io.atomic_dir(snakemake.output.prepared, snakemake.resources.get("disk_mb")) as tmp:
    settings = dict(snakemake.params.settings)
    prepare_universe(snakemake.input, tmp, settings, snakemake.threads, memory_mb)
log_resident(log, "preparation", memory_mb, mem_mb)
