# extract stage (extract.smk), its helpers: the extraction's params, and the path of its tables
# that later stages read.
# Functions live apart from the rules (snakemake --lint: no file mixes them); the rule file
# includes this one first. A function may name what a later stage defines: names are looked up
# when Snakemake calls it.


def local_dump_checksum(wildcards):
    return run_inputs.local_dump_checksum(DUMP_ROWS[wildcards.dump])


def extract_exclude_params():
    """``{"exclude": [...]}`` when ``extract.exclude`` is set, else nothing (the rule's params then
    stay those of runs made before the key existed)."""
    return {"exclude": list(CFG.extract.exclude)} if CFG.extract.exclude else {}


# The extraction tables later stages read (their input functions).
def extract_table(name, dump):
    """Path of extraction table ``name`` of a registered ``dump``."""
    template = getattr(rules.extract_dump.output, name)
    return run_inputs.extract_path(template, dump, DUMP_ROWS, CFG.dumps)
