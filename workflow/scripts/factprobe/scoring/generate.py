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
sequences of a beam search per width of ``scoring.beam_widths`` (:func:`beam_answers`).
"""

from __future__ import annotations

import logging

import pandas as pd

from factprobe.hashing import stable_hash
from factprobe.lm import LM, BeamRequest, GenerateRequest

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


def beam_answers(
    lm: LM, prompts: pd.DataFrame, widths: list[int], max_new_tokens: int = 12, progress: bool = True
) -> pd.DataFrame:
    """B(c) per prompt and beam width: ``prompt_id, sample, text, logprob, beam_width``, where
    ``sample`` is the sequence's rank in its beam (0 = best) and ``beam_width`` the search's width
    (distractors paper Table 2; one search per width, as the reference runs one per grid value).
    The input is context + text; a sequence ends at EOS (counted in its log-probability) or after
    ``max_new_tokens`` tokens."""
    ids = prompts["prompt_id"].tolist()
    context = prompts["context"].fillna("") if "context" in prompts.columns else ""
    texts = (context + prompts["text"]).tolist()
    requests = [BeamRequest(t, w, max_new_tokens) for w in widths for t in texts]
    found = lm.beams(requests, progress=progress)
    rows = []
    for request, pid, hyps in zip(requests, ids * len(widths), found, strict=True):
        rows += [(pid, rank, a.text, a.logprob, request.width) for rank, a in enumerate(hyps)]
    frame = pd.DataFrame(rows, columns=["prompt_id", "sample", "text", "logprob", "beam_width"])
    frame = frame.astype({"sample": "int32", "beam_width": "int32"})
    log.info("beam search: %d sequences for %d prompts, widths %s", len(frame), len(ids), widths)
    return frame.sort_values(["prompt_id", "beam_width", "sample"]).reset_index(drop=True)
