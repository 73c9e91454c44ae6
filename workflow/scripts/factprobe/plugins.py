"""Extension modules named by the environment: the one hook by which code outside the library
adds a distractor strategy, a measure or a model backend.

``FACTPROBE_PLUGINS`` lists modules, separated by commas: dotted names importable from
``sys.path`` or paths of ``.py`` files. Each is imported once, when a registry of
:mod:`factprobe.registries` is first read (not when a package is imported), and registers its
entries with their decorators. Snakemake's
jobs inherit the environment, so parse time and every rule script see the same entries.
Standard library only: the registries are read while the Snakefile is parsed.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from pathlib import Path

ENV = "FACTPROBE_PLUGINS"
_loaded: set[str] = set()


def _import(name: str) -> None:
    if name.endswith(".py"):
        path = Path(name).expanduser().resolve()
        if not path.is_file():
            raise ImportError(f"{ENV}: plugin file {path} does not exist; fix the variable")
        module_name = f"factprobe_plugin_{path.stem}"
        if module_name in sys.modules:
            return
        spec = importlib.util.spec_from_file_location(module_name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[module_name] = module
        spec.loader.exec_module(module)
    else:
        importlib.import_module(name)


def load_plugins(environ: dict[str, str] | None = None) -> list[str]:
    """Import every module of ``FACTPROBE_PLUGINS`` not imported yet; returns the names given.

    Called by every read of a registry (:class:`factprobe.registry.Registry`): a name is marked
    before its import, so a plugin that reads a registry while importing does not import itself."""
    names = [n.strip() for n in (environ or os.environ).get(ENV, "").split(",") if n.strip()]
    for name in names:
        if name not in _loaded:
            _loaded.add(name)
            _import(name)
    return names
