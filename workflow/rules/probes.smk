# probes stage: suites -> results/probes/{suite}/ facts, prompts, entity_forms (docs/contracts.md)
from factprobe.probes.build import template_set_files  # noqa: E402
from factprobe.probes.config import check_suites  # noqa: E402

SUITES = config.get("suites", {})
# Helper modules are not tracked by Snakemake's code trigger; as inputs, an edit reruns the suites.
PROBES_LIB = sorted(
    str(p.relative_to(workflow.basedir))
    for p in (Path(workflow.basedir) / "workflow/scripts/factprobe/probes").glob("*.py")
)
TEMPLATE_SETS = config.get("templates", {}).get("sets", {})
check_suites(SUITES, config.get("templates", {}), ENABLED)


wildcard_constraints:
    suite="|".join(SUITES) or "no-suite-configured",


def probe_inputs(wildcards):
    """Extraction tables of the suite's dump, labels of every enabled dump, templates, the diff."""
    suite = SUITES[wildcards.suite]
    dump = suite["dump"]
    languages = suite.get("languages", ["en"])
    files = {
        "claims": f"results/wikidata/{dump}/claims.parquet",
        "entities": f"results/wikidata/{dump}/entities.parquet",
        "labels": expand("results/wikidata/{dump}/labels.parquet", dump=ENABLED),
        "templates": [
            path
            for name in suite.get("templates", {}).get("sets", ["team"])
            for path in template_set_files(TEMPLATE_SETS[name], languages)
        ],
    }
    files["lib"] = PROBES_LIB
    if suite["kind"] == "plausibility":
        files["changes"] = f"results/diff/{suite['diff_old']}_{dump}/changes.parquet"
    return files


def suite_settings(wildcards):
    """The suite's config block, so that a changed setting reruns only this suite."""
    return SUITES[wildcards.suite]


def suite_template_sets(wildcards):
    """Only the template sets this suite uses (a change to another set does not rerun it)."""
    names = SUITES[wildcards.suite].get("templates", {}).get("sets", ["team"])
    return {name: TEMPLATE_SETS[name] for name in names}


rule build_probes:
    input:
        unpack(probe_inputs),
    output:
        facts="results/probes/{suite}/facts.parquet",
        prompts="results/probes/{suite}/prompts.parquet",
        entity_forms="results/probes/{suite}/entity_forms.parquet",
    log:
        "logs/build_probes/{suite}.log",
    benchmark:
        "benchmarks/build_probes/{suite}.tsv"
    conda:
        "../../environment.yml"
    resources:
        mem_mb=4000,
    params:
        suite=suite_settings,
        sets=suite_template_sets,
    script:
        "../scripts/build_probes.py"
