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
  candidate list, m + 1 - p, and the object m + 1. §4.2 does not state its NDCG convention and
  the authors released no code, so the convention is chosen by what Table 2 shows: NDCG within
  about a point of MRR for every model (Pearson 0.998, §5.1). ``plaus_ndcg_minmax`` (``HEADLINE``,
  in PLAUSIBILITY): gain 2^g - 1, discount 1 / log2(position + 1), the worst order mapped to 0,
  (DCG - worst DCG) / (ideal DCG - worst DCG). ``plaus_ndcg``, beside it: the standard NDCG of
  Järvelin & Kekäläinen (2002), gain = grade, DCG / ideal DCG
  (:func:`factprobe.metrics.ranking.ndcg_per_group`). On the released groups, rankers from random
  to MRR 0.8 put the min-max NDCG 0.00-0.11 from MRR and the standard one 0.18-0.56 above it
  (a random ranker: 0.31 and 0.83 against MRR's 0.27; ``benchmarks/probelm_ndcg.py``,
  benchmarks/RESULTS.md); no convention tried matches MRR exactly. The exact expectation of a
  random ranker is reported per prompt as ``plaus_ndcg_chance`` / ``plaus_ndcg_minmax_chance``
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
from factprobe.contracts import is_subject_side

from .common import GROUP_KEYS, average_per_fact, candidates_for_prompts
from .ranking import ndcg_per_group

#: The NDCG that stands for the paper's (module docstring: the convention Table 2 bears out).
HEADLINE = "plaus_ndcg_minmax"
#: PLAUSIBILITY's parts (§4.2): accuracy, MRR and the headline NDCG.
PARTS = ["plaus_acc", "plaus_rr", HEADLINE]
#: Every per-fact measure of the family (registered in factprobe.metrics.MEASURES).
MEASURES = ["plaus_acc", "plaus_rr", "plaus_ndcg", "plaus_ndcg_minmax"]
#: Expected values of a random ranker of the same group (reported next to MEASURES).
CHANCE = ["plaus_rr_chance", "plaus_ndcg_chance", "plaus_ndcg_minmax_chance"]
#: NDCG measure -> (gain, normalization) of factprobe.metrics.ranking.ndcg_per_group.
NDCG = {"plaus_ndcg": ("linear", "ideal"), "plaus_ndcg_minmax": ("exponential", "minmax")}


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
    swaps: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """Accuracy, RR and both NDCGs (+ their random-ranker ``CHANCE`` values) for every prompt whose
    fact has alternatives of ``strategies``, one group per swapped slot (column ``side``).

    Object side: the true scenario and the object swaps under the prompt. Subject side (PROBELM
    Algorithm 1's second list): the ``swaps`` prompts (``subject_swaps``) of the prompt
    (``group_prompt_id``), one scenario per ``subject``, the fact's own subject the true one.
    Each group holds the true scenario and its up to 10 alternatives: 11 scenarios (§4.1).
    """
    subject = is_subject_side(candidates)
    out = [_rank_groups(ent, prompts, candidates[~subject], facts, strategies)]
    out[0]["side"] = "object"
    if subject.any():
        side = candidates[subject | (candidates["role"] == "object")]
        own = facts.assign(object=facts["subject"])
        out.append(
            _rank_groups(swap_scores(ent, swaps), prompts, side, own, strategies).assign(side="subject")
        )
    return pd.concat(out, ignore_index=True)


def swap_scores(ent: pd.DataFrame, swaps: pd.DataFrame | None) -> pd.DataFrame:
    """Per (prompt, subject) scores of the subject-side groups: ``prompt_id`` the swapped prompt
    (``group_prompt_id``), ``entity`` the subject, ``best_norm`` its best form's (one swap prompt
    per form of the subject)."""
    cols = ["prompt_id", "entity", "best_norm"]
    if swaps is None or swaps.empty:
        return pd.DataFrame(columns=cols)
    rows = swaps[["prompt_id", "group_prompt_id", "subject"]].merge(
        ent[cols], left_on=["prompt_id", "subject"], right_on=["prompt_id", "entity"]
    )
    best = rows.groupby(["group_prompt_id", "entity"], sort=False)["best_norm"].max().reset_index()
    return best.rename(columns={"group_prompt_id": "prompt_id"})[cols]


def _graded_rows(
    ent: pd.DataFrame, prompts: pd.DataFrame, candidates: pd.DataFrame, facts: pd.DataFrame, strategies
) -> pd.DataFrame:
    """Every prompt's scenarios with their grade and score: its fact's object and its alternatives
    of ``strategies`` (prompt_id, fact_id, entity, grade, is_object, best_norm); groups whose object
    is unscored are left out (they cannot be ranked)."""
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
    return rows[rows.groupby("prompt_id")["is_object"].transform("any")]


def _rank_groups(
    ent: pd.DataFrame, prompts: pd.DataFrame, candidates: pd.DataFrame, facts: pd.DataFrame, strategies
) -> pd.DataFrame:
    """The measures of every prompt's group: its fact's object and its alternatives of ``strategies``."""
    rows = _graded_rows(ent, prompts, candidates, facts, strategies)
    cols = ["prompt_id", "fact_id", *MEASURES, *CHANCE]
    if rows.empty:
        return pd.DataFrame(columns=cols)
    # Lower perplexity first; among equal ones the lower grade first (a tie is a failure).
    rows = rows.sort_values(["prompt_id", "best_norm", "grade"], ascending=[True, False, True], kind="stable")
    rows["pos"] = rows.groupby("prompt_id").cumcount() + 1
    grouped = rows.groupby("prompt_id")
    out = pd.DataFrame(
        {
            "k": grouped.size(),
            "rank": rows[rows["is_object"]].groupby("prompt_id")["pos"].min(),
            "fact_id": grouped["fact_id"].first(),
        }
    )
    out["plaus_acc"] = (out["rank"] == 1).astype(float)
    out["plaus_rr"] = 1.0 / out["rank"]
    out["plaus_rr_chance"] = [sum(1.0 / i for i in range(1, int(k) + 1)) / k for k in out["k"]]
    for name, (gain, normalization) in NDCG.items():
        nd = ndcg_per_group(rows, "prompt_id", gain, normalization).reindex(out.index)
        out[name], out[f"{name}_chance"] = nd["ndcg"], nd["ndcg_chance"]
    return out.reset_index().rename(columns={"index": "prompt_id"})[cols]


def plausibility_per_fact(
    ent: pd.DataFrame,
    prompts: pd.DataFrame,
    candidates: pd.DataFrame,
    facts: pd.DataFrame,
    strategies: Sequence[str],
    swaps: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """Per scenario group (fact) and prompt style: ``MEASURES`` (``plaus_acc``, ``plaus_rr``,
    ``plaus_ndcg``, ``plaus_ndcg_minmax``) and the random-ranker values ``CHANCE``."""
    per = plausibility_per_prompt(ent, prompts, candidates, facts, strategies, swaps)
    per = per.merge(prompts[["prompt_id", *GROUP_KEYS]], on="prompt_id")
    # The swapped slot is the per-fact table's ``strategy``: "object" or "subject" swaps.
    per = per.rename(columns={"side": "strategy"})
    return average_per_fact(per, ["strategy"], [*MEASURES, *CHANCE])


def plausibility_score(style_means: pd.DataFrame) -> pd.DataFrame:
    """PLAUSIBILITY (§4.2): mean of the per-style means of accuracy, MRR and NDCG.

    ``style_means`` has columns style, measure (``PARTS``), value and the other group keys;
    returns one row per (lang, verbalization, shots) with ``value`` and ``n_parts`` (9 with three
    styles; fewer when a style is absent, which is then reported rather than hidden).
    """
    keys = [k for k in GROUP_KEYS if k != "style"]
    part = style_means[style_means["measure"].isin(PARTS)]
    if part.empty:
        return pd.DataFrame(columns=[*keys, "value", "n_parts"])
    out = part.groupby(keys).agg(value=("value", "mean"), n_parts=("value", "size")).reset_index()
    return out


def facts_new_to_model(facts: pd.DataFrame, cutoff: dict) -> tuple[pd.DataFrame, dict[str, float]]:
    """The suite's facts that are new to one model: added after *its* training cut-off (§3.1).

    ``cutoff`` (``config_rules.suite_model_cutoff``): ``cutoff`` (YYYYMMDD of the model, or the
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
