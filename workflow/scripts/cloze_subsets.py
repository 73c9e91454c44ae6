"""Rule script: one (suite, model)'s per-fact measures from the first m cloze sentences of each
fact, m = 1 .. the most a fact has (distractors paper §5.1, Fig. 4; metrics/cloze.py)."""

import sys

sys.path.insert(0, snakemake.scriptdir)  # the workflow's own library first, not an installed copy

from factprobe import contracts
from factprobe.metrics.cloze import cloze_tables
from factprobe.metrics.pipeline import read_inputs
from factprobe.plumbing.rulelog import rule_logger
from factprobe.settings import Metrics, load_settings

log = rule_logger(snakemake)
inputs = read_inputs(snakemake.input)
measures = dict(snakemake.params.settings)
families = measures.pop("families")
settings = load_settings(Metrics, {**measures, "families": {}}, "metrics")
seed = dict(snakemake.params.suite).get("seed", 0)
table = cloze_tables(inputs, settings, families, snakemake.params.correct_set, seed)
log.info("%d per-fact rows over m = 1..%d cloze sentences", len(table), int(table["n_cloze"].max() or 0))
contracts.write("cloze_metrics", table, snakemake.output.cloze)
