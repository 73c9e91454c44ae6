# report stage: metric tables -> results/report/index.html and its figures (docs/contracts.md)


include: "functions/report.smk"


report: "../report/workflow.rst"


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
        figures=report(
            directory("results/report/figures"),
            patterns=["{name}.png"],
            caption="../report/figures.rst",
            category="Figures",
            labels={"figure": "{name}"},
        ),
    log:
        "logs/render_report.log",
    conda:
        "../../environment.yml"
    params:
        suites=list(SUITES),
        control_suites=run_inputs.report_control_suites(CFG, SCORE_MODELS),
        settings=settings.plain(CFG.report),
        provenance=report_provenance(),
        model_rows={m: RUN.model_params[m] for m in SCORE_MODELS},
        # Written when a hub/local model is prepared; read if present (models.tsv row otherwise).
        manifests={m: f"resources/models/{m}/manifest.json" for m in SCORE_MODELS},
        control_dir_suites=run_inputs.report_control_model_suites(
            CFG, SCORE_MODELS, MODEL_ROWS
        ),
    script:
        "../scripts/render_report.py"
