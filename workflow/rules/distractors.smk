# distractors stage: semantic index per dump, candidates + forms per suite, ApprOpt per model
# (docs/contracts.md); input functions in functions/distractors.smk.


include: "functions/distractors.smk"


# The semantic index in parts (factprobe.distractors.semantic.index_parts): each sem_bags
# job counts the bags of the entities of one part (entity hash), build_sem_index merges them
# with the dump's IDF into the index retrieval maps.
rule sem_bags:
    input:
        claims=rules.extract_dump.output.claims,
        types=sem_index_types,
        lib=library("sem_bags.py"),
    output:
        bags=temp(directory("results/distractors/bags/{dump}/{part}")),
    log:
        "logs/sem_bags/{dump}/{part}.log",
    benchmark:
        "benchmarks/sem_bags/{dump}/{part}.tsv"
    wildcard_constraints:
        part=r"\d+",
    conda:
        "../../environment.yml"
    threads: 2
    resources:
        mem_mb=sem_bags_mem_mb,
        runtime=sem_bags_runtime,
        disk_mb=input_size_mb(1.0),
    params:
        sem=SEM_INDEX_SETTINGS,
        relations=lookup(dpath="{dump}/relations", within=SEM_ROWS),
        part="{part}",
        parts=sem_parts_of,
    script:
        "../scripts/sem_bags.py"


rule build_sem_index:
    input:
        parts=sem_index_parts,
        lib=library("build_sem_index.py"),
    output:
        index=directory("results/distractors/index/{dump}"),
    log:
        "logs/build_sem_index/{dump}.log",
    benchmark:
        "benchmarks/build_sem_index/{dump}.tsv"
    conda:
        "../../environment.yml"
    threads: 2
    resources:
        mem_mb=sem_index_mem_mb,
        runtime=sem_index_runtime,
        disk_mb=input_size_mb(1.0),
    params:
        sem=SEM_INDEX_SETTINGS,
        hnsw=lookup(dpath="{dump}", within=RUN.sem_hnsw),
    script:
        "../scripts/build_sem_index.py"


# distractors.shards > 1: what every shard of a suite would read or build whole - the types and
# forms of its entities and of the members of their types, and the exact-Sem type slices -
# written once, memory-mapped by the shards (factprobe.distractors.retrieval_inputs.prepare_universe).
rule prepare_retrieval:
    input:
        unpack(prepare_retrieval_inputs),
    output:
        prepared=temp(directory("results/probes/{suite}/prepared")),
    log:
        "logs/prepare_retrieval/{suite}.log",
    benchmark:
        "benchmarks/prepare_retrieval/{suite}.tsv"
    conda:
        "../../environment.yml"
    threads: 2
    resources:
        mem_mb=retrieve_mem_mb,
        runtime=retrieve_runtime,
        disk_mb=input_size_mb(0.5),
    params:
        settings=lookup(dpath="{suite}", within=RETRIEVE_SETTINGS),
    script:
        "../scripts/prepare_retrieval.py"


rule retrieve_shard:
    input:
        unpack(retrieve_shard_inputs),
    output:
        candidates=temp("results/probes/{suite}/shards/{shard}.candidates.parquet"),
        forms=temp("results/probes/{suite}/shards/{shard}.forms.parquet"),
    log:
        "logs/retrieve_shard/{suite}/{shard}.log",
    benchmark:
        "benchmarks/retrieve_shard/{suite}/{shard}.tsv"
    wildcard_constraints:
        shard=r"\d+",
    conda:
        "../../environment.yml"
    resources:
        mem_mb=retrieve_shard_mem_mb,
        runtime=retrieve_runtime,
        disk_mb=input_size_mb(0.1),
    params:
        settings=lookup(dpath="{suite}", within=RETRIEVE_SETTINGS),
        shard="{shard}",
        shards=CFG.distractors.shards,
    script:
        "../scripts/retrieve_distractors.py"


# One job per suite, or (distractors.shards > 1) the gather of its retrieve_shard jobs.
rule retrieve_distractors:
    input:
        unpack(retrieve_inputs),
    output:
        candidates="results/probes/{suite}/candidates.parquet",
        forms="results/probes/{suite}/forms.parquet",
    log:
        "logs/retrieve_distractors/{suite}.log",
    benchmark:
        "benchmarks/retrieve_distractors/{suite}.tsv"
    wildcard_constraints:
        suite=BUILT_SUITES,
    conda:
        "../../environment.yml"
    resources:
        mem_mb=retrieve_mem_mb,
        runtime=retrieve_runtime,
        disk_mb=input_size_mb(0.1),
    params:
        settings=lookup(dpath="{suite}", within=RETRIEVE_SETTINGS),
    script:
        "../scripts/retrieve_distractors.py"


rule appropt_distractors:
    input:
        unpack(appropt_inputs),
    output:
        candidates="results/probes/{suite}/appropt/{model}.parquet",
        forms="results/probes/{suite}/appropt/{model}.forms.parquet",
    log:
        "logs/appropt_distractors/{suite}/{model}.log",
    benchmark:
        "benchmarks/appropt_distractors/{suite}/{model}.tsv"
    conda:
        "../../environment.yml"
    threads: 2
    resources:
        mem_mb=8000,
        disk_mb=input_size_mb(0.1),
        gpu=1,
    params:
        settings=lookup(dpath="{suite}/{model}", within=APPROPT_SETTINGS),
        # the trie's paths end as scoring's pairs do (a distractor's score = its scoring log-likelihood)
        end_marker=lookup(dpath="{suite}", within=END_MARKERS),
        no_space_languages=NO_SPACE_LANGUAGES,
    script:
        "../scripts/appropt_distractors.py"


# Sentence-mode suites: PROBELM's subject swaps as prompts of their own (Algorithm 1).
rule build_subject_swaps:
    input:
        unpack(swap_inputs),
    output:
        swaps="results/probes/{suite}/subject_swaps.parquet",
    log:
        "logs/build_subject_swaps/{suite}.log",
    conda:
        "../../environment.yml"
    resources:
        mem_mb=2000,
        disk_mb=input_size_mb(1.0),
    params:
        sentence_forms=CFG.scoring.sentence_forms,
    script:
        "../scripts/build_subject_swaps.py"
