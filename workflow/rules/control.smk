# control stage: builtin:control, a tiny LM taught a known half of the facts (docs/contracts.md)
CONTROL = config.get("control", {})
CONTROL_SUITES = CONTROL.get("suites", [])


rule train_control:
    input:
        facts=expand(rules.build_probes.output.facts, suite=CONTROL_SUITES),
        prompts=expand(rules.build_probes.output.prompts, suite=CONTROL_SUITES),
        forms=expand(rules.build_probes.output.entity_forms, suite=CONTROL_SUITES),
        candidates=expand(
            rules.retrieve_distractors.output.candidates, suite=CONTROL_SUITES
        ),
        candidate_forms=expand(
            rules.retrieve_distractors.output.forms, suite=CONTROL_SUITES
        ),
        lib=workflow.source_path("../scripts/factprobe/scoring/control.py"),
    output:
        model=directory("results/models/control"),
        split="results/models/control/split.parquet",
    log:
        "logs/train_control.log",
    benchmark:
        "benchmarks/train_control/control.tsv"
    conda:
        "../../environment.yml"
    threads: 2
    resources:
        mem_mb=3000,
        runtime=15,
    params:
        settings={key: value for key, value in CONTROL.items() if key != "suites"},
        no_space_languages=NO_SPACE_LANGUAGES,
    script:
        "../scripts/train_control.py"
