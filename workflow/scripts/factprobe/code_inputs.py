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
  rules whose code reaches a registry it fills (``from factprobe.registries import strategy``, or
  the same name re-exported by ``factprobe.distractors``, makes it an input of the retrieval
  rules), with its own reach: its ``factprobe`` imports and references, followed like a script's,
  but not the built-in entries of the registries it imports from (the rules it joins reach those
  through their own scripts when they read that registry).

Each module file is parsed once per version (path, modification time, size), so a Snakemake
invocation that asks for the inputs of many jobs parses the library once. Standard library only:
it runs while the Snakefile is parsed.
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
    #: The registries it can fill: those of ``kinds``, and those whose names it imports as
    #: re-exported by a package (``from factprobe.metrics import family``).
    fills: set[str]
    #: The references written in the module itself (not brought by a registry import).
    own_references: list[str]


def _module_file(root: Path, module: str) -> Path | None:
    base = root / module.replace(".", "/")
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _version(path: Path) -> tuple[int, int]:
    """What identifies one version of a file: its modification time and size (the parse caches'
    key, so an edited file is read again)."""
    stat = path.stat()
    return stat.st_mtime_ns, stat.st_size


@lru_cache(maxsize=1024)
def _tree_of(path: Path, version: tuple[int, int]) -> ast.Module:
    return ast.parse(path.read_text(), str(path))


def _tree(path: Path) -> ast.Module:
    """The syntax tree of ``path``, parsed once per version."""
    return _tree_of(path, _version(path))


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


def _reexports(tree: ast.Module) -> dict[str, str]:
    """``alias -> name`` of a module's top-level ``from factprobe.registries import name as alias``
    (a package that re-exports registry names: ``from factprobe.distractors import strategy``)."""
    found = {}
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module == REGISTRIES and not node.level:
            found.update({a.asname or a.name: a.name for a in node.names})
    return found


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


def kinds_table(tree: ast.Module) -> dict[str, str]:
    """``public name -> registry`` of the registries module's ``KINDS`` table."""
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "KINDS" for t in node.targets
        ):
            return {name: kind for kind, names in ast.literal_eval(node.value).items() for name in names}
    return {}


@lru_cache(maxsize=8)
def _registry_table_of(path: Path, version: tuple[int, int]) -> tuple[dict[str, str], dict[str, list[str]]]:
    tree = _tree_of(path, version)
    kinds = kinds_table(tree)
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


def _registry_table(path: Path) -> tuple[dict[str, str], dict[str, list[str]]]:
    """``(name -> registry, registry -> references)`` of the registries module: its ``KINDS``
    table, and the references of its module-level ``register_*(...)`` calls, by the registry
    the called function fills."""
    return _registry_table_of(path, _version(path))


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
    init = _module_file(root, base)
    if base == REGISTRIES or f"{base}.{node.names[0].name}" == REGISTRIES:
        references, kinds = _registry_names(root, attributes if base == REGISTRIES else None)
        names.references.extend(references)
        names.kinds.update(kinds)
    elif attributes and init is not None:
        # Registry names re-exported by a package: what the plugin fills, not what it reads.
        renamed = _reexports(_tree(init))
        names.fills.update(_registry_names(root, [renamed[a] for a in attributes if a in renamed])[1])
    if attributes and init is not None and init.name == "__init__.py":
        lazy = _lazy_table(_tree(init))
        names.imports.extend((f"{base}.{lazy[name]}", True) for name in attributes if name in lazy)


@lru_cache(maxsize=1024)
def _references_of(
    path: Path, version: tuple[int, int], root: Path, registries: tuple[int, int] | None
) -> Names:
    # ``registries``: the registries module's version, on which the registry references depend.
    tree = _tree_of(path, version)
    constants = _constants(tree)
    package = _package(path, root)
    names = Names([], [], set(), set(), [])
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
                names.own_references.append(match.group(1))
    names.fills.update(names.kinds)
    return names


def _references(path: Path, root: Path) -> Names:
    """What a module names as code: ``(dotted name, uses its attributes)`` of every import (a
    package reached only for a submodule, ``from factprobe.distractors import sem_index``, does not
    use its attributes), the registry references it holds or imports (see the module docstring),
    and the registries it imports from. The registries module's own references count in its
    importers only. Parsed once per version of the file (and of the registries module)."""
    registries = _module_file(root, REGISTRIES)
    return _references_of(path, _version(path), root, _version(registries) if registries else None)


def _reach(starts: Iterable[Path], root: Path, plugin: bool = False) -> tuple[dict[Path, bool], set[str]]:
    """Every ``factprobe`` module file reached from ``starts``, with whether its attributes are
    used (such a module is followed whole, a package reached for a submodule only through its
    import statements), and the registries whose names they import. ``plugin``: the reach of a
    plugin, its own references only (not the built-in entries of the registries its modules
    import from), with the registries its start files fill (import names of, directly or through
    a package that re-exports them)."""
    used: dict[Path, bool] = {}
    kinds: set[str] = set()
    starts = [Path(start) for start in starts]
    todo = [(start, True) for start in starts]
    while todo:
        path, whole = todo.pop()
        if path.is_relative_to(root) and str(path.relative_to(root)) in NOT_CODE_INPUTS:
            continue
        found_names = _references(path, root)
        if plugin:
            kinds |= found_names.fills if path in starts else set()
            references = found_names.own_references
        else:
            kinds |= found_names.kinds if whole else set()
            references = found_names.references
        names = found_names.imports + ([(name, True) for name in references] if whole else [])
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
    from factprobe.plugins import ENV

    value = (environ if environ is not None else os.environ).get(ENV, "")
    return list(_plugin_files(value, root))


@lru_cache(maxsize=16)
def _plugin_files(value: str, root: Path | None) -> tuple[Path, ...]:
    import importlib.util

    files = []
    for name in value.split(","):
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
    return tuple(files)


def library_modules(script: str | Path, root: str | Path, plugins: Iterable[str | Path] = ()) -> list[str]:
    """``factprobe`` modules a rule script's code reaches (imports, registry references and lazy
    attributes, also inside functions), as paths relative to ``root`` (the folder that holds
    ``factprobe/``), sorted; then each of ``plugins`` (paths) that fills a registry the script
    reaches, with the library modules of its own reach. Package ``__init__`` files and
    :data:`NOT_CODE_INPUTS` are left out."""
    root = Path(root)
    seen, kinds = _reach([Path(script)], root)
    extra: list[str] = []
    for plugin in plugins:
        plugin = Path(plugin)
        mine, filled = _reach([plugin], root, plugin=True)
        if kinds & filled:
            seen.update(mine)
            extra.append(str(plugin))
    registries = _module_file(root, REGISTRIES)
    files = (str(p.relative_to(root)) for p in seen if p.name != "__init__.py" and p != registries)
    return sorted(f for f in files if f not in NOT_CODE_INPUTS) + extra
