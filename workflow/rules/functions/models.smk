# models stage (models.smk), its helpers: the folder a job loads a model from, and what a model is
# prepared from.
# Functions live apart from the rules (snakemake --lint: no file mixes them); the rule file
# includes this one first. A function may name what a later stage defines: names are looked up
# when Snakemake calls it.


def model_folder(suite, model):
    """The folder a job loads ``model`` from: the suite's trained control model, or the folder
    rule prepare_model made from the models.tsv row (jobs never read a source directly).
    """
    control = run_inputs.is_control(MODEL_ROWS[model])
    out = rules.train_control if control else rules.prepare_model
    return out.output.model.format(suite=suite, model=model)


def model_source_files(wildcards):
    return run_inputs.model_source_files(MODEL_ROWS[wildcards.model])
