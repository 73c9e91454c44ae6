"""Rule script: sentence-level verbalization of one multilingual suite (translate stage)."""

import sys

sys.path.insert(0, snakemake.scriptdir)  # the workflow's own library first, not an installed copy

from functools import partial

import pandas as pd
from factprobe import contracts
from factprobe.lm import load_model
from factprobe.plumbing.rulelog import rule_logger
from factprobe.settings import Translate, load_settings
from factprobe.translate.llm import LLMTranslator
from factprobe.translate.mt import TranslationCache, load_translator
from factprobe.translate.sentence import (
    load_template_texts,
    sentence_verbalization,
    target_languages,
)

log = rule_logger(snakemake)
p = load_settings(Translate, snakemake.params.settings, "translate")
prompts = contracts.read("prompts", snakemake.input.prompts)
facts = contracts.read("facts", snakemake.input.facts, ["fact_id", "subject", "property", "object"])
forms = contracts.read("entity_forms", snakemake.input.forms)
template_files = snakemake.input.templates
templates = load_template_texts([template_files] if isinstance(template_files, str) else list(template_files))
languages = target_languages(prompts, p.languages, p.source_lang)

outputs = []
# models.tsv rows named in translate.model(s) and their prepared folders (rule prepare_model).
mt_folders = getattr(snakemake.input, "mt_models", [])
mt_folders = [mt_folders] if isinstance(mt_folders, str) else list(mt_folders)
prepared = dict(zip(getattr(snakemake.params, "mt_rows", []), mt_folders, strict=True))
by_model: dict[str, list[str]] = {}
if p.backend == "llm":
    # One causal LM of models.tsv, loaded from its prepared folder (rule prepare_model).
    by_model[p.llm] = list(languages)
else:
    # One model for all languages, or one per language (bilingual Marian models such as opus-mt-en-cs).
    for lang in languages:
        by_model.setdefault(p.models.get(lang) or p.model or "", []).append(lang)
has_source = bool((prompts["lang"] == p.source_lang).any())
if not has_source:
    log.info("no %s prompts (e.g. a released-prompts suite): nothing to translate", p.source_lang)


def nothing_to_translate(requests):
    raise RuntimeError("no source-language sentences, yet asked to translate")


for model, langs in by_model.items():
    translator = None
    if model and not has_source:
        pass  # not loaded: the stats say no_sentences
    elif model and p.backend == "llm":
        lm = load_model(
            dict(snakemake.params.llm),
            model_dir=snakemake.input.llm,
            no_space_langs=snakemake.params.no_space,
        )
        translator = LLMTranslator(model, lm, p, TranslationCache(p.cache))
    elif model:
        # A models.tsv row comes from its prepared folder; anything else is a local directory.
        folder = prepared.get(model)
        translator = load_translator(model, p.device, p.dtype, p, p.cache, p.lang_codes, folder)
    else:
        log.warning(
            "no translation model for %s: template verbalization only (translate.%s is empty)",
            langs,
            "llm" if p.backend == "llm" else "model",
        )
    if translator:
        translate_fn = partial(translator.translate, progress=True)
    else:
        translate_fn = nothing_to_translate if model else None
    outputs.append(
        sentence_verbalization(
            prompts,
            facts,
            forms,
            templates,
            langs,
            translate_fn,
            model or "none",
            p,
        )
    )

out_prompts = pd.concat([o[0] for o in outputs], ignore_index=True)
out_forms = pd.concat([o[1] for o in outputs], ignore_index=True)
stats = pd.concat([o[2] for o in outputs], ignore_index=True).sort_values("lang")
stats.insert(0, "suite", snakemake.wildcards.suite)
contracts.write("translated_prompts", out_prompts, snakemake.output.prompts)
contracts.write("translated_forms", out_forms, snakemake.output.forms)
contracts.write_text("translate_stats", stats, snakemake.output.stats, float_format="%.4f")
log.info(
    "wrote %d prompts (%s), %d inflected forms",
    len(out_prompts),
    out_prompts.groupby(["lang", "verbalization"]).size().to_dict(),
    len(out_forms),
)
