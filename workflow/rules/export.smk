# export stage: each suite as an lm-evaluation-harness task and a Hugging Face dataset
# (docs/running.md, "Export"). Not part of `rule all`: run `snakemake --cores N export`.
# Everything the dataset card states about how a suite was built, resolved once per suite.
EXPORT_CARDS = {
    s: {
        "settings": {**RUN.suite_params[s], "distractors": DISTRACTOR_SETTINGS[s]},
        "dumps": [
            {k: v for k, v in DUMP_ROWS[d].items() if k != "_line"}
            for d in (block.dump, block.diff_old)
            if d in DUMP_ROWS
        ],
        "template_sets": RUN.template_sets[s],
    }
    for s, block in SUITES.items()
}

TRANSLATED_EXPORT = CFG.scoring.include_translated
# The suite tables as scored (translations included when scoring includes them).
EXPORT_INPUTS = {
    s: {
        "facts": rules.build_probes.output.facts.format(suite=s),
        "prompts": rules.build_probes.output.prompts.format(suite=s),
        "candidates": rules.retrieve_distractors.output.candidates.format(suite=s),
        "forms": rules.retrieve_distractors.output.forms.format(suite=s),
        "lib": sorted(set(library("export_lm_eval.py")) | set(library("export_hf.py"))),
        **(
            {
                "translated_prompts": rules.translate_prompts.output.prompts.format(
                    suite=s
                ),
                "translated_forms": rules.translate_prompts.output.forms.format(
                    suite=s
                ),
            }
            if s in TRANSLATED_SUITES and TRANSLATED_EXPORT
            else {}
        ),
    }
    for s in SUITES
}


rule export_lm_eval:
    input:
        unpack(lookup(dpath="{suite}", within=EXPORT_INPUTS)),
    output:
        task=directory("results/export/lm_eval/{suite}"),
    log:
        "logs/export_lm_eval/{suite}.log",
    conda:
        "../../environment.yml"
    resources:
        mem_mb=2000,
    params:
        end_marker=lookup(dpath="{suite}", within=END_MARKERS),
        correct_set=lookup(dpath="{suite}", within=RUN.correct_sets),
        eos_text=CFG.export.eos_text,
        no_space_languages=NO_SPACE_LANGUAGES,
    script:
        "../scripts/export_lm_eval.py"


rule export_hf:
    input:
        unpack(lookup(dpath="{suite}", within=EXPORT_INPUTS)),
    output:
        dataset=directory("results/export/hf/{suite}"),
    log:
        "logs/export_hf/{suite}.log",
    conda:
        "../../environment.yml"
    resources:
        mem_mb=2000,
    params:
        card=lookup(dpath="{suite}", within=EXPORT_CARDS),
    script:
        "../scripts/export_hf.py"


rule export:
    input:
        lm_eval=expand(rules.export_lm_eval.output.task, suite=SUITES),
        hf=expand(rules.export_hf.output.dataset, suite=SUITES),
