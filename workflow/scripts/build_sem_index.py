"""Rule script build_sem_index: TF-IDF bags of one dump + nmslib HNSW index, saved to a folder."""

import logging
from pathlib import Path

from factprobe.diskspace import atomic_dir
from factprobe.distractors.semantic import build_index
from factprobe.io import read_table

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
sem = snakemake.params.sem
out = snakemake.output.index
claims = read_table(snakemake.input.claims, columns=["subject", "property", "object", "rank"]).to_pandas()
# Built beside the target and renamed at the end, so a killed job leaves no complete-looking index;
# a failure removes the temporary folder, and a full disk is reported as such.
with atomic_dir(out, snakemake.resources.get("disk_mb")) as tmp:
    build_index(claims, tmp, threads=snakemake.threads, key=Path(out).name, **sem)
