"""Generation mode for BELIEF-ICL (belief-myriadlama §3.2): greedy answers and sampled confidence.

For each prompt: one greedy continuation (``sample = 0``) and ``m`` multinomial samples
(``sample = 1..m``, full vocabulary, temperature 1, no top-k/top-p), each ending at the first line
break (few-shot examples are one per line) or EOS (:meth:`factprobe.lm.HFCausalLM.generate`).
Samples are seeded by ``stable_hash(prompt_id)``, so a prompt's samples do not depend on batch
composition. Answers are matched to gold objects in :mod:`factprobe.metrics.belief`.

Which prompts get the samples: every prompt, or (``scoring.confidence_prompts``) a sample of one
prompt per (subject, relation) pair as §3.2 does ("We sample 10K prompts from 10K unique
subject-relation pairs and only use these 10K prompts for answer sampling"):
:func:`confidence_sample`. Every prompt keeps its greedy answer (Acc@1, Consist).

A suite with ``generate: greedy`` gets ``samples = 0``: the greedy continuation alone, which the
distractors paper's ROUGE-L and BERTScore baselines read (:mod:`factprobe.metrics.overlap`).
A suite with ``generate: beams`` gets B(c) instead (distractors paper Table 2, §4.2): the best
sequences of a beam search per width of ``scoring.beam_widths`` (:func:`beam_answers`), each
prompt's search adding at most its object's longest form + :data:`BEAM_SLACK` tokens
(:func:`beam_limits`, the reference's length rule) instead of ``scoring.max_new_tokens``.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Mapping

import pandas as pd

from factprobe.hashing import stable_hash
from factprobe.lm import LM, BeamRequest, GenerateRequest
from factprobe.lm.encoding import NO_SPACE_LANGS, continuation_text, tokenize_pairs

log = logging.getLogger(__name__)

#: Prompt attributes a confidence sample is drawn within: BELIEF's prompt sets
#: (:data:`factprobe.metrics.belief.BELIEF_KEYS`), one Ovconf per language, verbalization and setting.
SAMPLE_KEYS = ("lang", "verbalization", "shots")


def pair_of(fact_ids: pd.Series) -> pd.Series:
    """The (subject, relation) pair ``"{subject}|{property}"`` of each fact id
    ``"{subject}|{property}|{object}"`` (docs/contracts.md); an id without "|" is its own pair."""
    codes, unique = pd.factorize(fact_ids.astype(str))  # split each distinct fact id once
    pairs = pd.Index(unique).str.rsplit("|", n=1).str[0]
    return pd.Series(pairs.to_numpy(dtype=object)[codes], index=fact_ids.index)


def confidence_sample(
    prompts: pd.DataFrame, n_pairs: int | None, seed: str = "belief-confidence"
) -> set[str]:
    """Ids of the prompts that get BELIEF-ICL's multinomial samples (§3.2); ``None``: every prompt.

    Within each :data:`SAMPLE_KEYS` group: the ``n_pairs`` pairs first in the order of
    ``stable_hash(seed, pair)`` (so every context setting samples the same pairs where it has
    them), and one prompt per pair: index ``stable_hash(seed, pair, *group) mod |P_t|`` of the
    pair's prompts sorted by id. Prompts repeating an earlier prompt's ``context + text`` within
    the pair (an N-M pair's facts) are not candidates, as the metrics keep only the first
    (:func:`factprobe.metrics.belief._pairs`). Independent of row order and of sharding.
    """
    ids = prompts["prompt_id"].astype(str)
    if n_pairs is None:
        return set(ids)
    frame = pd.DataFrame({"prompt_id": ids, "pair": pair_of(prompts["fact_id"])})
    for key in SAMPLE_KEYS:
        frame[key] = prompts[key].fillna("").astype(str) if key in prompts.columns else ""
    text = prompts["text"].fillna("").astype(str) if "text" in prompts.columns else ids
    frame["_text"] = (
        prompts["context"].fillna("").astype(str) if "context" in prompts.columns else ""
    ) + text
    frame = frame.sort_values("prompt_id").drop_duplicates(["pair", *SAMPLE_KEYS, "_text"])
    rank = {pair: stable_hash(seed, pair) for pair in frame["pair"].unique()}
    frame = frame.assign(_rank=frame["pair"].map(rank)).sort_values(["_rank", "pair", "prompt_id"])
    chosen: set[str] = set()
    for group, rows in frame.groupby(list(SAMPLE_KEYS), sort=True):
        pairs = set(rows["pair"].drop_duplicates().head(n_pairs))
        for pair, members in rows[rows["pair"].isin(pairs)].groupby("pair", sort=False)["prompt_id"]:
            members = members.tolist()
            chosen.add(members[stable_hash(seed, pair, *group) % len(members)])
    return chosen


def generate_answers(
    lm: LM,
    prompts: pd.DataFrame,
    samples: int = 10,
    max_new_tokens: int = 12,
    progress: bool = True,
    sample_ids: set[str] | None = None,
) -> pd.DataFrame:
    """Greedy + ``samples`` sampled answers per prompt: ``prompt_id, sample, text, logprob``.

    ``prompts`` needs ``prompt_id, text`` and optionally ``context`` (the input is context + text).
    ``logprob`` is the summed log-probability of the answer's tokens up to and including the line
    break or EOS that ended it. With ``sample_ids`` (:func:`confidence_sample`) only those prompts
    get samples; the others get their greedy answer alone.
    """
    ids = prompts["prompt_id"].tolist()
    context = prompts["context"].fillna("") if "context" in prompts.columns else ""
    texts = (context + prompts["text"]).tolist()
    requests = [GenerateRequest(t, max_new_tokens) for t in texts]
    drawn = [j for j, i in enumerate(ids) if sample_ids is None or str(i) in sample_ids] if samples else []
    requests += [
        GenerateRequest(texts[j], max_new_tokens, samples, stable_hash("belief-sample", ids[j]) % (2**63))
        for j in drawn
    ]
    answers = lm.generate(requests, progress=progress)
    rows = [(ids[i], 0, a.text, a.logprob) for i, (a,) in enumerate(answers[: len(ids)])]
    for j, sampled in zip(drawn, answers[len(ids) :], strict=True):
        rows += [(ids[j], k, a.text, a.logprob) for k, a in enumerate(sampled, start=1)]
    frame = pd.DataFrame(rows, columns=["prompt_id", "sample", "text", "logprob"])
    frame["sample"] = frame["sample"].astype("int32")
    log.info(
        "generated %d answers for %d prompts (%d samples each for %d of them)",
        len(frame),
        len(ids),
        samples,
        len(drawn),
    )
    return frame.sort_values(["prompt_id", "sample"]).reset_index(drop=True)


#: §4.2: "the beam width parameter is varied in {1, 2, 5, 10, 20, 30, 50, 100}" (ROUGE-L, BERTScore).
BEAM_GRID = (1, 2, 5, 10, 20, 30, 50, 100)


#: Tokens a B(c) search may add beyond the object's longest form: the reference generates at most
#: "longest name + 5" tokens per cloze sentence (DistFactAssessLM, ``src/know/generation.py``).
BEAM_SLACK = 5


def object_continuations(
    prompts: pd.DataFrame,
    facts: pd.DataFrame,
    forms: pd.DataFrame,
    no_space_langs: Collection[str] = NO_SPACE_LANGS,
) -> pd.DataFrame:
    """Λ(o) per prompt as scoring places it: ``prompt_id, prompt_text, continuation`` for every
    non-blank form of the fact's object (``facts.object``) in the prompt's language, after the
    prompt (context + text) as :func:`factprobe.scoring.suite.build_pairs` puts a candidate form."""
    p = prompts[["prompt_id", "fact_id", "lang", "text"]].copy()
    p["prompt_text"] = (prompts["context"].fillna("") if "context" in prompts.columns else "") + p["text"]
    p = p.merge(facts[["fact_id", "object"]].drop_duplicates("fact_id"), on="fact_id", how="left")
    f = forms[["entity", "lang", "form"]].dropna().drop_duplicates()
    f = f[f["form"].astype(str).str.strip() != ""]
    named = p.merge(f, left_on=["object", "lang"], right_on=["entity", "lang"])
    named["continuation"] = [
        continuation_text(form, lang, no_space_langs)
        for form, lang in zip(named["form"].astype(str), named["lang"], strict=True)
    ]
    return named[["prompt_id", "prompt_text", "continuation"]].reset_index(drop=True)


def beam_limits(
    tokenizer,
    prompts: pd.DataFrame,
    facts: pd.DataFrame,
    forms: pd.DataFrame,
    no_space_langs: Collection[str] = NO_SPACE_LANGS,
    fallback: int = 12,
) -> dict[str, int]:
    """Per prompt id, the most tokens its B(c) search adds: the token count of its object's longest
    form (:func:`object_continuations`) + :data:`BEAM_SLACK`, as the reference bounds each cloze
    sentence's beam search (distractors paper §4.2). Forms are counted as scoring encodes them
    after the prompt (:func:`factprobe.lm.encoding.tokenize_pairs`, no end marker): with their
    leading space and the model's own merges, without BOS. (The reference encodes the names
    alone, with no leading space and, for tokenizers that add one, with BOS: a token more or
    less on some names.) A prompt whose object has no form in its language gets ``fallback``
    (``scoring.max_new_tokens``); it has no name to compare B(c) with."""
    named = object_continuations(prompts, facts, forms, no_space_langs)
    limits = dict.fromkeys(prompts["prompt_id"].astype(str), int(fallback))
    if not named.empty:
        _, plans = tokenize_pairs(
            tokenizer, named["prompt_text"].tolist(), named["continuation"].tolist(), "none"
        )
        counts = pd.Series([plan.n_tokens for plan in plans], index=named["prompt_id"].astype(str))
        limits.update((pid, int(n) + BEAM_SLACK) for pid, n in counts.groupby(level=0).max().items())
    missing = len(limits) - named["prompt_id"].nunique()
    if missing:
        log.warning(
            "%d prompt(s) have no form of their object in their language: their beams stop after "
            "scoring.max_new_tokens = %d tokens",
            missing,
            fallback,
        )
    return limits


def beam_answers(
    lm: LM,
    prompts: pd.DataFrame,
    widths: list[int],
    max_new_tokens: int = 12,
    progress: bool = True,
    limits: Mapping[str, int] | None = None,
) -> pd.DataFrame:
    """B(c) per prompt and beam width: ``prompt_id, sample, text, logprob, beam_width``, where
    ``sample`` is the sequence's rank in its beam (0 = best) and ``beam_width`` the search's width
    (distractors paper Table 2; one search per width, as the reference runs one per grid value).
    The input is context + text; a sequence ends at EOS (counted in its log-probability) or after
    the prompt's ``limits`` entry (:func:`beam_limits`) of tokens, ``max_new_tokens`` without
    ``limits``."""
    ids = prompts["prompt_id"].tolist()
    context = prompts["context"].fillna("") if "context" in prompts.columns else ""
    texts = (context + prompts["text"]).tolist()
    if limits is None:
        steps = [int(max_new_tokens)] * len(ids)
    else:
        absent = [pid for pid in ids if str(pid) not in limits]
        if absent:
            raise ValueError(f"beam_answers: no token limit for {len(absent)} prompt(s), e.g. {absent[0]!r}")
        steps = [int(limits[str(pid)]) for pid in ids]
    requests = [BeamRequest(t, w, n) for w in widths for t, n in zip(texts, steps, strict=True)]
    found = lm.beams(requests, progress=progress)
    rows = []
    for request, pid, hyps in zip(requests, ids * len(widths), found, strict=True):
        rows += [(pid, rank, a.text, a.logprob, request.width) for rank, a in enumerate(hyps)]
    frame = pd.DataFrame(rows, columns=["prompt_id", "sample", "text", "logprob", "beam_width"])
    frame = frame.astype({"sample": "int32", "beam_width": "int32"})
    log.info("beam search: %d sequences for %d prompts, widths %s", len(frame), len(ids), widths)
    return frame.sort_values(["prompt_id", "beam_width", "sample"]).reset_index(drop=True)
