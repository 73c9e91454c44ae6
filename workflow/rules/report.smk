# report stage: metric tables -> results/report/index.html and its figures (docs/contracts.md)


report: "../report/workflow.rst"


def report_provenance():
    """Parse-time part of the report's provenance block: dumps.tsv rows the suites use, suites,
    models.tsv rows, manifest paths, factprobe version, config hash (render adds fact counts,
    manifests and the control model's fingerprint)."""
    from factprobe.report import provenance as P

    used = set()
    for suite, block in SUITES.items():
        used.update(suite_dumps(suite), [block.dump])
        used.update([block.diff_old] if block.kind == "plausibility" else [])
    return {
        "version": P.factprobe_version(workflow.basedir),
        "config_hash": P.config_hash(S.plain(CFG)),
        "dumps": P.dump_records(DUMP_ROWS, used),
        "suites": [
            {
                "suite": suite,
                "kind": block.kind,
                "dump": block.dump,
                "dump date": P.dump_date(block.dump),
                "models": ", ".join(SCORE_MODELS),
            }
            for suite, block in SUITES.items()
        ],
    }


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
        control_suites=report_control_suites(),
        settings=S.plain(CFG.report),
        provenance=report_provenance(),
        model_rows={m: MODEL_PARAMS[m] for m in SCORE_MODELS},
        # Written when a hub/local model is prepared; read if present (models.tsv row otherwise).
        manifests={m: f"resources/models/{m}/manifest.json" for m in SCORE_MODELS},
        control_dir_suites=report_control_model_suites(),
    script:
        "../scripts/render_report.py"
