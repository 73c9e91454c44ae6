# distractors stage (distractors.smk), its helpers: the stage's settings, the semantic index's
# parts, resources that grow with the inputs, and the inputs of retrieval, ApprOpt and subject
# swaps.
# Functions live apart from the rules (snakemake --lint: no file mixes them); the rule file
# includes this one first. A function may name what a later stage defines: names are looked up
# when Snakemake calls it.


# The stage's settings per suite / dump (factprobe.plumbing.run_settings).
DISTRACTOR_SETTINGS = RUN.distractors
RETRIEVE_SETTINGS = RUN.retrieve
APPROPT_SETTINGS = RUN.appropt
SEM_INDEX_SETTINGS = RUN.sem_index
SEM_ROWS = RUN.sem_rows


def sem_parts_of(wildcards):
    """Parts of the dump's semantic index: one per semantic.part_count.PART_DUMP_BYTES of
    its file (in place or downloaded; 1 while not downloaded yet), so that a sem_bags job counts
    a bounded number of non-zeros."""
    return dump_parts(dump_file(wildcards))


# Memory and runtime grow with the inputs (input_scaled: common.smk).
sem_bags_mem_mb = input_scaled("mem_mb", 60, 2000, "sem_bags", 64000, sem_parts_of)
sem_bags_runtime = input_scaled("runtime", 2, 30, "sem_bags", None, sem_parts_of)
# The merge holds the vocabulary and a block of rows (the HNSW graph, when searched, the matrix).
sem_index_mem_mb = input_scaled("mem_mb", 4, 2000, "build_sem_index", 64000)
sem_index_runtime = input_scaled("runtime", 0.5, 30, "build_sem_index")
retrieve_mem_mb = input_scaled("mem_mb", 4, 2000, "retrieve_distractors", 64000)


def retrieve_shard_mem_mb(wildcards, input, attempt=1):
    """A retrieval shard's slice of one job's state (run_settings.retrieve_shard_factor)."""
    strategies = DISTRACTOR_SETTINGS[wildcards.suite]["strategies"]
    per_mb = run_settings.retrieve_shard_factor(strategies, CFG.distractors.shards)
    scaled = input_scaled("mem_mb", per_mb, 2000, "retrieve_shard", 64000)
    return scaled(wildcards, input, attempt)


retrieve_runtime = input_scaled("runtime", 0.05, 30, "retrieve_distractors")


def uses_appropt(suite):
    return registries.needs(DISTRACTOR_SETTINGS[suite]["strategies"], "per_model")


def omega_inputs(suite):
    probes = rules.build_probes.output
    return run_inputs.omega_inputs(
        CFG, suite, probes, extract_table, suite in RELEASE_ONLY
    )


def sem_index_types(wildcards):
    """Types of the dumps the searching suites type entities from (the index's candidate rows)."""
    return [extract_table("types", d) for d in SEM_ROWS[wildcards.dump]["type_dumps"]]


def sem_index_parts(wildcards):
    """The sem_bags folders of a dump's index, parts 0..P-1 (sem_parts_of)."""
    out = rules.sem_bags.output.bags
    return [
        out.format(dump=wildcards.dump, part=p) for p in range(sem_parts_of(wildcards))
    ]


def retrieve_inputs(wildcards):
    """One job (distractors.shards 1): as retrieve_shard_inputs; else the suite's shards."""
    # A release-only suite has no Ω to shard by subject: one job.
    if CFG.distractors.shards == 1 or wildcards.suite in RELEASE_ONLY:
        return retrieve_shard_inputs(wildcards)
    facts, lib = rules.build_probes.output.facts, library("retrieve_distractors.py")
    out, shards = rules.retrieve_shard.output, CFG.distractors.shards
    return run_inputs.retrieve_gather_inputs(wildcards.suite, shards, facts, out, lib)


def table_outputs():
    """Output templates a strategy table may read (registries.TABLES, paths)."""
    return {
        "sem_index": rules.build_sem_index.output.index,
        "temporal": rules.temporal_view.output.temporal,
    }


def retrieve_shard_inputs(wildcards):
    retrieve = DISTRACTOR_SETTINGS[wildcards.suite]
    omega, lib = omega_inputs(wildcards.suite), library("retrieve_distractors.py")
    prepared = rules.prepare_retrieval.output.prepared
    shards = CFG.distractors.shards
    return run_inputs.retrieve_job_inputs(
        retrieve,
        omega,
        lib,
        table_outputs(),
        (
            None
            if wildcards.suite in RELEASE_ONLY
            else run_inputs.shard_prepared(wildcards.suite, shards, prepared)
        ),
    )


def prepare_retrieval_inputs(wildcards):
    """The Ω tables of a sharded suite's preparation, and its index where Sem searches exactly."""
    retrieve = RETRIEVE_SETTINGS[wildcards.suite]
    index, lib = rules.build_sem_index.output.index, library("prepare_retrieval.py")
    return run_inputs.prepare_inputs(
        retrieve, omega_inputs(wildcards.suite), lib, index
    )


def appropt_inputs(wildcards):
    """Ω tables, the suite's prompts, the model's folder, and the dump's entities (sitelinks:
    the prior that caps a huge type's candidate pool)."""
    files = omega_inputs(wildcards.suite)
    files["entities"] = extract_table("entities", SUITES[wildcards.suite].dump)
    files["lib"] = library("appropt_distractors.py")
    files["prompts"] = rules.build_probes.output.prompts.format(suite=wildcards.suite)
    files["model"] = model_folder(wildcards.suite, wildcards.model)
    return files


def swap_inputs(wildcards):
    """The suite's probe tables (suite_table_inputs, score stage) and facts (subject swaps: PROBELM Algorithm 1)."""
    files = suite_table_inputs(wildcards.suite)
    files["facts"] = rules.build_probes.output.facts.format(suite=wildcards.suite)
    files["lib"] = library("build_subject_swaps.py")
    return files
