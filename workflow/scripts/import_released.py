"""Rule script import_released: a released benchmark (PRobELM) as one suite's probe tables."""

import sys

sys.path.insert(0, snakemake.scriptdir)  # the workflow's own library first, not an installed copy

from pathlib import Path

from factprobe import contracts
from factprobe.plumbing.rulelog import rule_logger
from factprobe.probes.released import build_released, read_groups, read_prompts
from factprobe.settings import Suite, load_settings
from factprobe.wikidata.labels import resolved_labels

log = rule_logger(snakemake)
name = snakemake.wildcards.suite
suite = load_settings(Suite, dict(snakemake.params.suite), f"suites.{name}")
*data_files, prompts_csv = list(snakemake.input.released)
groups = {Path(f).stem: read_groups(f) for f in data_files}
# English labels and aliases of every label dump, with the `mul` fallback (factprobe.wikidata.labels).
labels = resolved_labels(snakemake.input.labels, ["en"])
entities = contracts.read("entities", snakemake.input.entities, ["id", "kind", "sitelinks"])
entities = entities[entities["kind"] == "item"]  # properties share the numeric ids
tables = build_released(
    name,
    groups,
    read_prompts(prompts_csv),
    labels,
    contracts.read("properties", snakemake.input.properties, ["id", "label"]),
    sitelinks=entities.set_index("id")["sitelinks"],
    dump=str(suite.dump),
    relations=list(suite.relations),
    styles=suite.templates.styles,
    seed=suite.seed,
)
for table in ("facts", "prompts", "entity_forms", "candidates", "forms"):
    contracts.write(table, tables[table], getattr(snakemake.output, table))
contracts.write_text("released_matches", tables["matches"], snakemake.output.matches)
