"""Rule script: one (timeline suite, model)'s scores -> the candidates' softmax per prompt
(``{model}.confidence.parquet``), the input of slice_calibration.csv."""

import sys

sys.path.insert(0, snakemake.scriptdir)  # the workflow's own library first, not an installed copy

from factprobe import contracts
from factprobe.metrics.pipeline import read_inputs, suite_frame
from factprobe.metrics.slice_calibration import candidate_confidence
from factprobe.plumbing.rulelog import rule_logger
from factprobe.settings import Metrics, load_settings

log = rule_logger(snakemake)
inputs = read_inputs(snakemake.input)
measures = dict(snakemake.params.settings)
measures.pop("families")
settings = load_settings(Metrics, {**measures, "families": {}}, "metrics")
frame = suite_frame(inputs, settings, snakemake.params.correct_set)
table = candidate_confidence(
    frame.entity_scores,
    frame.prompts,
    frame.candidates,
    frame.facts,
    frame.correct,
    settings.ns,
    settings.short_lists,
)
log.info("%d (prompt, strategy, n) forecasts over %d facts", len(table), table["fact_id"].nunique())
contracts.write("candidate_confidence", table, snakemake.output.confidence)
