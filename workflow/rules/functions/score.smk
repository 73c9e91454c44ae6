# score stage (score.smk), its helpers: the tables scoring reads, and the shards its gathers read.
# Functions live apart from the rules (snakemake --lint: no file mixes them); the rule file
# includes this one first. A function may name what a later stage defines: names are looked up
# when Snakemake calls it.


def suite_table_inputs(suite):
    """The suite's probe tables scoring merges: prompts, candidates, forms (+ translations)."""
    probes, found = rules.build_probes.output, rules.retrieve_distractors.output
    files = {
        "prompts": probes.prompts.format(suite=suite),
        "candidates": found.candidates.format(suite=suite),
        "forms": found.forms.format(suite=suite),
    }
    if suite in TRANSLATED_SUITES and CFG.scoring.include_translated:
        translated = rules.translate_prompts.output
        files["translated_prompts"] = translated.prompts.format(suite=suite)
        files["translated_forms"] = translated.forms.format(suite=suite)
    return files


def score_inputs(wildcards):
    """Probe tables of the suite (+ translations, + subject swaps in sentence mode, + per-model
    ApprOpt), the model, the library."""
    suite, keys = wildcards.suite, {"suite": wildcards.suite, "model": wildcards.model}
    files = suite_table_inputs(suite)
    files["lib"] = library("score_shard.py")
    if RUN.scoring_modes[suite] == "sentence":
        swaps = rules.build_subject_swaps.output.swaps
        files["subject_swaps"] = swaps.format(suite=suite)
    if uses_appropt(suite):
        appropt = rules.appropt_distractors.output
        files["appropt"] = appropt.candidates.format(**keys)
        files["appropt_forms"] = appropt.forms.format(**keys)
    files["model"] = model_folder(suite, wildcards.model)
    return files


def generate_inputs(wildcards):
    """Prompts of the suite and the model's folder (generation needs no candidates); beam suites
    also their facts and forms (each prompt's token limit: its object's longest form + 5).
    """
    suite = wildcards.suite
    files = {
        "prompts": rules.build_probes.output.prompts.format(suite=suite),
        "lib": library("generate_shard.py"),
        "model": model_folder(suite, wildcards.model),
    }
    if RUN.generation_beams[suite]:
        files["facts"] = rules.build_probes.output.facts.format(suite=suite)
        files["forms"] = rules.retrieve_distractors.output.forms.format(suite=suite)
    return files


def generate_shard_files(wildcards):
    """Every generation shard of one (suite, model), gathered by generate_suite."""
    out, shards = rules.generate_shard.output.generations, range(CFG.scoring.shards)
    keys = {"suite": wildcards.suite, "model": wildcards.model}
    return {"shards": expand(out, shard=shards, **keys)}


def score_shard_files(wildcards):
    """Every shard of one (suite, model) (scores and top-k tables), gathered by score_suite."""
    out, shards = rules.score_shard.output, range(CFG.scoring.shards)
    keys = {"suite": wildcards.suite, "model": wildcards.model}
    return {
        "shards": expand(out.scores, shard=shards, **keys),
        "topk_shards": expand(out.topk, shard=shards, **keys),
    }
