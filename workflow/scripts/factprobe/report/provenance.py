"""What a report was built from: dumps and their dates, suites and fact counts, models and their
identity, the factprobe version, a hash of the resolved configuration and the plugins loaded.

Parse-time helpers (``config_hash``, ``factprobe_version``, ``dump_records``) use the standard
library only, since ``functions/report.smk`` calls them before any job runs; the render-time
helpers read what jobs wrote (``manifest.json`` of a prepared model, the control model folder).
"""

from __future__ import annotations

import hashlib
import json
import os
import tomllib
from collections.abc import Callable, Iterable, Mapping
from importlib import metadata
from pathlib import Path
from typing import Any

#: Keys of ``resources/models/{model}/manifest.json`` (written when a hub/local model is prepared).
#: ``note`` says when the weights are not the original release (e.g. a dequantized 4-bit GGUF);
#: ``end_token`` which token end marker ``eos`` scored after each form, and the rule that chose it.
MANIFEST_KEYS = (
    "source",
    "kind",
    "revision",
    "source_sha256",
    "dtype",
    "n_parameters",
    "end_token",
    "fingerprint",
    "note",
)


def config_hash(config: Mapping) -> str:
    """First 12 hex digits of the SHA-256 of the resolved configuration as canonical JSON
    (sorted keys): the same settings give the same hash whatever the YAML's layout."""
    text = json.dumps(config, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def as_configured(value: Any, root: str | Path) -> Any:
    """``value`` (a resolved config, or any part of it) with every absolute path inside the
    workflow's folder ``root`` written relative to it again, as the user wrote it before
    :func:`factprobe.config_check.resolve_path` found it bundled there: what the user configured, so
    that two clones in different places with the same settings give the same hash."""
    if isinstance(value, Mapping):
        return {key: as_configured(item, root) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [as_configured(item, root) for item in value]
    if isinstance(value, str) and os.path.isabs(value):
        base = os.path.abspath(root)
        full = os.path.abspath(value)
        if os.path.commonpath([base, full]) == base and full != base:
            return Path(os.path.relpath(full, base)).as_posix()
    return value


def factprobe_version(root: str | Path) -> str:
    """Version of the workflow's own copy (``pyproject.toml`` under ``root``), else of the
    installed package, else "unknown"."""
    pyproject = Path(root) / "pyproject.toml"
    if pyproject.is_file():
        try:
            return str(tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]["version"])
        except (KeyError, tomllib.TOMLDecodeError):
            pass
    try:
        return metadata.version("factprobe")
    except metadata.PackageNotFoundError:
        return "unknown"


def dump_date(dump: str) -> str:
    """ISO date of a dump id ``YYYYMMDD`` (the dump's snapshot date)."""
    return f"{dump[:4]}-{dump[4:6]}-{dump[6:8]}" if len(dump) == 8 and dump.isdigit() else dump


def plugin_records(names: Iterable[str], files: Iterable[str | Path]) -> list[dict]:
    """One row per plugin of ``FACTPROBE_PLUGINS``: the name as given (``names``) and the SHA-256
    of its file (``files``, the same order): its entries may change any table, so the report
    names the code that ran."""
    return [
        {"plugin": name, "sha256": hashlib.sha256(Path(file).read_bytes()).hexdigest()}
        for name, file in zip(names, files, strict=True)
    ]


def run_provenance(
    version_root: str | Path,
    config: Mapping,
    suites: Mapping[str, Mapping],
    models: Iterable[str],
    dumps: list[dict],
    plugins: list[dict] | None = None,
) -> dict:
    """The parse-time part of the report's provenance block: the factprobe version (of the copy at
    ``version_root``), the hash of the resolved ``config`` (bundled paths relative to
    ``version_root``, :func:`as_configured`), the ``dumps`` records
    (:func:`dump_records`) and one row per suite (``suites``: name -> its plain config block, with
    ``kind`` and ``dump``) naming the scored ``models``. Rendering adds fact counts, malformed
    lines skipped per dump, manifests and the control model's fingerprint. ``plugins``
    (:func:`plugin_records`), when any were loaded, are listed too."""
    scored = ", ".join(models)
    extra = {"plugins": plugins} if plugins else {}
    return {
        **extra,
        "version": factprobe_version(version_root),
        # bundled resources' absolute paths depend on where the clone is, not on the settings
        "config_hash": config_hash(as_configured(config, version_root)),
        "dumps": dumps,
        "suites": [
            {
                "suite": suite,
                "kind": block["kind"],
                "dump": block["dump"],
                "dump date": dump_date(block["dump"]),
                "models": scored,
            }
            for suite, block in suites.items()
        ],
    }


def registry_path(path: str, roots: Iterable[str | Path] = ()) -> str:
    """A dump path as the registry names it: relative to the first of ``roots`` (the working
    directory, the workflow's folder) that holds it, else as given. The report then names
    ``resources/demo/...`` rather than where one machine keeps its clone."""
    if not path or not os.path.isabs(path):
        return path
    for root in roots:
        root = os.path.abspath(root)
        if os.path.commonpath([root, os.path.abspath(path)]) == root:
            return os.path.relpath(path, root)
    return path


def dump_records(
    rows: Mapping[str, Mapping],
    used: Iterable[str],
    roots: Iterable[str | Path] = (),
    resolutions: Mapping[str, str] | None = None,
) -> list[dict]:
    """The dumps.tsv rows of the dumps ``used`` by the suites: id, date, where from (a path by
    :func:`registry_path` of ``roots``, the URL, or for a row resolved by date its ``source``
    and, under ``resolution``, the path of its resolution record from ``resolutions``, which
    :func:`with_resolutions` reads at render time), checksum."""
    out = []
    roots = list(roots)
    for dump in sorted(set(used)):
        row = rows[dump]
        record = {
            "dump": dump,
            "date": dump_date(dump),
            "source": registry_path(str(row.get("path") or ""), roots) or str(row.get("url") or ""),
            "checksum": str(row.get("checksum") or ""),
        }
        if row.get("source"):
            record["source"] = f"{row['source']} by date (not resolved yet)"
            record["resolution"] = str((resolutions or {}).get(dump, ""))
        out.append(record)
    return out


def with_resolutions(dumps: list[dict]) -> list[dict]:
    """The dump records with the URL and checksum a date-resolved dump was downloaded with (its
    resolution record, written by download_dump; factprobe.wikidata.resolve)."""
    out = []
    for row in dumps:
        row = dict(row)
        path = row.pop("resolution", None)
        try:
            record = json.loads(Path(path).read_text()) if path else {}
        except (OSError, ValueError):
            record = {}
        if record.get("url"):
            row["source"] = record["url"]
            row["checksum"] = f"{record.get('checksum', '')} (from {record.get('checksum_from', '?')})"
        out.append(row)
    return out


def malformed_cell(record: Mapping | None) -> str:
    """The provenance cell of a dump's skipped malformed lines (from ``extract_stats.json``)."""
    if not record:
        return ""
    n = int(record.get("malformed") or 0)
    if n == 0:
        return f"0 of {record.get('lines', 0)} lines"
    return f"{n} of {record.get('lines', 0)} lines (first at line {record.get('first_malformed_line')})"


def with_malformed(dumps: list[dict], stats: Mapping[str, Mapping]) -> list[dict]:
    """The dump records with a ``malformed lines skipped`` column (``stats``: dump -> record)."""
    return [{**row, "malformed lines skipped": malformed_cell(stats.get(row["dump"]))} for row in dumps]


def coverage_cell(record: Mapping | None) -> str:
    """The provenance cell of a dump's label coverage per language (``extract_stats.json``'s
    ``label_coverage``): items with a label of their own, only through ``mul``, with none."""
    table = (record or {}).get("label_coverage") or {}
    return "; ".join(
        f"{lang} {c.get('own', 0)} own + {c.get('default', 0)} mul, {c.get('none', 0)} none"
        for lang, c in table.items()
    )


def with_label_coverage(dumps: list[dict], stats: Mapping[str, Mapping]) -> list[dict]:
    """The dump records with a ``labels per language`` column (``stats``: dump -> record)."""
    return [{**row, "labels per language": coverage_cell(stats.get(row["dump"]))} for row in dumps]


def read_manifest(path: str | Path) -> dict:
    """The ``MANIFEST_KEYS`` of a model's manifest.json, or {} when there is none."""
    path = Path(path)
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise ValueError(f"{path}: not valid JSON ({err}); re-run the model's prepare step") from err
    return {k: data[k] for k in MANIFEST_KEYS if k in data}


def row_end_token(row: Mapping) -> str:
    """The end token a models.tsv row's own cells choose, overriding its folder's document end
    (the manifest's ``end_token``): a named ``end_token``, or the chat template's end of turn."""
    chat = row.get("prompt_format") == "chat"
    if row.get("end_token"):
        return f"{row['end_token']} (models.tsv end_token)" + (", prompt format chat" if chat else "")
    return "the chat template's end of turn (prompt format chat)" if chat else ""


def model_records(
    rows: Mapping[str, Mapping],
    manifests: Mapping[str, str],
    control_dirs: Mapping[str, str],
    fingerprint: Callable[[str], str] | None = None,
    end_token: Callable[[str, Mapping], str] | None = None,
) -> list[dict]:
    """One record per model: its models.tsv row, completed by its manifest.json when present;
    for the workflow-trained control model the content fingerprint of each suite's trained folder
    and its end token (``fingerprint`` is :func:`factprobe.lm.load.model_fingerprint`,
    ``end_token`` :func:`factprobe.scoring.prepare.end_token_of`, passed in to keep torch out
    of this module)."""
    out = []
    for name, row in rows.items():
        record = {
            "model": name,
            "source": str(row.get("source", "")),
            "revision": str(row.get("revision") or ""),
            "dtype": str(row.get("dtype") or ""),
        }
        manifest = read_manifest(manifests[name]) if name in manifests else {}
        record.update({k: str(v) for k, v in manifest.items()})
        if record["source"] == "builtin:control" and control_dirs and fingerprint is not None:
            record["fingerprint"] = "; ".join(
                f"{suite}: {fingerprint(folder)}" for suite, folder in sorted(control_dirs.items())
            )
        if record["source"] == "builtin:control" and control_dirs and end_token is not None:
            record["end_token"] = end_token(sorted(control_dirs.values())[0], row)
        elif row.get("end_token") or row.get("prompt_format") == "chat":
            record["end_token"] = row_end_token(row)
        out.append(record)
    return out
