"""factprobe: factual-knowledge probing benchmarks from Wikidata dumps.

The library behind the Snakemake workflow; each stage lives in its own subpackage and is
importable and unit-tested without Snakemake. From Python (docs/api.md): :mod:`factprobe.api`,
whose entry points are also names of the package, loaded on first use (``import factprobe``
loads no science stack); ``measures`` is not among them, being the name of a module
(:mod:`factprobe.measures`, the measure registry): call ``factprobe.api.measures``.
"""

from typing import Any

__version__ = "0.1.0"

#: Names of :mod:`factprobe.api` re-exported here on first use (PEP 562).
API = ("score", "score_tables", "summary", "timeline", "open_suite")


def __getattr__(name: str) -> Any:
    if name in API:
        from factprobe import api

        return getattr(api, name)
    raise AttributeError(f"module 'factprobe' has no attribute {name!r}")
