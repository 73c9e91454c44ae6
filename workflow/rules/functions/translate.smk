# translate stage (translate.smk), its helpers: the translated suites and the translation's
# inputs.
# Functions live apart from the rules (snakemake --lint: no file mixes them); the rule file
# includes this one first. A function may name what a later stage defines: names are looked up
# when Snakemake calls it.


# The suites translate_prompts runs for (its wildcard constraint).
MULTILINGUAL_SUITES = [s for s, block in SUITES.items() if block.kind == "multilingual"]


def bundled(path):
    """A file of the workflow's own resources, unless the working directory has its own copy."""
    return resolve_path(path, WORKFLOW_ROOT)


def translate_inputs(wildcards):
    folder = functools.partial(model_folder, wildcards.suite)
    return run_inputs.translating_models(CFG, RUN.mt_rows, folder)
