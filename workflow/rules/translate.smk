# translate stage: sentence-level verbalization of multilingual suites (docs/contracts.md)
TRANSLATE = config.get("translate", {}) or {}


# A GPU only when there is a model to run; without one the job just records "no_model".
TRANSLATE_GPUS = 1 if (TRANSLATE.get("model") or TRANSLATE.get("models")) else 0
# The full source sentence is the filled source-language template.
TRANSLATE_SOURCE_TEMPLATES = (
    f"resources/templates/{TRANSLATE.get('source_lang', 'en')}.yaml"
)


rule translate_prompts:
    input:
        facts=rules.build_probes.output.facts,
        prompts=rules.build_probes.output.prompts,
        forms=rules.build_probes.output.entity_forms,
        templates=TRANSLATE_SOURCE_TEMPLATES,
        lib=library_files("translate"),
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
        model=TRANSLATE.get("model") or "",
        models=TRANSLATE.get("models", {}),
        source_lang=TRANSLATE.get("source_lang", "en"),
        languages=TRANSLATE.get("languages", []),
        styles=TRANSLATE.get("styles", ["statement"]),
        subject=TRANSLATE.get("subject", "prefix"),
        object=TRANSLATE.get("object", "substitute"),
        min_score=TRANSLATE.get("min_score", 80),
        num_beams=TRANSLATE.get("num_beams", 4),
        max_new_tokens=TRANSLATE.get("max_new_tokens", 128),
        batch_size=TRANSLATE.get("batch_size", 32),
        device=TRANSLATE.get("device", "auto"),
        dtype=TRANSLATE.get("dtype", "float32"),
        lang_codes=TRANSLATE.get("lang_codes", {}),
        cache=TRANSLATE.get("cache", "results/cache/translate"),
    script:
        "../scripts/translate_prompts.py"
