# report stage: metric tables -> results/report/index.html (docs/contracts.md)


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
        suites=list(SUITES),
        control_suites=report_control_suites(),
        settings=S.plain(CFG.report),
    script:
        "../scripts/render_report.py"
