"""Whether a strategy's Ω must hold every subject of the suite's relations, given the retrieve
settings: the ``every_subject`` of the strategies registered in :mod:`factprobe.registries`.

Kept apart from the registry (which holds data only) so that code tracking sees it: the
retrieval rules list this module among their inputs (:mod:`factprobe.plumbing.code_inputs`), and an edit
reruns them. Standard library only: the Snakefile calls it while planning a suite's retrieval
inputs (:func:`factprobe.plumbing.run_inputs.prepare_inputs`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from factprobe.registries import strategy_setting


def subject_side(settings: Mapping[str, Any]) -> bool:
    """Co-occurrence on the subject side takes other subjects of the relation (PROBELM App. B)."""
    return "subject" in strategy_setting(settings, "cooccur", "sides")


def relation_pool(settings: Mapping[str, Any]) -> bool:
    """Pool ``source: relation`` pools every object of the relation in the dump, whoever its
    subject (not Fluent-mLAMA's pool, ``source: dataset``, strings of the dataset's subset,
    §3.3)."""
    return strategy_setting(settings, "pool", "source") == "relation"
