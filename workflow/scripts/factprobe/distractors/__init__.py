"""factprobe.distractors: distractor retrieval (:mod:`.retrieve`) and its strategies.

The registries of strategies and of the tables they read live in :mod:`factprobe.registries` (standard library only, read
while the Snakefile is parsed); its names are re-exported here for plugins written against this
package (``from factprobe.distractors import strategy``).
"""

from factprobe.registries import (
    STRATEGIES,
    Strategy,
    canonical,
    choices,
    needs,
    needs_every_subject,
    strategy,
    strategy_settings,
    table,
    tables_of,
    unknown,
)
from factprobe.registries import register_strategy as register

__all__ = [
    "STRATEGIES",
    "Strategy",
    "canonical",
    "choices",
    "needs",
    "needs_every_subject",
    "register",
    "strategy",
    "strategy_settings",
    "table",
    "tables_of",
    "unknown",
]
