# diff stage (diff.smk), its helpers: the diff's and the temporal view's inputs.
# Functions live apart from the rules (snakemake --lint: no file mixes them); the rule file
# includes this one first. A function may name what a later stage defines: names are looked up
# when Snakemake calls it.


def diff_inputs(wildcards):
    return run_inputs.diff_inputs(CFG, wildcards.old, wildcards.new, extract_table)


def temporal_earlier(wildcards):
    dumps = run_inputs.earlier_dumps(ENABLED, wildcards.dump)
    return [extract_table("claims", d) for d in dumps]
