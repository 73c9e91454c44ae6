"""Rule script build_sem_index: TF-IDF bags of one dump + nmslib HNSW index, saved to a folder."""

import sys

sys.path.insert(0, snakemake.scriptdir)  # the workflow's own library first, not an installed copy

import shutil
from pathlib import Path

from factprobe import contracts
from factprobe.distractors.semantic import build_index
from factprobe.rulelog import rule_logger

log = rule_logger(snakemake)
sem = snakemake.params.sem
out = Path(snakemake.output.index)
# Build beside the target and rename at the end, so a killed job leaves no complete-looking index.
tmp = out.with_name(f".{out.name}.tmp")
shutil.rmtree(tmp, ignore_errors=True)
claims = contracts.read("claims", snakemake.input.claims, ["subject", "property", "object", "rank"])
build_index(claims, tmp, threads=snakemake.threads, key=out.name, **sem)
shutil.rmtree(out, ignore_errors=True)
tmp.rename(out)
