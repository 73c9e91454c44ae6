"""Rule script: current and past objects of every (subject, property) of one dump."""

import logging
from pathlib import Path

from factprobe.diff.temporal import temporal_view

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, format="%(asctime)s %(message)s")
earlier = {Path(p).parent.name: p for p in snakemake.input.earlier}
temporal_view(
    snakemake.wildcards.dump,
    snakemake.input.claims,
    snakemake.input.entities,
    earlier,
    snakemake.output.temporal,
    memory_mb=int(snakemake.resources.mem_mb) * 3 // 4,
    threads=snakemake.threads,
    temp_dir=snakemake.resources.get("tmpdir"),
)
