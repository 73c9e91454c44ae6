# probes stage: suites -> results/probes/{suite}/ facts, prompts, entity_forms (docs/contracts.md)


include: "functions/probes.smk"


rule build_probes:
    input:
        unpack(probe_inputs),
    output:
        facts="results/probes/{suite}/facts.parquet",
        prompts="results/probes/{suite}/prompts.parquet",
        entity_forms="results/probes/{suite}/entity_forms.parquet",
    log:
        "logs/build_probes/{suite}.log",
    benchmark:
        "benchmarks/build_probes/{suite}.tsv"
    wildcard_constraints:
        suite=BUILT_SUITES,
    conda:
        "../../environment.yml"
    # DuckDB's queries and the processes selecting each part's candidates: 1 here, so that a
    # small run's suites build side by side; profiles/slurm gives 16 (full-size critical path).
    threads: 1
    resources:
        mem_mb=probes_mem_mb,
        runtime=probes_runtime,
        disk_mb=input_size_mb(1.0),
    params:
        suite=lookup(dpath="{suite}", within=RUN.suite_params),
        sets=lookup(dpath="{suite}", within=RUN.template_sets),
    script:
        "../scripts/build_probes.py"


# A released benchmark (suites.<s>.source) gives the probe and candidate tables at once.
rule import_released:
    input:
        unpack(released_inputs),
    output:
        facts="results/probes/{suite}/facts.parquet",
        prompts="results/probes/{suite}/prompts.parquet",
        entity_forms="results/probes/{suite}/entity_forms.parquet",
        candidates="results/probes/{suite}/candidates.parquet",
        forms="results/probes/{suite}/forms.parquet",
        matches="results/probes/{suite}/released_matches.csv",
    log:
        "logs/import_released/{suite}.log",
    benchmark:
        "benchmarks/import_released/{suite}.tsv"
    wildcard_constraints:
        suite=RELEASED_SUITES,
    conda:
        "../../environment.yml"
    resources:
        mem_mb=4000,
        disk_mb=input_size_mb(1.0),
    params:
        suite=lookup(dpath="{suite}", within=RUN.suite_params),
    script:
        "../scripts/import_released.py"
