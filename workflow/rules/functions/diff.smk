# diff stage (diff.smk), its helpers: the diff's and the temporal view's inputs.
# Functions live apart from the rules (snakemake --lint: no file mixes them); the rule file
# includes this one first. Names used by later stages' functions are read when called.


def diff_inputs(wildcards):
    return run_inputs.diff_inputs(CFG, wildcards.old, wildcards.new, extract_table)


def temporal_earlier(wildcards):
    dumps = run_inputs.earlier_dumps(ENABLED, wildcards.dump)
    return [extract_table("claims", d) for d in dumps]
