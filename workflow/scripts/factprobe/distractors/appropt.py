"""ApprOpt: LM-guided distractors (distractors paper §3.3, "Approximation of Optimal Distractors").

Eq. 4 asks for the n entities of Ω(f) with the highest Pl(o*|c). ApprOpt approximates it with a
beam search of width n over the model's continuations of the prompt c, constrained by a token
trie so that every hypothesis is " " + λ + EOS for a form λ of an entity in Ω(f). The trie is built
from the Ω-valid entities of o's declared types (o itself and the valid objects are left out, so
the beam is not spent on them; the reference implementation put them in and dropped them after,
anchors.md §3.4). Decoding reuses the KV cache between steps: the prompt is encoded once, then
each step feeds one token per beam and reorders the cache by beam parent. Hypotheses are scored
by the summed log-probability including EOS, i.e. log Pr(λ + EOS | c). Several forms of one
entity, or one form tokenised two ways, can take several beams, so fewer than n distinct
entities may come back (the paper notes this); the count is recorded.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import pandas as pd
import torch
from tqdm import tqdm

from factprobe.contracts import id_int, id_ints
from factprobe.distractors.omega import Omega
from factprobe.lm import HFCausalLM

log = logging.getLogger(__name__)

LEAF = -1
# A finished hypothesis: tokens (incl. EOS), summed log-probability, the entities at its leaf.
Hyp = tuple[tuple[int, ...], float, list]


@dataclass
class TokenTrie:
    """A trie of token-id sequences, each ending in ``eos``; leaves hold the entities reached."""

    eos: int
    root: dict = field(default_factory=dict)

    def add(self, tokens: list[int], value: Any) -> None:
        """Insert ``tokens + [eos]``; ``value`` is appended to the leaf's list."""
        node = self.root
        for t in [*tokens, self.eos]:
            node = node.setdefault(int(t), {})
        node.setdefault(LEAF, []).append(value)

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
        """Length of the longest path (tokens including EOS)."""
        return max((len(p) for p, _ in self.paths()), default=0)


@torch.no_grad()
def constrained_beam_search(
    model: Any, prefix_ids: list[int], trie: TokenTrie, width: int, max_new_tokens: int | None = None
) -> list[Hyp]:
    """Beam search of ``width`` over ``trie`` paths after ``prefix_ids``, KV cache reused.

    Returns up to ``width`` finished hypotheses ``(tokens incl. EOS, log-prob, leaf values)``,
    best first. Every expansion that reaches EOS is kept as finished (its score is final); the
    ``width`` best unfinished ones go on. The search stops when no beam is left, or when ``width``
    finished hypotheses are at least as good as the best open beam (log-probs only fall), so with
    ``width`` ≥ the number of trie paths the result is exactly the exhaustive ranking.
    """
    if not trie.root or width <= 0:
        return []
    device = next(model.parameters()).device
    max_new_tokens = max_new_tokens or trie.depth()
    out = model(input_ids=torch.tensor([prefix_ids], device=device), use_cache=True)
    past = out.past_key_values
    logp = torch.log_softmax(out.logits[:, -1].float(), dim=-1)
    beams: list[tuple[tuple[int, ...], float, dict]] = [((), 0.0, trie.root)]
    finished: list[Hyp] = []
    for _ in range(max_new_tokens):
        nxt, finished, over = _expand(beams, logp, trie, width, finished)
        if over:
            break
        parents = torch.tensor([h[3] for h in nxt], device=device)
        past.reorder_cache(parents)
        step = torch.tensor([[h[0][-1]] for h in nxt], device=device)
        out = model(input_ids=step, past_key_values=past, use_cache=True)
        past = out.past_key_values
        logp = torch.log_softmax(out.logits[:, -1].float(), dim=-1)
        beams = [(h[0], h[1], h[2]) for h in nxt]
    return finished


def _expand(
    beams: list[tuple[tuple[int, ...], float, dict]],
    logp: torch.Tensor,
    trie: TokenTrie,
    width: int,
    finished: list[Hyp],
) -> tuple[list[tuple[tuple[int, ...], float, dict, int]], list[Hyp], bool]:
    """One beam step of one search: the next open beams (with their parent's row in ``logp``),
    the ``width`` best finished hypotheses so far, and whether the search is over."""
    cands = []
    for b, (_, score, node) in enumerate(beams):
        allowed = trie.allowed(node)
        if allowed:
            lps = logp[b, torch.tensor(allowed, device=logp.device)].tolist()
            cands.extend((score + lp, b, t) for t, lp in zip(allowed, lps, strict=True))
    if not cands:
        return [], finished, True
    cands.sort(key=lambda c: (-c[0], c[1], c[2]))
    nxt = []
    for score, b, t in cands:
        toks, _, node = beams[b]
        if t == trie.eos:
            finished.append(((*toks, t), score, node[t][LEAF]))
        elif len(nxt) < width:
            nxt.append(((*toks, t), score, node[t], b))
    finished.sort(key=lambda h: (-h[1], h[0]))
    finished = finished[:width]
    over = not nxt or (len(finished) >= width and nxt[0][1] <= finished[-1][1])
    return nxt, finished, over


@torch.no_grad()
def batched_beam_search(
    model: Any, prefixes: list[list[int]], tries: list[TokenTrie], width: int, pad_id: int = 0
) -> list[list[Hyp]]:
    """:func:`constrained_beam_search` of many prompts at once (one forward per step for all).

    Prompts are left-padded; every open beam of every prompt is one row of the KV cache, rows are
    reordered by parent after each step and finished prompts drop out. Each search decides alone
    (its own beams, finished list and stop rule), so the result is the one-prompt search up to the
    last bits of padded arithmetic (checked against it in tests/unit/test_appropt.py).
    """
    results: list[list[Hyp]] = [[] for _ in prefixes]
    live = [k for k, t in enumerate(tries) if t.root and width > 0]
    if not live:
        return results
    device = next(model.parameters()).device
    longest = max(len(prefixes[k]) for k in live)
    ids = torch.full((len(live), longest), pad_id, dtype=torch.long)
    mask = torch.zeros(len(live), longest, dtype=torch.long)
    for row, k in enumerate(live):
        ids[row, longest - len(prefixes[k]) :] = torch.tensor(prefixes[k])
        mask[row, longest - len(prefixes[k]) :] = 1
    positions = (mask.sum(1) - 1).clamp_min(0)
    mask, positions = mask.to(device), positions.to(device)
    out = model(
        input_ids=ids.to(device),
        attention_mask=mask,
        position_ids=(mask.cumsum(1) - 1).clamp_min(0),
        use_cache=True,
    )
    past = out.past_key_values
    logp = torch.log_softmax(out.logits[:, -1].float(), dim=-1)
    # per live prompt: (first row in logp, its open beams, finished, steps left)
    state = {k: [row, [((), 0.0, tries[k].root)], [], tries[k].depth()] for row, k in enumerate(live)}
    while state:
        parents, steps, order = [], [], []
        for k in list(state):
            first, beams, finished, left = state[k]
            block = logp[first : first + len(beams)]
            nxt, finished, over = _expand(beams, block, tries[k], width, finished)
            left -= 1
            if over or left <= 0:
                results[k] = finished
                del state[k]
                continue
            state[k] = [len(parents), [(h[0], h[1], h[2]) for h in nxt], finished, left]
            parents += [first + h[3] for h in nxt]
            steps += [h[0][-1] for h in nxt]
            order.append(k)
        if not state:
            break
        index = torch.tensor(parents, device=device)
        past.reorder_cache(index)
        positions = positions[index] + 1
        mask = torch.cat([mask[index], torch.ones(len(parents), 1, dtype=mask.dtype, device=device)], dim=1)
        out = model(
            input_ids=torch.tensor(steps, device=device)[:, None],
            attention_mask=mask,
            position_ids=positions[:, None],
            past_key_values=past,
            use_cache=True,
        )
        past = out.past_key_values
        logp = torch.log_softmax(out.logits[:, -1].float(), dim=-1)
    return results


def build_trie(
    entities: list[int], forms: dict[int, list[str]], lang: str, encode: Callable, eos: int
) -> TokenTrie:
    """Trie of every form (in ``lang``) of every entity; entities without one are skipped."""
    trie = TokenTrie(eos)
    for e in entities:
        for form in forms.get(e, ()):
            ids = encode(form, lang)
            if ids:
                trie.add(ids, e)
    return trie


def pick_prompts(prompts: pd.DataFrame, lang: str, styles: list[str]) -> pd.DataFrame:
    """One prompt per fact: in ``lang``, the first style of ``styles`` that exists, empty
    context (no few-shot prefix) first, then template verbalization, then prompt_id order."""
    p = prompts[(prompts["lang"] == lang) & prompts["style"].isin(styles)].copy()
    p["_style"] = p["style"].map({s: i for i, s in enumerate(styles)})
    p["_ctx"] = p["context"].fillna("").astype(str).str.len() > 0
    p["_verb"] = p.get("verbalization", pd.Series("template", index=p.index)).fillna("template") != "template"
    p = p.sort_values(["fact_id", "_style", "_ctx", "_verb", "prompt_id"])
    return p.drop_duplicates("fact_id")[["fact_id", "prompt_id", "context", "text"]]


def appropt_distractors(
    lm: HFCausalLM,
    facts: pd.DataFrame,
    prompts: pd.DataFrame,
    entity_forms: pd.DataFrame,
    omega: Omega,
    n: int = 10,
    lang: str = "en",
    styles: list[str] | None = None,
    width: int | None = None,
    batch_size: int = 16,
) -> pd.DataFrame:
    """ApprOpt rows (candidates columns, strategy ``appropt``) for every fact with a prompt.

    Extra columns: ``score`` (log Pr(λ + EOS | c) of the best form found), ``form``, ``prompt_id``
    and ``found`` (distinct entities found for the fact, ≤ n). Prompts and forms are encoded by
    ``lm``'s rule (BOS, trailing spaces, no-space languages), as in scoring.
    """
    tokenizer = lm.tokenizer
    if tokenizer.eos_token_id is None:
        raise ValueError("the tokenizer has no EOS token; ApprOpt paths must end in EOS")
    eos = int(tokenizer.eos_token_id)
    width = width or n
    chosen = pick_prompts(prompts, lang, styles or ["completion", "statement", "question"])
    f = entity_forms[entity_forms["lang"] == lang]
    forms = f.assign(id=id_ints(f["entity"])).groupby("id")["form"].agg(list).to_dict()
    encode = lru_cache(maxsize=None)(lm.form_ids)
    facts = facts.merge(chosen, on="fact_id", how="inner")
    rows = []
    total = 0
    records = list(facts.itertuples(index=False))
    searched: list[list[Hyp]] = []
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else eos
    with tqdm(total=len(records), desc="appropt", mininterval=5) as bar:
        for start in range(0, len(records), batch_size):
            chunk = records[start : start + batch_size]
            tries, prefixes = [], []
            for fact in chunk:
                s, r, o = id_int(fact.subject), id_int(fact.property), id_int(fact.object)
                pool = omega.filter(s, r, o, omega.members(omega.types_of(o)))
                tries.append(build_trie(pool, forms, lang, encode, eos))
                prefixes.append(lm.context_ids(str(fact.context or "") + str(fact.text)))
            searched += batched_beam_search(lm.model, prefixes, tries, width, pad_id=int(pad))
            bar.update(len(chunk))
    for fact, hyps in zip(records, searched, strict=True):
        seen: list[tuple[int, float, tuple]] = []
        taken = set()
        for toks, score, ents in hyps:
            e = next((x for x in sorted(ents) if x not in taken), None)
            if e is not None:
                taken.add(e)
                seen.append((e, score, toks))
        seen = seen[:n]
        total += len(seen)
        for rank, (e, score, toks) in enumerate(seen, start=1):
            rows.append(
                {
                    "fact_id": fact.fact_id,
                    "entity": f"Q{e}",
                    "role": "distractor",
                    "strategy": "appropt",
                    "rank": rank,
                    "relevance": None,
                    "score": score,
                    "form": tokenizer.decode(list(toks[:-1])).strip(),
                    "prompt_id": fact.prompt_id,
                    "found": len(seen),
                }
            )
    log.info("appropt: %d facts with a prompt, %d distractors (n=%d, width=%d)", len(facts), total, n, width)
    cols = [
        "fact_id",
        "entity",
        "role",
        "strategy",
        "rank",
        "relevance",
        "score",
        "form",
        "prompt_id",
        "found",
    ]
    out = pd.DataFrame(rows, columns=cols)
    out["rank"] = out["rank"].astype("int32")
    out["relevance"] = out["relevance"].astype("float64")
    out["found"] = out["found"].astype("int32")
    return out
