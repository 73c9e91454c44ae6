# report stage: metric tables -> results/report/index.html (docs/contracts.md)


def report_control_suites():
    """Suites whose control-model table feeds the taught-vs-untaught panel (knowledge measure)."""
    name = config["report"].get("control_model", "control")
    if name not in [row["name"] for row in MODELS]:
        return []
    families = config["metrics"]["families"]
    return [
        suite
        for suite, settings in (config.get("suites", {}) or {}).items()
        if "knowledge" in families.get(settings["kind"], [])
    ]


def report_inputs(wildcards):
    """Leaderboard, every suite's summary, and the control model's per-fact tables + split."""
    suites = list(config.get("suites", {}) or {})
    name = config["report"].get("control_model", "control")
    files = {
        "board": "results/metrics/leaderboard.csv",
        "summaries": expand("results/metrics/{suite}/summary.csv", suite=suites),
        "control": expand(
            "results/metrics/{suite}/{model}.parquet",
            suite=report_control_suites(),
            model=name,
        ),
        "lib": sorted(
            str(p.relative_to(workflow.basedir))
            for p in (
                Path(workflow.basedir) / "workflow/scripts/factprobe/report"
            ).glob("*.py")
        ),
    }
    if files["control"]:
        files["split"] = "results/models/control/split.parquet"
    return files


rule render_report:
    input:
        unpack(report_inputs),
    output:
        html=report(
            "results/report/index.html",
            caption="../report/index.rst",
            category="Report",
            labels={"page": "factprobe report"},
        ),
    log:
        "logs/render_report.log",
    conda:
        "../../environment.yml"
    params:
        suites=list(config.get("suites", {}) or {}),
        control_suites=report_control_suites(),
        settings=config["report"],
    script:
        "../scripts/render_report.py"
