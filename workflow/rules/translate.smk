# translate stage: sentence-level verbalization of multilingual suites (docs/contracts.md)


include: "functions/translate.smk"


TRANSLATE = CFG.translate
TRANSLATE_LLM = TRANSLATE.llm if TRANSLATE.backend == "llm" else ""
if TRANSLATE_LLM and TRANSLATE_LLM not in MODEL_ROWS:
    raise WorkflowError(
        f"translate.llm: {TRANSLATE_LLM!r} is not a row of {CFG.models} "
        f"({sorted(MODEL_ROWS)}); add the model there or fix the name"
    )


# A GPU only when there is a model to run; without one the job just records "no_model".
TRANSLATE_GPUS = 1 if (TRANSLATE_LLM or TRANSLATE.model or TRANSLATE.models) else 0


rule translate_prompts:
    input:
        unpack(translate_inputs),
        facts=rules.build_probes.output.facts,
        prompts=rules.build_probes.output.prompts,
        forms=rules.build_probes.output.entity_forms,
        # The full source sentence is the filled source-language template.
        templates=bundled(f"resources/templates/{TRANSLATE.source_lang}.yaml"),
        lib=library("translate_prompts.py"),
    output:
        prompts="results/probes/{suite}/translated_prompts.parquet",
        forms="results/probes/{suite}/translated_forms.parquet",
        stats="results/probes/{suite}/translate_stats.tsv",
    log:
        "logs/translate_prompts/{suite}.log",
    benchmark:
        "benchmarks/translate_prompts/{suite}.tsv"
    wildcard_constraints:
        suite="|".join(re.escape(s) for s in MULTILINGUAL_SUITES)
        or "no-multilingual-suite",
    conda:
        "../../environment.yml"
    resources:
        gpu=TRANSLATE_GPUS,
        mem_mb=8000,
        runtime=120,
    params:
        settings=settings.plain(TRANSLATE),
        llm=RUN.model_params.get(TRANSLATE_LLM, {}),
        mt_rows=RUN.mt_rows,
        no_space=NO_SPACE_LANGUAGES,
    script:
        "../scripts/translate_prompts.py"
