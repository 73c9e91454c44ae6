# report stage (report.smk), its helpers: the report's provenance and inputs.
# Functions live apart from the rules (snakemake --lint: no file mixes them); the rule file
# includes this one first. A function may name what a later stage defines: names are looked up
# when Snakemake calls it.


def report_provenance():
    """Parse-time part of the report's provenance block (factprobe.report.provenance)."""
    from factprobe.report import provenance as P
    from factprobe.wikidata.resolve import record_paths

    used = run_settings.dumps_read_by(CFG, SUITES)
    records = record_paths(DUMP_ROWS, rules.download_dump.output.dump)
    roots = [Path.cwd(), WORKFLOW_ROOT]
    dumps = P.dump_records(DUMP_ROWS, used, roots, records)
    plugins = P.plugin_records(*run_inputs.loaded_plugins(SCRIPTS))
    return P.run_provenance(
        WORKFLOW_ROOT,
        settings.plain(CFG),
        RUN.suite_params,
        SCORE_MODELS,
        dumps,
        plugins,
    )


def report_inputs(wildcards):
    """Leaderboard (+ paired comparison), every suite's summary and facts, the control model's
    control_check tables and trained folders (provenance)."""
    name = CFG.report.control_model
    suites = list(SUITES)
    checked = run_inputs.report_control_suites(CFG, SCORE_MODELS)
    trained = run_inputs.report_control_model_suites(CFG, SCORE_MODELS, MODEL_ROWS)
    extracted = run_settings.dumps_read_by(
        CFG, [s for s in run_settings.built_suites(CFG) if s not in RELEASE_ONLY]
    )
    return {
        "board": rules.leaderboard.output.board,
        "paired": rules.leaderboard.output.paired,
        "facts": expand(rules.build_probes.output.facts, suite=suites),
        "control_models": expand(rules.train_control.output.model, suite=trained),
        "summaries": expand(rules.summarize_metrics.output.summary, suite=suites),
        "control": expand(rules.control_check.output.check, suite=checked, model=name),
        "lib": library("render_report.py"),
        "human": HUMAN_TARGETS,
        "human_curves": HUMAN_CURVE_TARGETS,
        "timeline": TIMELINE_TARGETS,
        "robustness": ROBUSTNESS_TARGETS,
        "timeline_profiles": TIMELINE_PROFILES,
        "after_cutoff": AFTER_CUTOFF,
        "cutoff_profiles": CUTOFF_PROFILES,
        "calibration": SLICE_CALIBRATION,
        "extract_stats": expand(rules.extract_dump.output.stats, dump=extracted),
    }
