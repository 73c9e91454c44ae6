# download stage (download.smk), its helpers: which file a dump is.
# Functions live apart from the rules (snakemake --lint: no file mixes them); the rule file
# includes this one first. A function may name what a later stage defines: names are looked up
# when Snakemake calls it.


def dump_file(wildcards):
    """The dump's file: a registry row's `path` in place, else what download_dump writes."""
    return run_inputs.dump_file(
        DUMP_ROWS[wildcards.dump], rules.download_dump.output.dump
    )
