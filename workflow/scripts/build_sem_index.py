"""Rule script build_sem_index: the dump's semantic index merged from its sem_bags parts (IDF over
the dump, rows weighed and L2-normalised) + the nmslib HNSW graph when a suite searches it."""

import sys

sys.path.insert(0, snakemake.scriptdir)  # the workflow's own library first, not an installed copy

from pathlib import Path

from factprobe.distractors.semantic.index_parts import build_from_parts
from factprobe.io import atomic_dir
from factprobe.plumbing.rulelog import rule_logger
from factprobe.settings import sem_settings

log = rule_logger(snakemake)
out = snakemake.output.index
# Built beside the target and renamed at the end, so a killed job leaves no complete-looking index;
# a failure removes the temporary folder, and a full disk is reported as such.
with atomic_dir(out, snakemake.resources.get("disk_mb")) as tmp:
    meta = build_from_parts(
        list(snakemake.input.parts),
        tmp,
        sem_settings(snakemake.params.sem),
        hnsw=bool(snakemake.params.hnsw),
        threads=snakemake.threads,
        key=Path(out).name,
    )
log.info(
    "index of %d parts: %d entities, %d features, %d non-zeros (merge %.1f s, HNSW %.1f s)",
    len(meta["parts"]),
    meta["entities"],
    meta["features"],
    meta["nnz"],
    meta["seconds_merge"],
    meta["seconds_hnsw"],
)
