"""PROBELM ranking measures (PROBELM §4.1–4.2, docs/references.md): accuracy, MRR, NDCG, PLAUSIBILITY.

A scenario group is one fact (the most plausible scenario, a fact that entered Wikidata after
the model's cut-off) with its less plausible alternatives (co-occurrence distractors,
Algorithm 1). For each prompt style (statement / completion / question) the group is ranked by
perplexity (§4.1); the entity's perplexity is that of its best form, exp(-logprob / n_tokens).

* accuracy: the most plausible scenario is ranked first;
* MRR: mean of 1 / rank of the most plausible scenario;
* NDCG: graded relevance from the alternatives' ranks. With m alternatives ranked 1..m by the
  generator (1 = most plausible alternative), the alternative at position p gets grade m + 1 - p
  and the fact's own object grade m + 1. Gain 2^g - 1 (``gain="exponential"``, default) or g
  (``"linear"``), discount 1 / log2(position + 1);
* PLAUSIBILITY: the mean of accuracy, MRR and NDCG over the three prompt styles (nine numbers).

Ties are resolved pessimistically: among equal perplexities the lower-graded scenario is placed
first, so a tie with the object counts as a failure.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from .common import GROUP_KEYS, average_per_fact, candidates_for_prompts

MEASURES = ["plaus_acc", "plaus_rr", "plaus_ndcg"]


def _gain(grade: np.ndarray, gain: str) -> np.ndarray:
    if gain == "exponential":
        return np.power(2.0, grade) - 1.0
    if gain == "linear":
        return grade
    raise ValueError(f"unknown NDCG gain {gain!r}; use 'exponential' or 'linear'")


def plausibility_per_prompt(
    ent: pd.DataFrame,
    prompts: pd.DataFrame,
    candidates: pd.DataFrame,
    facts: pd.DataFrame,
    strategies: Sequence[str],
    gain: str = "exponential",
) -> pd.DataFrame:
    """Accuracy, RR and NDCG for every prompt whose fact has alternatives of ``strategies``."""
    dis = candidates[(candidates["role"] == "distractor") & candidates["strategy"].isin(list(strategies))]
    # Grades are per prompt: a per-language candidate list only ranks within its language.
    dis = candidates_for_prompts(prompts, dis)
    dis = dis.sort_values(["prompt_id", "rank", "entity"], kind="stable").drop_duplicates(
        ["prompt_id", "entity"]
    )
    dis = dis.assign(position=dis.groupby("prompt_id").cumcount() + 1)
    dis["m"] = dis.groupby("prompt_id")["entity"].transform("size")
    dis["grade"] = (dis["m"] + 1 - dis["position"]).astype(float)
    objects = prompts[["prompt_id", "fact_id"]].merge(
        facts[["fact_id", "object"]].astype(str).rename(columns={"object": "entity"}), on="fact_id"
    )
    objects = objects.merge(dis.groupby("prompt_id")["m"].first().reset_index(), on="prompt_id")
    objects["grade"] = (objects["m"] + 1).astype(float)
    objects["is_object"] = True
    rows = pd.concat([objects, dis.assign(is_object=False)], ignore_index=True)[
        ["prompt_id", "fact_id", "entity", "grade", "is_object"]
    ]
    rows = rows.merge(ent[["prompt_id", "entity", "best_norm"]], on=["prompt_id", "entity"], how="inner")
    # A group whose object is unscored cannot be ranked.
    has_obj = rows.groupby("prompt_id")["is_object"].transform("any")
    rows = rows[has_obj]
    cols = ["prompt_id", "fact_id", *MEASURES]
    if rows.empty:
        return pd.DataFrame(columns=cols)
    rows = rows.sort_values(["prompt_id", "best_norm", "grade"], ascending=[True, False, True], kind="stable")
    rows["pos"] = rows.groupby("prompt_id").cumcount() + 1
    rows["disc"] = 1.0 / np.log2(rows["pos"] + 1.0)
    rows["dcg"] = _gain(rows["grade"].to_numpy(), gain) * rows["disc"]
    ideal = rows.sort_values(["prompt_id", "grade"], ascending=[True, False], kind="stable").copy()
    ideal["pos"] = ideal.groupby("prompt_id").cumcount() + 1
    ideal["idcg"] = _gain(ideal["grade"].to_numpy(), gain) / np.log2(ideal["pos"] + 1.0)
    obj_rank = rows[rows["is_object"]].groupby("prompt_id")["pos"].min()
    out = pd.DataFrame(
        {
            "dcg": rows.groupby("prompt_id")["dcg"].sum(),
            "idcg": ideal.groupby("prompt_id")["idcg"].sum(),
            "rank": obj_rank,
            "fact_id": rows.groupby("prompt_id")["fact_id"].first(),
        }
    )
    out["plaus_acc"] = (out["rank"] == 1).astype(float)
    out["plaus_rr"] = 1.0 / out["rank"]
    out["plaus_ndcg"] = out["dcg"] / out["idcg"]
    return out.reset_index().rename(columns={"index": "prompt_id"})[cols]


def plausibility_per_fact(
    ent: pd.DataFrame,
    prompts: pd.DataFrame,
    candidates: pd.DataFrame,
    facts: pd.DataFrame,
    strategies: Sequence[str],
    gain: str = "exponential",
) -> pd.DataFrame:
    """Per scenario group (fact) and prompt style: ``plaus_acc``, ``plaus_rr``, ``plaus_ndcg``."""
    per = plausibility_per_prompt(ent, prompts, candidates, facts, strategies, gain)
    per = per.merge(prompts[["prompt_id", *GROUP_KEYS]], on="prompt_id")
    return average_per_fact(per, [], MEASURES)


def plausibility_score(style_means: pd.DataFrame) -> pd.DataFrame:
    """PLAUSIBILITY (§4.2): mean of the per-style means of accuracy, MRR and NDCG.

    ``style_means`` has columns style, measure (``MEASURES``), value and the other group keys;
    returns one row per (lang, verbalization, shots) with ``value`` and ``n_parts`` (9 with three
    styles; fewer when a style is absent, which is then reported rather than hidden).
    """
    keys = [k for k in GROUP_KEYS if k != "style"]
    part = style_means[style_means["measure"].isin(MEASURES)]
    if part.empty:
        return pd.DataFrame(columns=[*keys, "value", "n_parts"])
    out = part.groupby(keys).agg(value=("value", "mean"), n_parts=("value", "size")).reset_index()
    return out
