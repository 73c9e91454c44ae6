# score stage: results/scores/{suite}/{model}.parquet (+ .generations.parquet), docs/contracts.md;
# input functions in functions/score.smk.


include: "functions/score.smk"


rule score_shard:
    input:
        unpack(score_inputs),
    output:
        scores=temp("results/scores/{suite}/shards/{model}/{shard}.parquet"),
        topk=temp("results/scores/{suite}/shards/{model}/{shard}.topk.parquet"),
    log:
        "logs/score_shard/{suite}/{model}/{shard}.log",
    benchmark:
        "benchmarks/score_shard/{suite}/{model}/{shard}.tsv"
    wildcard_constraints:
        shard=r"\d+",
    conda:
        "../../environment.yml"
    threads: 2
    resources:
        gpu=1,
        mem_mb=8000,
        disk_mb=input_size_mb(15),
        runtime=120,
    params:
        model=lookup(dpath="{model}", within=RUN.model_params),
        shard="{shard}",
        shards=CFG.scoring.shards,
        end_marker=lookup(dpath="{suite}", within=END_MARKERS),
        token_budget=CFG.scoring.token_budget,
        no_space_languages=NO_SPACE_LANGUAGES,
        cache="results/cache/scores/{model}",
        topk=CFG.scoring.topk,
        mode=lookup(dpath="{suite}", within=RUN.scoring_modes),
        sentence_forms=CFG.scoring.sentence_forms,
        sentence_first_token=CFG.scoring.sentence_first_token,
    script:
        "../scripts/score_shard.py"


rule score_suite:
    input:
        unpack(score_shard_files),
        lib=library("score_suite.py"),
    output:
        scores="results/scores/{suite}/{model}.parquet",
        topk="results/scores/{suite}/{model}.topk.parquet",
    log:
        "logs/score_suite/{suite}/{model}.log",
    conda:
        "../../environment.yml"
    resources:
        mem_mb=4000,
        disk_mb=input_size_mb(1.0),
    script:
        "../scripts/score_suite.py"


rule generate_shard:
    input:
        unpack(generate_inputs),
    output:
        generations=temp(
            "results/scores/{suite}/shards/{model}/{shard}.generations.parquet"
        ),
    log:
        "logs/generate_shard/{suite}/{model}/{shard}.log",
    benchmark:
        "benchmarks/generate_shard/{suite}/{model}/{shard}.tsv"
    wildcard_constraints:
        shard=r"\d+",
    conda:
        "../../environment.yml"
    threads: 2
    resources:
        gpu=1,
        mem_mb=8000,
        runtime=120,
    params:
        model=lookup(dpath="{model}", within=RUN.model_params),
        shard="{shard}",
        shards=CFG.scoring.shards,
        samples=lookup(dpath="{suite}", within=RUN.generation_samples),
        beam_widths=lookup(dpath="{suite}", within=RUN.generation_beams),
        confidence_prompts=CFG.scoring.confidence_prompts,
        max_new_tokens=CFG.scoring.max_new_tokens,
        batch_size=CFG.scoring.generation_batch_size,
        no_space_languages=NO_SPACE_LANGUAGES,
    script:
        "../scripts/generate_shard.py"


rule generate_suite:
    input:
        unpack(generate_shard_files),
        lib=library("generate_suite.py"),
    output:
        generations="results/scores/{suite}/{model}.generations.parquet",
    log:
        "logs/generate_suite/{suite}/{model}.log",
    conda:
        "../../environment.yml"
    resources:
        mem_mb=2000,
    script:
        "../scripts/generate_suite.py"
