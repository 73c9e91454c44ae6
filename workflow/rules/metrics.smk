# metrics stage: score tables -> per-fact measures, per-suite summaries, leaderboard
# (docs/contracts.md); input functions in functions/metrics.smk.


include: "functions/metrics.smk"


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
        settings=lookup(dpath="{suite}", within=RUN.metrics),
        correct_set=lookup(dpath="{suite}", within=RUN.correct_sets),
        cutoff=lookup(dpath="{suite}/{model}", within=MODEL_CUTOFFS),
    script:
        "../scripts/compute_metrics.py"


rule control_check:
    input:
        per_fact=rules.compute_metrics.output.per_fact,
        lib=library("control_check.py"),
    output:
        check=report(
            "results/metrics/{suite}/{model}.control_check.csv",
            caption="../report/control_check.rst",
            category="Metrics",
            subcategory="{suite}",
            labels={"suite": "{suite}", "table": "control check"},
        ),
    log:
        "logs/control_check/{suite}/{model}.log",
    conda:
        "../../environment.yml"
    params:
        settings=RUN.control_check,
    script:
        "../scripts/control_check.py"


rule summarize_metrics:
    input:
        unpack(suite_metric_tables),
        # The facts table and the score tables: a suite whose scores lost facts is refused.
        facts=rules.build_probes.output.facts,
        scores=suite_score_tables,
        lib=library("summarize_metrics.py"),
    output:
        summary=report(
            "results/metrics/{suite}/summary.csv",
            caption="../report/summary.rst",
            category="Metrics",
            subcategory="{suite}",
            labels={"suite": "{suite}", "table": "summary"},
        ),
        # Headline values with their bootstrap intervals: the leaderboard's one source.
        headline="results/metrics/{suite}/headline.parquet",
    log:
        "logs/summarize_metrics/{suite}.log",
    conda:
        "../../environment.yml"
    params:
        models=SCORE_MODELS,
        settings=lookup(dpath="{suite}", within=RUN.metrics),
        bootstrap=RUN.bootstrap,
    script:
        "../scripts/summarize_metrics.py"


rule leaderboard:
    input:
        headlines=expand(rules.summarize_metrics.output.headline, suite=list(SUITES)),
        # Per-fact tables for the paired comparisons over facts (suite-major order).
        per_fact=expand(
            rules.compute_metrics.output.per_fact,
            suite=list(SUITES),
            model=SCORE_MODELS,
        ),
        lib=library("leaderboard.py"),
    output:
        board=report(
            "results/metrics/leaderboard.csv",
            caption="../report/leaderboard.rst",
            category="Metrics",
            labels={"table": "leaderboard"},
        ),
        paired=report(
            "results/metrics/paired.csv",
            caption="../report/paired.rst",
            category="Metrics",
            labels={"table": "paired comparison"},
        ),
    log:
        "logs/leaderboard.log",
    conda:
        "../../environment.yml"
    params:
        suites=list(SUITES),
        models=SCORE_MODELS,
        bootstrap=RUN.bootstrap,
    script:
        "../scripts/leaderboard.py"


# Timeline suites (suites.<s>.timeline): per-slice curves and each model's effective cut-off.
TIMELINE = run_inputs.timeline_params(CFG)
TIMELINE_TARGETS = expand("results/metrics/{suite}/timeline.csv", suite=list(TIMELINE))
TIMELINE_PROFILES = expand(
    "results/metrics/{suite}/timeline_profile.csv", suite=list(TIMELINE)
)
AFTER_CUTOFF = expand("results/metrics/{suite}/after_cutoff.csv", suite=list(TIMELINE))
CUTOFF_PROFILES = expand(
    "results/metrics/{suite}/cutoff_profile.csv", suite=list(TIMELINE)
)
SLICE_CALIBRATION = expand(
    "results/metrics/{suite}/slice_calibration.csv", suite=list(TIMELINE)
)
DECLARED_CUTOFFS = {m: MODEL_ROWS[m].get("cutoff") or "" for m in SCORE_MODELS}


# The knowledge measure's candidates as a distribution: the calibration per slice reads it.
rule candidate_confidence:
    input:
        unpack(metrics_inputs),
        own_lib=library("candidate_confidence.py"),
    output:
        confidence="results/metrics/{suite}/{model}.confidence.parquet",
    log:
        "logs/candidate_confidence/{suite}/{model}.log",
    benchmark:
        "benchmarks/candidate_confidence/{suite}/{model}.tsv"
    conda:
        "../../environment.yml"
    resources:
        mem_mb=4000,
    params:
        settings=lookup(dpath="{suite}", within=RUN.metrics),
        correct_set=lookup(dpath="{suite}", within=RUN.correct_sets),
    script:
        "../scripts/candidate_confidence.py"


rule timeline:
    input:
        facts=rules.build_probes.output.facts,
        per_fact=expand(
            rules.compute_metrics.output.per_fact,
            suite="{suite}",
            model=SCORE_MODELS,
            allow_missing=True,
        ),
        confidence=expand(
            rules.candidate_confidence.output.confidence,
            suite="{suite}",
            model=SCORE_MODELS,
            allow_missing=True,
        ),
        lib=library("timeline.py"),
    output:
        timeline="results/metrics/{suite}/timeline.csv",
        profile="results/metrics/{suite}/timeline_profile.csv",
        after_cutoff="results/metrics/{suite}/after_cutoff.csv",
        cutoff_profile="results/metrics/{suite}/cutoff_profile.csv",
        calibration="results/metrics/{suite}/slice_calibration.csv",
    log:
        "logs/timeline/{suite}.log",
    benchmark:
        "benchmarks/timeline/{suite}.tsv"
    conda:
        "../../environment.yml"
    resources:
        mem_mb=2000,
    params:
        models=SCORE_MODELS,
        block=lookup(dpath="{suite}", within=TIMELINE),
        declared=DECLARED_CUTOFFS,
        bootstrap=RUN.bootstrap,
    script:
        "../scripts/timeline.py"


# Human alignment (distractors paper §4.2): only with judged triples, a user-supplied file
# (metrics.human_alignment.path) or, without one, a listed suite's own `source: triples` file
# with scores (as the reference's human-score file); the project ships no annotation data.
HUMAN = CFG.metrics.human_alignment
HUMAN_SUITES = run_inputs.human_suites(CFG)
HUMAN_TARGETS = expand(
    "results/metrics/{suite}/human_alignment.csv", suite=HUMAN_SUITES
)
HUMAN_CURVE_TARGETS = expand(
    "results/metrics/{suite}/human_alignment_curves.csv", suite=HUMAN_SUITES
)
# §4.3 Table 4: each verbalization-pairs suite under the fold-best configurations of the first
# human-alignment suite's Table 3.
ROBUSTNESS_SUITES = run_inputs.robustness_suites(CFG, HUMAN_SUITES)
ROBUSTNESS_TARGETS = expand(
    "results/metrics/{suite}/robustness.csv", suite=ROBUSTNESS_SUITES
)


# §5.1 Fig. 4: the suite's measures recomputed from the first m cloze sentences of each fact.
rule cloze_subsets:
    input:
        unpack(metrics_inputs),
    output:
        cloze="results/metrics/{suite}/{model}.cloze.parquet",
    log:
        "logs/cloze_subsets/{suite}/{model}.log",
    conda:
        "../../environment.yml"
    resources:
        mem_mb=4000,
    params:
        settings=lookup(dpath="{suite}", within=RUN.metrics),
        correct_set=lookup(dpath="{suite}", within=RUN.correct_sets),
        suite=lookup(dpath="{suite}", within=RUN.suite_params),
    script:
        "../scripts/cloze_subsets.py"


rule human_alignment:
    input:
        unpack(suite_metric_tables),
        cloze=human_cloze_tables,
        facts=rules.build_probes.output.facts,
        human=human_file,
        lib=library("human_alignment.py"),
    output:
        table="results/metrics/{suite}/human_alignment.csv",
        curves="results/metrics/{suite}/human_alignment_curves.csv",
    log:
        "logs/human_alignment/{suite}.log",
    conda:
        "../../environment.yml"
    params:
        models=SCORE_MODELS,
        folds=HUMAN.folds,
    script:
        "../scripts/human_alignment.py"


rule robustness_table:
    input:
        per_fact=robustness_per_fact,
        alignment=robustness_alignment,
        lib=library("robustness_table.py"),
    output:
        table="results/metrics/{suite}/robustness.csv",
    log:
        "logs/robustness_table/{suite}.log",
    conda:
        "../../environment.yml"
    params:
        models=SCORE_MODELS,
        pair=run_inputs.ROBUSTNESS_PAIR,
    script:
        "../scripts/robustness_table.py"
