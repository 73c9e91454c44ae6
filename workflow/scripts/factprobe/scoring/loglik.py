"""Exact, prefix-sharing log-likelihood scoring of (prompt, continuation) pairs.

Spec: Pl(o|c) = sum over forms lambda of Pr(lambda + EOS | c)
(distractors-knowledge-measure §3.2, eq. 1); PRobELM ranks candidates by perplexity, i.e. by
``logprob / n_tokens`` (probelm-plausibility §3). This module returns, for each pair, the summed
log-probability of the continuation tokens (form + end marker) and their count.

Tokenization (:func:`tokenize_pairs`): prompt and continuation are encoded *jointly* and split
at the prompt's own token count, as lm-evaluation-harness does, so BPE merges inside the form
are the model's canonical ones; trailing spaces of the prompt move to the continuation. When the
joint encoding merges across the boundary (the prompt's last token is not a prefix of the joint
encoding), the pair's score is the chain rule on canonical encodings,
``log P(prompt + form) - log P(prompt)``, computed from their longest common token prefix; it
equals the plain sum whenever no merge happens.

Engine (:func:`score_requests`): requests are grouped by prefix; each group becomes one packed
row ``prefix + cont_1[:-1] + cont_2[:-1] + ...`` with explicit position ids and a 4D attention
mask in which every continuation sees the prefix and itself only. The prefix is computed once
for all forms of all candidates; rows are sorted by length and batched up to a token budget
(halved on out-of-memory); the vocabulary log-softmax runs in fp32 at continuation positions only.
"""

from __future__ import annotations

import logging
import math
from collections import defaultdict, deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import torch

log = logging.getLogger(__name__)

END_MARKERS = ("eos", ".", "none")


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
        raise ValueError("end marker 'eos' but the tokenizer has no EOS token; set scoring.end_marker to '.' or 'none'")
    return [int(tokenizer.eos_token_id)]


def _encode(tokenizer, texts: list[str]) -> list[list[int]]:
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
    prompt_ids = dict(zip(uniq_prompts, _encode(tokenizer, uniq_prompts), strict=True))
    whole_texts = [p + c for p, c in zip(moved_prompts, moved_conts, strict=True)]
    uniq_whole = sorted(set(whole_texts))
    whole_ids = dict(zip(uniq_whole, _encode(tokenizer, uniq_whole), strict=True))

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
                raise ValueError("empty prompt and a tokenizer without BOS/EOS: no context token to condition on")
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


def combine(plans: Sequence[PairPlan], req_logprob: np.ndarray, req_first: np.ndarray) -> tuple[np.ndarray, ...]:
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


@dataclass
class _Row:
    prefix: tuple[int, ...]
    items: list[tuple[int, tuple[int, ...]]]  # (request index, continuation)

    @property
    def length(self) -> int:
        return len(self.prefix) + sum(len(c) - 1 for _, c in self.items)


def _build_rows(requests: Sequence[tuple[tuple[int, ...], tuple[int, ...]]], max_row: int) -> list[_Row]:
    """One row per prefix, split when a row would exceed ``max_row`` tokens (prefix repeated)."""
    groups: dict[tuple[int, ...], list[tuple[int, tuple[int, ...]]]] = defaultdict(list)
    for i, (prefix, cont) in enumerate(requests):
        if not prefix:
            raise ValueError(f"request {i} has an empty prefix; nothing conditions its first token")
        if not cont:
            continue
        groups[prefix].append((i, cont))
    rows = []
    for prefix, items in groups.items():
        items.sort(key=lambda item: (-len(item[1]), item[1]))
        row = _Row(prefix, [])
        for item in items:
            if row.items and row.length + len(item[1]) - 1 > max_row:
                rows.append(row)
                row = _Row(prefix, [])
            row.items.append(item)
        rows.append(row)
    rows.sort(key=lambda r: (-r.length, r.prefix))
    return rows


def _pack(rows: list[_Row], device: torch.device, mask_dtype: torch.dtype):
    """Input ids, positions and 4D additive mask of a batch of packed rows, plus target bookkeeping."""
    width = max(r.length for r in rows)
    ids = torch.zeros(len(rows), width, dtype=torch.long)
    pos = torch.zeros(len(rows), width, dtype=torch.long)
    seg = torch.full((len(rows), width), -1, dtype=torch.long)
    t_row, t_col, t_tok, t_req, t_first, t_last = [], [], [], [], [], []
    for b, row in enumerate(rows):
        plen = len(row.prefix)
        ids[b, :plen] = torch.tensor(row.prefix)
        pos[b, :plen] = torch.arange(plen)
        seg[b, :plen] = 0
        col = plen
        for k, (req, cont) in enumerate(row.items, start=1):
            body = cont[:-1]
            if body:
                ids[b, col : col + len(body)] = torch.tensor(body)
                pos[b, col : col + len(body)] = torch.arange(plen, plen + len(body))
                seg[b, col : col + len(body)] = k
            for j, tok in enumerate(cont):
                t_row.append(b)
                t_col.append(plen - 1 if j == 0 else col + j - 1)
                t_tok.append(tok)
                t_req.append(req)
                t_first.append(j == 0)
                t_last.append(j == len(cont) - 1)
            col += len(body)
    q = torch.arange(width)
    causal = q[None, :] <= q[:, None]  # [query, key]
    same = (seg[:, None, :] == 0) | (seg[:, None, :] == seg[:, :, None])
    allowed = causal[None] & same & (seg[:, :, None] >= 0)
    allowed |= torch.eye(width, dtype=torch.bool)[None]  # padding attends to itself: no NaN rows
    mask = torch.zeros(allowed.shape, dtype=mask_dtype)
    mask.masked_fill_(~allowed, torch.finfo(mask_dtype).min)
    targets = (
        torch.tensor(t_row),
        torch.tensor(t_col),
        torch.tensor(t_tok),
        torch.tensor(t_req),
        torch.tensor(t_first),
        torch.tensor(t_last),
    )
    return ids.to(device), pos.to(device), mask[:, None].to(device), targets


def _is_oom(exc: BaseException) -> bool:
    if isinstance(exc, torch.OutOfMemoryError):
        return True
    return isinstance(exc, RuntimeError) and "out of memory" in str(exc).lower()


@torch.inference_mode()
def _forward_batch(model, rows: list[_Row], device, logsoftmax_chunk: int):
    param = next(model.parameters())
    ids, pos, mask, (t_row, t_col, t_tok, t_req, t_first, t_last) = _pack(rows, device, param.dtype)
    keep = torch.unique(t_col)
    where = torch.searchsorted(keep, t_col)
    logits = model(input_ids=ids, attention_mask=mask, position_ids=pos, logits_to_keep=keep.to(device)).logits
    scores = torch.empty(len(t_tok), dtype=torch.float64)
    for start in range(0, len(t_tok), logsoftmax_chunk):
        sl = slice(start, start + logsoftmax_chunk)
        chunk = logits[t_row[sl].to(device), where[sl].to(device)].float()
        lp = torch.log_softmax(chunk, dim=-1).gather(1, t_tok[sl].to(device)[:, None])[:, 0]
        scores[sl] = lp.double().cpu()
    return t_req, t_first, t_last, scores


def score_requests(
    model,
    requests: Sequence[tuple[tuple[int, ...], tuple[int, ...]]],
    token_budget: int = 4096,
    logsoftmax_chunk: int = 1024,
    progress: bool = False,
    on_batch: Callable[[np.ndarray, np.ndarray, np.ndarray], None] | None = None,
    last_out: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Summed continuation log-probability and first-token log-probability of every request.

    ``token_budget`` bounds padded tokens per forward; on out-of-memory it is halved and the
    batch retried (a single row is split across repeated prefixes if needed). ``on_batch`` gets
    ``(request indices, logprob, first_logprob)`` of every finished request (for the cache).
    ``last_out`` (length ``len(requests)``), when given, receives the log-probability of each
    request's last token (the end marker), filled before ``on_batch`` sees the request.
    """
    from tqdm import tqdm

    device = next(model.parameters()).device
    n = len(requests)
    context = getattr(model.config, "max_position_embeddings", None) or getattr(model.config, "n_positions", None)
    if context:
        longest = max((len(p) + len(c) - 1 for p, c in requests), default=0)
        if longest > context:
            raise ValueError(
                f"a prompt + continuation of {longest} tokens exceeds the model's context of {context} tokens; "
                "shorten the few-shot contexts of the suite or use a model with a longer context"
            )
    total = np.zeros(n, dtype=np.float64)
    first = np.full(n, np.nan, dtype=np.float64)
    remaining = np.zeros(n, dtype=np.int64)
    for i, (_, cont) in enumerate(requests):
        remaining[i] = len(cont)
    rows = deque(_build_rows(requests, token_budget))
    budget = token_budget
    bar = tqdm(total=sum(len(c) for _, c in requests), unit="tok", disable=not progress, mininterval=5)
    while rows:
        width = rows[0].length
        batch = [rows.popleft()]
        while rows and (len(batch) + 1) * width <= budget:
            batch.append(rows.popleft())
        try:
            t_req, t_first, t_last, scores = _forward_batch(model, batch, device, logsoftmax_chunk)
        except Exception as exc:
            if not _is_oom(exc):
                raise
            if device.type == "cuda":
                torch.cuda.empty_cache()
            if len(batch) > 1:
                budget = max(1, budget // 2)
                log.warning("out of memory with %d rows x %d tokens: token budget now %d", len(batch), width, budget)
                rows.extendleft(reversed(batch))
                continue
            row = batch[0]
            if len(row.items) == 1:
                raise RuntimeError(f"out of memory on a single request of {width} tokens") from exc
            half = len(row.items) // 2
            log.warning("out of memory on one row of %d tokens: splitting it", width)
            rows.extendleft([_Row(row.prefix, row.items[:half]), _Row(row.prefix, row.items[half:])])
            continue
        req = t_req.numpy()
        np.add.at(total, req, scores.numpy())
        firsts = t_first.numpy()
        first[req[firsts]] = scores.numpy()[firsts]
        if last_out is not None:
            lasts = t_last.numpy()
            last_out[req[lasts]] = scores.numpy()[lasts]
        np.subtract.at(remaining, req, 1)
        bar.update(len(req))
        if on_batch is not None:
            done = np.unique(req)
            done = done[remaining[done] == 0]
            on_batch(done, total[done], first[done])
    bar.close()
    return total, first


@torch.inference_mode()
def sequence_logprob(model, ids: Sequence[int], start: int) -> tuple[float, float]:
    """Naive reference: one full causal forward, summed log-probs of ``ids[start:]`` (and the first)."""
    device = next(model.parameters()).device
    inp = torch.tensor([list(ids)], device=device)
    logits = model(input_ids=inp).logits[0].float()
    lp = torch.log_softmax(logits[:-1], dim=-1)
    target = inp[0, 1:]
    per_token = lp.gather(1, target[:, None])[:, 0].double().cpu().numpy()[start - 1 :]
    return float(per_token.sum()), float(per_token[0]) if len(per_token) else math.nan


def naive_pair_logprob(model, tokenizer, prompt: str, continuation: str, end: str = "eos") -> float:
    """Independent reference for one pair: ``log P(prompt+cont+end) - log P(prompt)`` from two forwards.

    Both sequences use canonical encodings of the whole strings, so this checks the engine's
    joint-tokenization split, its merge handling and its packing at once.
    """
    head = special_prefix(tokenizer)
    stripped = prompt.rstrip(" ")
    cont = prompt[len(stripped) :] + continuation + ("." if end == "." else "")
    p_ids = _encode(tokenizer, [stripped])[0] if stripped else []
    w_ids = _encode(tokenizer, [stripped + cont])[0]
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
    out = []
    for prefix, cont in requests:
        out.append(sequence_logprob(model, list(prefix) + list(cont), len(prefix))[0])
    return np.array(out)


@torch.inference_mode()
def topk_first_tokens(
    model, tokenizer, prompts: Sequence[str], k: int = 10, token_budget: int = 4096
) -> list[tuple[list[int], list[float]]]:
    """The ``k`` most likely next tokens after each prompt (the first token of any continuation).

    Same prefix as :func:`tokenize_pairs` (BOS if the tokenizer adds one, trailing spaces
    stripped). Feeds the Precision@n / Probability baselines of the distractors paper (§5).
    """
    device = next(model.parameters()).device
    head = special_prefix(tokenizer)
    stripped = [p.rstrip(" ") for p in prompts]
    encoded = _encode(tokenizer, stripped)
    seqs = []
    for ids in encoded:
        prefix = head + ids
        if not prefix:
            prefix = [int(tokenizer.eos_token_id)]
        seqs.append(prefix)
    order = sorted(range(len(seqs)), key=lambda i: -len(seqs[i]))
    out: list[tuple[list[int], list[float]]] = [([], [])] * len(seqs)
    start = 0
    while start < len(order):
        width = len(seqs[order[start]])
        size = max(1, token_budget // width)
        chunk = order[start : start + size]
        start += size
        ids = torch.zeros(len(chunk), width, dtype=torch.long)
        mask = torch.zeros(len(chunk), width, dtype=torch.long)
        for b, i in enumerate(chunk):
            ids[b, : len(seqs[i])] = torch.tensor(seqs[i])
            mask[b, : len(seqs[i])] = 1
        last = torch.tensor([len(seqs[i]) - 1 for i in chunk])
        hidden = model(input_ids=ids.to(device), attention_mask=mask.to(device)).logits
        logits = hidden[torch.arange(len(chunk)), last.to(device)].float()
        values, indices = torch.log_softmax(logits, -1).topk(min(k, logits.shape[-1]), dim=-1)
        for b, i in enumerate(chunk):
            out[i] = (indices[b].tolist(), values[b].double().tolist())
    return out
