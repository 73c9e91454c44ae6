"""The packed log-likelihood engine: exact, prefix-sharing, batch-invariant scoring of token requests.

Requests (``(prefix ids, continuation ids)``, from :func:`factprobe.lm.encoding.tokenize_pairs`)
are grouped by prefix; each group becomes a packed row ``prefix + cont_1[:-1] + cont_2[:-1] + ...``
(several rows, each repeating the prefix, past :data:`PACKED_TOKENS` continuation tokens)
with explicit position ids. The prefix is computed once for all forms of all candidates; rows are
sorted by length and batched up to a token budget (:class:`TokenBudget`: halved on
out-of-memory); the vocabulary log-softmax runs in fp32 at continuation positions only.

Attention runs per unit, the prefix or one continuation over exactly its own keys
(:mod:`factprobe.lm.canonical`), and every forward has a whole multiple of 16 token rows, so a
score is the same float whatever else is in its row and batch, the budget, the order of the
requests and the thread count (``benchmarks/invariance.py``). ``invariant=False`` takes the former
path, one additive 4D mask over the batch, whose results move in their last bits with the packing.
"""

from __future__ import annotations

import logging
from collections import defaultdict, deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from factprobe.lm.canonical import Plan, canonical_attention, padded_keep, padded_width, plan_units

log = logging.getLogger(__name__)


def is_oom(exc: BaseException) -> bool:
    """Whether ``exc`` is an accelerator (or CPU allocator) out-of-memory error."""
    if isinstance(exc, torch.OutOfMemoryError):
        return True
    return isinstance(exc, RuntimeError) and "out of memory" in str(exc).lower()


class TokenBudget:
    """The out-of-memory policy: padded tokens per forward, halved on every OOM and kept halved.

    One budget per loaded model, shared by scoring, top-k and generation, so a budget learnt on
    one call is not rediscovered (with another OOM) by the next.
    """

    def __init__(self, tokens: int = 4096):
        self.tokens = max(1, int(tokens))

    def shrink(self, exc: BaseException, what: str) -> None:
        """After ``exc`` (re-raised unless an OOM): free the cache and halve the budget."""
        if not is_oom(exc):
            raise exc
        if torch.cuda.is_available():
            torch.cuda.empty_cache()
        self.tokens = max(1, self.tokens // 2)
        log.warning("out of memory on %s: token budget now %d", what, self.tokens)


@dataclass
class _Row:
    prefix: tuple[int, ...]
    items: list[tuple[int, tuple[int, ...]]]  # (request index, continuation)

    @property
    def length(self) -> int:
        return len(self.prefix) + sum(len(c) - 1 for _, c in self.items)


#: Continuation tokens packed after one prefix. A packed row's attention is computed over the whole
#: row (the mask only hides pairs), so its cost grows with the square of the row: past a few hundred
#: tokens a second copy of the prefix is cheaper than a longer row (benchmarks/RESULTS.md,
#: "Packed row length").
PACKED_TOKENS = 256


def _build_rows(
    requests: Sequence[tuple[tuple[int, ...], tuple[int, ...]]],
    max_row: int,
    packed_tokens: int | None = None,
) -> list[_Row]:
    """One row per prefix, split when a row would exceed ``max_row`` tokens or hold more than
    ``packed_tokens`` (default :data:`PACKED_TOKENS`) continuation tokens (prefix repeated in the
    next row)."""
    packed_tokens = PACKED_TOKENS if packed_tokens is None else packed_tokens
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
        limit = min(max_row, len(prefix) + packed_tokens)
        for item in items:
            if row.items and row.length + len(item[1]) - 1 > limit:
                rows.append(row)
                row = _Row(prefix, [])
            row.items.append(item)
        rows.append(row)
    rows.sort(key=lambda r: (-r.length, r.prefix))
    return rows


def _pack(rows: list[_Row], device: torch.device, invariant: bool = True):
    """Input ids, positions and attention of a batch of packed rows, plus target bookkeeping.

    ``invariant``: each row is padded to :func:`~factprobe.lm.canonical.padded_width`, and its
    prefix and each continuation are attention units (:mod:`factprobe.lm.canonical`), so no score
    depends on the other rows of the batch or the other continuations of its row. Otherwise the
    attention is one additive 4D mask over the unpadded batch (:func:`_shared_mask`): faster, but
    a score moves in its last bits with what is packed beside it."""
    longest = max(r.length for r in rows)
    width = padded_width(longest, len(rows)) if invariant else longest
    ids = torch.zeros(len(rows), width, dtype=torch.long)
    pos = torch.zeros(len(rows), width, dtype=torch.long)
    units: list[tuple[list[int], list[int]]] = []
    t_row, t_col, t_tok, t_req, t_first, t_last = [], [], [], [], [], []
    for b, row in enumerate(rows):
        plen = len(row.prefix)
        base = b * width
        ids[b, :plen] = torch.tensor(row.prefix)
        pos[b, :plen] = torch.arange(plen)
        prefix_keys = list(range(base, base + plen))
        units.append((prefix_keys, prefix_keys))
        col = plen
        for req, cont in row.items:
            body = cont[:-1]
            if body:
                ids[b, col : col + len(body)] = torch.tensor(body)
                pos[b, col : col + len(body)] = torch.arange(plen, plen + len(body))
                own = list(range(base + col, base + col + len(body)))
                units.append((own, prefix_keys + own))
            for j, tok in enumerate(cont):
                t_row.append(b)
                t_col.append(plen - 1 if j == 0 else col + j - 1)
                t_tok.append(tok)
                t_req.append(req)
                t_first.append(j == 0)
                t_last.append(j == len(cont) - 1)
            col += len(body)
    targets = (
        torch.tensor(t_row),
        torch.tensor(t_col),
        torch.tensor(t_tok),
        torch.tensor(t_req),
        torch.tensor(t_first),
        torch.tensor(t_last),
    )
    if not invariant:
        mask = _shared_mask(units, len(rows), width, torch.float32)
        return ids.to(device), pos.to(device), mask, targets
    return ids.to(device), pos.to(device), plan_units(units, device), targets


def _shared_mask(units, rows: int, width: int, dtype: torch.dtype) -> torch.Tensor:
    """The additive [rows, 1, width, width] mask in which each unit's query i sees the unit's keys
    up to nk - nq + i, and a padding position itself only (no NaN rows)."""
    allowed = torch.zeros(rows * width, width, dtype=torch.bool)
    for queries, keys in units:
        nq, nk = len(queries), len(keys)
        cols = torch.tensor(keys) % width
        see = torch.arange(nk)[None, :] <= torch.arange(nq)[:, None] + (nk - nq)
        allowed[torch.tensor(queries)[:, None], cols[None, :]] |= see
    allowed = allowed.view(rows, width, width) | torch.eye(width, dtype=torch.bool)[None]
    mask = torch.zeros(allowed.shape, dtype=dtype)
    mask.masked_fill_(~allowed, torch.finfo(dtype).min)
    return mask[:, None]


def _logits_at(
    model, ids, pos, attention, rows: int, cols: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Logits [rows, distinct cols, vocab] of a packed batch at columns ``cols`` (per target), and
    each target's index into the distinct columns. ``attention``: a :class:`Plan` (batch-invariant
    units) or a shared 4D mask."""
    keep = torch.unique(cols)
    if not isinstance(attention, Plan):
        logits = model(
            input_ids=ids,
            attention_mask=attention.to(dtype=next(model.parameters()).dtype, device=ids.device),
            position_ids=pos,
            logits_to_keep=keep.to(ids.device),
        ).logits
        return logits, torch.searchsorted(keep, cols)
    plan = attention
    with canonical_attention(model):
        logits = model(
            input_ids=ids,
            position_ids=pos,
            logits_to_keep=padded_keep(keep, rows).to(ids.device),
            factprobe_plan=plan,
        ).logits
    return logits, torch.searchsorted(keep, cols)


@torch.inference_mode()
def _forward_batch(
    model, rows: list[_Row], device, logsoftmax_chunk: int, invariant: bool = True, greedy: bool = False
):
    """Each target token's log-probability (float64) and, with ``greedy``, whether it is the
    argmax of its position's distribution (lm-evaluation-harness's ``is_greedy``)."""
    ids, pos, plan, (t_row, t_col, t_tok, t_req, t_first, t_last) = _pack(rows, device, invariant)
    logits, where = _logits_at(model, ids, pos, plan, len(rows), t_col)
    scores = torch.empty(len(t_tok), dtype=torch.float64)
    tops = torch.ones(len(t_tok), dtype=torch.bool)
    for start in range(0, len(t_tok), logsoftmax_chunk):
        sl = slice(start, start + logsoftmax_chunk)
        chunk = logits[t_row[sl].to(device), where[sl].to(device)].float()
        target = t_tok[sl].to(device)
        lp = torch.log_softmax(chunk, dim=-1).gather(1, target[:, None])[:, 0]
        scores[sl] = lp.double().cpu()
        if greedy:
            tops[sl] = (chunk.argmax(dim=-1) == target).cpu()
    return t_req, t_first, t_last, scores, tops


def _batches(rows: list[_Row], budget: TokenBudget, forward: Callable[[list[_Row]], Any]) -> Iterator[Any]:
    """``forward`` of the rows, batched up to the token budget (rows of one width together), with
    the out-of-memory policy: the budget halves and the batch is retried; a single row that still
    does not fit is split across repeated prefixes; a single request that does not fit fails."""
    queue = deque(rows)
    while queue:
        width = queue[0].length
        batch = [queue.popleft()]
        while queue and (len(batch) + 1) * width <= budget.tokens:
            batch.append(queue.popleft())
        try:
            out = forward(batch)
        except Exception as exc:
            budget.shrink(exc, f"{len(batch)} packed rows x {width} tokens")
            if len(batch) > 1:
                queue.extendleft(reversed(batch))
                continue
            row = batch[0]
            if len(row.items) <= 1:
                raise RuntimeError(f"out of memory on a single request of {width} tokens") from exc
            half = len(row.items) // 2
            log.warning("out of memory on one row of %d tokens: splitting it", width)
            queue.extendleft([_Row(row.prefix, row.items[:half]), _Row(row.prefix, row.items[half:])])
            continue
        yield out


def score_requests(
    model,
    requests: Sequence[tuple[tuple[int, ...], tuple[int, ...]]],
    token_budget: int | TokenBudget = 4096,
    logsoftmax_chunk: int = 1024,
    progress: bool = False,
    on_batch: Callable[[np.ndarray, np.ndarray, np.ndarray], None] | None = None,
    last_out: np.ndarray | None = None,
    invariant: bool = True,
    greedy_out: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Summed continuation log-probability and first-token log-probability of every request.

    ``token_budget`` bounds padded tokens per forward; on out-of-memory it is halved and the
    batch retried (a single row is split across repeated prefixes if needed). ``on_batch`` gets
    ``(request indices, logprob, first_logprob)`` of every finished request (for the cache).
    ``last_out`` (length ``len(requests)``), when given, receives the log-probability of each
    request's last token (the end marker), filled before ``on_batch`` sees the request.
    ``greedy_out`` (bool, length ``len(requests)``), when given, receives whether every
    continuation token of a request is its position's argmax (lm-eval's ``is_greedy``).
    ``invariant`` (default): each score is the same float whatever else is scored with it
    (:mod:`factprobe.lm.canonical`); False takes the shared-mask path (:func:`_pack`).
    """
    budget = token_budget if isinstance(token_budget, TokenBudget) else TokenBudget(token_budget)
    from tqdm import tqdm

    device = next(model.parameters()).device
    _check_context(model, requests)
    sums = _RequestSums(requests, last_out, greedy_out)
    bar = tqdm(total=sum(len(c) for _, c in requests), unit="tok", disable=not progress, mininterval=5)

    def forward(batch: list[_Row]):
        return _forward_batch(model, batch, device, logsoftmax_chunk, invariant, greedy_out is not None)

    rows = _build_rows(requests, budget.tokens)
    for t_req, t_first, t_last, scores, tops in _batches(rows, budget, forward):
        done = sums.add(t_req.numpy(), t_first.numpy(), t_last.numpy(), scores.numpy(), tops.numpy())
        bar.update(len(t_req))
        if on_batch is not None:
            on_batch(done, sums.total[done], sums.first[done])
    bar.close()
    return sums.total, sums.first


def _check_context(model, requests: Sequence[tuple[tuple[int, ...], tuple[int, ...]]]) -> None:
    """Refuse a request longer than the model's context (when its config states one)."""
    context = getattr(model.config, "max_position_embeddings", None) or getattr(
        model.config, "n_positions", None
    )
    if context:
        longest = max((len(p) + len(c) - 1 for p, c in requests), default=0)
        if longest > context:
            raise ValueError(
                f"a prompt + continuation of {longest} tokens exceeds the model's context of {context} tokens; "
                "shorten the few-shot contexts of the suite or use a model with a longer context"
            )


class _RequestSums:
    """Per request: the summed log-probability of its continuation tokens, its first token's,
    (into ``last_out``, when given) its last token's, (into ``greedy_out``, when given) whether all
    its tokens are argmaxes, and how many of its tokens are still unscored."""

    def __init__(
        self,
        requests: Sequence[tuple[tuple[int, ...], tuple[int, ...]]],
        last_out: np.ndarray | None,
        greedy_out: np.ndarray | None = None,
    ):
        n = len(requests)
        self.total = np.zeros(n, dtype=np.float64)
        self.first = np.full(n, np.nan, dtype=np.float64)
        self.last_out = last_out
        self.greedy_out = greedy_out
        if greedy_out is not None:
            greedy_out[:] = True
        self.remaining = np.zeros(n, dtype=np.int64)
        for i, (_, cont) in enumerate(requests):
            self.remaining[i] = len(cont)

    def add(
        self, req: np.ndarray, firsts: np.ndarray, lasts: np.ndarray, scores: np.ndarray, tops: np.ndarray
    ) -> np.ndarray:
        """Add one batch's token scores (``req``: each token's request; ``firsts``/``lasts``: which
        tokens are a request's first/last; ``tops``: which are argmaxes); returns the requests it
        completed."""
        np.add.at(self.total, req, scores)
        if self.greedy_out is not None:
            np.logical_and.at(self.greedy_out, req, tops)
        self.first[req[firsts]] = scores[firsts]
        if self.last_out is not None:
            self.last_out[req[lasts]] = scores[lasts]
        np.subtract.at(self.remaining, req, 1)
        done = np.unique(req)
        return done[self.remaining[done] == 0]


@torch.inference_mode()
def next_token_logprobs(
    model, prefixes: Sequence[Sequence[int]], k: int, token_budget: int | TokenBudget = 4096
) -> tuple[torch.Tensor, torch.Tensor]:
    """The ``k`` most likely next tokens after each prefix: (log-probabilities [n, k] float64, ids
    [n, k]), computed in the packed engine's batch-invariant units (a prefix with no continuation),
    so a prompt's list does not depend on the other prompts of the call."""
    budget = token_budget if isinstance(token_budget, TokenBudget) else TokenBudget(token_budget)
    device = next(model.parameters()).device
    order = sorted(range(len(prefixes)), key=lambda i: (-len(prefixes[i]), tuple(prefixes[i])))
    values = indices = torch.empty(0)
    start = 0
    while start < len(order):
        width = len(prefixes[order[start]])
        chunk = order[start : start + max(1, budget.tokens // max(1, width))]
        rows = [_Row(tuple(prefixes[i]), []) for i in chunk]
        ids, pos, plan, _ = _pack(rows, device)
        last = torch.tensor([len(r.prefix) - 1 for r in rows])
        try:
            logits, where = _logits_at(model, ids, pos, plan, len(rows), last)
        except Exception as exc:
            if len(chunk) == 1:
                raise
            budget.shrink(exc, f"top-k of {len(chunk)} prompts x {width} tokens")
            continue
        picked = logits[torch.arange(len(rows), device=device), where.to(device)].float()
        top = torch.log_softmax(picked, dim=-1).topk(min(k, picked.shape[-1]), dim=-1)
        if not values.numel():  # k past the vocabulary: every list is the whole vocabulary
            values = torch.empty(len(prefixes), top.values.shape[1], dtype=torch.float64)
            indices = torch.empty(len(prefixes), top.values.shape[1], dtype=torch.long)
        values[chunk] = top.values.double().cpu()
        indices[chunk] = top.indices.cpu()
        start += len(chunk)
    return values, indices


@torch.inference_mode()
def continuation_logprobs(
    model,
    queries: Sequence[tuple[Sequence[int], Sequence[int], Sequence[int] | None]],
    token_budget: int | TokenBudget = 4096,
    states: dict[tuple[int, ...], PrefixState] | None = None,
) -> list[torch.Tensor]:
    """Log-probabilities of the next token after ``prefix + partial`` for each ``(prefix, partial,
    tokens)`` query: at ``tokens`` (float64, in their order), or over the whole vocabulary when
    ``tokens`` is None. Each query is a continuation unit of the packed engine (its partial
    continuation after its prefix, :mod:`factprobe.lm.canonical`), so its values do not depend on
    the other queries: a beam's scores are the same whatever else is searched beside it.

    ``states`` (a dict kept by the caller across the steps of a search or a generation): each
    prefix is computed once (:func:`prefix_states`) and a query's forward holds its partial
    continuation only, attending over the prefix's stored keys; the same floats as without it."""
    budget = token_budget if isinstance(token_budget, TokenBudget) else TokenBudget(token_budget)
    if states is not None:
        return _continuations_after_states(model, queries, budget, states)
    device = next(model.parameters()).device
    # the partial continuation plus a placeholder: its last target is the query's next token
    requests = [(tuple(prefix), (*partial, 0)) for prefix, partial, _ in queries]
    out: list[torch.Tensor | None] = [None] * len(queries)

    def forward(batch: list[_Row]):
        ids, pos, plan, (t_row, t_col, _tok, t_req, _first, t_last) = _pack(batch, device)
        t_row, t_col, t_req = t_row[t_last], t_col[t_last], t_req[t_last]
        logits, where = _logits_at(model, ids, pos, plan, len(batch), t_col)
        return t_row, t_req, logits, where

    for t_row, t_req, logits, where in _batches(_build_rows(requests, budget.tokens), budget, forward):
        for b, w, q in zip(t_row.tolist(), where.tolist(), t_req.tolist(), strict=True):
            out[q] = _pick(torch.log_softmax(logits[b, w].float(), dim=-1), queries[q][2])
    return out  # type: ignore[return-value]


@dataclass
class PrefixState:
    """A prefix's keys and values at every layer (flat [prefix tokens, kv heads, dim]) and its
    next-token log-probabilities (float32 [vocab])."""

    keys: dict[int, torch.Tensor]
    values: dict[int, torch.Tensor]
    next_logprobs: torch.Tensor


@torch.inference_mode()
def prefix_states(
    model, prefixes: Sequence[Sequence[int]], budget: TokenBudget, states: dict[tuple[int, ...], PrefixState]
) -> None:
    """Add to ``states`` the :class:`PrefixState` of each prefix not in it: every prefix its own
    attention unit in packed forwards (the very computation a prefix gets beside continuations),
    its keys and values stored as each layer computes them."""
    todo = sorted({tuple(p) for p in prefixes} - set(states), key=lambda p: (-len(p), p))
    device = next(model.parameters()).device

    def forward(batch: list[_Row]):
        ids, pos, units, _ = _pack(batch, device)
        width = ids.shape[1]
        capture = [b * width + t for b, row in enumerate(batch) for t in range(len(row.prefix))]
        plan = Plan(units.groups, capture=torch.tensor(capture, device=device))
        last = torch.tensor([len(row.prefix) - 1 for row in batch])
        logits, where = _logits_at(model, ids, pos, plan, len(batch), last)
        return batch, plan, logits, where

    for batch, plan, logits, where in _batches([_Row(p, []) for p in todo], budget, forward):
        start = 0
        for b, row in enumerate(batch):
            span = slice(start, start + len(row.prefix))
            keys = {layer: kv[0][span].clone() for layer, kv in plan.captured.items()}
            values = {layer: kv[1][span].clone() for layer, kv in plan.captured.items()}
            states[row.prefix] = PrefixState(
                keys, values, torch.log_softmax(logits[b, where[b]].float(), dim=-1)
            )
            start += len(row.prefix)


def _pack_after_states(rows: list[_Row], device: torch.device, states: dict[tuple[int, ...], PrefixState]):
    """Like :func:`_pack` for rows whose prefixes are in ``states``: a row holds its continuations'
    tokens only, each unit's keys are its prefix's stored ones followed by its own. Targets: the
    last token of each continuation (the next token after it)."""
    longest = max(sum(len(c) - 1 for _, c in row.items) for row in rows)
    width = padded_width(longest, len(rows))
    prefixes = list(dict.fromkeys(row.prefix for row in rows))
    offsets, total = {}, len(rows) * width
    for prefix in prefixes:
        offsets[prefix] = total
        total += len(prefix)
    layers = states[prefixes[0]].keys
    extra = {
        layer: (
            torch.cat([states[p].keys[layer] for p in prefixes]),
            torch.cat([states[p].values[layer] for p in prefixes]),
        )
        for layer in layers
    }
    ids = torch.zeros(len(rows), width, dtype=torch.long)
    pos = torch.zeros(len(rows), width, dtype=torch.long)
    units, t_row, t_col, t_req = [], [], [], []
    for b, row in enumerate(rows):
        plen = len(row.prefix)
        prefix_keys = list(range(offsets[row.prefix], offsets[row.prefix] + plen))
        col = 0
        for req, cont in row.items:
            body = cont[:-1]
            ids[b, col : col + len(body)] = torch.tensor(body)
            pos[b, col : col + len(body)] = torch.arange(plen, plen + len(body))
            own = list(range(b * width + col, b * width + col + len(body)))
            units.append((own, prefix_keys + own))
            t_row.append(b)
            t_col.append(col + len(body) - 1)
            t_req.append(req)
            col += len(body)
    plan = plan_units(units, device, extra=extra)
    return ids.to(device), pos.to(device), plan, torch.tensor(t_row), torch.tensor(t_col), torch.tensor(t_req)


def _pick(lp: torch.Tensor, tokens: Sequence[int] | None) -> torch.Tensor:
    """``lp`` at ``tokens`` (all of it for None), float64 on the CPU."""
    picked = lp if tokens is None else lp[torch.tensor(list(tokens), dtype=torch.long, device=lp.device)]
    return picked.double().cpu()


@torch.inference_mode()
def _continuations_after_states(model, queries, budget: TokenBudget, states) -> list[torch.Tensor]:
    """:func:`continuation_logprobs` with the prefixes' stored states."""
    device = next(model.parameters()).device
    prefix_states(model, [q[0] for q in queries], budget, states)
    out: list[torch.Tensor | None] = [None] * len(queries)
    requests, owners = [], []
    for i, (prefix, partial, tokens) in enumerate(queries):
        if partial:
            requests.append((tuple(prefix), (*partial, 0)))
            owners.append(i)
        else:
            out[i] = _pick(states[tuple(prefix)].next_logprobs, tokens)

    def forward(batch: list[_Row]):
        ids, pos, plan, t_row, t_col, t_req = _pack_after_states(batch, device, states)
        logits, where = _logits_at(model, ids, pos, plan, len(batch), t_col)
        return t_row, t_req, logits, where

    rows = _build_rows(requests, budget.tokens) if requests else []
    for t_row, t_req, logits, where in _batches(rows, budget, forward):
        for b, w, r in zip(t_row.tolist(), where.tolist(), t_req.tolist(), strict=True):
            q = owners[r]
            out[q] = _pick(torch.log_softmax(logits[b, w].float(), dim=-1), queries[q][2])
    return out  # type: ignore[return-value]
