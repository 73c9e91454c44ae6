"""docs/contracts.md, "Library layout", names every module of the library and nothing else: one
list item per folder (`` `plumbing/` ``, `` `distractors/semantic/` ``, `` `./` `` for the top
level), its modules as backticked names."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LIBRARY = ROOT / "workflow" / "scripts" / "factprobe"
DOC = ROOT / "docs" / "contracts.md"
HEADING = "## Library layout (`workflow/scripts/factprobe/`)"


def layout_items(text: str) -> list[str]:
    """The section's list items, each joined from its indented continuation lines."""
    section = text.split(HEADING, 1)[1].split("\n## ", 1)[0]
    items: list[str] = []
    for line in section.splitlines():
        if line.startswith("- "):
            items.append(line[2:])
        elif line.startswith("  ") and items:
            items[-1] += " " + line.strip()
    return items


def documented(text: str) -> dict[str, list[str]]:
    """``folder -> modules`` named by the section (``""`` for the package's top level)."""
    folders: dict[str, list[str]] = {}
    for item in layout_items(text):
        m = re.match(r"`([a-z_/.]+)/` (.*)$", item)
        assert m, f"{DOC.name}, Library layout: an item must start with its folder in backticks: {item!r}"
        folder = "" if m.group(1) == "." else m.group(1)
        assert folder not in folders, f"{DOC.name}, Library layout: `{m.group(1)}/` listed twice"
        folders[folder] = re.findall(r"`([A-Za-z_]\w*)`", m.group(2))
    return folders


def on_disk(library: Path) -> dict[str, set[str]]:
    """``folder -> modules`` of the library's files (package ``__init__`` files left out)."""
    folders: dict[str, set[str]] = {}
    for path in library.rglob("*.py"):
        if "__pycache__" in path.parts:
            continue
        folder = path.parent.relative_to(library).as_posix()
        modules = folders.setdefault("" if folder == "." else folder, set())
        if path.name != "__init__.py":
            modules.add(path.stem)
    return folders


def mismatches(text: str, library: Path) -> list[str]:
    """What the section and the files disagree on, one line each (empty: they agree)."""
    doc, disk = documented(text), on_disk(library)
    wrong = []
    for folder in sorted(set(doc) | set(disk)):
        shown = f"`{folder or '.'}/`"
        listed, present = doc.get(folder), disk.get(folder, set())
        if listed is None:
            wrong.append(f"{shown} is not listed (modules: {sorted(present)})")
            continue
        if folder not in disk:
            wrong.append(f"{shown} is listed but is no folder of the library")
        wrong += [f"{shown} lists `{m}` twice" for m in sorted({m for m in listed if listed.count(m) > 1})]
        wrong += [f"{shown} lacks `{m}`" for m in sorted(present - set(listed))]
        wrong += [f"{shown} names `{m}`, which is not a module there" for m in sorted(set(listed) - present)]
    return wrong


def test_layout_names_every_module_and_only_modules():
    wrong = mismatches(DOC.read_text(), LIBRARY)
    assert wrong == [], "docs/contracts.md, Library layout, against the files:\n" + "\n".join(wrong)


SMALL = f"""{HEADING}

Intro with `backticks` before the list.

- `./` shared: `settings`, `io`
- `plumbing/` how the workflow runs: `rulelog`,
  `osfault`
- `distractors/semantic/` the Sem index: `index`

## Next section

- `elsewhere/` not read: `nothing`
"""


def small_library(tmp_path: Path) -> Path:
    files = ["__init__.py", "settings.py", "io.py", "plumbing/__init__.py", "plumbing/rulelog.py"]
    files += ["plumbing/osfault.py", "distractors/__init__.py", "distractors/semantic/__init__.py"]
    files += ["distractors/semantic/index.py"]
    for name in files:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("")
    return tmp_path


def test_a_small_layout_that_agrees_reads_as_agreeing(tmp_path):
    library = small_library(tmp_path)
    assert documented(SMALL) == {
        "": ["settings", "io"],
        "plumbing": ["rulelog", "osfault"],
        "distractors/semantic": ["index"],
    }
    # distractors/ holds only a package: listed nowhere, it is reported
    assert mismatches(SMALL, library) == ["`distractors/` is not listed (modules: [])"]


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        # a module file the section does not name
        (lambda lib: (lib / "plumbing" / "slurmfit.py").write_text(""), "`plumbing/` lacks `slurmfit`"),
        # a name the section gives that is no module (moved away)
        (
            lambda lib: (lib / "plumbing" / "osfault.py").rename(lib / "osfault.py"),
            "`plumbing/` names `osfault`, which is not a module there",
        ),
        # a new subpackage
        (lambda lib: (lib / "lm").mkdir() or (lib / "lm" / "hf.py").write_text(""), "`lm/` is not listed"),
    ],
)
def test_each_kind_of_disagreement_is_named(tmp_path, change, expected):
    library = small_library(tmp_path)
    (library / "distractors" / "__init__.py").unlink()
    (library / "distractors" / "pool.py").write_text("")
    text = SMALL.replace(
        "- `distractors/semantic/`", "- `distractors/` retrieval: `pool`\n- `distractors/semantic/`"
    )
    assert mismatches(text, library) == []
    change(library)
    assert any(line.startswith(expected) for line in mismatches(text, library)), mismatches(text, library)
