"""Rule script build_sem_index: TF-IDF bags of one dump (+ nmslib HNSW index when searched), saved to a folder."""

import sys

sys.path.insert(0, snakemake.scriptdir)  # the workflow's own library first, not an installed copy

from pathlib import Path

from factprobe import scan
from factprobe.distractors.semantic import build_index
from factprobe.io import atomic_dir
from factprobe.rulelog import rule_logger

log = rule_logger(snakemake)
sem = snakemake.params.sem
out = snakemake.output.index
# Bags are counted out of core from the Parquet file by DuckDB, within its share of the job's memory.
memory_mb = scan.duckdb_mb(snakemake.resources.get("mem_mb", 4000))
rows = None
if snakemake.params.relations is not None:
    # Only entities that can be candidates: those sharing a declared type with an object of a
    # searched relation (issue 15 item 3); IDF is still counted over every entity.
    con = scan.connect(snakemake.threads, memory_mb)
    rows = scan.sem_candidates(
        snakemake.input.claims,
        snakemake.input.types,
        [int(r[1:]) for r in snakemake.params.relations],
        con,
    )
    con.close()
    log.info("candidate rows: %d entities (relations %s)", len(rows), snakemake.params.relations)
# Built beside the target and renamed at the end, so a killed job leaves no complete-looking index;
# a failure removes the temporary folder, and a full disk is reported as such.
with atomic_dir(out, snakemake.resources.get("disk_mb")) as tmp:
    build_index(
        snakemake.input.claims,
        tmp,
        threads=snakemake.threads,
        key=Path(out).name,
        hnsw=bool(snakemake.params.hnsw),
        memory_mb=memory_mb,
        rows=rows,
        **sem,
    )
