"""The key tables of config/README.md, generated from the schemas' ``description`` and ``default``.

Each schema under ``workflow/schemas/`` is the one place a key is described: config/README.md
holds, between ``<!-- keys:NAME -->`` and ``<!-- /keys -->`` markers, a table generated from
``NAME``'s schema (``config`` = the top-level keys, ``extract`` = ``config.extract.schema.yaml``,
``dumps`` / ``models`` = the registries' columns). ``tests/unit/test_config_reference.py`` fails
when the file and the schemas disagree. After editing a schema, regenerate the tables::

    PYTHONPATH=workflow/scripts .venv/bin/python tests/config_reference.py

(``--check`` only compares, as the test does.) The prose around the tables is written by hand.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
SCHEMAS = ROOT / "workflow" / "schemas"
README = ROOT / "config" / "README.md"
BLOCK = re.compile(r"(<!-- keys:([a-z_]+) -->\n)(.*?)(<!-- /keys -->)", re.S)


def schema_file(name: str) -> Path:
    """The schema file of a block name."""
    if name == "config":
        return SCHEMAS / "config.schema.yaml"
    if name in ("dumps", "models"):
        return SCHEMAS / f"{name}.schema.yaml"
    return SCHEMAS / f"config.{name}.schema.yaml"


def leaves(node: dict, prefix: str = "") -> list[tuple[str, dict]]:
    """(key path, schema) of every documented key below ``node``: objects with named properties
    are descended into; a mapping of user-chosen names (``additionalProperties`` holding an
    object with properties) is descended into as ``<name>``; anything else is a key."""
    rows = []
    for key, sub in node.get("properties", {}).items():
        path = f"{prefix}{key}"
        if isinstance(sub, dict) and "properties" in sub:
            rows.extend(leaves(sub, f"{path}."))
        elif (
            isinstance(sub, dict)
            and isinstance(sub.get("additionalProperties"), dict)
            and ("properties" in sub["additionalProperties"])
        ):
            rows.extend(leaves(sub["additionalProperties"], f"{path}.<name>."))
        else:
            rows.append((path, sub))
    return rows


#: Characters of a default shown in a table cell.
LONG_DEFAULT = 120


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def _default(spec: dict) -> str:
    if "default" not in spec:
        return ""
    value = spec["default"]
    if value is None:
        return "`null`"
    if isinstance(value, str):
        text = f"`{value}`" if value else '`""`'
    else:
        text = "`" + json.dumps(value, ensure_ascii=False).replace('"', "") + "`"
    # A long default (a prompt text, a whole block) would fill the table: the schema shows it.
    return text if len(text) <= LONG_DEFAULT else "(long: see the schema)"


def table(name: str) -> str:
    """The Markdown table of one schema's keys."""
    schema = yaml.safe_load(schema_file(name).read_text(encoding="utf-8"))
    if name == "suites":
        schema = schema["additionalProperties"]
    rows = leaves(schema)
    required = set(schema.get("required", ()))
    head = "| column | default | meaning |" if name in ("dumps", "models") else "| key | default | meaning |"
    lines = [head, "|---|---|---|"]
    for key, spec in rows:
        default = _default(spec)
        if not default and key in required:
            default = "required"
        lines.append(f"| `{key}` | {default} | {_cell(spec.get('description', ''))} |")
    return "\n".join(lines) + "\n"


def render(text: str) -> str:
    """``text`` with every marked block replaced by its generated table."""
    return BLOCK.sub(lambda m: m.group(1) + table(m.group(2)) + m.group(4), text)


def undocumented() -> list[str]:
    """Keys of every schema without a ``description``."""
    names = ["config", "dumps", "models"] + sorted(
        p.name.split(".")[1] for p in SCHEMAS.glob("config.*.schema.yaml")
    )
    missing = []
    for name in names:
        schema = yaml.safe_load(schema_file(name).read_text(encoding="utf-8"))
        if name == "suites":
            schema = schema["additionalProperties"]
        missing += [f"{name}: {key}" for key, spec in leaves(schema) if not spec.get("description")]
    return missing


def main(argv: list[str]) -> int:
    text = README.read_text(encoding="utf-8")
    new = render(text)
    if "--check" in argv:
        if new != text:
            print("config/README.md: key tables differ from the schemas; run tests/config_reference.py")
            return 1
        return 0
    README.write_text(new, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
