"""Rule script: register the newest Wikimedia dump after the registry's latest and print the jobs
the next run plans (the library's wikidata.refresh); offline or with nothing newer, one line."""

import sys

sys.path.insert(0, snakemake.scriptdir)  # the workflow's own library first, not an installed copy

from pathlib import Path

from factprobe.plumbing.rulelog import rule_logger
from factprobe.wikidata.refresh import refresh_and_plan

log = rule_logger(snakemake)
status, lines = refresh_and_plan(
    Path(snakemake.params.registry),
    snakemake.params.format,
    Path(snakemake.params.snakefile),
    [Path(p) for p in snakemake.params.configfiles],
    Path.cwd(),
)
# Offline or an unreadable registry is not a failed job: its one line says what happened and the
# registry is unchanged (`python -m factprobe.wikidata.refresh` exits 1 there, for scripts).
for line in lines:
    (log.warning if status else log.info)(line)
    print(line, flush=True)
