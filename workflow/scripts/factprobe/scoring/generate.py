"""Generation mode for BELIEF-ICL (belief-myriadlama §3.2): greedy answers and sampled confidence.

For each prompt: one greedy continuation (``sample = 0``) and ``m`` multinomial samples
(``sample = 1..m``, full vocabulary, temperature 1, no top-k/top-p), each ending at the first line
break (few-shot examples are one per line) or EOS (:meth:`factprobe.lm.HFCausalLM.generate`).
Samples are seeded by ``stable_hash(prompt_id)``, so a prompt's samples do not depend on batch
composition. Answers are matched to gold objects in :mod:`factprobe.metrics.belief`.
"""

from __future__ import annotations

import logging

import pandas as pd

from factprobe.hashing import stable_hash
from factprobe.lm import LM, GenerateRequest

log = logging.getLogger(__name__)


def generate_answers(
    lm: LM,
    prompts: pd.DataFrame,
    samples: int = 10,
    max_new_tokens: int = 12,
    progress: bool = True,
) -> pd.DataFrame:
    """Greedy + ``samples`` sampled answers per prompt: ``prompt_id, sample, text, logprob``.

    ``prompts`` needs ``prompt_id, text`` and optionally ``context`` (the input is context + text).
    ``logprob`` is the summed log-probability of the answer's tokens up to and including the line
    break or EOS that ended it.
    """
    ids = prompts["prompt_id"].tolist()
    context = prompts["context"].fillna("") if "context" in prompts.columns else ""
    texts = (context + prompts["text"]).tolist()
    requests = [GenerateRequest(t, max_new_tokens) for t in texts]
    if samples > 0:
        requests += [
            GenerateRequest(t, max_new_tokens, samples, stable_hash("belief-sample", i) % (2**63))
            for i, t in zip(ids, texts, strict=True)
        ]
    answers = lm.generate(requests, progress=progress)
    rows = [(ids[i], 0, a.text, a.logprob) for i, (a,) in enumerate(answers[: len(ids)])]
    for i, sampled in enumerate(answers[len(ids) :]):
        rows += [(ids[i], k, a.text, a.logprob) for k, a in enumerate(sampled, start=1)]
    frame = pd.DataFrame(rows, columns=["prompt_id", "sample", "text", "logprob"])
    frame["sample"] = frame["sample"].astype("int32")
    log.info("generated %d answers for %d prompts (%d samples each)", len(frame), len(ids), samples)
    return frame.sort_values(["prompt_id", "sample"]).reset_index(drop=True)
