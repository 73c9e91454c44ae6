"""Rule script: turn one models.tsv row into a verified local model folder with a manifest."""

import sys

sys.path.insert(0, snakemake.scriptdir)  # the workflow's own library first, not an installed copy

import json

from factprobe.plumbing.rulelog import rule_logger
from factprobe.scoring.prepare import prepare_model, registry_where

log = rule_logger(snakemake)
row = dict(snakemake.params.row)
where = registry_where(snakemake.config["models"], row["name"])
manifest = prepare_model(row, snakemake.output.model, where=where)
summary = {k: v for k, v in manifest.items() if k != "files"}
log.info("prepared %s", json.dumps(summary, sort_keys=True))
