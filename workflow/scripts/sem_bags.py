"""Rule script sem_bags: the unweighted bags of one part of a dump's entities."""

import sys

sys.path.insert(0, snakemake.scriptdir)  # the workflow's own library first, not an installed copy

from factprobe import scan
from factprobe.distractors.semantic.part_bags import count_part
from factprobe.io import atomic_dir
from factprobe.plumbing.rulelog import rule_logger

log = rule_logger(snakemake)
sem = snakemake.params.sem
part, parts = int(snakemake.params.part), int(snakemake.params.parts)
# DuckDB reads the part's statements from the Parquet file (filtered while scanning, within its share
# of the job's memory); they are counted in memory one bucket of entity ids at a time (semantic.index_parts).
memory_mb = scan.duckdb_mb(snakemake.resources.get("mem_mb", 4000))
rows = None
if snakemake.params.relations is not None:
    # Only entities that can be candidates: those sharing a declared type with an object of a
    # searched relation; the part's statistics still count every entity.
    con = scan.connect(snakemake.threads, memory_mb)
    rows = scan.sem_candidates(
        snakemake.input.claims,
        snakemake.input.types,
        [int(r[1:]) for r in snakemake.params.relations],
        con,
    )
    con.close()
    log.info("candidate rows: %d entities (relations %s)", len(rows), snakemake.params.relations)
with atomic_dir(snakemake.output.bags, snakemake.resources.get("disk_mb")) as tmp:
    meta = count_part(
        snakemake.input.claims,
        tmp,
        part,
        parts,
        reverse=sem["reverse"],
        bag=sem["bag"],
        namespace=sem["namespace"],
        threads=snakemake.threads,
        memory_mb=memory_mb,
        rows=rows,
    )
log.info(
    "part %d of %d: %d bags (%d kept), %d features, %d non-zeros in %.1f s",
    part,
    parts,
    meta["bags"],
    meta["entities"],
    meta["features"],
    meta["nnz"],
    meta["seconds"],
)
