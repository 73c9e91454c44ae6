"""Validation of the config and of the TSV registries (dumps.tsv, models.tsv).

Runs at workflow start (``common.smk``) so that a wrong key, an unquoted date or a missing
file fails before any job runs, with an error that names the key or the row.
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import jsonschema
import yaml

TRUE = {"true", "yes", "1"}
FALSE = {"false", "no", "0"}


class ConfigError(ValueError):
    """Configuration or registry problem; the message names the file and the key or row."""


def _load_schema(path: str | Path) -> dict:
    with open(path) as fh:
        return yaml.safe_load(fh)


def load_config_schema(schema_path: str | Path) -> dict:
    """The main schema with every ``config.<section>.schema.yaml`` beside it merged in.

    Each stage owns the schema of its own section, so stages can evolve independently.
    """
    schema_path = Path(schema_path)
    schema = _load_schema(schema_path)
    for part in sorted(schema_path.parent.glob("config.*.schema.yaml")):
        section = part.name.split(".")[1]
        schema.setdefault("properties", {})[section] = _load_schema(part)
    return schema


def validate_config(config: dict, schema_path: str | Path, source: str = "config/config.yaml") -> None:
    """Validate ``config`` against the JSON schema, naming the offending key path."""
    schema = load_config_schema(schema_path)
    errors = sorted(jsonschema.Draft202012Validator(schema).iter_errors(config), key=lambda e: list(e.path))
    if errors:
        lines = []
        for err in errors:
            key = ".".join(str(p) for p in err.path) or "(top level)"
            lines.append(f"  {key}: {err.message}")
        raise ConfigError(f"{source}: invalid configuration\n" + "\n".join(lines))


def _coerce(value: str, spec: dict) -> Any:
    if spec.get("type") == "boolean":
        low = value.strip().lower()
        if low in TRUE:
            return True
        if low in FALSE:
            return False
        return value
    return value


def read_registry(path: str | Path, schema_path: str | Path, key: str) -> list[dict]:
    """Read a TSV registry, validate each row, and return the rows as dicts.

    Empty cells are dropped (optional columns). Errors name the file, the line number and
    the column; duplicated keys are rejected.
    """
    path = Path(path)
    if not path.exists():
        raise ConfigError(f"{path}: registry file not found; create it or fix the path in config.yaml")
    schema = _load_schema(schema_path)
    props = schema.get("properties", {})
    validator = jsonschema.Draft202012Validator(schema)
    rows: list[dict] = []
    seen: dict[str, int] = {}
    with open(path, newline="") as fh:
        reader = csv.DictReader(fh, delimiter="\t")
        unknown = [c for c in reader.fieldnames or [] if c not in props]
        if unknown:
            raise ConfigError(f"{path}: unknown column(s) {unknown}; allowed: {sorted(props)}")
        for lineno, raw in enumerate(reader, start=2):
            row = {k: _coerce(v, props.get(k, {})) for k, v in raw.items() if v not in (None, "")}
            for err in validator.iter_errors(row):
                col = ".".join(str(p) for p in err.path) or "row"
                raise ConfigError(f"{path}: line {lineno}, column {col}: {err.message}")
            ident = row[key]
            if ident in seen:
                raise ConfigError(f"{path}: line {lineno}: {key} {ident!r} already on line {seen[ident]}")
            seen[ident] = lineno
            row["_line"] = lineno
            rows.append(row)
    return rows


def check_dumps(rows: list[dict], path: str | Path, root: str | Path = ".") -> list[dict]:
    """Each enabled dump needs exactly one of ``path`` (existing file) or ``url``; dates ascend."""
    for row in rows:
        where = f"{path}: line {row['_line']} (dump {row['dump']})"
        if ("path" in row) == ("url" in row):
            raise ConfigError(f"{where}: give exactly one of 'path' or 'url'")
        if row.get("enabled") and "path" in row and not (Path(root) / row["path"]).exists():
            raise ConfigError(f"{where}: file {row['path']} not found; fix the path or set enabled=false")
        name = row.get("path") or row.get("url", "")
        if not name.endswith((".json", ".json.gz", ".json.bz2")):
            raise ConfigError(f"{where}: {name} must end in .json, .json.gz or .json.bz2")
    return sorted(rows, key=lambda r: r["dump"])


def check_cross_keys(config: dict, source: str = "config/config.yaml") -> None:
    """Constraints between sections that one section's schema cannot express."""
    precision = max(config.get("metrics", {}).get("precision_ns", [1]) or [1])
    topk = config.get("scoring", {}).get("topk", 100)
    if precision > topk:
        raise ConfigError(
            f"{source}: metrics.precision_ns asks for Precision@{precision} but scoring.topk is {topk}; "
            "first-token ranks are only known within the top-k, so raise scoring.topk"
        )
