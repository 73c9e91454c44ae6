# control stage: builtin:control, a tiny LM taught a known half of the facts (docs/contracts.md)
CONTROL = config.get("control", {})
CONTROL_SUITES = CONTROL.get("suites", [])


rule train_control:
    input:
        facts=expand("results/probes/{suite}/facts.parquet", suite=CONTROL_SUITES),
        prompts=expand("results/probes/{suite}/prompts.parquet", suite=CONTROL_SUITES),
        forms=expand(
            "results/probes/{suite}/entity_forms.parquet", suite=CONTROL_SUITES
        ),
        candidates=expand(
            "results/probes/{suite}/candidates.parquet", suite=CONTROL_SUITES
        ),
        candidate_forms=expand(
            "results/probes/{suite}/forms.parquet", suite=CONTROL_SUITES
        ),
        lib="workflow/scripts/factprobe/scoring/control.py",
    output:
        model=directory("results/models/control"),
        split="results/models/control/split.parquet",
    log:
        "logs/train_control.log",
    benchmark:
        "benchmarks/train_control.tsv"
    conda:
        "../../environment.yml"
    threads: 2
    resources:
        mem_mb=3000,
        runtime=15,
    params:
        settings={key: value for key, value in CONTROL.items() if key != "suites"},
    script:
        "../scripts/train_control.py"
