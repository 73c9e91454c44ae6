"""Label lookup across dumps: forms Λ(e) of an entity (distractors paper §3.2)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import pandas as pd

from factprobe import contracts


def label_table(label_files: Iterable[str | Path], languages: Iterable[str] | None = None) -> pd.DataFrame:
    """Labels and aliases of every entity, taken from the newest dump that labels it.

    ``label_files`` are ``results/wikidata/{dump}/labels.parquet`` paths in any order; the dump
    date is read from the parent folder name. Returns columns ``entity`` ("Q42"), ``lang``,
    ``form``, ``source`` ("label"/"alias"), one row per distinct form, labels before aliases.
    """
    frames = []
    for path in label_files:
        frame = contracts.read("labels", path)
        frame["dump"] = Path(path).parent.name
        frames.append(frame)
    if not frames:
        return contracts.empty("entity_forms")
    labels = pd.concat(frames, ignore_index=True)
    if languages is not None:
        labels = labels[labels["lang"].isin(list(languages))]
    # Newest dump that has any form of (entity, lang) wins, so forms are never mixed across dates.
    newest = labels.groupby(["id", "lang"])["dump"].transform("max")
    labels = labels[labels["dump"] == newest]
    out = pd.DataFrame(
        {
            "entity": contracts.qid_series(labels["id"]),
            "lang": labels["lang"],
            "form": labels["text"],
            "source": labels["is_alias"].map({False: "label", True: "alias"}),
        }
    )
    out["_alias"] = out["source"] == "alias"
    out = out.sort_values(["entity", "lang", "_alias"], kind="stable").drop(columns="_alias")
    return out.drop_duplicates(["entity", "lang", "form"]).reset_index(drop=True)
