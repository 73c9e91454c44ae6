"""Score a suite: every prompt against every form (in its language) of every candidate of its fact.

Pairs come from ``prompts`` x ``candidates`` (on ``fact_id``) x ``forms`` (on ``entity, lang``);
the scored text is ``context + text`` and the continuation is the form with one leading space
(none for languages written without spaces) - docs/contracts.md. In sentence mode (PROBELM §4.1,
suite kinds in ``scoring.sentence_kinds``) the whole ``sentence`` (prompt text + continuation) is
scored from its first token instead, so ``logprob / n_tokens`` is minus the log perplexity of the
scenario sentence. Scores come from a model of
:mod:`factprobe.lm` (a :class:`~factprobe.lm.CachingLM` reads the request cache first).

Scenario sentences (sentence mode):

* **Whole sentence:** the continuation is the form followed by the prompt's ``ending``, the
  template's text after ``[Y]`` (e.g. "."), so "Marcelo is a citizen of Spain." is scored with
  its final period, as the released scenarios are (``ending=True`` of :func:`build_pairs`).
* **One form per entity** (``scoring.sentence_forms``): ``label`` (default) scores each
  scenario once, with the entity's label (as the release has one text per entity); ``all``
  scores the label and every alias, and the measures take the best form.
* **First token** (``scoring.sentence_first_token``): a sentence is the continuation of an empty
  context, which the encoding rule (:mod:`factprobe.lm.encoding`) fills with the tokenizer's
  BOS, or the EOS token in its place (GPT-2, Pythia: no BOS), so the first token is scored
  conditioned on that token (``conditioned``, default). The paper does not say; ``unscored``
  leaves the first token's log-probability out of the sum and of ``n_tokens`` (the perplexity
  of tokens 2..n, as a loss over ``labels = input_ids`` gives; the later tokens still see the
  BOS/EOS position).
"""

from __future__ import annotations

import logging
from collections.abc import Collection

import numpy as np
import pandas as pd

from factprobe import contracts
from factprobe.contracts import is_subject_side
from factprobe.distractors.swaps import SENTENCE_FORMS, label_forms
from factprobe.hashing import stable_hash
from factprobe.lm import LM, NO_SPACE_LANGS, LoglikRequest, SentenceRequest, TopkRequest
from factprobe.lm.encoding import continuation_text

log = logging.getLogger(__name__)


def shard_of(prompt_id: str, shards: int) -> int:
    """Shard of a prompt: a stable hash, so the split does not depend on row order."""
    return stable_hash("score-shard", prompt_id) % shards


#: scoring.sentence_first_token: whether a sentence's first token counts in its score.
SENTENCE_FIRST_TOKEN = ("conditioned", "unscored")


def endings(prompts: pd.DataFrame) -> pd.Series:
    """The prompts' ``ending`` (text after the object slot), "" where absent."""
    if "ending" not in prompts.columns:
        return pd.Series("", index=prompts.index, dtype=object)
    return prompts["ending"].fillna("").astype(str)


def swap_pairs(
    swaps: pd.DataFrame, no_space_langs: Collection[str] = NO_SPACE_LANGS, ending: bool = False
) -> pd.DataFrame:
    """The pairs of the subject-swap prompts (``subject_swaps``, :mod:`factprobe.distractors.swaps`):
    each is scored once, its own sentence ``context + text`` followed by the fact's object label
    (and, with ``ending``, the prompt's ending; PROBELM §4.1); the pair's ``entity`` and ``form`` are the subject
    filled into the subject slot, what the group of ``group_prompt_id`` ranks."""
    cols = [
        "prompt_id",
        "fact_id",
        "lang",
        "entity",
        "form",
        "prompt_text",
        "continuation",
        "context",
        "text",
    ]
    if swaps is None or swaps.empty:
        return pd.DataFrame(columns=cols)
    contracts.check(swaps, "subject_swaps", "subject_swaps")
    pairs = swaps.rename(columns={"subject": "entity", "subject_form": "form"})
    pairs["context"] = pairs["context"].fillna("")
    pairs["prompt_text"] = pairs["context"] + pairs["text"]
    ends = pairs["ending"].fillna("").astype(str) if ending else [""] * len(pairs)
    pairs["continuation"] = [
        continuation_text(form, lang, no_space_langs) + end
        for form, lang, end in zip(pairs["object_form"].astype(str), pairs["lang"], ends, strict=True)
    ]
    return pairs[cols].reset_index(drop=True)


def _prompt_candidates(prompts: pd.DataFrame, candidates: pd.DataFrame) -> pd.DataFrame:
    """Each prompt with every candidate of its fact. A candidate with a prompt_id (ApprOpt's
    per-sentence list, distractors paper §3.3) is scored on that prompt only; one without (null)
    on every prompt of its fact."""
    own = ["prompt_id"] if "prompt_id" in candidates.columns else []
    cand = candidates[["fact_id", "entity", *own]].drop_duplicates()
    pairs = prompts.merge(cand, on="fact_id", how="inner", suffixes=("", "_cand"))
    if own:
        pairs = pairs[pairs["prompt_id_cand"].isna() | (pairs["prompt_id_cand"] == pairs["prompt_id"])]
        pairs = pairs.drop(columns="prompt_id_cand").drop_duplicates(["prompt_id", "entity"])
    return pairs


def _formed(pairs: pd.DataFrame, forms: pd.DataFrame) -> pd.DataFrame:
    """One row per form of each pair's candidate in the prompt's language; a pair without one is
    dropped and counted in the log."""
    f = forms[["entity", "lang", "form"]].dropna().drop_duplicates()
    f = f[f["form"].str.strip() != ""]
    with_forms = pairs.merge(f, on=["entity", "lang"], how="left")
    lost = with_forms["form"].isna()
    if lost.any():
        log.warning(
            "%d (prompt, candidate) combinations have no form in the prompt's language and are not scored",
            int(lost.sum()),
        )
    return with_forms[~lost].copy()


def build_pairs(
    prompts: pd.DataFrame,
    candidates: pd.DataFrame,
    forms: pd.DataFrame,
    no_space_langs: Collection[str] = NO_SPACE_LANGS,
    swaps: pd.DataFrame | None = None,
    ending: bool = False,
    sentence_forms: str = "all",
) -> pd.DataFrame:
    """All (prompt, candidate entity, form) pairs with their ``prompt_text`` and ``continuation``.

    A candidate without any form in the prompt's language cannot be scored: it is dropped and
    counted in the log (the metrics see it as missing, not as a zero). Subject-side alternatives
    never fill the object slot: they are the subjects of the ``swaps`` prompts (sentence mode,
    ``subject_swaps``; :func:`swap_pairs`), whose pairs are added; without them they are left out.
    Sentence mode's scenario settings (module docstring): ``ending`` appends each prompt's
    ``ending`` to the continuation; ``sentence_forms="label"`` scores one form per entity.
    """
    if sentence_forms not in SENTENCE_FORMS:
        raise ValueError(f"scoring.sentence_forms {sentence_forms!r}: use one of {SENTENCE_FORMS}")
    contracts.check(prompts, "prompts", "prompts", ["prompt_id", "fact_id", "lang", "text", "context"])
    contracts.check(candidates, "candidates", "candidates", ["fact_id", "entity"])
    contracts.check(forms, "forms", "forms", ["entity", "lang", "form"])
    if sentence_forms == "label":
        forms = label_forms(forms)
    p = prompts[["prompt_id", "fact_id", "lang", "text", "context"]].copy()
    p["context"] = p["context"].fillna("")
    p["ending"] = endings(prompts) if ending else ""
    subject_side = is_subject_side(candidates)
    if subject_side.any() and swaps is None:
        log.info(
            "%d subject-side alternative(s) left out: they need subject-swapped sentences",
            int(subject_side.sum()),
        )
    pairs = _formed(_prompt_candidates(p, candidates[~subject_side]), forms)
    pairs["prompt_text"] = pairs["context"] + pairs["text"]
    pairs["continuation"] = [
        continuation_text(form, lang, no_space_langs) + end
        for form, lang, end in zip(pairs["form"].astype(str), pairs["lang"], pairs["ending"], strict=True)
    ]
    pairs = (
        pairs.drop(columns="ending").drop_duplicates(["prompt_id", "entity", "form"]).reset_index(drop=True)
    )
    if swaps is not None:
        swapped = swap_pairs(swaps, no_space_langs, ending)
        log.info("%d subject-swap pairs (PROBELM Algorithm 1)", len(swapped))
        pairs = pd.concat([pairs, swapped[pairs.columns.intersection(swapped.columns)]], ignore_index=True)
    log.info(
        "%d pairs: %d prompts x candidates x forms (%d distinct prompts)",
        len(pairs),
        len(pairs),
        pairs["prompt_id"].nunique(),
    )
    return pairs


def score_pairs(
    lm: LM,
    pairs: pd.DataFrame,
    progress: bool = True,
    sentence: bool = False,
    first_token: str = "conditioned",
) -> pd.DataFrame:
    """The score table (docs/contracts.md ``score_suite``) of the pairs from :func:`build_pairs`.

    ``sentence=False``: log P(continuation + end | prompt). ``sentence=True`` (PROBELM §4.1): log
    P(sentence + end) of the whole scenario sentence (prompt text + continuation) from its first token,
    with ``n_tokens`` its token count; ``first_logprob`` is then the sentence's first token's.
    ``first_token="unscored"`` (sentence mode): the first token is left out of ``logprob`` and
    ``n_tokens`` (module docstring); a one-token sentence keeps it (nothing else to score).
    """
    if first_token not in SENTENCE_FIRST_TOKEN:
        raise ValueError(f"scoring.sentence_first_token {first_token!r}: use one of {SENTENCE_FIRST_TOKEN}")
    if sentence:
        texts = (pairs["prompt_text"] + pairs["continuation"]).tolist()
        uniq_texts = sorted(set(texts))
        scored = lm.sentence_loglikelihood([SentenceRequest(s) for s in uniq_texts], progress=progress)
        results = dict(zip(uniq_texts, scored, strict=True))
        requests = texts
    else:
        requests = [
            LoglikRequest(p, c)
            for p, c in zip(pairs["prompt_text"].tolist(), pairs["continuation"].tolist(), strict=True)
        ]
        uniq = sorted(set(requests), key=lambda r: (r.context, r.continuation))
        results = dict(zip(uniq, lm.loglikelihood(uniq, progress=progress), strict=True))
    out = pairs[["prompt_id", "entity", "form", "fact_id", "lang"]].copy()
    out["logprob"] = np.array([results[r].logprob for r in requests], dtype=np.float64)
    out["n_tokens"] = np.array([results[r].n_tokens for r in requests], dtype=np.int32)
    out["first_logprob"] = np.array([results[r].first_logprob for r in requests], dtype=np.float64)
    out["end_logprob"] = np.array([results[r].end_logprob for r in requests], dtype=np.float64)
    if sentence and first_token == "unscored":
        drop = out["n_tokens"] > 1
        out.loc[drop, "logprob"] -= out.loc[drop, "first_logprob"]
        out.loc[drop, "n_tokens"] -= 1
    return out[contracts.columns("score_shard")]


def topk_table(lm: LM, prompts: pd.DataFrame, k: int) -> pd.DataFrame:
    """Top-``k`` first-token predictions per prompt: ``prompt_id, rank (1..k), token_id, token, logprob``.

    The next-token distribution after ``context + text`` (Precision@n / Probability baselines of
    the distractors paper). ``k = 0`` gives an empty table with these columns.
    """
    columns = {"prompt_id": "str", "rank": "int32", "token_id": "int64", "token": "str", "logprob": "float64"}
    if k <= 0 or prompts.empty:
        return pd.DataFrame({c: pd.Series(dtype=t) for c, t in columns.items()})
    texts = (prompts["context"].fillna("") + prompts["text"]).tolist()
    top = lm.topk([TopkRequest(text, k) for text in texts])
    rows = []
    for pid, result in zip(prompts["prompt_id"], top, strict=True):
        for rank, row in enumerate(
            zip(result.token_ids, result.tokens, result.logprobs, strict=True), start=1
        ):
            rows.append((pid, rank, *row))
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
