# metrics stage: score tables -> per-fact measures, per-suite summaries, leaderboard
# (docs/contracts.md); input functions in common.smk.


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
        models=SCORE_MODELS,
    script:
        "../scripts/summarize_metrics.py"


rule leaderboard:
    input:
        summaries=expand(rules.summarize_metrics.output.summary, suite=list(SUITES)),
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
        suites=list(SUITES),
    script:
        "../scripts/leaderboard.py"


# Human alignment (distractors paper §4.2): only with a user-supplied judgement file
# (metrics.human_alignment.path); the project ships none.
HUMAN = config["metrics"].get("human_alignment", {}) or {}
HUMAN_TARGETS = (
    expand(
        "results/metrics/{suite}/human_alignment.csv",
        suite=[s for s in HUMAN.get("suites", []) if s in SUITES],
    )
    if HUMAN.get("path")
    else []
)


rule human_alignment:
    input:
        unpack(suite_metric_tables),
        facts=rules.build_probes.output.facts,
        human=HUMAN.get("path") or "human_alignment_file_not_configured",
    output:
        table="results/metrics/{suite}/human_alignment.csv",
    log:
        "logs/human_alignment/{suite}.log",
    conda:
        "../../environment.yml"
    params:
        models=SCORE_MODELS,
        folds=HUMAN.get("folds", 3),
    script:
        "../scripts/human_alignment.py"
