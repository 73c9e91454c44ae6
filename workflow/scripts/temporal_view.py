"""Rule script: current and past objects of every (subject, property) of one dump."""

import sys

sys.path.insert(0, snakemake.scriptdir)  # the workflow's own library first, not an installed copy

from pathlib import Path

from factprobe import scan
from factprobe.diff.temporal import temporal_view
from factprobe.plumbing.rulelog import log_resident, rule_logger

log = rule_logger(snakemake)
mem_mb = int(snakemake.resources.mem_mb)
duckdb_mb = scan.duckdb_mb(mem_mb)
earlier = {Path(p).parent.name: p for p in snakemake.input.earlier}
temporal_view(
    snakemake.wildcards.dump,
    snakemake.input.claims,
    snakemake.input.entities,
    earlier,
    snakemake.output.temporal,
    memory_mb=duckdb_mb,
    threads=snakemake.threads,
    temp_dir=snakemake.resources.get("tmpdir"),
    # ~200 bytes of DuckDB memory per claim (120 measured at 4 M) keeps a bucket in RAM.
    rows_per_partition=duckdb_mb * 5_000,
)
log_resident(log, "the temporal view", duckdb_mb, mem_mb)
