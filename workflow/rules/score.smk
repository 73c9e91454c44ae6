# score stage: results/scores/{suite}/{model}.parquet (+ .generations.parquet), docs/contracts.md;
# input functions in common.smk.
SCORING = config["scoring"]


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
        runtime=120,
    params:
        model=lookup(dpath="{model}", within=MODEL_PARAMS),
        shard="{shard}",
        shards=SCORING.get("shards", 1),
        end_marker=SCORING.get("end_marker", "eos"),
        token_budget=SCORING.get("token_budget", 4096),
        no_space_languages=SCORING.get(
            "no_space_languages", ["zh", "ja", "th", "lo", "km", "my", "bo"]
        ),
        cache="results/cache/scores/{model}",
        topk=SCORING.get("topk", 100),
    script:
        "../scripts/score_shard.py"


rule score_suite:
    input:
        unpack(score_shard_files),
    output:
        scores="results/scores/{suite}/{model}.parquet",
        topk="results/scores/{suite}/{model}.topk.parquet",
    log:
        "logs/score_suite/{suite}/{model}.log",
    conda:
        "../../environment.yml"
    resources:
        mem_mb=4000,
    script:
        "../scripts/score_suite.py"


rule generate_suite:
    input:
        unpack(generate_inputs),
    output:
        generations="results/scores/{suite}/{model}.generations.parquet",
    log:
        "logs/generate_suite/{suite}/{model}.log",
    benchmark:
        "benchmarks/generate_suite/{suite}/{model}.tsv"
    conda:
        "../../environment.yml"
    threads: 2
    resources:
        gpu=1,
        mem_mb=8000,
        runtime=120,
    params:
        model=lookup(dpath="{model}", within=MODEL_PARAMS),
        samples=SCORING.get("samples", 100),
        max_new_tokens=SCORING.get("max_new_tokens", 12),
        batch_size=SCORING.get("generation_batch_size", 16),
    script:
        "../scripts/generate_suite.py"
