# metrics stage (metrics.smk), its helpers: the tables the measures, the human alignment and the
# robustness table read.
# Functions live apart from the rules (snakemake --lint: no file mixes them); the rule file
# includes this one first. A function may name what a later stage defines: names are looked up
# when Snakemake calls it.


MODEL_CUTOFFS = RUN.model_cutoffs


def metrics_inputs(wildcards):
    """Tables one (suite, model) job reads; optional ones only where the suite produces them."""
    suite, model = wildcards.suite, wildcards.model
    files = {k: v for k, v in score_inputs(wildcards).items() if k != "model"}
    files.update(
        scores=rules.score_suite.output.scores.format(suite=suite, model=model),
        topk=rules.score_suite.output.topk.format(suite=suite, model=model),
        facts=rules.build_probes.output.facts.format(suite=suite),
        lib=library("compute_metrics.py"),
    )
    if SUITES[suite].generate:
        out = rules.generate_suite.output.generations
        files["generations"] = out.format(suite=suite, model=model)
    encoder = run_inputs.needs_encoder(
        CFG, RUN.metrics[suite]["families"], RUN.model_params
    )
    if encoder:  # BERTScore's encoder named by a models.tsv row: its prepared folder
        files["encoder"] = rules.prepare_model.output.model.format(model=encoder)
    if MODEL_ROWS[model].get("backend") == "masked":
        # BELIEF §2.1: a masked LM's prediction is matched by its own tokenizer
        files["tokenizer"] = model_folder(suite, model)
    return files


def suite_metric_tables(wildcards):
    """Per-fact and suite-level tables of every model on one suite."""
    out, suite = rules.compute_metrics.output, wildcards.suite
    return {
        "per_fact": expand(out.per_fact, suite=suite, model=SCORE_MODELS),
        "suite": expand(out.suite, suite=suite, model=SCORE_MODELS),
    }


def suite_score_tables(wildcards):
    """Every model's score table of one suite."""
    out = rules.score_suite.output.scores
    return expand(out, suite=wildcards.suite, model=SCORE_MODELS)


def human_file(wildcards):
    return run_inputs.human_file(CFG, wildcards.suite)


def robustness_per_fact(wildcards):
    """Every model's per-fact table of one verbalization-pairs suite (Table 4)."""
    out = rules.compute_metrics.output.per_fact
    return expand(out, suite=wildcards.suite, model=SCORE_MODELS)


def robustness_alignment(wildcards):
    """The human_alignment.csv whose fold-best configurations Table 4 averages over."""
    return rules.human_alignment.output.table.format(suite=HUMAN_SUITES[0])


def human_cloze_tables(wildcards):
    """Every model's measures by number of cloze sentences on one suite (§5.1 Fig. 4)."""
    out = rules.cloze_subsets.output.cloze
    return expand(out, suite=wildcards.suite, model=SCORE_MODELS)
