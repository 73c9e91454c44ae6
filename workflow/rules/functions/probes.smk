# probes stage (probes.smk), its helpers: the probe rules' suites, resources and inputs.
# Functions live apart from the rules (snakemake --lint: no file mixes them); the rule file
# includes this one first. A function may name what a later stage defines: names are looked up
# when Snakemake calls it.


# Suites imported from a released benchmark (rule import_released) vs built from the dump
# (BUILT_SUITES, common.smk): disjoint wildcard constraints pick the rule.
RELEASED_SUITES = run_settings.suite_pattern(
    run_settings.released_suites(CFG), "no-released-suite"
)
# build_probes streams a relation in parts: its state stays ≈ 2 GB at full size by
# benchmarks/scale.py, so it asks for a core's share of a 16-core / 128 GB node; DuckDB spills
# beyond (input_scaled: common.smk).
probes_mem_mb = input_scaled("mem_mb", 40, 2000, "build_probes", 8000)
probes_runtime = input_scaled("runtime", 0.2, 30, "build_probes")


def released_inputs(wildcards):
    lib = library("import_released.py")
    return run_inputs.released_inputs(CFG, wildcards.suite, extract_table, lib)


def probe_inputs(wildcards):
    paths = rules.diff_dumps.output.changes, rules.temporal_view.output.temporal
    args = CFG, wildcards.suite, RUN.template_sets, extract_table
    only = wildcards.suite in RELEASE_ONLY
    files = run_inputs.probe_inputs(
        *args, library("build_probes.py"), *paths, release_only=only
    )
    return {
        **files,
        **run_inputs.timeline_inputs(CFG, wildcards.suite, ENABLED, paths[0]),
    }
