"""Naive reference implementations the tests (and benchmarks/score.py) check the library against.

Each is the obvious, slow computation: one full causal forward per sequence, no packing, no KV
cache, no batching. They live here, not in the library, because nothing in the workflow runs them.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import numpy as np
import torch
from factprobe.lm.encoding import encode, end_ids, special_prefix


@torch.inference_mode()
def sequence_logprob(model, ids: Sequence[int], start: int) -> tuple[float, float]:
    """One full causal forward: summed log-probs of ``ids[start:]`` and that of ``ids[start]``."""
    device = next(model.parameters()).device
    inp = torch.tensor([list(ids)], device=device)
    logits = model(input_ids=inp).logits[0].float()
    lp = torch.log_softmax(logits[:-1], dim=-1)
    target = inp[0, 1:]
    per_token = lp.gather(1, target[:, None])[:, 0].double().cpu().numpy()[start - 1 :]
    return float(per_token.sum()), float(per_token[0]) if len(per_token) else math.nan


def continuation_logprob(model, prefix_ids: Sequence[int], tokens: Sequence[int]) -> float:
    """log P(tokens | prefix) by one full forward pass (no cache)."""
    return sequence_logprob(model, list(prefix_ids) + list(tokens), len(prefix_ids))[0]


def naive_pair_logprob(model, tokenizer, prompt: str, continuation: str, end: str = "eos") -> float:
    """One pair: ``log P(prompt+cont+end) - log P(prompt)`` from two forwards of canonical encodings.

    Checks the engine's joint-tokenization split, its merge handling and its packing at once.
    """
    head = special_prefix(tokenizer)
    stripped = prompt.rstrip(" ")
    cont = prompt[len(stripped) :] + continuation + ("." if end == "." else "")
    p_ids = encode(tokenizer, [stripped])[0] if stripped else []
    w_ids = encode(tokenizer, [stripped + cont])[0]
    start = list(head) or ([] if p_ids else [int(tokenizer.eos_token_id)])
    if not start:
        common = 0
        while common < min(len(p_ids), len(w_ids)) and p_ids[common] == w_ids[common]:
            common += 1
        if common == 0:
            start = [int(tokenizer.eos_token_id)]
    whole = start + w_ids + end_ids(tokenizer, end)
    base = start + p_ids
    # Tokens up to (and including) the first position are not predicted: score from position 1.
    lp_whole, _ = sequence_logprob(model, whole, 1)
    lp_prompt = sequence_logprob(model, base, 1)[0] if len(base) > 1 else 0.0
    return lp_whole - lp_prompt


def naive_requests(model, requests: Iterable[tuple[tuple[int, ...], tuple[int, ...]]]) -> np.ndarray:
    """Naive per-request loop: one full forward of ``prefix + cont`` per request (the baseline)."""
    return np.array([continuation_logprob(model, prefix, cont) for prefix, cont in requests])


def naive_sentence_logprob(model, tokenizer, text: str, end: str = "eos") -> tuple[float, int]:
    """Whole-sentence log-likelihood by one forward of one sentence (PROBELM §4.1 perplexity).

    ``BOS (or EOS in its place) + text (+ "." or EOS)``; every token after the first position is
    scored. Returns (summed log-probability, tokens scored).
    """
    start = special_prefix(tokenizer) or [int(tokenizer.eos_token_id)]
    body = encode(tokenizer, [text + ("." if end == "." else "")])[0] + end_ids(tokenizer, end)
    return sequence_logprob(model, start + body, len(start))[0], len(body)
