# control stage: builtin:control, a tiny LM taught a known half of the facts (docs/contracts.md).
# One model per suite, trained on that suite's tables only: a change to one suite (its facts or
# distractors) retrains that suite's control model and no other.


#: suite -> whether it is a timeline suite (suites.<s>.timeline).
TIMELINE_SUITES = {name: block.timeline is not None for name, block in SUITES.items()}


CONTROL_PARAMS = RUN.control
CONTROL_TAUGHT = RUN.control_taught


rule train_control:
    input:
        facts=rules.build_probes.output.facts,
        prompts=rules.build_probes.output.prompts,
        forms=rules.build_probes.output.entity_forms,
        candidates=rules.retrieve_distractors.output.candidates,
        candidate_forms=rules.retrieve_distractors.output.forms,
        lib=library("train_control.py"),
    output:
        model=directory("results/models/control/{suite}"),
        split="results/models/control/{suite}/split.parquet",
    log:
        "logs/train_control/{suite}.log",
    benchmark:
        "benchmarks/train_control/{suite}.tsv"
    conda:
        "../../environment.yml"
    # A 0.6M-parameter model: a second thread only waits on the first (and stalls on busy cores).
    threads: 1
    resources:
        mem_mb=3000,
        runtime=15,
    params:
        settings=CONTROL_PARAMS,
        # Suites outside control.suites get a model taught none of their facts (all untaught).
        taught=lookup(dpath="{suite}", within=CONTROL_TAUGHT),
        # Timeline suites: control.taught_until / taught_fractions / untaught_subjects set what is known.
        timeline=lookup(dpath="{suite}", within=TIMELINE_SUITES),
        no_space_languages=NO_SPACE_LANGUAGES,
    script:
        "../scripts/train_control.py"
