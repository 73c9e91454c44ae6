"""PROBELM ranking measures (PROBELM §4.1–4.2, docs/references.md): accuracy, MRR, NDCG, PLAUSIBILITY.

A scenario group is one fact (the most plausible scenario, a fact that entered Wikidata after
the model's cut-off) with its less plausible alternatives (co-occurrence distractors,
Algorithm 1). For each prompt style (statement / completion / question) the group is ranked by
perplexity (§4.1); the entity's perplexity is that of its best form, exp(-logprob / n_tokens).

* accuracy: the most plausible scenario is ranked first;
* MRR: mean of 1 / rank of the most plausible scenario;
* NDCG: graded relevance from the released data's ranks. PRobELM's data ranks each group's
  scenarios 1 (the new fact) to 11 (the least plausible alternative), and a filtered alternative
  leaves a gap rather than moving the others up. Candidates carry that rank as ``relevance``
  (:mod:`factprobe.distractors.cooccur`: alternative ranked i of n gets n + 1 - i, the fact n + 1,
  i.e. relevance = 12 - released rank for n = 10); it is used as the grade as is. Without a
  ``relevance`` (other strategies) the m alternatives are graded by their position p in the
  candidate list, m + 1 - p, and the object m + 1. Gain 2^g - 1 (``gain="exponential"``, default)
  or g (``"linear"``), discount 1 / log2(position + 1). The paper does not state its
  normalisation, but its NDCG stays within about a point of its MRR for every model (Table 2,
  Pearson 0.998), while the classic DCG / ideal DCG gives a random ranker 0.57 against MRR's
  0.27 on 11 scenarios. The default ``normalization="minmax"`` therefore maps the worst order to 0
  and the ideal to 1, (DCG - worst DCG) / (ideal DCG - worst DCG): a random ranker then scores
  0.31 (exponential gain, 11 scenarios), on MRR's scale; ``"ideal"`` is the classic DCG / ideal
  DCG. The exact expectation of a random ranker is reported per prompt as ``plaus_ndcg_chance``
  (E[DCG] = mean gain x sum of discounts), with ``plaus_rr_chance`` = H(k) / k for MRR;
* PLAUSIBILITY: the mean of accuracy, MRR and NDCG over the three prompt styles (nine numbers),
  each the mean over both swapped slots when subject swaps are scored.

Both lists of Algorithm 1 are evaluated, each as its own group of the true scenario + its swaps:
object swaps (strategy column ``object`` of the per-fact table) and subject swaps (``subject``).

Ties are resolved pessimistically: among equal perplexities the lower-graded scenario is placed
first, so a tie with the object counts as a failure.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from factprobe import contracts
from factprobe.contracts import SUBJECT_SWAP, TRUE_SUBJECT, is_subject_side

from .common import GROUP_KEYS, average_per_fact, candidates_for_prompts

MEASURES = ["plaus_acc", "plaus_rr", "plaus_ndcg"]
#: Expected values of a random ranker of the same group (reported next to MEASURES).
CHANCE = ["plaus_rr_chance", "plaus_ndcg_chance"]
NORMALIZATIONS = ("minmax", "ideal")


def _gain(grade: np.ndarray, gain: str) -> np.ndarray:
    if gain == "exponential":
        return np.power(2.0, grade) - 1.0
    if gain == "linear":
        return grade
    raise ValueError(f"unknown NDCG gain {gain!r}; use 'exponential' or 'linear'")


def _relevance(frame: pd.DataFrame) -> pd.Series:
    """The candidates' graded ``relevance`` (released-data ranks, see module docstring); NaN where absent."""
    if "relevance" not in frame.columns:
        return pd.Series(np.nan, index=frame.index)
    return pd.to_numeric(frame["relevance"], errors="coerce")


def plausibility_per_prompt(
    ent: pd.DataFrame,
    prompts: pd.DataFrame,
    candidates: pd.DataFrame,
    facts: pd.DataFrame,
    strategies: Sequence[str],
    gain: str = "exponential",
    normalization: str = "minmax",
) -> pd.DataFrame:
    """Accuracy, RR and NDCG (+ their random-ranker ``CHANCE`` values) for every prompt whose fact
    has alternatives of ``strategies``, one group per swapped slot (column ``side``).

    Object side: the true scenario and the object swaps under the prompt. Subject side (PROBELM
    Algorithm 1's second list): the true scenario (entity ``TRUE_SUBJECT``) and the subject swaps,
    scored under the prompt id + ``SUBJECT_SWAP`` (:func:`factprobe.scoring.suite.subject_swap_pairs`).
    Each group holds the true scenario and its up to 10 alternatives: 11 scenarios (§4.1).
    """
    if normalization not in NORMALIZATIONS:
        raise ValueError(f"unknown NDCG normalization {normalization!r}; use one of {NORMALIZATIONS}")
    subject = is_subject_side(candidates)
    out = [_rank_groups(ent, prompts, candidates[~subject], facts, strategies, gain, normalization)]
    out[0]["side"] = "object"
    if subject.any():
        twins = prompts.assign(prompt_id=prompts["prompt_id"] + SUBJECT_SWAP)
        side = candidates[subject | (candidates["role"] == "object")]
        per = _rank_groups(
            ent, twins, side, facts.assign(object=TRUE_SUBJECT), strategies, gain, normalization
        )
        per["prompt_id"] = per["prompt_id"].str.removesuffix(SUBJECT_SWAP)
        out.append(per.assign(side="subject"))
    return pd.concat(out, ignore_index=True)


def _rank_groups(
    ent: pd.DataFrame,
    prompts: pd.DataFrame,
    candidates: pd.DataFrame,
    facts: pd.DataFrame,
    strategies: Sequence[str],
    gain: str,
    normalization: str,
) -> pd.DataFrame:
    """The measures of every prompt's group: its fact's object and its alternatives of ``strategies``."""
    dis = candidates[(candidates["role"] == "distractor") & candidates["strategy"].isin(list(strategies))]
    # Grades are per prompt: a per-language candidate list only ranks within its language.
    dis = candidates_for_prompts(prompts, dis)
    dis = dis.sort_values(["prompt_id", "rank", "entity"], kind="stable").drop_duplicates(
        ["prompt_id", "entity"]
    )
    dis = dis.assign(position=dis.groupby("prompt_id").cumcount() + 1)
    dis["m"] = dis.groupby("prompt_id")["entity"].transform("size")
    released = _relevance(dis)
    dis["grade"] = released.where(released.notna(), dis["m"] + 1 - dis["position"]).astype(float)
    objects = prompts[["prompt_id", "fact_id"]].merge(
        facts[["fact_id", "object"]].astype(str).rename(columns={"object": "entity"}), on="fact_id"
    )
    objects = objects.merge(dis.groupby("prompt_id")["m"].first().reset_index(), on="prompt_id")
    top = candidates[candidates["role"] == "object"].drop_duplicates("fact_id").set_index("fact_id")
    top_rel = objects["fact_id"].map(_relevance(top)) if len(top) else pd.Series(np.nan, index=objects.index)
    objects["grade"] = top_rel.where(top_rel.notna(), objects["m"] + 1).astype(float)
    objects["is_object"] = True
    rows = pd.concat([objects, dis.assign(is_object=False)], ignore_index=True)[
        ["prompt_id", "fact_id", "entity", "grade", "is_object"]
    ]
    rows = rows.merge(ent[["prompt_id", "entity", "best_norm"]], on=["prompt_id", "entity"], how="inner")
    # A group whose object is unscored cannot be ranked.
    has_obj = rows.groupby("prompt_id")["is_object"].transform("any")
    rows = rows[has_obj]
    cols = ["prompt_id", "fact_id", *MEASURES, *CHANCE]
    if rows.empty:
        return pd.DataFrame(columns=cols)
    rows = rows.sort_values(["prompt_id", "best_norm", "grade"], ascending=[True, False, True], kind="stable")
    rows["pos"] = rows.groupby("prompt_id").cumcount() + 1
    rows["disc"] = 1.0 / np.log2(rows["pos"] + 1.0)
    rows["dcg"] = _gain(rows["grade"].to_numpy(), gain) * rows["disc"]
    ideal = rows.sort_values(["prompt_id", "grade"], ascending=[True, False], kind="stable").copy()
    ideal["pos"] = ideal.groupby("prompt_id").cumcount() + 1
    ideal["idcg"] = _gain(ideal["grade"].to_numpy(), gain) / np.log2(ideal["pos"] + 1.0)
    worst = rows.sort_values(["prompt_id", "grade"], ascending=[True, True], kind="stable").copy()
    worst["pos"] = worst.groupby("prompt_id").cumcount() + 1
    worst["wdcg"] = _gain(worst["grade"].to_numpy(), gain) / np.log2(worst["pos"] + 1.0)
    rows["g"] = _gain(rows["grade"].to_numpy(), gain)
    obj_rank = rows[rows["is_object"]].groupby("prompt_id")["pos"].min()
    grouped = rows.groupby("prompt_id")
    out = pd.DataFrame(
        {
            "dcg": grouped["dcg"].sum(),
            "idcg": ideal.groupby("prompt_id")["idcg"].sum(),
            "wdcg": worst.groupby("prompt_id")["wdcg"].sum(),
            # E[DCG] of a uniformly random order: every scenario is at every position equally often.
            "edcg": grouped["g"].mean() * grouped["disc"].sum(),
            "k": grouped.size(),
            "rank": obj_rank,
            "fact_id": grouped["fact_id"].first(),
        }
    )
    out["plaus_acc"] = (out["rank"] == 1).astype(float)
    out["plaus_rr"] = 1.0 / out["rank"]
    out["plaus_rr_chance"] = [sum(1.0 / i for i in range(1, int(k) + 1)) / k for k in out["k"]]
    floor = out["wdcg"] if normalization == "minmax" else 0.0
    span = out["idcg"] - floor
    # One scenario (or all grades equal): every order is ideal.
    out["plaus_ndcg"] = ((out["dcg"] - floor) / span).where(span > 1e-12, 1.0)
    out["plaus_ndcg_chance"] = ((out["edcg"] - floor) / span).where(span > 1e-12, 1.0)
    return out.reset_index().rename(columns={"index": "prompt_id"})[cols]


def plausibility_per_fact(
    ent: pd.DataFrame,
    prompts: pd.DataFrame,
    candidates: pd.DataFrame,
    facts: pd.DataFrame,
    strategies: Sequence[str],
    gain: str = "exponential",
    normalization: str = "minmax",
) -> pd.DataFrame:
    """Per scenario group (fact) and prompt style: ``plaus_acc``, ``plaus_rr``, ``plaus_ndcg`` and
    the random-ranker values ``plaus_rr_chance``, ``plaus_ndcg_chance``."""
    per = plausibility_per_prompt(ent, prompts, candidates, facts, strategies, gain, normalization)
    per = per.merge(prompts[["prompt_id", *GROUP_KEYS]], on="prompt_id")
    # The swapped slot is the per-fact table's ``strategy``: "object" or "subject" swaps.
    per = per.rename(columns={"side": "strategy"})
    return average_per_fact(per, ["strategy"], [*MEASURES, *CHANCE])


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


def facts_new_to_model(facts: pd.DataFrame, cutoff: dict) -> tuple[pd.DataFrame, dict[str, float]]:
    """The suite's facts that are new to one model: added after *its* training cut-off (§3.1).

    ``cutoff`` (``settings.suite_model_cutoff``): ``cutoff`` (YYYYMMDD of the model, or the
    suite's when the models.tsv row has none) and ``dump`` (the newer dump of the suite's diff).
    The facts table carries each fact's ``date`` (its statement's start or point in time, the
    probes stage's reading of the diff, :func:`factprobe.diff.rules.statement_date`). A fact
    stays when that date is not on or before the cut-off; an undated one stays only when the
    cut-off is before the newer dump (it was added between the dumps, after a cut-off that
    precedes the older dump, or at an unknown time in between, as the suite's own rule assumes).
    Returns the kept facts and suite-level rows: ``plausible_facts`` (kept),
    ``facts_seen_by_model`` (dropped), ``cutoff_after_dump`` (1 when the model's cut-off is on or
    after the newer dump: nothing in the diff is new to it).
    """
    contracts.check(facts, "facts", "the suite's facts table (plausibility)", ["fact_id", "date"])
    cut, dump = int(cutoff["cutoff"]), int(cutoff["dump"])
    date = pd.to_numeric(facts["date"], errors="coerce")
    keep = ~(date.notna() & (date <= cut))
    if cut >= dump:
        # The newer dump holds every undated addition already: only later-dated statements count.
        keep &= date.notna() & (date > cut)
    keep = keep.to_numpy(dtype=bool)
    rows = {
        "plausible_facts": float(keep.sum()),
        "facts_seen_by_model": float((~keep).sum()),
        "cutoff_after_dump": float(cut >= dump),
    }
    return facts[keep], rows
