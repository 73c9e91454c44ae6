"""No library module imports a later stage: imports walked with ``ast`` against the stage order
of docs/contracts.md, "Stages", with no exception (the registries live in the shared
``factprobe.registries``, so config validation imports no stage package)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LIBRARY = ROOT / "workflow" / "scripts" / "factprobe"
DOC = ROOT / "docs" / "contracts.md"


def stage_order(text: str) -> dict[str, int]:
    """``top-level name -> stage index`` from the numbered list under ``## Stages``."""
    section = text.split("## Stages", 1)[1].split("\n## ", 1)[0]
    order: dict[str, int] = {}
    for line in section.splitlines():
        m = re.match(r"(\d+)\. (.+)$", line.strip())
        if not m:
            continue
        body = m.group(2).split(":", 1)[-1]
        for name in re.findall(r"[a-z_]+", body.replace("`", " ")):
            order[name] = int(m.group(1))
    return order


def top_level(module: str) -> str | None:
    """``factprobe.probes.build -> probes``; None outside factprobe or for the package itself."""
    parts = module.split(".")
    return parts[1] if parts[0] == "factprobe" and len(parts) > 1 else None


def imports_of(path: Path) -> list[tuple[int, str]]:
    """``(line, module)`` of every factprobe import in a file, function-level ones included.

    Relative imports are resolved against the file's own package.
    """
    package = ["factprobe", *path.relative_to(LIBRARY).parent.parts]
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package[: len(package) - node.level + 1] + ([base] if base else []))
            found.append((node.lineno, base))
            # ``from factprobe import probes`` names the stage in the alias, not the module.
            if base == "factprobe":
                found += [(node.lineno, f"factprobe.{a.name}") for a in node.names]
    return [(line, mod) for line, mod in found if mod.startswith("factprobe")]


def library_modules() -> list[Path]:
    return sorted(p for p in LIBRARY.rglob("*.py") if "__pycache__" not in p.parts)


def own_stage(path: Path) -> str:
    rel = path.relative_to(LIBRARY)
    return rel.parts[0] if len(rel.parts) > 1 else rel.stem


def test_every_top_level_module_has_a_stage():
    order = stage_order(DOC.read_text())
    names = {own_stage(p) for p in library_modules()} - {"__init__"}
    assert names - set(order) == set(), "add these to docs/contracts.md, Stages"
    assert set(order) - names == set(), "docs/contracts.md, Stages, lists modules that do not exist"


def test_no_module_imports_a_later_stage():
    order = stage_order(DOC.read_text())
    wrong = []
    for path in library_modules():
        mine = own_stage(path)
        if mine == "__init__":
            continue
        for line, module in imports_of(path):
            theirs = top_level(module)
            if theirs is None or theirs not in order:
                continue
            if order[theirs] > order[mine]:
                wrong.append(
                    f"{path.relative_to(ROOT)}:{line}: {mine} (stage {order[mine]}) imports {module}"
                )
    assert wrong == []


@pytest.mark.parametrize(
    "source,stage,expect",
    [
        ("from factprobe.distractors.temporal import x\n", "probes", ["factprobe.distractors.temporal"]),
        ("def f():\n    from factprobe import metrics\n", "probes", ["factprobe", "factprobe.metrics"]),
        ("from ..scoring import suite\n", "probes", ["factprobe.scoring"]),
    ],
)
def test_the_walk_sees_every_import_form(tmp_path, monkeypatch, source, stage, expect):
    """The walk catches top-level, function-level and relative imports (the test can fail)."""
    lib = tmp_path / "factprobe"
    (lib / stage).mkdir(parents=True)
    path = lib / stage / "mod.py"
    path.write_text(source)
    monkeypatch.setitem(globals(), "LIBRARY", lib)
    assert [m for _, m in imports_of(path)] == expect
