"""Score a suite: every prompt against every form (in its language) of every candidate of its fact.

Pairs come from ``prompts`` x ``candidates`` (on ``fact_id``) x ``forms`` (on ``entity, lang``);
the scored text is ``context + text`` and the continuation is the form with one leading space
(none for languages written without spaces) - docs/contracts.md. Scores come from the request
cache when present, else from the packed engine (:mod:`factprobe.scoring.loglik`).
"""

from __future__ import annotations

import logging
from collections import defaultdict

import numpy as np
import pandas as pd

from factprobe.hashing import stable_hash
from factprobe.scoring.cache import RequestCache, request_key
from factprobe.scoring.loglik import combine, end_logprobs, score_requests, tokenize_pairs, topk_first_tokens
from factprobe.scoring.models import LoadedModel

log = logging.getLogger(__name__)

NO_SPACE_LANGS = ("zh", "ja", "th", "lo", "km", "my", "bo")
SCORE_COLUMNS = ["prompt_id", "entity", "form", "logprob", "n_tokens", "first_logprob", "end_logprob"]


def _require(frame: pd.DataFrame, columns: list[str], name: str) -> None:
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise ValueError(f"{name}: missing column(s) {missing}; see docs/contracts.md")


def shard_of(prompt_id: str, shards: int) -> int:
    """Shard of a prompt: a stable hash, so the split does not depend on row order."""
    return stable_hash("score-shard", prompt_id) % shards


def build_pairs(
    prompts: pd.DataFrame,
    candidates: pd.DataFrame,
    forms: pd.DataFrame,
    no_space_langs: tuple[str, ...] = NO_SPACE_LANGS,
) -> pd.DataFrame:
    """All (prompt, candidate entity, form) pairs with their ``prompt_text`` and ``continuation``.

    A candidate without any form in the prompt's language cannot be scored: it is dropped and
    counted in the log (the metrics see it as missing, not as a zero).
    """
    _require(prompts, ["prompt_id", "fact_id", "lang", "text", "context"], "prompts")
    _require(candidates, ["fact_id", "entity"], "candidates")
    _require(forms, ["entity", "lang", "form"], "forms")
    p = prompts[["prompt_id", "fact_id", "lang", "text", "context"]].copy()
    p["context"] = p["context"].fillna("")
    cand = candidates[["fact_id", "entity"]].drop_duplicates()
    f = forms[["entity", "lang", "form"]].dropna().drop_duplicates()
    f = f[f["form"].str.strip() != ""]
    pairs = p.merge(cand, on="fact_id", how="inner")
    with_forms = pairs.merge(f, on=["entity", "lang"], how="left")
    lost = with_forms["form"].isna()
    if lost.any():
        log.warning(
            "%d (prompt, candidate) combinations have no form in the prompt's language and are not scored",
            int(lost.sum()),
        )
    pairs = with_forms[~lost].copy()
    pairs["prompt_text"] = pairs["context"] + pairs["text"]
    space = np.where(pairs["lang"].isin(list(no_space_langs)), "", " ")
    pairs["continuation"] = space + pairs["form"].astype(str)
    pairs = pairs.drop_duplicates(["prompt_id", "entity", "form"]).reset_index(drop=True)
    log.info(
        "%d pairs: %d prompts x candidates x forms (%d distinct prompts)",
        len(pairs),
        len(pairs),
        pairs["prompt_id"].nunique(),
    )
    return pairs


def score_texts(
    loaded: LoadedModel,
    prompt_texts: list[str],
    continuations: list[str],
    end: str = "eos",
    cache: RequestCache | None = None,
    token_budget: int = 4096,
    progress: bool = True,
    with_end: bool = False,
) -> tuple[np.ndarray, ...]:
    """(logprob, n_tokens, first_logprob) of each (prompt text, continuation) pair, plus
    ``end_logprob`` when ``with_end``.

    ``end_logprob`` is the end marker's share of ``logprob`` (0 for ``end="none"``), so
    ``logprob - end_logprob`` is log Pr(form | c) (distractors paper Table 2, Probability).

    Cached pairs are read, the rest tokenized jointly and scored; each finished pair is written
    to the cache as soon as all its requests are done, so a killed run resumes.
    """
    model_id, revision, dtype = loaded.cache_identity
    uniq = sorted(set(zip(prompt_texts, continuations, strict=True)))
    keys = [request_key(model_id, revision, dtype, p, f"{c}\x00end={end}") for p, c in uniq]
    if cache is None:
        cache = RequestCache(None)
    found, lp, nt, fl = cache.lookup(keys)
    el = cache.lookup_end(keys)
    found &= np.isfinite(el)
    todo = np.flatnonzero(~found)
    log.info("%d distinct pairs: %d cached, %d to compute", len(uniq), int(found.sum()), len(todo))
    if len(todo):
        requests, plans = tokenize_pairs(
            loaded.tokenizer, [uniq[i][0] for i in todo], [uniq[i][1] for i in todo], end
        )
        waiting = np.array([1 if plan.minus is None else 2 for plan in plans])
        pairs_of_request: dict[int, list[int]] = defaultdict(list)
        for j, plan in enumerate(plans):
            pairs_of_request[plan.plus].append(j)
            if plan.minus is not None:
                pairs_of_request[plan.minus].append(j)
        req_lp = np.zeros(len(requests))
        req_first = np.full(len(requests), np.nan)
        req_last = np.full(len(requests), np.nan)

        def finished(done, total, first):
            req_lp[done] = total
            req_first[done] = first
            ready = []
            for r in done:
                for j in pairs_of_request[int(r)]:
                    waiting[j] -= 1
                    if waiting[j] == 0:
                        ready.append(j)
            if ready:
                sub = [plans[j] for j in ready]
                v_lp, v_nt, v_fl = combine(sub, req_lp, req_first)
                cache.add([keys[todo[j]] for j in ready], v_lp, v_nt, v_fl, end_logprobs(sub, req_last, end))

        score_requests(
            loaded.model,
            requests,
            token_budget=token_budget,
            progress=progress,
            on_batch=finished,
            last_out=req_last,
        )
        cache.flush()
        c_lp, c_nt, c_fl = combine(plans, req_lp, req_first)
        lp[todo], nt[todo], fl[todo] = c_lp, c_nt, c_fl
        el[todo] = end_logprobs(plans, req_last, end)
    where = {pair: i for i, pair in enumerate(uniq)}
    idx = np.array([where[pair] for pair in zip(prompt_texts, continuations, strict=True)], dtype=np.int64)
    if len(idx) == 0:
        empty = (np.zeros(0), np.zeros(0, dtype=np.int32), np.zeros(0), np.zeros(0))
        return empty if with_end else empty[:3]
    return (lp[idx], nt[idx], fl[idx], el[idx]) if with_end else (lp[idx], nt[idx], fl[idx])


def score_pairs(
    loaded: LoadedModel,
    pairs: pd.DataFrame,
    end: str = "eos",
    cache: RequestCache | None = None,
    token_budget: int = 4096,
    progress: bool = True,
) -> pd.DataFrame:
    """The score table (docs/contracts.md ``score_suite``) of the pairs from :func:`build_pairs`."""
    lp, nt, fl, el = score_texts(
        loaded,
        pairs["prompt_text"].tolist(),
        pairs["continuation"].tolist(),
        end=end,
        cache=cache,
        token_budget=token_budget,
        progress=progress,
        with_end=True,
    )
    out = pairs[["prompt_id", "entity", "form", "fact_id", "lang"]].copy()
    out["logprob"] = lp.astype(np.float64)
    out["n_tokens"] = nt.astype(np.int32)
    out["first_logprob"] = fl.astype(np.float64)
    out["end_logprob"] = el.astype(np.float64)
    return out[SCORE_COLUMNS + ["fact_id", "lang"]]


def topk_table(loaded: LoadedModel, prompts: pd.DataFrame, k: int, token_budget: int = 4096) -> pd.DataFrame:
    """Top-``k`` first-token predictions per prompt: ``prompt_id, rank (1..k), token_id, token, logprob``.

    The next-token distribution after ``context + text`` (Precision@n / Probability baselines of
    the distractors paper). ``k = 0`` gives an empty table with these columns.
    """
    columns = {"prompt_id": "str", "rank": "int32", "token_id": "int64", "token": "str", "logprob": "float64"}
    if k <= 0 or prompts.empty:
        return pd.DataFrame({c: pd.Series(dtype=t) for c, t in columns.items()})
    texts = (prompts["context"].fillna("") + prompts["text"]).tolist()
    top = topk_first_tokens(loaded.model, loaded.tokenizer, texts, k, token_budget)
    rows = []
    for pid, (ids, lps) in zip(prompts["prompt_id"], top, strict=True):
        for rank, (tok, lp) in enumerate(zip(ids, lps, strict=True), start=1):
            rows.append((pid, rank, tok, loaded.tokenizer.decode([tok]), lp))
    return pd.DataFrame(rows, columns=list(columns)).astype(columns)


def first_token_ranks(scores: pd.DataFrame, topk: pd.DataFrame, tol: float = 1e-4) -> np.ndarray:
    """Rank of each form's first token in the whole-vocabulary next-token distribution.

    Precision@n (distractors paper, Table 2) asks whether o's first token is among the model's
    n most probable next tokens. The top-k table holds, per prompt, the k most probable tokens
    of the full vocabulary, so a form's first token ranks 1 + #(top-k tokens strictly more
    probable than it). When all k are more probable the rank is only known to exceed k and is
    ``inf``; Precision@n is therefore exact for n <= k (checked against ``metrics.precision_ns``
    at workflow start). ``tol`` absorbs float noise between the two forward passes that produced
    ``first_logprob`` and the top-k log-probabilities.
    """
    if scores.empty:
        return np.empty(0)
    k = topk.groupby("prompt_id")["logprob"].size()
    pairs = scores[["prompt_id", "first_logprob"]].reset_index(drop=True).reset_index()
    merged = pairs.merge(topk[["prompt_id", "logprob"]], on="prompt_id", how="left")
    better = (merged["logprob"] > merged["first_logprob"] + tol).groupby(merged["index"]).sum()
    ranks = better.reindex(pairs["index"]).to_numpy(dtype=float) + 1
    known = k.reindex(pairs["prompt_id"]).fillna(0).to_numpy()
    ranks[ranks > known] = np.inf
    ranks[pairs["first_logprob"].isna().to_numpy()] = np.nan
    return ranks
