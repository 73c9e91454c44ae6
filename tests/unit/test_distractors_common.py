"""Shared builders for the distractor tests: a real facts table from the extracted demo dumps.

The probe builder's tables are made here directly from claims + labels (same columns as
contracts.md), so these tests do not depend on the probes stage.
"""

from __future__ import annotations

import pandas as pd
import pyarrow.parquet as pq
from factprobe.distractors.omega import Omega, suite_omega, valid_objects
from factprobe.hashing import stable_hash
from factprobe.wikidata.labels import label_table

DUMP = "20190201"
PROPERTIES = ["P36", "P17", "P47", "P530", "P190"]


def demo_suite(tables: dict, per_property: int = 12, dump: str = DUMP) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``(facts, entity_forms)`` of a small real suite over ``dump``'s truthy claims."""
    forms = label_table([tables[d] / "labels.parquet" for d in tables], ["en", "de", "fr", "ru", "cs"])
    english = set(forms.loc[forms["lang"] == "en", "entity"])
    claims = pq.read_table(tables[dump] / "claims.parquet").to_pandas()
    valid = valid_objects(claims, int(dump))
    valid = valid.assign(
        s="Q" + valid["subject"].astype(str),
        p="P" + valid["property"].astype(str),
        o="Q" + valid["object"].astype(str),
    )
    valid = valid[valid["p"].isin(PROPERTIES) & valid["s"].isin(english) & valid["o"].isin(english)]
    objects = valid.groupby(["s", "p"])["o"].agg(sorted).rename("objects").reset_index()
    facts = valid.merge(objects, on=["s", "p"])
    facts["fact_id"] = facts["s"] + "|" + facts["p"] + "|" + facts["o"]
    facts["h"] = [stable_hash(f) for f in facts["fact_id"]]
    facts = facts.sort_values(["p", "h"]).groupby("p").head(per_property)
    facts = pd.DataFrame(
        {
            "fact_id": facts["fact_id"],
            "subject": facts["s"],
            "property": facts["p"],
            "object": facts["o"],
            "objects": facts["objects"],
            "popularity": 0,
            "stratum": 0,
            "split": "taught",
            "dump": dump,
        }
    ).reset_index(drop=True)
    return facts, forms


def demo_omega(
    tables: dict, facts: pd.DataFrame, forms: pd.DataFrame, dump: str = DUMP, threshold: float | None = 90.0
) -> Omega:
    """Ω over both dumps' types and ``dump``'s claims valid at its date."""
    claims = pq.read_table(tables[dump] / "claims.parquet").to_pandas()
    types = [tables[d] / "types.parquet" for d in tables]
    return suite_omega(facts, forms, claims, types, dump, "non_deprecated", threshold)
