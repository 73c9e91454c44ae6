"""Rule script: build one probing suite's facts, prompts and entity_forms tables."""

import sys

sys.path.insert(0, snakemake.scriptdir)  # the workflow's own library first, not an installed copy

from factprobe import contracts, scan
from factprobe.plumbing.rulelog import log_resident, rule_logger
from factprobe.probes.build import DumpTables, build_suite

log = rule_logger(snakemake)
mem_mb = int(snakemake.resources.mem_mb)
duckdb_mb = scan.duckdb_mb(mem_mb)
# entity_forms streams to its output inside build_suite.
facts, prompts, _ = build_suite(
    snakemake.wildcards.suite,
    dict(snakemake.params.suite),
    dict(snakemake.params.sets),
    # A suite that reads the Fluent-mLAMA release alone has no dump tables among its inputs.
    DumpTables(
        snakemake.input.get("claims"),
        snakemake.input.get("entities"),
        list(snakemake.input.get("labels", [])),
        snakemake.input.get("changes"),
        snakemake.input.get("temporal"),
        tuple(snakemake.input.get("timeline_changes", [])),
    ),
    forms_path=snakemake.output.entity_forms,
    memory_mb=duckdb_mb,
    threads=snakemake.threads,
)
log_resident(log, "building the suite", duckdb_mb, mem_mb)
contracts.write("facts", facts, snakemake.output.facts)
contracts.write("prompts", prompts, snakemake.output.prompts)
