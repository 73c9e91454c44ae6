"""The demo's typed config and registry rows, as the workflow reads them at parse time (shared by the
tests of the parse-time library: factprobe.plumbing.run_settings, factprobe.plumbing.run_inputs)."""

from pathlib import Path

import yaml
from factprobe.config_check import read_config, read_registry, resolve_config_paths

ROOT = Path(__file__).resolve().parents[1]
SCHEMAS = ROOT / "workflow" / "schemas"


def demo(edit=None):
    """``(config, dumps.tsv rows, models.tsv rows)`` of config/config.yaml, after ``edit(raw)``."""
    raw = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    if edit:
        edit(raw)
    cfg = read_config(resolve_config_paths(raw, ROOT), SCHEMAS / "config.schema.yaml")
    models = {r["name"]: r for r in read_registry(cfg.models, SCHEMAS / "models.schema.yaml", key="name")}
    dumps = {r["dump"]: r for r in read_registry(cfg.dumps, SCHEMAS / "dumps.schema.yaml", key="dump")}
    return cfg, dumps, models
