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

Each file is parsed once per version (modification time and size, as Python's own bytecode
cache): what it names (:class:`Facts`, a function of that file alone) is kept in memory and in
``factprobe/__pycache__/code_inputs.json`` beside the library, so a Snakemake invocation parses
only the files edited since the last one (none, most often) and stats the rest. Standard
library only: it runs while the Snakefile is parsed.

A rule's code input is one stamp file per script (:func:`write_stamp`), not the modules
themselves: Snakemake's cost grows with the input files of each job, and a script reaches ~30.
The stamp lists the modules with the hashes of their code (:func:`code_digest`: the syntax tree
without docstrings, so comments and docstrings are no code) and is rewritten only when that list
changes, with the newest module's time stamp: its time moves when (and only when) the code of a
module the script reaches changes, so a touched module, or one whose prose alone was edited,
reruns nothing, and a missing stamp
(a fresh clone, ``.snakemake`` removed) plans what the modules' own times would.
"""

from __future__ import annotations

import ast
import atexit
import hashlib
import json
import os
import re
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

#: Modules left out of library inputs: their values reach jobs as params, which Snakemake
#: tracks itself (config/README.md, section "When jobs rerun"). Their imports are not followed
#: either: they read every registry while parsing, which no job's code does through them.
NOT_CODE_INPUTS = ("factprobe/settings.py", "factprobe/config_check.py")
#: The registries module: followed, never listed (like a package ``__init__``); its references
#: are counted per registry, in the modules that import its names (:func:`_registry_names`).
REGISTRIES = "factprobe.registries"
#: The scan's cache, beside the bytecode of the library it describes.
CACHE = Path("factprobe") / "__pycache__" / "code_inputs.json"
#: Bumped when :class:`Facts` changes shape: a cache of another version is ignored.
CACHE_FORMAT = 2
#: The stamps' folder, under the working directory (Snakemake's own state folder: per working
#: directory, kept between calls).
STAMPS = Path(".snakemake") / "factprobe" / "code"

_REFERENCE = re.compile(r"^(factprobe(?:\.\w+)+):\w+$")


@dataclass
class Facts:
    """What one module file names as code, read from that file alone (so cached per version)."""

    #: ``(dotted module, imported names or None for ``import module``)`` of every import, relative
    #: imports resolved, ``factprobe`` ones only.
    imports: list[tuple[str, list[str] | None]] = field(default_factory=list)
    #: ``"factprobe.module"`` of each ``"module:attribute"`` string it holds.
    references: list[str] = field(default_factory=list)
    #: A package's PEP 562 table ``_LAZY`` (``{"HFCausalLM": "hf"}``).
    lazy: dict[str, str] = field(default_factory=dict)
    #: ``alias -> name`` of its top-level ``from factprobe.registries import name as alias``.
    reexports: dict[str, str] = field(default_factory=dict)
    #: Of the registries module: ``public name -> registry`` (``KINDS``) and, per registry, the
    #: references of its module-level ``register_*(...)`` calls.
    kinds: dict[str, str] = field(default_factory=dict)
    entries: dict[str, list[str]] = field(default_factory=dict)
    #: :func:`code_digest` of the file.
    code: str = ""


def code_digest(tree: ast.Module) -> str:
    """SHA-256 of a module's code: its syntax tree (comments are not in it) with the docstrings of
    the module, its classes and functions left out, so an edit of prose alone changes no result
    and reruns no job. ``tree`` is changed in place."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            first = node.body[0] if node.body else None
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                if isinstance(first.value.value, str):
                    node.body = node.body[1:] or [ast.Pass()]
    return hashlib.sha256(ast.dump(tree).encode()).hexdigest()


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


def _assigned(tree: ast.Module, name: str) -> ast.expr | None:
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == name for t in node.targets
        ):
            return node.value
    return None


def _lazy_table(tree: ast.Module) -> dict[str, str]:
    """A package's ``_LAZY = {"Name": "submodule", ...}`` table (PEP 562 attributes)."""
    value = _assigned(tree, "_LAZY")
    try:
        table = ast.literal_eval(value) if value is not None else {}
    except ValueError:
        return {}
    return {str(k): str(v) for k, v in table.items()} if isinstance(table, dict) else {}


def kinds_table(tree: ast.Module) -> dict[str, str]:
    """``public name -> registry`` of the registries module's ``KINDS`` table."""
    value = _assigned(tree, "KINDS")
    table = ast.literal_eval(value) if value is not None else {}
    return {name: kind for kind, names in table.items() for name in names}


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


def _reference(node: ast.AST, constants: Mapping[str, str]) -> str | None:
    value = _string(node, constants)
    match = _REFERENCE.match(value) if value else None
    return match.group(1) if match else None


def _package(path: Path, root: Path) -> str:
    """The dotted package a module file sits in (relative imports resolve against it)."""
    return ".".join(path.relative_to(root).parent.parts) if path.is_relative_to(root) else ""


def read_facts(path: Path, root: Path) -> Facts:
    """:class:`Facts` of the module file ``path`` (``root``: the folder holding ``factprobe/``).
    The registries module's own strings count per registry (:attr:`Facts.entries`), not as its
    references."""
    tree = ast.parse(path.read_text(), str(path))
    constants = _constants(tree)
    package = _package(path, root)
    facts = Facts(lazy=_lazy_table(tree))
    own = path.is_relative_to(root) and path.relative_to(root) == Path(*REGISTRIES.split(".")).with_suffix(
        ".py"
    )
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            facts.imports.extend((a.name, None) for a in node.names if a.name.split(".")[0] == "factprobe")
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, base] if base else parts)
            if base.split(".")[0] == "factprobe":
                facts.imports.append((base, [a.name for a in node.names]))
        elif not own:
            found = _reference(node, constants)
            if found:
                facts.references.append(found)
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module == REGISTRIES and not node.level:
            facts.reexports.update({a.asname or a.name: a.name for a in node.names})
    if own:
        facts.kinds = kinds_table(tree)
        for node in tree.body:
            call = node.value if isinstance(node, ast.Expr) else None
            if isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id in facts.kinds:
                kind = facts.kinds[call.func.id]
                found = (_reference(inner, constants) for inner in ast.walk(call))
                facts.entries.setdefault(kind, []).extend(f for f in found if f)
    facts.code = code_digest(tree)  # last: it drops the docstrings from the tree
    return facts


class _Cache:
    """:class:`Facts` per file version, in memory and in :data:`CACHE` under a root."""

    def __init__(self) -> None:
        self.memory: dict[tuple[str, int, int], Facts] = {}
        self.loaded: set[Path] = set()
        self.dirty: set[Path] = set()

    def _file(self, root: Path) -> Path:
        return root / CACHE

    def _load(self, root: Path) -> None:
        self.loaded.add(root)
        try:
            stored = json.loads(self._file(root).read_text())
        except (OSError, ValueError):
            return
        if not isinstance(stored, dict) or stored.get("format") != CACHE_FORMAT:
            return
        for key, value in stored.get("files", {}).items():
            path, mtime, size = key.rsplit("|", 2)
            imports = [(name, names) for name, names in value.pop("imports")]
            self.memory.setdefault((path, int(mtime), int(size)), Facts(imports=imports, **value))

    def facts(self, path: Path, root: Path) -> Facts:
        if root not in self.loaded:
            self._load(root)
        stat = path.stat()
        key = (str(path), stat.st_mtime_ns, stat.st_size)
        if key not in self.memory:
            self.memory[key] = read_facts(path, root)
            if not self.dirty:
                # Written once, when the process ends: a Snakemake call asks for many rules' inputs.
                atexit.register(self.save_all)
            self.dirty.add(root)
        return self.memory[key]

    def forget(self, path: Path) -> None:
        """Drop every version of ``path`` (one read while it was being written)."""
        for key in [k for k in self.memory if k[0] == str(path)]:
            del self.memory[key]

    def save_all(self) -> None:
        """:meth:`save` every root read since the last save."""
        for root in list(self.dirty):
            self.save(root)

    def save(self, root: Path) -> None:
        """Write the entries of files under ``root`` (and the plugins read with it); a folder
        that cannot be written (a read-only install) keeps them in memory only."""
        if root not in self.dirty:
            return
        self.dirty.discard(root)
        files = {
            f"{path}|{mtime}|{size}": vars(facts)
            for (path, mtime, size), facts in self.memory.items()
            if _current(path, mtime, size)
        }
        target = self._file(root)
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            # Written whole, then renamed: concurrent Snakemake calls each leave a valid file.
            with tempfile.NamedTemporaryFile("w", dir=target.parent, delete=False, suffix=".tmp") as out:
                json.dump({"format": CACHE_FORMAT, "files": files}, out)
            os.chmod(out.name, 0o644)
            os.replace(out.name, target)
        except OSError:
            pass


def _current(path: str, mtime: int, size: int) -> bool:
    try:
        stat = os.stat(path)
    except OSError:
        return False
    return (stat.st_mtime_ns, stat.st_size) == (mtime, size)


_CACHE = _Cache()


class _Scan:
    """One library's modules, resolved against its files (module lookups memoized per scan)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.files: dict[str, Path | None] = {}
        self.registries = self.module_file(REGISTRIES)

    def module_file(self, module: str) -> Path | None:
        if module not in self.files:
            base = os.path.join(self.root, *module.split("."))
            found = next(
                (c for c in (base + ".py", os.path.join(base, "__init__.py")) if os.path.isfile(c)), None
            )
            self.files[module] = Path(found) if found else None
        return self.files[module]

    def facts(self, path: Path) -> Facts:
        return _CACHE.facts(path, self.root)

    def registry_names(self, names: list[str] | None) -> tuple[list[str], set[str]]:
        """The references and registries that importing ``names`` from the registries module
        brings (``None``: the module itself, every registry)."""
        if self.registries is None:
            return [], set()
        table = self.facts(self.registries)
        kinds = (
            set(table.entries) | set(table.kinds.values())
            if names is None
            else {table.kinds[n] for n in names if n in table.kinds}
        )
        return [ref for kind in sorted(kinds) for ref in table.entries.get(kind, [])], kinds

    def names(self, path: Path) -> tuple[list[tuple[str, bool]], list[str], set[str], set[str]]:
        """What ``path`` names: ``(dotted name, uses its attributes)`` of every import (a package
        reached only for a submodule, ``from factprobe.distractors.semantic import index``, does not
        use its attributes, and ``from factprobe.lm import HFCausalLM`` uses ``lm/hf.py`` through
        ``_LAZY``); the registry references it brings (its own, then those of the registries whose
        names it imports); the registries whose names it imports; and those it can fill (these,
        and registry names it imports as re-exported by a package)."""
        facts = self.facts(path)
        imports: list[tuple[str, bool]] = []
        references = list(facts.references)
        kinds: set[str] = set()
        fills: set[str] = set()
        for base, imported in facts.imports:
            if imported is None:
                imports.append((base, True))
                if base == REGISTRIES:
                    refs, found = self.registry_names(None)
                    references += refs
                    kinds |= found
                continue
            submodules = [n for n in imported if self.module_file(f"{base}.{n}") is not None]
            attributes = [n for n in imported if n not in submodules]
            imports.append((base, bool(attributes)))
            imports.extend((f"{base}.{n}", True) for n in submodules)
            init = self.module_file(base)
            if base == REGISTRIES or f"{base}.{imported[0]}" == REGISTRIES:
                refs, found = self.registry_names(attributes if base == REGISTRIES else None)
                references += refs
                kinds |= found
            elif attributes and init is not None:
                renamed = self.facts(init).reexports
                fills |= self.registry_names([renamed[a] for a in attributes if a in renamed])[1]
            if attributes and init is not None and init.name == "__init__.py":
                lazy = self.facts(init).lazy
                imports.extend((f"{base}.{lazy[n]}", True) for n in attributes if n in lazy)
        return imports, references, kinds, fills | kinds

    def reach(self, starts: Iterable[Path], plugin: bool = False) -> tuple[dict[Path, bool], set[str]]:
        """Every ``factprobe`` module file reached from ``starts``, with whether its attributes
        are used (such a module is followed whole, a package reached for a submodule only through
        its import statements), and the registries whose names they import. ``plugin``: the
        reach of a plugin, its own references only (not the built-in entries of the registries
        its modules import from), with the registries its start files fill."""
        used: dict[Path, bool] = {}
        kinds: set[str] = set()
        starts = [Path(start) for start in starts]
        todo = [(start, True) for start in starts]
        while todo:
            path, whole = todo.pop()
            if path.is_relative_to(self.root) and str(path.relative_to(self.root)) in NOT_CODE_INPUTS:
                continue
            imports, references, read, fills = self.names(path)
            if plugin:
                kinds |= fills if path in starts else set()
                references = self.facts(path).references
            else:
                kinds |= read if whole else set()
            for name, uses in imports + ([(name, True) for name in references] if whole else []):
                found = self.module_file(name) if name.split(".")[0] == "factprobe" else None
                if found is not None and (found not in used or (uses and not used[found])):
                    used[found] = used.get(found, False) or uses
                    todo.append((found, uses))
        return used, kinds


def plugin_files(environ: Mapping[str, str] | None = None, root: Path | None = None) -> list[Path]:
    """The plugin modules of ``FACTPROBE_PLUGINS`` that are files (``.py`` paths, or dotted names
    found under ``root`` or on ``sys.path``)."""
    from factprobe.plugins import ENV

    return list(_plugin_files((environ if environ is not None else os.environ).get(ENV, ""), root))


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
        found = _Scan(root).module_file(name) if root is not None else None
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
    scan = _Scan(Path(root))
    seen, kinds = scan.reach([Path(script)])
    extra: list[str] = []
    for plugin in plugins:
        plugin = Path(plugin)
        mine, filled = scan.reach([plugin], plugin=True)
        if kinds & filled:
            seen.update(mine)
            extra.append(str(plugin))
    files = (str(p.relative_to(scan.root)) for p in seen if p.name != "__init__.py" and p != scan.registries)
    return sorted(f for f in files if f not in NOT_CODE_INPUTS) + extra


def stamp_file(folder: str | Path, script: str, modules: Iterable[str]) -> Path:
    """The stamp of ``script`` (a rule script's file name) with ``modules`` (:func:`library_modules`)
    under the working directory ``folder``: one per script and set of plugins it reaches (absolute
    paths among ``modules``), so runs with and without a plugin keep apart stamps instead of
    rewriting one back and forth."""
    plugins = sorted(_as_seen_from(folder, m) for m in modules if os.path.isabs(m))
    tag = "+" + hashlib.sha256("\n".join(plugins).encode()).hexdigest()[:12] if plugins else ""
    return Path(folder) / STAMPS / f"{Path(script).stem}{tag}.modules"


def _as_seen_from(folder: str | Path, path: str) -> str:
    """A plugin file's path relative to the working directory when it lies inside it: a copied or
    moved working directory keeps its stamps' names, so Snakemake sees the same input set."""
    rel = os.path.relpath(path, folder)
    return path if rel.startswith("..") else rel


def _digest(path: Path, root: Path) -> tuple[str, int]:
    """:func:`code_digest` of a file and its modification time (ns), read together: the file is
    stat-ed before and after its facts are read (once per version, :class:`_Cache`), so an edit
    during the read is read again, never stamped with an earlier time."""
    while True:
        before = path.stat()
        facts = _CACHE.facts(path, root)
        after = path.stat()
        if (before.st_mtime_ns, before.st_size) == (after.st_mtime_ns, after.st_size):
            return facts.code, after.st_mtime_ns
        _CACHE.forget(path)


def write_stamp(stamp: Path, modules: Iterable[str], root: str | Path) -> Path:
    """Bring ``stamp`` up to date with ``modules`` (paths relative to ``root``, or absolute): one
    line ``<sha256>  <module>`` each. Left untouched when its content is current (a re-parse,
    concurrent calls, a touched but unchanged module), otherwise written whole and renamed into
    place with the newest module's modification time: that of an edited module (after the
    outputs, so its rules rerun), or an old one when an edit is undone with its time stamp, as
    the modules themselves as inputs would."""
    lines, newest = [], 0
    for module in modules:
        digest, mtime = _digest(Path(root) / module, Path(root))
        lines.append(f"{digest}  {module}\n")
        newest = max(newest, mtime)
    text = "".join(lines)
    try:
        if stamp.read_text() == text:
            return stamp
    except OSError:
        pass
    stamp.parent.mkdir(parents=True, exist_ok=True)
    # Written whole with its time, then renamed: concurrent Snakemake calls (cluster jobs
    # re-parse the Snakefile) each see a complete stamp with the right time.
    with tempfile.NamedTemporaryFile("w", dir=stamp.parent, delete=False, suffix=".tmp") as out:
        out.write(text)
    try:
        os.chmod(out.name, 0o644)
        os.utime(out.name, ns=(newest, newest))
        os.replace(out.name, stamp)
    except OSError:
        os.unlink(out.name)
        raise
    return stamp
