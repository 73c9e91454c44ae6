"""config/README.md's key tables are the schemas' descriptions and defaults, so the two cannot
drift (tests/config_reference.py generates the tables)."""

from __future__ import annotations

import re

import yaml
from config_reference import BLOCK, README, SCHEMAS, leaves, render, schema_file, undocumented


def test_every_schema_key_has_a_description():
    assert undocumented() == [], "add a description: to these keys in workflow/schemas/"


def test_key_tables_equal_the_schemas():
    text = README.read_text(encoding="utf-8")
    assert render(text) == text, (
        "config/README.md's key tables differ from the schemas: run "
        "PYTHONPATH=workflow/scripts python tests/config_reference.py"
    )


def test_every_schema_has_its_table():
    names = {m.group(2) for m in BLOCK.finditer(README.read_text(encoding="utf-8"))}
    sections = {p.name.split(".")[1] for p in SCHEMAS.glob("config.*.schema.yaml")}
    assert sections | {"config", "dumps", "models"} == names


def test_nested_and_named_keys_are_listed():
    schema = yaml.safe_load(schema_file("templates").read_text(encoding="utf-8"))
    keys = [key for key, _ in leaves(schema)]
    assert "sets.<name>.format" in keys
    suites = yaml.safe_load(schema_file("suites").read_text(encoding="utf-8"))["additionalProperties"]
    assert "few_shot.settings" in [key for key, _ in leaves(suites)]


def test_a_changed_description_shows_as_a_difference():
    text = README.read_text(encoding="utf-8")
    edited = re.sub(r"(\| `dump` \| required \| )", r"\1edited ", text, count=1)
    assert edited != text
    assert render(edited) == text
