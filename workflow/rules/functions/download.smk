# download stage (download.smk), its helpers: which file a dump is.
# Functions live apart from the rules (snakemake --lint: no file mixes them); the rule file
# includes this one first. Names used by later stages' functions are read when called.


def dump_file(wildcards):
    """The dump's file: a registry row's `path` in place, else what download_dump writes."""
    return run_inputs.dump_file(
        DUMP_ROWS[wildcards.dump], rules.download_dump.output.dump
    )
