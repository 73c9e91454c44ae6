"""The library modules a rule's code runs: the inputs that make a code edit rerun its jobs.

Snakemake's code trigger sees a rule's ``script:`` file only, not what the script imports. Each
rule therefore lists the ``factprobe`` modules its script reaches (:func:`library_modules`) as
inputs, so editing one plans exactly the jobs that run it and what is downstream of them
(config/README.md, "When jobs rerun"). Besides ``import`` statements the scan follows the three
ways the library names code without importing it:

* registry entries given as ``"factprobe.module:attribute"`` strings (also as an f-string over a
  module-level constant, ``f"{_STRATEGY}:random_rows"``), imported when first used; those of
  :mod:`factprobe.registries` count per registry, for the modules that import one of its names
  (``from factprobe.registries import needs`` runs the strategies' code, not the measures');
* a package's PEP 562 table ``_LAZY`` (``{"HFCausalLM": "hf"}``): ``from factprobe.lm import
  HFCausalLM`` runs ``factprobe/lm/hf.py``;
* plugin modules (``FACTPROBE_PLUGINS``, :mod:`factprobe.plugins`): a plugin is an input of the
  rules whose code reaches a registry it imports from (``from factprobe.registries import
  strategy`` makes it an input of the retrieval rules), and its own ``factprobe`` imports are
  followed like a script's.

Standard library only: it runs while the Snakefile is parsed.
"""

from __future__ import annotations

import ast
import os
import re
from collections.abc import Iterable, Mapping
from functools import lru_cache
from pathlib import Path
from typing import NamedTuple

#: Modules left out of library inputs: their values reach jobs as params, which Snakemake
#: tracks itself (config/README.md, section "When jobs rerun"). Their imports are not followed
#: either: they read every registry while parsing, which no job's code does through them.
NOT_CODE_INPUTS = ("factprobe/settings.py", "factprobe/config_check.py")
#: The registries module: followed, never listed (like a package ``__init__``); its references
#: are counted per registry, in the modules that import its names (:func:`_registry_table`).
REGISTRIES = "factprobe.registries"

_REFERENCE = re.compile(r"^(factprobe(?:\.\w+)+):\w+$")


class Names(NamedTuple):
    """What one module names as code (:func:`_references`)."""

    #: ``(dotted name, uses its attributes)`` of every import.
    imports: list[tuple[str, bool]]
    #: Registry references (``"factprobe.module"`` of a ``"module:attribute"`` string).
    references: list[str]
    #: The registries of :mod:`factprobe.registries` whose names it imports.
    kinds: set[str]


def _module_file(root: Path, module: str) -> Path | None:
    base = root / module.replace(".", "/")
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _constants(tree: ast.Module) -> dict[str, str]:
    """Module-level ``NAME = "string"`` assignments."""
    found = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant):
            if isinstance(node.value.value, str):
                for target in node.targets:
                    if isinstance(target, ast.Name):
                        found[target.id] = node.value.value
    return found


def _lazy_table(tree: ast.Module) -> dict[str, str]:
    """A package's ``_LAZY = {"Name": "submodule", ...}`` table (PEP 562 attributes)."""
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "_LAZY" for t in node.targets
        ):
            try:
                table = ast.literal_eval(node.value)
            except ValueError:
                return {}
            return {str(k): str(v) for k, v in table.items()} if isinstance(table, dict) else {}
    return {}


def _string(node: ast.AST, constants: Mapping[str, str]) -> str | None:
    """The value of a string constant, or of an f-string over module-level string constants."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        parts = []
        for value in node.values:
            if isinstance(value, ast.Constant):
                parts.append(str(value.value))
            elif isinstance(value, ast.FormattedValue) and isinstance(value.value, ast.Name):
                if value.value.id not in constants:
                    return None
                parts.append(constants[value.value.id])
            else:
                return None
        return "".join(parts)
    return None


@lru_cache(maxsize=8)
def _registry_table(path: Path) -> tuple[dict[str, str], dict[str, list[str]]]:
    """``(name -> registry, registry -> references)`` of the registries module: its ``KINDS``
    table, and the references of its module-level ``register_*(...)`` calls, by the registry
    the called function fills."""
    tree = ast.parse(path.read_text(), str(path))
    kinds: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "KINDS" for t in node.targets
        ):
            kinds = {name: kind for kind, names in ast.literal_eval(node.value).items() for name in names}
    constants = _constants(tree)
    references: dict[str, list[str]] = {}
    for node in tree.body:
        call = node.value if isinstance(node, ast.Expr) else None
        if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Name) or call.func.id not in kinds:
            continue
        for inner in ast.walk(call):
            value = _string(inner, constants)
            match = _REFERENCE.match(value) if value else None
            if match:
                references.setdefault(kinds[call.func.id], []).append(match.group(1))
    return kinds, references


def _package(path: Path, root: Path) -> str:
    """The dotted package a module file sits in (relative imports resolve against it)."""
    return ".".join(path.relative_to(root).parent.parts) if path.is_relative_to(root) else ""


def _registry_names(root: Path, names: list[str] | None) -> tuple[list[str], set[str]]:
    """The references and registries that importing ``names`` from the registries module brings
    (``None``: the module itself, every registry)."""
    path = _module_file(root, REGISTRIES)
    if path is None:
        return [], set()
    table, references = _registry_table(path)
    kinds = (
        set(references) | set(table.values()) if names is None else {table[n] for n in names if n in table}
    )
    return [ref for kind in sorted(kinds) for ref in references.get(kind, [])], kinds


def _import_from(node: ast.ImportFrom, package: str, root: Path, names: Names) -> None:
    """Add what one ``from ... import ...`` names to ``names``."""
    base = node.module or ""
    if node.level:
        parts = package.split(".")[: len(package.split(".")) - node.level + 1]
        base = ".".join([*parts, base] if base else parts)
    if not base.startswith("factprobe"):
        return
    submodules = [a.name for a in node.names if _module_file(root, f"{base}.{a.name}") is not None]
    attributes = [a.name for a in node.names if a.name not in submodules]
    names.imports.append((base, bool(attributes)))
    names.imports.extend((f"{base}.{name}", True) for name in submodules)
    if base == REGISTRIES or f"{base}.{node.names[0].name}" == REGISTRIES:
        references, kinds = _registry_names(root, attributes if base == REGISTRIES else None)
        names.references.extend(references)
        names.kinds.update(kinds)
    init = _module_file(root, base)
    if attributes and init is not None and init.name == "__init__.py":
        lazy = _lazy_table(ast.parse(init.read_text(), str(init)))
        names.imports.extend((f"{base}.{lazy[name]}", True) for name in attributes if name in lazy)


def _references(path: Path, root: Path) -> Names:
    """What a module names as code: ``(dotted name, uses its attributes)`` of every import (a
    package reached only for a submodule, ``from factprobe.distractors import sem_index``, does not
    use its attributes), the registry references it holds or imports (see the module docstring),
    and the registries it imports from. The registries module's own references count in its
    importers only."""
    tree = ast.parse(path.read_text(), str(path))
    constants = _constants(tree)
    package = _package(path, root)
    names = Names([], [], set())
    own = path == _module_file(root, REGISTRIES)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.imports.extend((alias.name, True) for alias in node.names)
            if any(alias.name == REGISTRIES for alias in node.names):
                references, kinds = _registry_names(root, None)
                names.references.extend(references)
                names.kinds.update(kinds)
        elif isinstance(node, ast.ImportFrom):
            _import_from(node, package, root, names)
        elif not own:
            value = _string(node, constants)
            match = _REFERENCE.match(value) if value else None
            if match:
                names.references.append(match.group(1))
    return names


def _reach(starts: Iterable[Path], root: Path) -> tuple[dict[Path, bool], set[str]]:
    """Every ``factprobe`` module file reached from ``starts``, with whether its attributes are
    used (such a module is followed whole, a package reached for a submodule only through its
    import statements), and the registries whose names they import."""
    used: dict[Path, bool] = {}
    kinds: set[str] = set()
    todo = [(Path(start), True) for start in starts]
    while todo:
        path, whole = todo.pop()
        if path.is_relative_to(root) and str(path.relative_to(root)) in NOT_CODE_INPUTS:
            continue
        found_names = _references(path, root)
        if whole:
            kinds |= found_names.kinds
        names = found_names.imports + ([(name, True) for name in found_names.references] if whole else [])
        for name, uses in names:
            if name.split(".")[0] != "factprobe":
                continue
            found = _module_file(root, name)
            if found is not None and (found not in used or (uses and not used[found])):
                used[found] = used.get(found, False) or uses
                todo.append((found, uses))
    return used, kinds


def plugin_files(environ: Mapping[str, str] | None = None, root: Path | None = None) -> list[Path]:
    """The plugin modules of ``FACTPROBE_PLUGINS`` that are files (``.py`` paths, or dotted names
    found under ``root`` or on ``sys.path``)."""
    import importlib.util

    from factprobe.plugins import ENV

    files = []
    for name in (environ if environ is not None else os.environ).get(ENV, "").split(","):
        name = name.strip()
        if not name:
            continue
        if name.endswith(".py"):
            files.append(Path(name).expanduser().resolve())
            continue
        found = _module_file(root, name) if root is not None else None
        if found is None:
            spec = importlib.util.find_spec(name)
            found = Path(spec.origin) if spec is not None and spec.origin else None
        if found is not None:
            files.append(found)
    return files


def library_modules(script: str | Path, root: str | Path, plugins: Iterable[str | Path] = ()) -> list[str]:
    """``factprobe`` modules a rule script's code reaches (imports, registry references and lazy
    attributes, also inside functions), as paths relative to ``root`` (the folder that holds
    ``factprobe/``), sorted; then each of ``plugins`` (paths) that imports from a registry package
    the script reaches, with the library modules it reaches in turn. Package ``__init__`` files and
    :data:`NOT_CODE_INPUTS` are left out."""
    root = Path(root)
    seen, kinds = _reach([Path(script)], root)
    extra: list[str] = []
    for plugin in plugins:
        plugin = Path(plugin)
        mine, filled = _reach([plugin], root)
        if kinds & filled:
            seen.update(mine)
            extra.append(str(plugin))
    registries = _module_file(root, REGISTRIES)
    files = (str(p.relative_to(root)) for p in seen if p.name != "__init__.py" and p != registries)
    return sorted(f for f in files if f not in NOT_CODE_INPUTS) + extra
