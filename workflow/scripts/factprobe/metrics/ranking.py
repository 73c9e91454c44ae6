"""Rank-based measures of Fluent-mLAMA §3.3 (docs/references.md): rank, R@n (n = 1..5), mean rank;
and NDCG over graded relevance (:func:`ndcg_per_group`, used by PROBELM §4.2).

For each prompt (verbalization v_i) the candidate endings are the correct objects' forms and the
distractors; they are ranked by the log-probability of the ending. The score of a fact is the
rank of its best correct form; R_i@n = 1[rank <= n]; R@n and the mean rank average over the
facts of a language × verbalization subset.

Rules stated here:

* All forms of every correct object (``object`` ∪ ``objects``, N-M relations) count as correct
  (§3.2: "we consider all forms ... of object NEs as correct ones"); the best one is ranked.
* A distractor entity is represented by its best form, so an entity with many aliases is one
  competitor, not several.
* Ties (``metrics.family_settings.ranking.ties``): ``fail`` (default) ranks a distractor scoring exactly the best
  correct form above it; ``correct_first`` ranks the correct forms first, as the Fluent-mLAMA
  authors' stable sort of correct-then-distractor candidates does (``processor.py``).
* Distractors are those of one strategy (the multilingual suite uses ``pool``); a prompt with
  fewer distractors than n simply has fewer competitors.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd

from .common import GROUP_KEYS, average_per_fact, candidates_for_prompts

#: metrics.family_settings.ranking.ties: a distractor tying the best correct form ranks above it, or below it.
RANKING_TIES = ("fail", "correct_first")


def ranking_per_prompt(
    ent: pd.DataFrame,
    prompts: pd.DataFrame,
    candidates: pd.DataFrame,
    correct: pd.DataFrame,
    ties: str = "fail",
) -> pd.DataFrame:
    """Rank of the best correct form for each (prompt, strategy): prompt_id, fact_id, strategy, rank."""
    if ties not in RANKING_TIES:
        raise ValueError(f"metrics.family_settings.ranking.ties {ties!r}: use one of {list(RANKING_TIES)}")
    scored = prompts[["prompt_id", "fact_id"]].merge(ent[["prompt_id", "entity", "best_lp"]], on="prompt_id")
    good = scored.merge(correct, on=["fact_id", "entity"])
    best = good.groupby("prompt_id")["best_lp"].max().rename("best_correct")
    dis = candidates[candidates["role"] == "distractor"]
    dis = dis.merge(correct.assign(_ok=True), on=["fact_id", "entity"], how="left")
    dis = dis[dis["_ok"].isna()].drop(columns="_ok")
    dis = candidates_for_prompts(prompts, dis)[
        ["prompt_id", "fact_id", "entity", "strategy"]
    ].drop_duplicates()
    rows = scored.merge(dis, on=["prompt_id", "fact_id", "entity"])
    rows = rows.merge(best, left_on="prompt_id", right_index=True)
    above = rows["best_lp"] > rows["best_correct"]
    rows["beats"] = (above | ((rows["best_lp"] == rows["best_correct"]) & (ties == "fail"))).astype(int)
    ranks = rows.groupby(["prompt_id", "fact_id", "strategy"], sort=True)["beats"].sum().reset_index()
    ranks["rank"] = ranks["beats"] + 1
    return ranks[["prompt_id", "fact_id", "strategy", "rank"]]


def ranking_per_fact(
    ent: pd.DataFrame,
    prompts: pd.DataFrame,
    candidates: pd.DataFrame,
    correct: pd.DataFrame,
    recall_ns: Iterable[int] = (1, 2, 3, 4, 5),
    ties: str = "fail",
) -> pd.DataFrame:
    """Per fact and language × verbalization (and style, shots): ``recall`` (n) and ``rank``.

    The suite-level R@n and mean rank of §3.3 average these (summary; metrics/fluent.py for the
    paper's average over relations).
    """
    per = ranking_per_prompt(ent, prompts, candidates, correct, ties)
    per = per.merge(prompts[["prompt_id", *GROUP_KEYS]], on="prompt_id")
    parts = [average_per_fact(per, ["strategy"], ["rank"])]
    for n in sorted(set(recall_ns)):
        hit = per.assign(n=int(n), recall=(per["rank"].to_numpy() <= n).astype(float))
        parts.append(average_per_fact(hit, ["strategy", "n"], ["recall"]))
    out = pd.concat(parts, ignore_index=True)
    out.loc[out["measure"] == "rank", "measure"] = "mean_rank"
    return out


def mean_rank(ranks: Sequence[float]) -> float:
    """Mean rank over facts (§3.3); NaN for an empty set."""
    return float(np.mean(ranks)) if len(ranks) else float("nan")


def table1(summary: pd.DataFrame, ns: Sequence[int] = (1, 3), strategy: str | None = None) -> pd.DataFrame:
    """Fluent-mLAMA Table 1 layout from a metrics summary (``pipeline.summarize`` rows): one row per
    model × verbalization, one column per measure × language, ``R@n`` for ``ns`` then ``mean rank``
    (§3.3: R@n and the mean rank of the best correct object average over the facts of a language ×
    verbalization subset). Rows of other styles/shots or strategies are averaged only when the
    summary mixes them; ``strategy`` picks one distractor strategy (e.g. ``pool``).
    """
    rows = summary[summary["measure"].isin(["recall", "mean_rank"])]
    if "level" in rows.columns:
        rows = rows[rows["level"] == "fact"]
    if strategy is not None:
        rows = rows[rows["strategy"] == strategy]
    rows = rows[(rows["measure"] == "mean_rank") | rows["n"].isin(list(ns))]
    if rows.empty:
        return pd.DataFrame()
    col = np.where(rows["measure"] == "recall", "R@" + rows["n"].astype(int).astype(str), "mean rank")
    table = rows.assign(col=col).pivot_table(
        index=["model", "verbalization"], columns=["col", "lang"], values="value", aggfunc="mean"
    )
    order = [f"R@{n}" for n in ns] + ["mean rank"]
    langs = list(dict.fromkeys(rows["lang"]))
    cols = [(c, lang) for c in order for lang in langs if (c, lang) in table.columns]
    return table[cols]


#: NDCG gains: the grade itself (Järvelin & Kekäläinen 2002) or 2^grade - 1 (Burges et al. 2005).
NDCG_GAINS = ("linear", "exponential")
#: NDCG scales: DCG / ideal DCG (standard) or (DCG - worst) / (ideal - worst) (min-max).
NDCG_NORMALIZATIONS = ("ideal", "minmax")


def ndcg_gain(grade: np.ndarray, gain: str) -> np.ndarray:
    """The gain of a graded relevance: ``linear`` g, ``exponential`` 2^g - 1."""
    if gain == "exponential":
        return np.power(2.0, grade) - 1.0
    if gain == "linear":
        return np.asarray(grade, dtype=float)
    raise ValueError(f"unknown NDCG gain {gain!r}; use one of {NDCG_GAINS}")


def _dcg_of_order(key: pd.Series, gain: np.ndarray, descending: bool) -> pd.Series:
    """Per group: the DCG of its gains placed in descending (ideal) or ascending (worst) order."""
    frame = pd.DataFrame({"key": key.to_numpy(), "g": gain})
    frame = frame.sort_values(["key", "g"], ascending=[True, not descending], kind="stable")
    pos = frame.groupby("key").cumcount().to_numpy() + 1.0
    return (frame["g"] / np.log2(pos + 1.0)).groupby(frame["key"]).sum()


def ndcg_per_group(
    rows: pd.DataFrame, key: str = "prompt_id", gain: str = "linear", normalization: str = "ideal"
) -> pd.DataFrame:
    """NDCG of every group's ranked list and its random-ranker expectation.

    ``rows``: ``key``, ``pos`` (the ranker's position, 1 = first) and ``grade`` (graded relevance,
    higher = more relevant). Standard NDCG (Järvelin & Kekäläinen 2002, "Cumulated gain-based
    evaluation of IR techniques"): DCG = sum over positions p of gain(grade_p) / log2(p + 1), over
    the ideal DCG, the DCG of the same grades in descending order (``gain="linear"``,
    ``normalization="ideal"``). ``normalization="minmax"`` maps the worst order (ascending
    grades) to 0 instead: (DCG - worst) / (ideal - worst). ``ndcg_chance`` puts E[DCG] of a
    uniformly random order (mean gain x sum of discounts: every grade is at every position
    equally often) on the same scale. A group whose grades are all equal (or one row) scores 1:
    every order is ideal. Returns one row per group (index ``key``): ``ndcg``, ``ndcg_chance``.
    """
    if normalization not in NDCG_NORMALIZATIONS:
        raise ValueError(f"unknown NDCG normalization {normalization!r}; use one of {NDCG_NORMALIZATIONS}")
    g = ndcg_gain(rows["grade"].to_numpy(dtype=float), gain)
    disc = 1.0 / np.log2(rows["pos"].to_numpy(dtype=float) + 1.0)
    by = rows[key].to_numpy()
    dcg = pd.Series(g * disc).groupby(by).sum()
    expected = pd.Series(g).groupby(by).mean() * pd.Series(disc).groupby(by).sum()
    ideal = _dcg_of_order(rows[key], g, descending=True).reindex(dcg.index)
    floor = (
        _dcg_of_order(rows[key], g, descending=False).reindex(dcg.index) if normalization == "minmax" else 0.0
    )
    span = ideal - floor
    out = pd.DataFrame(
        {
            # Clipped: summing the same terms in another order can land 1 ulp above the ideal.
            "ndcg": ((dcg - floor) / span).clip(0.0, 1.0).where(span > 1e-12, 1.0),
            "ndcg_chance": ((expected - floor) / span).where(span > 1e-12, 1.0),
        }
    )
    out.index.name = key
    return out
