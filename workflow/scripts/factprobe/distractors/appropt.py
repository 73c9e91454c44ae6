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
) -> list[tuple[tuple[int, ...], float, list]]:
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
    finished: list[tuple[tuple[int, ...], float, list]] = []
    for _ in range(max_new_tokens):
        cands = []
        for b, (_, score, node) in enumerate(beams):
            allowed = trie.allowed(node)
            if not allowed:
                continue
            lps = logp[b, torch.tensor(allowed, device=logp.device)].tolist()
            cands.extend((score + lp, b, t) for t, lp in zip(allowed, lps, strict=True))
        if not cands:
            break
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
        if not nxt or (len(finished) >= width and nxt[0][1] <= finished[-1][1]):
            break
        parents = torch.tensor([h[3] for h in nxt], device=device)
        past.reorder_cache(parents)
        step = torch.tensor([[h[0][-1]] for h in nxt], device=device)
        out = model(input_ids=step, past_key_values=past, use_cache=True)
        past = out.past_key_values
        logp = torch.log_softmax(out.logits[:, -1].float(), dim=-1)
        beams = [(h[0], h[1], h[2]) for h in nxt]
    return finished


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
    for fact in tqdm(facts.itertuples(index=False), total=len(facts), desc="appropt", mininterval=5):
        s, r, o = id_int(fact.subject), id_int(fact.property), id_int(fact.object)
        pool = omega.filter(s, r, o, omega.members(omega.types_of(o)))
        trie = build_trie(pool, forms, lang, encode, eos)
        prefix = lm.context_ids(str(fact.context or "") + str(fact.text))
        hyps = constrained_beam_search(lm.model, prefix, trie, width)
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
