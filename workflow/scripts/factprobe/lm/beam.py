"""Beam search over a trie of token sequences (constrained decoding), batch-invariant.

The search ApprOpt runs (distractors paper §3.3): every hypothesis is a complete path of a
:class:`TokenTrie` (a form's continuation ids followed by the end marker, EOS by default), scored
by its summed log-probability. It works on a ``transformers`` causal LM module;
:meth:`factprobe.lm.hf.HFCausalLM.trie_search` is its entry point, so ApprOpt asks its model for
the search instead of reaching inside it.

The trie's ids come from scoring's own encoding (:func:`continuation_paths`): the joint
tokenization of prompt + continuation split at the prompt's end (:func:`factprobe.lm.encoding.
tokenize_pairs`), not the form encoded on its own, which for SentencePiece tokenizers with a dummy
prefix (Llama-2 style) starts with a lone ``▁``. A path's score is then the form's scoring
log-likelihood log Pr(λ + end | c) exactly.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from factprobe.lm.encoding import tokenize_pairs

LEAF = -1
# A finished hypothesis: tokens (incl. EOS), summed log-probability, the entities at its leaf.
Hyp = tuple[tuple[int, ...], float, list]


@dataclass
class TokenTrie:
    """A trie of token-id sequences; the node a complete sequence reaches holds its entities.

    :meth:`add` appends ``eos`` to the tokens; :meth:`add_path` inserts a sequence as it is (one
    that already carries its end marker, from :func:`continuation_paths`). A node can both end a
    sequence and continue into longer ones (end marker ``none``: "New" and "New York")."""

    eos: int | None
    root: dict = field(default_factory=dict)
    longest: int = 0

    def add(self, tokens: list[int], value: Any) -> None:
        """Insert ``tokens + [eos]``; ``value`` is appended to the leaf's list."""
        self.add_path([*tokens, self.eos], value)

    def add_path(self, tokens: Sequence[int], value: Any) -> None:
        """Insert ``tokens`` as one complete sequence; ``value`` is appended to its leaf's list."""
        if not tokens:
            raise ValueError("TokenTrie: an empty sequence cannot be a continuation")
        node = self.root
        for t in tokens:
            node = node.setdefault(int(t), {})
        node.setdefault(LEAF, []).append(value)
        self.longest = max(self.longest, len(tokens))

    def allowed(self, node: dict) -> list[int]:
        """Tokens that may follow ``node``."""
        return [t for t in node if t != LEAF]

    def paths(self) -> list[tuple[tuple[int, ...], list]]:
        """Every complete path (tokens including EOS) with its leaf values (for exhaustive checks)."""
        out, stack = [], [((), self.root)]
        while stack:
            prefix, node = stack.pop()
            for t, child in node.items():
                if t == LEAF:
                    out.append((prefix, child))
                else:
                    stack.append(((*prefix, t), child))
        return sorted(out)

    def depth(self) -> int:
        """Length of the longest path (tokens including the end marker)."""
        return self.longest


def continuation_paths(
    tokenizer: Any,
    prompt: str,
    continuations: Sequence[str],
    end: str = "eos",
    *,
    end_token: Any = None,
    head: Sequence[int] | None = None,
) -> tuple[list[int], list[tuple[int, ...] | None]]:
    """The context ids of ``prompt`` and each continuation's ids as scoring encodes them.

    Each (prompt, continuation) pair goes through :func:`factprobe.lm.encoding.tokenize_pairs`,
    the one rule scoring uses (joint tokenization split at the prompt's end, end marker ``end``
    appended: the model's ``end_token``, and ``head`` before the prompt under ``prompt_format:
    chat``, as :meth:`factprobe.lm.hf.HFCausalLM.loglikelihood` passes them), so a trie path
    scores exactly as the scorer's log-likelihood of that form. A pair
    whose joint encoding merges across the prompt's end is scored by scoring as a difference of
    two requests, not a path after the prompt: it gets None (the caller leaves it out and counts
    it). The context is the same for every other pair (BOS + the prompt's own tokens).
    """
    if not continuations:
        return [], []
    requests, plans = tokenize_pairs(
        tokenizer, [prompt] * len(continuations), list(continuations), end, end_token=end_token, head=head
    )
    prefix: tuple[int, ...] | None = None
    paths: list[tuple[int, ...] | None] = []
    for plan in plans:
        if plan.minus is not None:
            paths.append(None)
            continue
        head, cont = requests[plan.plus]
        if prefix is not None and head != prefix:
            raise AssertionError(f"continuation_paths: two contexts for one prompt {prompt!r}")
        prefix = head
        paths.append(cont)
    return list(prefix or ()), paths


def constrained_beam_search(
    model: Any, prefix_ids: list[int], trie: TokenTrie, width: int, max_new_tokens: int | None = None
) -> list[Hyp]:
    """Beam search of ``width`` over ``trie`` paths after ``prefix_ids``, kept as the distractors
    paper's reference keeps it (DistFactAssessLM ``src/utils/beamsearch.py``, :func:`pool_step`).

    Returns the finished hypotheses ``(tokens incl. the end marker, log-prob, leaf values)`` of
    the last pool, at most ``width``, best first. With ``width`` ≥ the number of trie paths
    nothing is pruned and the result is the exhaustive ranking.
    """
    return batched_beam_search(model, [prefix_ids], [trie], width, steps=max_new_tokens)[0]


#: One hypothesis of the pool: tokens, summed log-probability, its trie node, and its leaf values
#: once it is finished (a complete path), None while open.
PoolHyp = tuple[tuple[int, ...], float, dict, list | None]


def pool_step(pool: list[PoolHyp], step: list[list[float]], trie: TokenTrie, width: int) -> list[PoolHyp]:
    """One step of the reference's bookkeeping: the candidates are the pool's finished hypotheses,
    unchanged, and every open one's allowed next tokens (``step[b]``: the log-probabilities of
    open hypothesis b's :meth:`TokenTrie.allowed` tokens, in pool order); the ``width`` best of
    them are the next pool (higher log-probability first, ties by tokens, a finished one before
    an open one with the same tokens). Finished hypotheses thus keep their slots, and an open beam
    goes on only while it ranks among the ``width`` best, as in the reference, where a
    hypothesis finishes on EOS and stays in the pool, padded with EOS, until the search ends.
    A -inf token is no candidate (the reference drops them). A node that ends a path and also
    continues (end marker ``none``: "New" and "New York") gives both a finished and an open one.
    """
    cands = [h for h in pool if h[3] is not None]
    opened = [h for h in pool if h[3] is None]
    for (toks, score, node, _), lps in zip(opened, step, strict=True):
        for t, lp in zip(trie.allowed(node), lps, strict=True):
            if lp == float("-inf"):
                continue
            child, grown, total = node[t], (*toks, t), score + lp
            if LEAF in child:  # a complete sequence (its end marker included): its score is final
                cands.append((grown, total, child, child[LEAF]))
            if len(child) > (LEAF in child):
                cands.append((grown, total, child, None))
    cands.sort(key=lambda h: (-h[1], h[0], h[3] is None))
    return cands[:width]


def batched_beam_search(
    model: Any,
    prefixes: list[list[int]],
    tries: list[TokenTrie],
    width: int,
    pad_id: int = 0,
    steps: int | None = None,
    token_budget: Any = 4096,
) -> list[list[Hyp]]:
    """:func:`constrained_beam_search` of many prompts at once (one packed pass per step for all).

    Every open hypothesis of every prompt is a continuation unit of the packed engine
    (:func:`factprobe.lm.packed.continuation_logprobs`: its tokens so far after its prompt), so a
    beam's log-probabilities, and with them the search, do not depend on the other prompts or
    beams: the result is the one-prompt search's, bit for bit. Each search goes on until its pool
    holds no open hypothesis (:func:`pool_step`) or ``steps`` (default: the trie's depth, past
    which no path goes, so then none is open) were taken. ``pad_id`` is unused (no padding is
    attended).
    """
    from factprobe.lm.packed import continuation_logprobs

    results: list[list[Hyp]] = [[] for _ in prefixes]
    # per live prompt: (pool, steps left)
    state = {
        k: [[((), 0.0, tries[k].root, None)], steps or tries[k].depth()]
        for k, t in enumerate(tries)
        if t.root and width > 0
    }
    states: dict = {}  # each prompt's keys and values, computed once for all its steps
    while state:
        queries, owners = [], []
        for k, (pool, _) in state.items():
            for toks, _, node, leaf in pool:
                if leaf is None:
                    queries.append((prefixes[k], toks, tries[k].allowed(node)))
                    owners.append(k)
        lps = continuation_logprobs(model, queries, token_budget, states=states)
        per_prompt: dict[int, list[list[float]]] = {k: [] for k in state}
        for k, lp in zip(owners, lps, strict=True):
            per_prompt[k].append(lp.tolist())
        for k in list(state):
            pool, left = state[k]
            pool = pool_step(pool, per_prompt[k], tries[k], width)
            left -= 1
            if left <= 0 or all(h[3] is not None for h in pool):
                results[k] = [(toks, score, leaf) for toks, score, _, leaf in pool if leaf is not None]
                del state[k]
                continue
            state[k] = [pool, left]
    return results


# --------------------------------------------------------------------------- free beam search
# A free hypothesis: its tokens (the EOS that finished it included) and summed log-probability.
FreeHyp = tuple[tuple[int, ...], float]


def free_beam_step(
    hyps: list[tuple[tuple[int, ...], float, bool]], steps: list[Any], width: int, eos_id: int | None
) -> list[tuple[tuple[int, ...], float, bool]]:
    """One step of the distractors paper's B(c) beam search (Table 2; the reference's
    ``src/utils/beamsearch.py``): every open hypothesis spreads to its ``width`` best next tokens
    (``steps``: the open hypotheses' next-token log-probabilities over the vocabulary, in order);
    finished ones (ended by EOS) stay with their score; the ``width`` best of all go on (higher
    summed log-probability first, ties by tokens). A hypothesis is finished once it emits EOS."""
    cands = [h for h in hyps if h[2]]
    open_hyps = [h for h in hyps if not h[2]]
    for (toks, score, _), lp in zip(open_hyps, steps, strict=True):
        values, tokens = lp.topk(min(width, lp.shape[-1]))
        for v, t in zip(values.tolist(), tokens.tolist(), strict=True):
            if v != float("-inf"):
                cands.append(((*toks, t), score + v, eos_id is not None and t == eos_id))
    cands.sort(key=lambda h: (-h[1], h[0]))
    return cands[:width]


def free_beam_search(
    model: Any,
    prefixes: list[list[int]],
    width: int,
    max_new_tokens: int | Sequence[int],
    eos_id: int | None,
    token_budget: Any = 4096,
) -> list[list[FreeHyp]]:
    """Per prefix, B(c): the ``width`` best sequences of an unconstrained beam search of width
    ``width`` (:func:`free_beam_step`), run until every kept hypothesis has ended with EOS or
    ``max_new_tokens`` tokens were added (one limit for all, or one per prefix); best first. Every
    open hypothesis is a continuation unit of the packed engine
    (:func:`factprobe.lm.packed.continuation_logprobs`), so a prefix's beams do not depend on the
    other prefixes searched beside it, nor on their limits."""
    from factprobe.lm.packed import continuation_logprobs

    if hasattr(max_new_tokens, "__iter__"):
        limits = [int(n) for n in max_new_tokens]
    else:
        limits = [int(max_new_tokens)] * len(prefixes)
    if len(limits) != len(prefixes):
        raise ValueError(f"free_beam_search: {len(limits)} step limits for {len(prefixes)} prefixes")
    hyps = {k: [((), 0.0, False)] for k in range(len(prefixes))} if width > 0 else {}
    states: dict = {}  # each prefix's keys and values, computed once for all its steps
    for step in range(max(limits, default=0)):
        live = [k for k, h in hyps.items() if step < limits[k] and any(not x[2] for x in h)]
        if not live:
            break
        queries, owners = [], []
        for k in live:
            for toks, _, done in hyps[k]:
                if not done:
                    queries.append((prefixes[k], toks, None))
                    owners.append(k)
        lps = continuation_logprobs(model, queries, token_budget, states=states)
        per_prefix: dict[int, list[Any]] = {k: [] for k in live}
        for k, lp in zip(owners, lps, strict=True):
            per_prefix[k].append(lp)
        for k in live:
            hyps[k] = free_beam_step(hyps[k], per_prefix[k], width, eos_id)
    return [[(toks, score) for toks, score, _ in hyps.get(k, [])] for k in range(len(prefixes))]
