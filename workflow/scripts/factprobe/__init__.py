"""factprobe: factual-knowledge probing benchmarks from Wikidata dumps.

The library behind the Snakemake workflow; each stage lives in its own subpackage and is
importable and unit-tested without Snakemake. From Python (docs/api.md): :mod:`factprobe.api`,
whose entry points are also names of the package, loaded on first use (``import factprobe``
loads no science stack); ``measures`` is not among them, being the name of a module
(:mod:`factprobe.measures`, the measure registry): call ``factprobe.api.measures``.
"""

import importlib
from typing import Any

__version__ = "0.1.0"

#: Names of :mod:`factprobe.api` on the package, imported on first use (PEP 562); the table's
#: form is the one :mod:`factprobe.plumbing.code_inputs` follows, so a rule script reaches the API's
#: modules only when it asks for one of these names.
_LAZY = {
    "score": "api",
    "score_tables": "api",
    "summary": "api",
    "timeline": "api",
    "open_suite": "api",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(f"factprobe.{_LAZY[name]}"), name)
    raise AttributeError(f"module 'factprobe' has no attribute {name!r}")
