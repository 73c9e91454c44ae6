"""factprobe.metrics: the measure families (:mod:`.families`) and the tables they write.

The registries of families and measures live in :mod:`factprobe.registries` and
:mod:`factprobe.measures` (standard library only, read while the Snakefile is parsed); their
names are re-exported here for plugins written against this package (``from factprobe.metrics import family, register_measure``).
"""

from factprobe.measures import (
    MEASURES,
    Measure,
    chance_measures,
    fact_headline,
    headline,
    measure_of,
    register_measure,
)
from factprobe.registries import FAMILIES, Family, family, register_family, unknown_families

__all__ = [
    "FAMILIES",
    "MEASURES",
    "Family",
    "Measure",
    "chance_measures",
    "fact_headline",
    "family",
    "headline",
    "measure_of",
    "register_family",
    "register_measure",
    "unknown_families",
]
