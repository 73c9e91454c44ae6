"""Source format ``fluent-mlama``: a suite's facts, prompts and forms from the released
Fluent-mLAMA sentences (registered in :data:`factprobe.registries.SOURCES`)."""

from __future__ import annotations

import logging
from pathlib import Path

import pandas as pd

from factprobe import contracts
from factprobe.hashing import stable_hash
from factprobe.settings import Suite, TemplateSet

from .fluent import import_fluent_mlama

log = logging.getLogger(__name__)


def fluent_mlama_suite(
    name: str,
    suite: Suite,
    sets: dict[str, TemplateSet],
    paths: tuple[str, str, list[str]],
    forms_path: str | Path,
    memory_mb: int | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Facts and prompts of a suite read from the Fluent-mLAMA release (``probes/fluent.py``), its
    entity forms written to ``forms_path``; ``n_facts`` keeps that many facts per relation, the
    first in ``stable_hash(seed, fact_id)`` order. The templates and the dump's tables are unused:
    the release holds the sentences and their forms."""
    src = suite.source
    facts, prompts, forms = import_fluent_mlama(
        src.path, list(suite.languages), list(suite.relations), list(src.verbalizations), suite.seed
    )
    if facts.empty:
        raise ValueError(f"suites.{name}: the release at {src.path} has no facts for {suite.relations}")
    if suite.n_facts is not None:
        order = facts["fact_id"].map(lambda f: stable_hash(suite.seed, f))
        keep = facts.assign(_o=order).sort_values("_o").groupby("property").head(suite.n_facts)
        facts = facts[facts["fact_id"].isin(set(keep["fact_id"]))].reset_index(drop=True)
        prompts = prompts[prompts["fact_id"].isin(set(facts["fact_id"]))].reset_index(drop=True)
    log.info("suite %s: %d facts, %d prompts from the Fluent-mLAMA release", name, len(facts), len(prompts))
    contracts.write("entity_forms", forms, forms_path)
    return facts, prompts
