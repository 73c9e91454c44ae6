"""Rule script: WikiFactDiff-style diff of two dumps' claims (changes.parquet + stats.tsv)."""

import sys

sys.path.insert(0, snakemake.scriptdir)  # the workflow's own library first, not an installed copy

from factprobe import scan
from factprobe.diff.engine import DiffInputs, diff_claims
from factprobe.diff.single_value import single_value_properties
from factprobe.plumbing.rulelog import log_resident, rule_logger

log = rule_logger(snakemake)
inp = snakemake.input
single_value = single_value_properties(
    snakemake.params.single_value,
    inp.get("single_value_list"),
    [inp.old_properties, inp.new_properties],
)
log.info("%d single-value properties (%s)", len(single_value), snakemake.params.single_value)
mem_mb = int(snakemake.resources.mem_mb)
duckdb_mb = scan.duckdb_mb(mem_mb)
diff_claims(
    DiffInputs(
        inp.old_claims,
        inp.new_claims,
        inp.old_entities,
        inp.new_entities,
        int(snakemake.wildcards.old),
        int(snakemake.wildcards.new),
    ),
    single_value,
    snakemake.output.changes,
    snakemake.output.stats,
    memory_mb=duckdb_mb,
    threads=snakemake.threads,
    # ~100 bytes of DuckDB memory per claim keeps a bucket's aggregate and join in RAM.
    rows_per_partition=duckdb_mb * 10_000,
    temp_dir=snakemake.resources.get("tmpdir"),
)
log_resident(log, "the diff", duckdb_mb, mem_mb)
