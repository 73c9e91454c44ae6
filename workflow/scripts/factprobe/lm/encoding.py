"""The one encoding rule of the project: how a prompt and a candidate form become token ids.

* **Space:** a form follows its prompt after one space, except in languages written without spaces
  (:data:`NO_SPACE_LANGS`, overridable by ``scoring.no_space_languages``): :func:`continuation_text`.
* **BOS:** the context starts with the tokenizer's own leading special tokens (e.g. Llama's BOS,
  :func:`special_prefix`); with none and an empty prompt, the EOS token stands in as the context
  (as lm-evaluation-harness does), so the first form token has a conditioning position.
* **Trailing space:** trailing spaces of the prompt move to the continuation (:func:`context_ids`).
* **End:** spec Pl(o|c) = sum over forms lambda of Pr(lambda + EOS | c) (distractors-knowledge-measure
  §3.2, eq. 1); end marker ``eos`` appends the EOS id, ``.`` appends a full stop to the text,
  ``none`` nothing (:func:`end_ids`).
* **Joint tokenization** (:func:`tokenize_pairs`): prompt and continuation are encoded *jointly* and
  split at the prompt's own token count, as lm-evaluation-harness does, so BPE merges inside the form
  are the model's canonical ones. When the joint encoding merges across the boundary (the prompt's
  last token is not a prefix of the joint encoding), the pair's score is the chain rule on canonical
  encodings, ``log P(prompt + form) - log P(prompt)``, computed from their longest common token
  prefix; it equals the plain sum whenever no merge happens.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

import numpy as np

#: The one list of scoring.end_marker values (export and the schema check read it from here).
END_MARKERS = ("eos", ".", "none")
#: Languages written without spaces between words: forms follow the prompt directly.
NO_SPACE_LANGS = ("zh", "ja", "th", "lo", "km", "my", "bo")

Request = tuple[tuple[int, ...], tuple[int, ...]]  # (prefix ids, continuation ids)


def continuation_text(form: str, lang: str, no_space_langs: Collection[str] = NO_SPACE_LANGS) -> str:
    """A form as it follows a prompt: one leading space in languages written with spaces."""
    return form if lang in no_space_langs else " " + form


def context_ids(tokenizer, prompt: str) -> list[int]:
    """Token ids a continuation of ``prompt`` is conditioned on (generation, top-k, ApprOpt).

    The same prefix :func:`tokenize_pairs` gives a pair without a boundary merge: leading special
    tokens + the prompt without its trailing spaces; EOS for an empty prompt without BOS.
    """
    stripped = prompt.rstrip(" ")
    ids = special_prefix(tokenizer) + (encode(tokenizer, [stripped])[0] if stripped else [])
    if not ids:
        if tokenizer.eos_token_id is None:
            raise ValueError("empty prompt and a tokenizer without BOS/EOS: no context token to condition on")
        ids = [int(tokenizer.eos_token_id)]
    return ids


@dataclass(frozen=True)
class PairPlan:
    """How one (prompt, continuation) pair is scored: ``sum(plus) - sum(minus)`` request scores."""

    plus: int
    minus: int | None
    n_tokens: int


def special_prefix(tokenizer) -> list[int]:
    """Token ids the tokenizer puts before any text (e.g. Llama's BOS); empty for GPT-2 style."""
    with_special = tokenizer("a", add_special_tokens=True)["input_ids"]
    plain = tokenizer("a", add_special_tokens=False)["input_ids"]
    for start in range(len(with_special) - len(plain) + 1):
        if with_special[start : start + len(plain)] == plain:
            return list(with_special[:start])
    return []


def end_ids(tokenizer, end: str) -> list[int]:
    """Token ids appended after the form for end marker ``eos`` (the paper's choice)."""
    if end != "eos":
        return []
    if tokenizer.eos_token_id is None:
        raise ValueError(
            "end marker 'eos' but the tokenizer has no EOS token; set scoring.end_marker to '.' or 'none'"
        )
    return [int(tokenizer.eos_token_id)]


def encode(tokenizer, texts: list[str]) -> list[list[int]]:
    if not texts:
        return []
    return [list(ids) for ids in tokenizer(texts, add_special_tokens=False)["input_ids"]]


def tokenize_pairs(
    tokenizer,
    prompts: Sequence[str],
    continuations: Sequence[str],
    end: str = "eos",
) -> tuple[list[tuple[tuple[int, ...], tuple[int, ...]]], list[PairPlan]]:
    """Joint tokenization of pairs into deduplicated ``(prefix, continuation)`` token requests.

    Returns the requests and one :class:`PairPlan` per input pair. The prefix starts with the
    tokenizer's own leading special tokens (BOS); with none and an empty prompt, the EOS token
    stands in as the context (as lm-evaluation-harness does), so the first form token has a
    conditioning position. End marker ``.`` is appended to the text before encoding; ``eos``
    appends the EOS id after it; ``none`` appends nothing.
    """
    if end not in END_MARKERS:
        raise ValueError(f"end marker {end!r}: use one of {END_MARKERS}")
    if len(prompts) != len(continuations):
        raise ValueError("prompts and continuations differ in length")
    head = special_prefix(tokenizer)
    tail = end_ids(tokenizer, end)
    suffix = "." if end == "." else ""
    moved_prompts, moved_conts = [], []
    for prompt, cont in zip(prompts, continuations, strict=True):
        stripped = prompt.rstrip(" ")
        moved_prompts.append(stripped)
        moved_conts.append(prompt[len(stripped) :] + cont + suffix)
    uniq_prompts = sorted(set(moved_prompts))
    prompt_ids = dict(zip(uniq_prompts, encode(tokenizer, uniq_prompts), strict=True))
    whole_texts = [p + c for p, c in zip(moved_prompts, moved_conts, strict=True)]
    uniq_whole = sorted(set(whole_texts))
    whole_ids = dict(zip(uniq_whole, encode(tokenizer, uniq_whole), strict=True))

    requests: list[tuple[tuple[int, ...], tuple[int, ...]]] = []
    index: dict[tuple[tuple[int, ...], tuple[int, ...]], int] = {}

    def request(prefix: list[int], cont: list[int]) -> int:
        key = (tuple(prefix), tuple(cont))
        if key not in index:
            index[key] = len(requests)
            requests.append(key)
        return index[key]

    plans = []
    for prompt, cont, whole_text in zip(moved_prompts, moved_conts, whole_texts, strict=True):
        if not cont.strip() and not tail:
            raise ValueError(f"empty continuation after prompt {prompt!r}: nothing to score")
        p_ids = prompt_ids[prompt]
        w_ids = whole_ids[whole_text]
        start = list(head)
        if not start and not p_ids:
            if tokenizer.eos_token_id is None:
                raise ValueError(
                    "empty prompt and a tokenizer without BOS/EOS: no context token to condition on"
                )
            start = [int(tokenizer.eos_token_id)]
        if w_ids[: len(p_ids)] == p_ids and len(w_ids) > len(p_ids) or (w_ids == p_ids and tail):
            plus = request(start + p_ids, w_ids[len(p_ids) :] + tail)
            plans.append(PairPlan(plus, None, len(w_ids) - len(p_ids) + len(tail)))
            continue
        common = 0
        while common < min(len(p_ids), len(w_ids)) and p_ids[common] == w_ids[common]:
            common += 1
        if not start and common == 0:
            # No shared token and no BOS: condition both on EOS, like an empty context.
            start = [int(tokenizer.eos_token_id)]
        prefix = start + w_ids[:common]
        plus = request(prefix, w_ids[common:] + tail)
        minus = request(prefix, p_ids[common:])
        plans.append(PairPlan(plus, minus, max(1, len(w_ids) - len(p_ids) + len(tail))))
    return requests, plans


def combine(
    plans: Sequence[PairPlan], req_logprob: np.ndarray, req_first: np.ndarray
) -> tuple[np.ndarray, ...]:
    """Per-pair (logprob, n_tokens, first_logprob) from per-request scores and the pair plans.

    ``first_logprob`` is the log-probability of the first token that carries the form (the first
    continuation token; after a boundary merge, the first token of the merged encoding).
    """
    logprob = np.empty(len(plans), dtype=np.float64)
    first = np.empty(len(plans), dtype=np.float64)
    n_tokens = np.empty(len(plans), dtype=np.int32)
    for i, plan in enumerate(plans):
        value = req_logprob[plan.plus]
        if plan.minus is not None:
            value -= req_logprob[plan.minus]
        logprob[i] = value
        first[i] = req_first[plan.plus]
        n_tokens[i] = plan.n_tokens
    return logprob, n_tokens, first


def end_logprobs(plans: Sequence[PairPlan], req_last: np.ndarray, end: str) -> np.ndarray:
    """Per-pair log-probability of the end marker: the last token of the pair's ``plus`` request.

    With ``end="none"`` nothing is appended and the value is 0, so ``logprob - end_logprob`` is
    log Pr(form | c) without an end marker for every setting (distractors paper Table 2,
    Probability). For ``"."`` it is the final token's log-probability (the period, which BPE
    vocabularies encode as a token of its own after a word).
    """
    out = np.zeros(len(plans), dtype=np.float64)
    if end == "none":
        return out
    for i, plan in enumerate(plans):
        out[i] = req_last[plan.plus]
    return out
