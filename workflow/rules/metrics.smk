# metrics stage: score tables -> per-fact measures, per-suite summaries, leaderboard (docs/contracts.md)
import re


def metric_suites():
    """Suites from config (name -> settings)."""
    return config.get("suites", {}) or {}


def metric_models():
    """Model names of config/models.tsv, in registry order."""
    return [row["name"] for row in MODELS]


def model_row(name):
    """The models.tsv row of one model."""
    return next(row for row in MODELS if row["name"] == name)


def suite_strategies(suite):
    """Distractor strategies of a suite: its own list, else its kind's, else the stage default."""
    settings = metric_suites()[suite]
    section = config.get("distractors", {}) or {}
    for block in (
        settings.get("distractors", {}),
        section.get("by_kind", {}).get(settings.get("kind"), {}),
    ):
        if isinstance(block, dict) and block.get("strategies"):
            return block["strategies"]
    return section.get("strategies", [])


def metrics_inputs(wildcards):
    """Tables one (suite, model) job reads; optional ones only where the suite produces them."""
    suite = metric_suites()[wildcards.suite]
    probes = f"results/probes/{wildcards.suite}"
    files = {
        "scores": f"results/scores/{wildcards.suite}/{wildcards.model}.parquet",
        "prompts": [f"{probes}/prompts.parquet"],
        "candidates": [f"{probes}/candidates.parquet"],
        "facts": f"{probes}/facts.parquet",
        "forms": [f"{probes}/forms.parquet"],
        "lib": METRICS_LIB,
    }
    if suite.get("kind") == "multilingual":
        files["prompts"].append(f"{probes}/translated_prompts.parquet")
        files["forms"].append(f"{probes}/translated_forms.parquet")
    if "appropt" in suite_strategies(wildcards.suite):
        files["candidates"].append(f"{probes}/appropt/{wildcards.model}.parquet")
    if suite.get("generate", False):
        files["generations"] = (
            f"results/scores/{wildcards.suite}/{wildcards.model}.generations.parquet"
        )
    if model_row(wildcards.model)["source"] == "builtin:control":
        files["split"] = "results/models/control/split.parquet"
    return files


def metrics_families(wildcards):
    """Measure families for the suite's kind (config metrics.families)."""
    kind = metric_suites()[wildcards.suite]["kind"]
    return config["metrics"]["families"].get(kind, [])


def suite_metric_tables(wildcards):
    """Per-fact and suite-level tables of every model on one suite."""
    models = metric_models()
    return {
        "per_fact": expand(
            "results/metrics/{suite}/{model}.parquet",
            suite=wildcards.suite,
            model=models,
        ),
        "suite": expand(
            "results/metrics/{suite}/{model}.suite.parquet",
            suite=wildcards.suite,
            model=models,
        ),
    }


# Helper modules are not tracked by the code trigger; as inputs, an edit reruns the measures.
METRICS_LIB = sorted(
    str(p.relative_to(workflow.basedir))
    for p in (Path(workflow.basedir) / "workflow/scripts/factprobe/metrics").glob(
        "*.py"
    )
)


rule compute_metrics:
    input:
        unpack(metrics_inputs),
    output:
        per_fact="results/metrics/{suite}/{model}.parquet",
        suite="results/metrics/{suite}/{model}.suite.parquet",
    log:
        "logs/compute_metrics/{suite}/{model}.log",
    benchmark:
        "benchmarks/compute_metrics/{suite}/{model}.tsv"
    wildcard_constraints:
        model="|".join(re.escape(m) for m in metric_models()) or "no-model",
    conda:
        "../../environment.yml"
    resources:
        mem_mb=4000,
    params:
        settings=config["metrics"],
        families=metrics_families,
    script:
        "../scripts/compute_metrics.py"


rule summarize_metrics:
    input:
        unpack(suite_metric_tables),
    output:
        summary=report(
            "results/metrics/{suite}/summary.csv",
            caption="../report/summary.rst",
            category="Metrics",
            subcategory="{suite}",
            labels={"suite": "{suite}", "table": "summary"},
        ),
    log:
        "logs/summarize_metrics/{suite}.log",
    conda:
        "../../environment.yml"
    params:
        models=metric_models(),
    script:
        "../scripts/summarize_metrics.py"


rule leaderboard:
    input:
        summaries=expand(
            "results/metrics/{suite}/summary.csv", suite=list(metric_suites())
        ),
    output:
        board=report(
            "results/metrics/leaderboard.csv",
            caption="../report/leaderboard.rst",
            category="Metrics",
            labels={"table": "leaderboard"},
        ),
    log:
        "logs/leaderboard.log",
    conda:
        "../../environment.yml"
    params:
        suites=list(metric_suites()),
    script:
        "../scripts/leaderboard.py"
