"""Rule scripts retrieve_shard / retrieve_distractors: candidates.parquet + forms.parquet of one suite.

With ``params.shard`` (rule retrieve_shard) the facts of one shard are retrieved; rule
retrieve_distractors either retrieves every fact (``distractors.shards: 1``) or gathers the shards.
"""

import sys

sys.path.insert(0, snakemake.scriptdir)  # the workflow's own library first, not an installed copy

from factprobe import contracts, scan
from factprobe.distractors.retrieval_inputs import load_suite_omega, resident_split_mb
from factprobe.distractors.retrieve import forms_of_candidates, gather_shards, retrieve, shard_plan
from factprobe.distractors.tables import TableJob, load_tables
from factprobe.plumbing.rulelog import log_resident, rule_logger
from factprobe.registries import tables_of
from factprobe.settings import Retrieve, load_settings

log = rule_logger(snakemake)
p = snakemake.params.settings
if "shards" in snakemake.input.keys():
    facts = contracts.read("facts", snakemake.input.facts)
    candidates, forms = gather_shards(
        facts,
        [contracts.read("candidates", f) for f in snakemake.input.shards],
        [contracts.read("forms", f) for f in snakemake.input.shard_forms],
    )
    log.info("gathered %d shards: %d candidate rows", len(snakemake.input.shards), len(candidates))
else:
    # DuckDB's scans get their share of the job's memory and spill beyond: the rest is the state
    # of Ω, co-occurrence and type slices, which grows with the relations (benchmarks/scale.py).
    mem_mb = int(snakemake.resources.get("mem_mb", 4000))
    memory_mb = scan.duckdb_mb(mem_mb)
    only = None
    if "shard" in snakemake.params.keys():
        # A shard holds the facts of its subjects and reads their statements only (shard_plan).
        every = contracts.read("facts", snakemake.input.facts)
        shard, shards = int(snakemake.params.shard), int(snakemake.params.shards)
        mine = every[shard_plan(every, shards) == shard]
        only = mine["fact_id"].tolist()
        log.info(
            "shard %d of %d: %d of %d facts, %d subjects",
            shard,
            shards,
            len(only),
            len(every),
            mine["subject"].nunique(),
        )
    # Shards map the suite's types and forms, prepared once (rule prepare_retrieval).
    prepared = snakemake.input.prepared if "prepared" in snakemake.input.keys() else None
    if "claims" in snakemake.input.keys():
        facts, entity_forms, claims, omega = load_suite_omega(
            snakemake.input, p, snakemake.threads, memory_mb, only, prepared
        )
    else:
        # A suite that reads the release alone: its pool is the release's strings, no Ω.
        facts = contracts.read("facts", snakemake.input.facts)
        entity_forms = contracts.read("entity_forms", snakemake.input.entity_forms)
        claims, omega = None, None
        log.info("release-only suite: no dump tables, no Ω (pool source: dataset)")
    settings = load_settings(Retrieve, p, f"distractors of suite {snakemake.wildcards.suite}")
    # The tables the suite's strategies name (registries.TABLES), each from its loader; a shard
    # maps what its suite's preparation holds (rule prepare_retrieval).
    job = TableJob(snakemake.input, p, facts, only, prepared, claims, entity_forms)
    tables = load_tables(tables_of(settings.strategies), job)
    del claims, job  # Cooccurrence keeps its own compact copy
    log.info(
        "%d facts, %d entity forms, strategies %s, tables %s",
        len(facts),
        len(entity_forms),
        settings.strategies,
        list(tables),
    )
    candidates = retrieve(facts, omega, settings, tables, only)
    forms = forms_of_candidates(candidates, entity_forms)
    log_resident(log, "retrieval", memory_mb, mem_mb)
    if omega is not None:
        log.info(
            "Ω read the forms of %d entities; resident MB by kind %s", omega.forms_read, resident_split_mb()
        )
found = candidates[candidates["role"] == "distractor"].groupby(["strategy"]).size()
log.info(
    "distractors per strategy: %s; %d forms of %d entities",
    found.to_dict(),
    len(forms),
    forms["entity"].nunique(),
)
contracts.write("candidates", candidates, snakemake.output.candidates)
contracts.write("forms", forms, snakemake.output.forms)
