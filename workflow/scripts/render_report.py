"""Rule script: metric tables -> results/report/index.html (self-contained) and its figures as
separate PNG files (results/report/figures/, items of ``snakemake --report``)."""

import sys

sys.path.insert(0, snakemake.scriptdir)  # the workflow's own library first, not an installed copy

import base64
import json
from pathlib import Path

from factprobe import contracts
from factprobe.io import atomic_dir, atomic_path, read_table
from factprobe.plumbing.rulelog import rule_logger
from factprobe.report.html import Figures, ReportTables, build_report
from factprobe.report.provenance import (
    model_records,
    with_label_coverage,
    with_malformed,
    with_resolutions,
)
from factprobe.settings import Report, load_settings

log = rule_logger(snakemake)
settings = load_settings(Report, snakemake.params.settings, "report")
suites = snakemake.params.suites
summaries = {
    s: contracts.read_csv("summary", p) for s, p in zip(suites, snakemake.input.summaries, strict=True)
}
board = contracts.read_csv("leaderboard", snakemake.input.board)
paired = contracts.read_csv("paired", snakemake.input.paired)
control = {
    suite: contracts.read_csv("control_check", path)
    for suite, path in zip(snakemake.params.control_suites, snakemake.input.control, strict=True)
}
# Human alignment (§4.2) when a judgement file is configured: results/metrics/{suite}/human_alignment.csv.
human = {
    Path(p).parent.name: contracts.read_csv("human_alignment", p) for p in snakemake.input.get("human", [])
}
# §5.1 Fig. 3 and 4 beside it: results/metrics/{suite}/human_alignment_curves.csv.
curves = {
    Path(p).parent.name: contracts.read_csv("human_alignment_curves", p)
    for p in snakemake.input.get("human_curves", [])
}
# Timeline suites: results/metrics/{suite}/timeline.csv.
timelines = {
    Path(p).parent.name: contracts.read_text("timeline", p) for p in snakemake.input.get("timeline", [])
}
# Table 4 (§4.3) of verbalization-pairs suites: results/metrics/{suite}/robustness.csv.
robustness = {
    Path(p).parent.name: contracts.read_text("robustness", p) for p in snakemake.input.get("robustness", [])
}
profiles = {
    Path(p).parent.name: contracts.read_text("timeline_profile", p)
    for p in snakemake.input.get("timeline_profiles", [])
}
after = {
    Path(p).parent.name: contracts.read_text("after_cutoff", p)
    for p in snakemake.input.get("after_cutoff", [])
}
cutoff = {
    Path(p).parent.name: contracts.read_text("cutoff_profile", p)
    for p in snakemake.input.get("cutoff_profiles", [])
}
calibration = {
    Path(p).parent.name: contracts.read_text("slice_calibration", p)
    for p in snakemake.input.get("calibration", [])
}

# Provenance: parse-time facts (params) completed with what the jobs wrote.
provenance = dict(snakemake.params.provenance)
counts = {s: read_table(p).num_rows for s, p in zip(suites, snakemake.input.facts, strict=True)}
provenance["suites"] = [{**row, "facts": counts.get(row["suite"], "")} for row in provenance["suites"]]
extract = {
    Path(p).parent.name: json.loads(Path(p).read_text()) for p in snakemake.input.get("extract_stats", [])
}
provenance["dumps"] = with_label_coverage(
    with_malformed(with_resolutions(provenance["dumps"]), extract), extract
)
control_dirs = dict(
    zip(snakemake.params.control_dir_suites, snakemake.input.get("control_models", []), strict=True)
)
fingerprint = end_token = None
if control_dirs:
    from factprobe.lm.load import model_fingerprint as fingerprint  # torch: only with a control model
    from factprobe.scoring.prepare import end_token_of as end_token
provenance["models"] = model_records(
    snakemake.params.model_rows, snakemake.params.manifests, control_dirs, fingerprint, end_token
)

figs = Figures(settings.dpi, settings.confidence_level)
tables = ReportTables(
    summaries,
    board,
    control,
    paired,
    provenance,
    human,
    curves,
    robustness,
    timelines,
    profiles,
    after,
    cutoff,
    calibration,
)
page = build_report(tables, settings, figs)
log.info(
    "report: %d suite(s), %d control table(s), %d figure(s), %d bytes",
    len(summaries),
    len(control),
    len(figs.drawn),
    len(page),
)
with atomic_path(snakemake.output.html) as tmp:
    tmp.write_text(page, encoding="utf-8")
# The figures folder appears whole or not at all: written beside it, then renamed.
with atomic_dir(snakemake.output.figures) as tmp:
    for name, uri in figs.drawn.items():
        (tmp / f"{name}.png").write_bytes(base64.b64decode(uri.split(",", 1)[1]))
