"""Distractor-based knowledge measure K and its baselines (distractors-knowledge-measure.txt).

* ``k_of_prompt`` / ``knowledge_per_prompt``: K(f|c) = Agg_{o*∈Δn(f)} 1[Pl(o|c) > Pl(o*|c)]
  (§3.2 eq. 2) with Agg = min (Min@n) or mean (Avg@n), for every n, per retrieval strategy.
* ``knowledge_per_fact``: K(f) = mean over the fact's cloze sentences (§3.2 eq. 3).
* ``probability_per_prompt`` and ``precision_per_prompt``: the Probability and Precision@n
  baselines of Table 2 (§4.2): Σ_λ Pr(λ|c) *without* the end marker, and whether one of the
  top-n next tokens is a name of o (so only single-token names can count, as in the reference
  ``generation.py``). ``first_token_precision_per_prompt`` keeps a looser variant under its own
  name (``precision_first_token``: o's best first token ranks <= n).

Rules stated once here:

* Ties: the indicator is strict, so Pl(o|c) == Pl(o*|c) counts as a failure (Min@n becomes 0).
* Fewer than n distractors (a strategy may return fewer, §3.3 "ApprOpt"): by default K(f|c) at n
  is undefined, as in the reference implementation, and so is K(f) when any of the fact's cloze
  sentences is short (the reference's mean over all sentences, §4.2; ``fact_rule``): the fact
  drops out of the mean at that n (``dropped_fact_counts`` counts them);
  ``short_lists="available"`` uses the distractors that exist instead. ``n_used`` records how
  many were compared and ``k_*_chance`` a random ranker's K, both over exactly the sentences and
  facts K averages; a prompt with no distractor has no value.
* Distractors listed in ``candidates`` but absent from the score table are dropped (logged);
  a prompt whose object was not scored has no value.
* Δn(f) takes a strategy's distractors in ``rank`` order (ties in rank broken by entity id).
* One comparison per surface form (:func:`one_per_surface_form`): walking a sentence's list in
  that order, a distractor scored on a string that an earlier distractor of the list was scored on
  (namesakes: two entities labelled alike, or one's alias - a ``mul`` alias included - equal to
  the other's label) is left out and the next one moves up, so one string never counts twice in
  Min@n / Avg@n. The object's namesakes are already out of Ω(f) (§3.3, clause "no shared name").
* Combined strategies (``combine_strategies``) concatenate lists, e.g. Temp+Sem (§3.3) =
  temporal distractors first, then semantic ones not already listed.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from .common import GROUP_KEYS, average_per_fact, candidates_for_prompts

log = logging.getLogger(__name__)


SHORT_LIST_RULES = ("undefined", "available")


def k_of_prompt(
    object_logpl: float, distractor_logpls: Sequence[float], n: int, agg: str, short_lists: str = "undefined"
) -> float:
    """K(f|c) of §3.2 eq. (2) for one cloze sentence: Min@n (``agg="min"``) or Avg@n (``"avg"``).

    ``distractor_logpls`` are log Pl(o*|c) in Δ's rank order; the first ``n`` are used. With
    fewer than ``n`` the value is NaN (undefined, ``short_lists="undefined"``) or computed on
    those that exist (``"available"``). Ties count as failures. NaN when there is no distractor.
    """
    if short_lists not in SHORT_LIST_RULES:
        raise ValueError(f"short_lists {short_lists!r}: use one of {SHORT_LIST_RULES}")
    used = np.asarray(list(distractor_logpls)[:n], dtype=float)
    if used.size == 0 or not np.isfinite(object_logpl):
        return float("nan")
    if used.size < n and short_lists == "undefined":
        return float("nan")
    wins = object_logpl > used
    if agg == "min":
        return float(wins.all())
    if agg == "avg":
        return float(wins.mean())
    raise ValueError(f"unknown aggregation {agg!r}; use 'min' or 'avg'")


def combine_strategies(candidates: pd.DataFrame, combined: Mapping[str, Sequence[str]]) -> pd.DataFrame:
    """Add concatenated strategies, e.g. ``{"temp+sem": ["temp", "sem"]}`` (§3.3 Temp+Sem).

    The parts' distractors are listed in order (each part by rank); an entity already listed by
    an earlier part is skipped. Ranks are renumbered 1..k per fact. A combination whose parts
    are all absent for a fact adds nothing for that fact; a combination with a part absent from
    the whole table is not added (it would duplicate its other parts).
    """
    dis = candidates[candidates["role"] == "distractor"]
    frames = [candidates]
    present = set(dis["strategy"])
    for name, parts in combined.items():
        if not set(parts) <= present:
            # e.g. no temporal distractor anywhere in the suite: Temp+Sem would just repeat Sem.
            continue
        pieces = []
        for order, part in enumerate(parts):
            piece = dis[dis["strategy"] == part].copy()
            piece["_part"] = order
            pieces.append(piece)
        if not pieces:
            continue
        merged = pd.concat(pieces, ignore_index=True)
        if merged.empty:
            continue
        merged = merged.sort_values(["fact_id", "_part", "rank", "entity"], kind="stable")
        merged = merged.drop_duplicates(["fact_id", "entity"], keep="first")
        merged["rank"] = merged.groupby("fact_id").cumcount() + 1
        merged["strategy"] = name
        frames.append(merged.drop(columns="_part"))
    return pd.concat(frames, ignore_index=True)


def _object_scores(ent: pd.DataFrame, prompts: pd.DataFrame, facts: pd.DataFrame) -> pd.DataFrame:
    """log Pl(o|c) of the fact's own object o for each prompt (NaN rows dropped, logged)."""
    base = prompts[["prompt_id", "fact_id"]].merge(facts[["fact_id", "object"]].astype(str), on="fact_id")
    base = base.merge(
        ent[
            [
                "prompt_id",
                "entity",
                "logpl",
                "best_first",
                "first_rank",
                "logpl_noend",
            ]
        ],
        left_on=["prompt_id", "object"],
        right_on=["prompt_id", "entity"],
        how="left",
    )
    missing = base["logpl"].isna().sum()
    if missing:
        log.warning("%d prompt(s) have no score for their object; they get no knowledge value", missing)
    return base.dropna(subset=["logpl"]).rename(columns={"logpl": "obj_logpl", "best_first": "obj_first"})


def _distractor_scores(
    ent: pd.DataFrame,
    prompts: pd.DataFrame,
    candidates: pd.DataFrame,
    correct: pd.DataFrame,
    forms: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """Scored distractors per prompt: prompt_id, entity, strategy, rank, logpl, best_lp, best_first;
    with ``forms`` (the score table's ``prompt_id, entity, form``) one per surface form
    (:func:`one_per_surface_form`)."""
    # per-language lists; ApprOpt's per-sentence lists also carry their prompt_id
    own = ["prompt_id"] if "prompt_id" in candidates.columns else []
    cols = ["fact_id", "entity", "strategy", "rank", "lang", *own]
    dis = candidates.loc[candidates["role"] == "distractor", cols]
    # A valid object is never a distractor (Ω(f), §3.3), even if a retriever listed it.
    dis = dis.merge(correct.assign(_ok=True), on=["fact_id", "entity"], how="left")
    if dis["_ok"].notna().any():
        log.warning("%d distractor row(s) are valid objects; dropped", int(dis["_ok"].notna().sum()))
    dis = dis[dis["_ok"].isna()].drop(columns="_ok")
    rows = candidates_for_prompts(prompts, dis)
    scored = rows.merge(ent, on=["prompt_id", "entity"], how="left")
    unscored = scored["logpl"].isna().sum()
    if unscored:
        log.warning("%d (prompt, distractor) pair(s) have no score; dropped", unscored)
    return one_per_surface_form(scored.dropna(subset=["logpl"]), forms)


def one_per_surface_form(rows: pd.DataFrame, forms: pd.DataFrame | None) -> pd.DataFrame:
    """``rows`` (one per prompt, strategy and distractor) less the namesakes of each list.

    A list is a (prompt_id, strategy) pair read in ``rank`` order, ties by entity. Walking it, a
    distractor scored on a string (``forms``: ``prompt_id, entity, form`` of the score table) that
    a distractor kept before it in the list was scored on is left out: Pl(o*|c) sums o*'s forms
    (eq. 1), so two entities scored on one string are one comparison, and counting both would
    weigh it twice in Min@n / Avg@n. The later one goes, the next distractor moves up (a list
    can end one shorter). Exact strings: "Paris" and "paris" are two continuations with their
    own probabilities. ``forms`` None: every row stays (a caller without the score table).
    """
    if forms is None or rows.empty:
        return rows
    keys = ["prompt_id", "strategy"]
    rows = rows.sort_values([*keys, "rank", "entity"], kind="stable").reset_index(drop=True)
    code = pd.factorize(forms["form"].astype(str))[0]
    named = pd.DataFrame(
        {"prompt_id": forms["prompt_id"].to_numpy(), "entity": forms["entity"].astype(str), "_form": code}
    ).drop_duplicates()
    long = (
        rows[keys + ["entity"]]
        .assign(_row=np.arange(len(rows)), entity=rows["entity"].astype(str))
        .merge(named, on=["prompt_id", "entity"])
    )
    shared = long.duplicated([*keys, "_form"], keep=False).to_numpy()
    if not shared.any():
        return rows
    # Only lists holding a shared string are walked (rare: namesakes).
    lists = long.loc[shared, keys].drop_duplicates()
    walk = long.merge(lists, on=keys).sort_values("_row", kind="stable")
    left_out: list[int] = []
    for _, one in walk.groupby(keys, sort=False):
        seen: set[int] = set()
        for row, strings in one.groupby("_row", sort=True)["_form"]:
            mine = set(strings.tolist())
            if mine & seen:
                left_out.append(int(row))
            else:
                seen |= mine
    log.info(
        "%d (prompt, distractor) pair(s) scored on a string an earlier distractor of the list was "
        "scored on (namesakes) left out: one comparison per surface form",
        len(left_out),
    )
    return rows.drop(index=left_out).reset_index(drop=True)


def knowledge_per_prompt(
    ent: pd.DataFrame,
    prompts: pd.DataFrame,
    candidates: pd.DataFrame,
    facts: pd.DataFrame,
    correct: pd.DataFrame,
    ns: Iterable[int],
    short_lists: str = "undefined",
    forms: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """K(f|c) Min@n and Avg@n for every prompt, strategy and n (§3.2 eq. 2), vectorised.

    Returns columns prompt_id, fact_id, strategy, n, k_min, k_avg, n_used. Equal to
    ``k_of_prompt`` applied prompt by prompt (tested); with ``short_lists="undefined"`` a
    prompt with fewer than n scored distractors has k_min = k_avg = NaN at that n. ``forms``
    (the score table; the metrics stage always passes it): one comparison per surface form
    (:func:`one_per_surface_form`).
    """
    if short_lists not in SHORT_LIST_RULES:
        raise ValueError(f"metrics.short_lists {short_lists!r}: use one of {SHORT_LIST_RULES}")
    obj = _object_scores(ent, prompts, facts)
    dis = _distractor_scores(ent, prompts, candidates, correct, forms)
    frame = dis.merge(obj[["prompt_id", "obj_logpl"]], on="prompt_id")
    cols = ["prompt_id", "fact_id", "strategy", "n", "k_min", "k_avg", "n_used"]
    if frame.empty:
        return pd.DataFrame(columns=cols)
    frame = frame.sort_values(["prompt_id", "strategy", "rank", "entity"], kind="stable").reset_index(
        drop=True
    )
    frame["win"] = (frame["obj_logpl"] > frame["logpl"]).astype(float)
    grouped = frame.groupby(["prompt_id", "strategy"], sort=False)
    frame["pos"] = grouped.cumcount()
    frame["count"] = grouped["win"].transform("size")
    frame["cmin"] = grouped["win"].cummin()
    frame["csum"] = grouped["win"].cumsum()
    out = []
    for n in sorted(set(int(x) for x in ns)):
        last = np.minimum(n, frame["count"]) - 1
        pick = frame[frame["pos"] == last]
        short = (pick["count"] < n).to_numpy() & (short_lists == "undefined")
        out.append(
            pd.DataFrame(
                {
                    "prompt_id": pick["prompt_id"],
                    "fact_id": pick["fact_id"],
                    "strategy": pick["strategy"],
                    "n": n,
                    "k_min": pick["cmin"].mask(short),
                    "k_avg": (pick["csum"] / (pick["pos"] + 1)).mask(short),
                    "n_used": pick["pos"] + 1,
                }
            )
        )
    return pd.concat(out, ignore_index=True)[cols]


def probability_per_prompt(ent: pd.DataFrame, prompts: pd.DataFrame, facts: pd.DataFrame) -> pd.DataFrame:
    """Probability baseline (Table 2): Σ_{λ∈Λ(o)} Pr(λ|c) for each prompt, without the end marker.

    The score table holds log Pr(λ + end | c) and, in ``end_logprob``, the end marker's part;
    ``entity_scores`` turns them into ``logpl_noend``. Unlike Pl(o|c) of eq. (1) no EOS factor
    enters, which would reorder facts by how likely the model stops after o (a score table
    without ``end_logprob`` is refused by the contract check of ``entity_scores``).
    """
    obj = _object_scores(ent, prompts, facts)
    return pd.DataFrame(
        {"prompt_id": obj["prompt_id"], "fact_id": obj["fact_id"], "probability": np.exp(obj["logpl_noend"])}
    )


def first_token_rank(object_first: float, distractor_firsts: Sequence[float], decimals: int = 9) -> int:
    """Rank of o's best first token among the candidates' distinct first tokens (Table 2, Precision@n).

    Candidates whose first token scores the same as o's are taken to share o's first token (same
    token, same probability), so they do not push o down; only strictly better distinct values do.
    """
    values = {round(float(v), decimals) for v in distractor_firsts if np.isfinite(v)}
    target = round(float(object_first), decimals)
    return 1 + sum(v > target for v in values)


def precision_per_prompt(
    topk: pd.DataFrame | None,
    scores: pd.DataFrame,
    prompts: pd.DataFrame,
    facts: pd.DataFrame,
    ns: Iterable[int],
) -> pd.DataFrame:
    """Precision@n (Table 2, reference ``generation.py``): 1[top-n next tokens ∩ Λ(o) ≠ ∅].

    ``topk`` is the next-token table after each prompt (``prompt_id, rank, token``, rank 1 = the
    vocabulary's argmax); Λ(o) is the forms of the fact's object o scored for that prompt
    (``scores``: ``prompt_id, entity, form``). A decoded token matches a name when both are equal
    once surrounding whitespace is stripped (the token keeps its leading space, the name does
    not), so only names that are a single token can match: "New Zealand" never does, even with
    " New" ranked first. NaN when the prompt has no top-k rows, or no match and fewer than n rows
    (the answer is unknown beyond the table).
    """
    cols = ["prompt_id", "fact_id", "n", "precision"]
    if topk is None or topk.empty:
        log.warning("no top-k next-token table: Precision@n (Table 2) needs scoring.topk >= max n")
        return pd.DataFrame(columns=cols)
    base = prompts[["prompt_id", "fact_id"]].merge(facts[["fact_id", "object"]].astype(str), on="fact_id")
    names = base.merge(
        scores[["prompt_id", "entity", "form"]].astype(str),
        left_on=["prompt_id", "object"],
        right_on=["prompt_id", "entity"],
    )
    names["name"] = names["form"].str.strip()
    top = topk[["prompt_id", "rank", "token"]].copy()
    top["name"] = top["token"].astype(str).str.strip()
    hits = top.merge(names[["prompt_id", "name"]].drop_duplicates(), on=["prompt_id", "name"])
    first_hit = hits.groupby("prompt_id")["rank"].min()
    depth = top.groupby("prompt_id")["rank"].max()
    base = base[base["prompt_id"].isin(depth.index)][["prompt_id", "fact_id"]]
    hit = first_hit.reindex(base["prompt_id"]).to_numpy(dtype=float)
    known = depth.reindex(base["prompt_id"]).to_numpy(dtype=float)
    out = []
    for n in sorted(set(int(x) for x in ns)):
        value = (hit <= n).astype(float)
        value[(value == 0) & (known < n)] = np.nan
        out.append(base.assign(n=n, precision=value))
    if not out:
        return pd.DataFrame(columns=cols)
    return pd.concat(out, ignore_index=True)[cols]


def first_token_precision_per_prompt(
    ent: pd.DataFrame,
    prompts: pd.DataFrame,
    candidates: pd.DataFrame,
    facts: pd.DataFrame,
    correct: pd.DataFrame,
    ns: Iterable[int],
) -> pd.DataFrame:
    """``precision_first_token``: 1[o's best first token ranks <= n] — NOT the paper's Precision@n.

    Looser than Table 2: a multi-token name counts through its first token (" New" for "New
    Zealand"), so it measures how early the model commits to o's first token. Column
    ``precision``. With a ``first_rank`` column in the scores (the first token's rank in the whole vocabulary)
    this is exact. Without it the vocabulary is approximated by the suite's candidates (object
    plus the union of all strategies' distractors): see ``first_token_rank``.
    """
    obj = _object_scores(ent, prompts, facts)
    cols = ["prompt_id", "fact_id", "n", "precision"]
    if obj.empty:
        return pd.DataFrame(columns=cols)
    if obj["first_rank"].notna().all():
        ranks = obj.set_index("prompt_id")["first_rank"].astype(float)
    else:
        dis = _distractor_scores(ent, prompts, candidates, correct)
        dis = dis.drop_duplicates(["prompt_id", "entity"])
        firsts = dis.groupby("prompt_id")["best_first"].apply(list)
        ranks = pd.Series(
            [
                first_token_rank(of, firsts.get(pid, []))
                for pid, of in zip(obj["prompt_id"], obj["obj_first"], strict=True)
            ],
            index=obj["prompt_id"],
            dtype=float,
        )
        ranks[obj["obj_first"].isna().to_numpy()] = np.nan
    base = obj[["prompt_id", "fact_id"]]
    out = [
        base.assign(n=int(n), precision=(ranks.reindex(base["prompt_id"]).to_numpy() <= n).astype(float))
        for n in sorted(set(ns))
    ]
    frame = pd.concat(out, ignore_index=True)
    nan_rank = ranks.reindex(frame["prompt_id"]).isna().to_numpy()
    frame.loc[nan_rank, "precision"] = np.nan
    return frame[cols]


#: Measures of the knowledge family that describe the facts K averages (chance: a random ranker's K).
K_BOOKKEEPING = ("n_used", "k_min_chance", "k_avg_chance")


def chance_per_prompt(n_used: pd.Series) -> pd.DataFrame:
    """A random ranker's K(f|c) for a sentence that compared ``n_used`` = m distractors (§3.2 eq. 2).

    A random ranker orders the object and its m distractors uniformly, so each comparison
    1[Pl(o|c) > Pl(o*|c)] holds with probability 1/2 and all m hold together with probability
    1/(m + 1) (the object is first among m + 1): Avg@n's chance is 1/2, Min@n's 1/(m + 1).
    Averaged over the same sentences as K(f) (eq. 3) this is the random ranker's K(f) exactly.
    """
    m = n_used.astype(float)
    return pd.DataFrame(
        {"k_min_chance": 1.0 / (m + 1.0), "k_avg_chance": np.full(len(m), 0.5)}, index=n_used.index
    )


def fact_rule(k: pd.DataFrame, obj: pd.DataFrame, short_lists: str) -> pd.DataFrame:
    """K(f|c) rows with K(f) undefined where §4.2's reference leaves it undefined.

    K(f) is the mean of K(f|c) over the fact's cloze sentences (§3.2 eq. 3). With
    ``short_lists="undefined"`` the reference takes that mean over *all* sentences, so one
    sentence with fewer than n distractors (or none for the strategy) makes K(f) at n undefined
    (DistFactAssessLM ``scripts/optimize_know_evals/optimize.ipynb``: a NaN-propagating mean
    over the sentences' Min/Avg@1..200 curves). Such a fact's rows get NaN in every measure,
    ``n_used`` and chance included, so that those describe exactly the facts and sentences that
    K averages. The sentences counted are the fact's prompts with a scored object, per group.
    ``"available"``: each sentence with a value counts, those without one are left out.
    """
    out = k.copy()
    out[list(K_BOOKKEEPING[1:])] = chance_per_prompt(out["n_used"])
    defined = out["k_min"].notna()
    out.loc[~defined, list(K_BOOKKEEPING)] = np.nan
    if short_lists != "undefined" or out.empty:
        return out
    group = ["fact_id", *GROUP_KEYS]
    sentences = obj.groupby(group, sort=False)["prompt_id"].nunique().rename("_sentences")
    key = [*group, "strategy", "n"]
    have = out.assign(_ok=defined).groupby(key, sort=False)["_ok"].sum().rename("_defined")
    full_rows = have.reset_index().merge(sentences.reset_index(), on=group, how="left")
    full_rows["_all"] = full_rows["_defined"] >= full_rows["_sentences"]
    out = out.merge(full_rows[[*key, "_all"]], on=key, how="left")
    out.loc[~out["_all"], ["k_min", "k_avg", *K_BOOKKEEPING]] = np.nan
    return out.drop(columns="_all")


def knowledge_tables(
    ent: pd.DataFrame,
    prompts: pd.DataFrame,
    candidates: pd.DataFrame,
    facts: pd.DataFrame,
    correct: pd.DataFrame,
    ns: Iterable[int],
    precision_ns: Iterable[int],
    combined: Mapping[str, Sequence[str]] | None = None,
    topk: pd.DataFrame | None = None,
    scores: pd.DataFrame | None = None,
    short_lists: str = "undefined",
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(:func:`knowledge_per_fact`'s table, :func:`dropped_fact_counts`' suite-level rows)."""
    cands = combine_strategies(candidates, combined or {})
    keys = prompts[["prompt_id", *GROUP_KEYS]]
    obj = _object_scores(ent, prompts, facts).merge(keys, on="prompt_id")
    k = knowledge_per_prompt(ent, prompts, cands, facts, correct, ns, short_lists, scores)
    k = k.merge(keys, on="prompt_id")
    k = fact_rule(k, obj, short_lists)
    parts = [average_per_fact(k, ["strategy", "n"], ["k_min", "k_avg", *K_BOOKKEEPING])]
    prob = probability_per_prompt(ent, prompts, facts).merge(keys, on="prompt_id")
    parts.append(average_per_fact(prob, [], ["probability"]))
    if scores is not None:
        prec = precision_per_prompt(topk, scores, prompts, facts, precision_ns).merge(keys, on="prompt_id")
        parts.append(average_per_fact(prec, ["n"], ["precision"]))
    loose = first_token_precision_per_prompt(ent, prompts, candidates, facts, correct, precision_ns)
    loose = loose.rename(columns={"precision": "precision_first_token"}).merge(keys, on="prompt_id")
    parts.append(average_per_fact(loose, ["n"], ["precision_first_token"]))
    return pd.concat(parts, ignore_index=True), dropped_fact_counts(k)


def knowledge_per_fact(
    ent: pd.DataFrame,
    prompts: pd.DataFrame,
    candidates: pd.DataFrame,
    facts: pd.DataFrame,
    correct: pd.DataFrame,
    ns: Iterable[int],
    precision_ns: Iterable[int],
    combined: Mapping[str, Sequence[str]] | None = None,
    topk: pd.DataFrame | None = None,
    scores: pd.DataFrame | None = None,
    short_lists: str = "undefined",
) -> pd.DataFrame:
    """K(f) (§3.2 eq. 3) Min@n/Avg@n per strategy, plus the Table 2 baselines, per fact and group.

    Measures: ``k_min``, ``k_avg`` (strategy, n; absent where K(f) at n is undefined, see
    :func:`fact_rule`), ``n_used`` (mean distractors compared, up to n) and ``k_min_chance`` /
    ``k_avg_chance`` (a random ranker's K, :func:`chance_per_prompt`), these three over exactly
    the facts and sentences K averages; ``probability``, ``precision`` (n; needs ``topk`` and
    ``scores``) and ``precision_first_token`` (n), the last three with strategy "".
    """
    args = (ent, prompts, candidates, facts, correct, ns, precision_ns, combined, topk, scores, short_lists)
    return knowledge_tables(*args)[0]


def dropped_fact_counts(per_prompt: pd.DataFrame) -> pd.DataFrame:
    """Facts whose K(f) at n is undefined (a sentence with fewer than n distractors, §3.3, §4.2),
    per strategy, n and group: suite-level rows ``k_dropped_facts`` (a count, 0 included) in the
    DATASET_COLUMNS layout.

    ``per_prompt``: :func:`fact_rule`'s rows (a fact listed at (strategy, n) has rows there; it
    was dropped when none of them kept a ``k_min``).
    """
    from .common import conform_dataset_table

    if per_prompt.empty:
        return conform_dataset_table(pd.DataFrame())
    keys = ["strategy", "n", *GROUP_KEYS]
    per_fact = per_prompt.groupby(["fact_id", *keys], sort=False)["k_min"].count().reset_index()
    per_fact["dropped"] = (per_fact["k_min"] == 0).astype(float)
    rows = per_fact.groupby(keys, sort=True)["dropped"].sum().reset_index()
    return conform_dataset_table(rows.rename(columns={"dropped": "value"}).assign(measure="k_dropped_facts"))
