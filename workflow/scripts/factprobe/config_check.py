"""Validation of the config and of the TSV registries (dumps.tsv, models.tsv).

Runs at workflow start (``common.smk``) so that a wrong key, an unquoted date or a missing
file fails before any job runs, with an error that names the key or the row.
"""

from __future__ import annotations

import csv
import json
import os
import re
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from factprobe.config_rules import check_cross_keys, check_human_alignment, check_languages, is_calendar_date
from factprobe.model_source import PrepareError, resolve_source
from factprobe.registries import BACKENDS, row_backend
from factprobe.settings import Config, ConfigError, load_settings

__all__ = [
    "ConfigError",
    "check_dumps",
    "config_source",
    "read_config",
    "read_registry",
    "resolve_config_paths",
    "resolve_dump_paths",
    "resolve_path",
    "validate_config",
]

TRUE = {"true", "yes", "1"}
FALSE = {"false", "no", "0"}


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
    # utf-8-sig: a byte-order mark (Excel writes one) is dropped, not read into the first column name.
    with open(path, newline="", encoding="utf-8-sig") as fh:
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
    """Each enabled dump needs exactly one of ``path`` (existing file), ``url`` or ``source`` (a dump
    resolved by its date: factprobe.wikidata.resolve); ``item``/``format`` only with ``source``
    (``format`` filled with its default, json.gz); dump ids are real dates; dates ascend."""
    for row in rows:
        where = f"{path}: line {row['_line']} (dump {row['dump']})"
        if not is_calendar_date(row["dump"], "%Y%m%d"):
            raise ConfigError(
                f"{where}: {row['dump']} is not a calendar date; write the dump date as YYYYMMDD"
            )
        if sum(k in row for k in ("path", "url", "source")) != 1:
            raise ConfigError(
                f"{where}: give exactly one of 'path' or 'url' or 'source' (wikimedia, archive or "
                "auto: the dump of this date from Wikimedia or the Internet Archive)"
            )
        if "source" not in row:
            extra = [k for k in ("item", "format") if k in row]
            if extra:
                raise ConfigError(f"{where}: {' and '.join(extra)} only go with 'source'")
        else:
            if "item" in row and row["source"] == "wikimedia":
                raise ConfigError(f"{where}: item names an Internet Archive item; use source archive or auto")
            row.setdefault("format", "json.gz")
            continue
        if row.get("enabled") and "path" in row and not (Path(root) / row["path"]).exists():
            raise ConfigError(f"{where}: file {row['path']} not found; fix the path or set enabled=false")
        name = row.get("path") or row.get("url", "")
        if not name.endswith((".json", ".json.gz", ".json.bz2")):
            raise ConfigError(f"{where}: {name} must end in .json, .json.gz or .json.bz2")
    return sorted(rows, key=lambda r: r["dump"])


def resolve_path(path: str, workflow_root: str | Path, workdir: str | Path = ".") -> str:
    """Where a path of the config or of a registry row is read from (config/README.md, "Paths").

    Absolute paths and paths that exist relative to the working directory (user data) are kept
    as given; a relative path that exists only in the workflow's own directory (a bundled
    resource: templates, the single-value list, the demo dumps and registries) becomes that
    absolute path, so a config copied out of the repository (module, snakedeploy, ``--directory``)
    keeps working. A path found in neither place is kept as given, so the error that follows
    names it as the user wrote it.
    """
    if not path or Path(path).is_absolute() or (Path(workdir) / path).exists():
        return path
    bundled = Path(workflow_root) / path
    return str(bundled) if bundled.exists() else path


def resolve_config_paths(config: dict, workflow_root: str | Path, workdir: str | Path = ".") -> dict:
    """A copy of the raw config with every file key resolved by :func:`resolve_path`.

    Keys: ``dumps``, ``models``, ``diff.single_value_list``, ``templates.sets.<name>.path``,
    ``suites.<name>.source.path`` and ``metrics.human_alignment.path``. Model sources are not files of the workflow and are left
    to :func:`check_models`.
    """
    out = {k: (dict(v) if isinstance(v, dict) else v) for k, v in config.items()}

    def fix(block: dict, key: str) -> None:
        if isinstance(block.get(key), str):
            block[key] = resolve_path(block[key], workflow_root, workdir)

    fix(out, "dumps")
    fix(out, "models")
    if isinstance(out.get("diff"), dict):
        fix(out["diff"], "single_value_list")
    templates = out.get("templates")
    if isinstance(templates, dict) and isinstance(templates.get("sets"), dict):
        templates["sets"] = {n: dict(s) if isinstance(s, dict) else s for n, s in templates["sets"].items()}
        for entry in templates["sets"].values():
            if isinstance(entry, dict):
                fix(entry, "path")
    suites = out.get("suites")
    if isinstance(suites, dict):
        out["suites"] = {n: dict(b) if isinstance(b, dict) else b for n, b in suites.items()}
        for block in out["suites"].values():
            if isinstance(block, dict) and isinstance(block.get("source"), dict):
                block["source"] = dict(block["source"])
                fix(block["source"], "path")
    metrics = out.get("metrics")
    if isinstance(metrics, dict) and isinstance(metrics.get("human_alignment"), dict):
        metrics["human_alignment"] = dict(metrics["human_alignment"])
        fix(metrics["human_alignment"], "path")
    return out


def resolve_dump_paths(rows: list[dict], workflow_root: str | Path, workdir: str | Path = ".") -> list[dict]:
    """Registry rows with each ``path`` resolved by :func:`resolve_path` (the demo dumps are bundled)."""
    return [
        {**row, "path": resolve_path(row["path"], workflow_root, workdir)} if "path" in row else row
        for row in rows
    ]


def config_source(
    given: list[str | Path], loaded: list[str | Path], workdir: str | Path = ".", replaced: bool = False
) -> str:
    """How error messages name the config: the files given with ``--configfile`` (Snakemake's
    ``workflow.overwrite_configfiles``), said to be merged over the Snakefile's own
    ``configfile:`` when that was loaded too (``workflow.configfiles``) and not ``replaced``
    (``--replace-workflow-config``), relative to ``workdir`` where they lie inside it;
    ``config/config.yaml`` when Snakemake loaded none (a module's config)."""

    def name(file: str | Path) -> str:
        full = Path(os.path.abspath(Path(workdir) / file))
        base = Path(os.path.abspath(workdir))
        return str(full.relative_to(base)) if full.is_relative_to(base) else str(full)

    cli = list(dict.fromkeys(name(f) for f in given))
    rest = [f for f in dict.fromkeys(name(f) for f in loaded) if f not in cli and not (cli and replaced)]
    if not cli:
        return ", ".join(rest) or "config/config.yaml"
    return ", ".join(cli) + (f" (merged over {', '.join(rest)})" if rest else "")


#: Keys of a ``distractors`` block that became a strategy's own setting (``strategy_settings``),
#: a section's keys keeping their names: old key -> new place, relative to the block.
MOVED_KEYS = {
    "cooccur": "strategy_settings.cooccur",
    "temporal": "strategy_settings.temp+sem",
    "pool_source": "strategy_settings.pool.source",
}

#: Keys of the ``metrics`` section that became a family's own setting (``family_settings``),
#: likewise: the keys read by one family alone.
MOVED_METRICS_KEYS = {
    "precision_ns": "family_settings.knowledge.precision_ns",
    "combined_strategies": "family_settings.knowledge.combined_strategies",
    "recall_ns": "family_settings.ranking.recall_ns",
    "ranking_ties": "family_settings.ranking.ties",
    "plausibility_strategies": "family_settings.plausibility.strategies",
    "overlap": "family_settings.overlap",
}


#: Moved keys whose value is itself a mapping (not a section of keys).
_VALUE_DICTS = ("combined_strategies",)


def _moved(where: str, block: Any, moves: dict[str, str]) -> list[tuple[str, str]]:
    """``(old key, new place)`` of each key of ``block`` (at ``where``) that ``moves`` moved; a
    moved section by its keys."""
    found = []
    for old, new in moves.items():
        if not isinstance(block, dict) or old not in block:
            continue
        value = block[old]
        subkeys = list(value) if isinstance(value, dict) and value and old not in _VALUE_DICTS else [""]
        found += [
            (f"{where}.{old}" + (f".{k}" if k else ""), f"{where}.{new}" + (f".{k}" if k else ""))
            for k in subkeys
        ]
    return found


def moved_keys(config: dict) -> list[tuple[str, str]]:
    """``(old key, new place)`` of every key of ``config`` that :data:`MOVED_KEYS` moved, in the
    ``distractors`` section, its ``by_kind`` blocks and the suites' ``distractors`` blocks."""
    section = config.get("distractors") or {}
    blocks = [("distractors", section)]
    blocks += [(f"distractors.by_kind.{k}", b) for k, b in (section.get("by_kind") or {}).items()]
    blocks += [
        (f"suites.{s}.distractors", (b or {}).get("distractors"))
        for s, b in (config.get("suites") or {}).items()
    ]
    return [move for where, block in blocks for move in _moved(where, block, MOVED_KEYS)]


def refuse_moved_keys(config: dict, source: str = "config/config.yaml") -> None:
    """A key moved to a strategy's or a family's own settings fails in one line naming it and
    its new place: silently ignored, it would change the distractors or the measures without a
    word."""
    checks = (
        (moved_keys(config), "a strategy's own setting; config/README.md, section distractors"),
        (
            _moved("metrics", config.get("metrics"), MOVED_METRICS_KEYS),
            "a family's own setting; config/README.md, section metrics",
        ),
    )
    for found, what in checks:
        if found:
            raise ConfigError(f"{source}: {'; '.join(f'{old} is now {new}' for old, new in found)} ({what})")


def read_config(config: dict, schema_path: str | Path, source: str = "config/config.yaml") -> Config:
    """The validated config as typed settings (``factprobe.settings.Config``, defaults filled in)."""
    refuse_moved_keys(config, source)
    validate_config(config, schema_path, source)
    return load_settings(Config, config, source)


def load_run(
    config: dict, workflow_root: str | Path, schemas: str | Path, source: str = "config/config.yaml"
) -> tuple[Config, list[dict], list[dict]]:
    """The run's validated config, dumps.tsv rows and models.tsv rows (paths resolved against the
    working directory, then ``workflow_root``): every check that must fail before any job runs,
    errors naming ``source``, the config file(s) given."""
    schemas = Path(schemas)
    cfg = read_config(resolve_config_paths(config, workflow_root), schemas / "config.schema.yaml", source)
    dump_rows = read_registry(cfg.dumps, schemas / "dumps.schema.yaml", key="dump")
    dumps = check_dumps(resolve_dump_paths(dump_rows, workflow_root), cfg.dumps)
    models = check_models(read_registry(cfg.models, schemas / "models.schema.yaml", key="name"), cfg.models)
    check_cross_keys(cfg, [row["dump"] for row in dumps if row["enabled"]], source)
    check_languages(cfg, source)
    check_human_alignment(cfg, source)
    return cfg, dumps, models


from factprobe.plumbing.code_inputs import NOT_CODE_INPUTS, library_modules  # noqa: E402, F401  (re-exported)

#: Hugging Face repo id: ``name`` or ``org/name`` (huggingface_hub's validate_repo_id rules).
HUB_ID = re.compile(r"^(?:[A-Za-z0-9][\w.-]*/)?[A-Za-z0-9][\w.-]*$")
BUILTIN_CONTROL = "builtin:control"


def check_models(rows: list[dict], path: str | Path, root: str | Path = ".") -> list[dict]:
    """Each models.tsv ``source`` is builtin:control, an existing model directory, a GGUF file (local
    or ``pypi:<package>/<file>.gguf`` in an installed package) or a well-formed hub id.

    A source is taken as a local path when it is absolute, starts with ``.`` or ``~``, has more
    than one ``/``, ends in ``.gguf`` or names an existing directory (the same reading as
    ``factprobe.lm.load``), so a typo fails here, before any job runs. The ``backend`` cell
    (default ``hf``) must name a registered backend (:data:`factprobe.registries.BACKENDS`).
    """
    for row in rows:
        where = f"{path}: line {row['_line']} (model {row['name']})"
        source = row["source"]
        cutoff = row.get("cutoff")
        if row_backend(row) not in BACKENDS:
            raise ConfigError(
                f"{where}: unknown backend {row_backend(row)!r}; choose from {sorted(BACKENDS)} "
                "(factprobe.registries.BACKENDS; a plugin registers more, see FACTPROBE_PLUGINS)"
            )
        if cutoff and not is_calendar_date(cutoff, "%Y-%m-%d"):
            raise ConfigError(f"{where}: cutoff {cutoff} is not a calendar date; write it as YYYY-MM-DD")
        if source.startswith("builtin:"):
            if source != BUILTIN_CONTROL:
                raise ConfigError(
                    f"{where}: unknown source {source!r}; the only builtin is {BUILTIN_CONTROL}"
                )
            continue
        local = Path(source).expanduser()
        if not local.is_absolute():
            local = Path(root) / local
        if source.startswith("pypi:") or source.lower().endswith(".gguf"):
            # A GGUF file, local or shipped in an installed package: prepare_model dequantizes it.
            try:
                resolve_source(source if source.startswith("pypi:") else str(local), where)
            except PrepareError as exc:
                raise ConfigError(str(exc)) from None
            continue
        if local.is_dir():
            _check_remote_code(row, local / "config.json", where)
            continue
        if Path(source).is_absolute() or source.startswith((".", "~")) or source.count("/") > 1:
            raise ConfigError(
                f"{where}: local model directory {source} not found: supply the weights of model "
                f"{row['name']} there (a Hugging Face model folder: config.json, the tokenizer files and "
                "the weights; the config that names it says which checkpoint), or fix the source column"
            )
        if (
            len(source) > 96
            or not HUB_ID.match(source)
            or "--" in source
            or ".." in source
            or source.endswith(".")
        ):
            raise ConfigError(
                f"{where}: source {source!r} is neither an existing directory nor a hub id "
                "(`name` or `org/name`: letters, digits, - _ ., at most 96 characters)"
            )
        cached = hub_cached_config(source, row.get("revision"))
        if cached is not None:
            _check_remote_code(row, cached, where)
    return rows


def _check_remote_code(row: dict, config_json: Path, where: str) -> None:
    """A model whose ``config.json`` maps its classes to its own code (``auto_map``) loads only with
    ``trust_remote_code``; say so now rather than when prepare_model or scoring loads it."""
    if row.get("trust_remote_code"):
        return
    try:
        auto_map = "auto_map" in json.loads(config_json.read_text())
    except (OSError, ValueError, TypeError):
        return  # no readable config.json: prepare_model reports what is missing
    if auto_map:
        raise ConfigError(
            f"{where}: {row['source']} needs its own modelling code ({config_json} has auto_map) but "
            "trust_remote_code is false; set trust_remote_code=true on that line if you trust that code"
        )


def hub_cached_config(repo_id: str, revision: str | None = None) -> Path | None:
    """The ``config.json`` of a hub id in the local Hugging Face cache (``HF_HUB_CACHE``, else
    ``HF_HOME/hub``, else ``~/.cache/huggingface/hub``) at ``revision`` (a commit, or a branch or
    tag resolved through ``refs/``; default ``main``); None when it is not cached."""
    home = os.environ.get("HF_HOME", os.path.join(os.path.expanduser("~"), ".cache", "huggingface"))
    cache = Path(os.environ.get("HF_HUB_CACHE", os.path.join(home, "hub")))
    repo = cache / ("models--" + repo_id.replace("/", "--"))
    revision = revision or "main"
    ref = repo / "refs" / revision
    try:
        commit = ref.read_text().strip() if ref.is_file() else revision
    except OSError:
        return None
    found = repo / "snapshots" / commit / "config.json"
    return found if found.is_file() else None
