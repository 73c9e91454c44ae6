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
from functools import lru_cache

import pandas as pd
from tqdm import tqdm

from factprobe.contracts import id_int, id_ints, qid
from factprobe.distractors.omega import Omega
from factprobe.lm.api import LM
from factprobe.lm.beam import (  # noqa: F401 (re-exported: the search ApprOpt runs)
    LEAF,
    Hyp,
    TokenTrie,
    batched_beam_search,
    constrained_beam_search,
)

log = logging.getLogger(__name__)


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
    lm: LM,
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
    ``lm``'s rule (BOS, trailing spaces, no-space languages), as in scoring; the search is the
    model's :meth:`trie_search` (a backend without one cannot run ApprOpt).
    """
    eos = lm.eos_id
    if eos is None:
        raise ValueError("the tokenizer has no EOS token; ApprOpt paths must end in EOS")
    width = width or n
    chosen = pick_prompts(prompts, lang, styles or ["completion", "statement", "question"])
    f = entity_forms[entity_forms["lang"] == lang]
    forms = f.assign(id=id_ints(f["entity"])).groupby("id")["form"].agg(list).to_dict()
    facts = facts.merge(chosen, on="fact_id", how="inner")
    records = list(facts.itertuples(index=False))
    searched = _search(lm, records, omega, forms, lang, int(eos), width, batch_size)
    rows = [
        row for fact, hyps in zip(records, searched, strict=True) for row in _fact_rows(lm, fact, hyps, n)
    ]
    log.info(
        "appropt: %d facts with a prompt, %d distractors (n=%d, width=%d)", len(facts), len(rows), n, width
    )
    out = pd.DataFrame(rows, columns=APPROPT_COLUMNS)
    out["rank"] = out["rank"].astype("int32")
    out["relevance"] = out["relevance"].astype("float64")
    out["found"] = out["found"].astype("int32")
    return out


APPROPT_COLUMNS = [
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


def _search(
    lm: LM, records: list, omega: Omega, forms: dict, lang: str, eos: int, width: int, batch_size: int
) -> list[list[Hyp]]:
    """The trie search of every fact's prompt, ``batch_size`` prompts per forward pass; each
    trie holds the forms of Ω(f)'s entities of o's declared types (o and valid objects left out)."""
    encode = lru_cache(maxsize=None)(lm.form_ids)
    searched: list[list[Hyp]] = []
    with tqdm(total=len(records), desc="appropt", mininterval=5) as bar:
        for start in range(0, len(records), batch_size):
            chunk = records[start : start + batch_size]
            tries, prefixes = [], []
            for fact in chunk:
                s, r, o = id_int(fact.subject), id_int(fact.property), id_int(fact.object)
                pool = omega.filter(s, r, o, omega.members(omega.types_of(o)))
                tries.append(build_trie(pool, forms, lang, encode, eos))
                prefixes.append(lm.context_ids(str(fact.context or "") + str(fact.text)))
            searched += lm.trie_search(prefixes, tries, width)
            bar.update(len(chunk))
    return searched


def _fact_rows(lm: LM, fact, hyps: list[Hyp], n: int) -> list[dict]:
    """One fact's rows: the best hypothesis of each distinct entity, at most ``n``, best first."""
    seen: list[tuple[int, float, tuple]] = []
    taken = set()
    for toks, score, ents in hyps:
        e = next((x for x in sorted(ents) if x not in taken), None)
        if e is not None:
            taken.add(e)
            seen.append((e, score, toks))
    seen = seen[:n]
    return [
        {
            "fact_id": fact.fact_id,
            "entity": qid(e),
            "role": "distractor",
            "strategy": "appropt",
            "rank": rank,
            "relevance": None,
            "score": score,
            "form": lm.decode(list(toks[:-1])).strip(),
            "prompt_id": fact.prompt_id,
            "found": len(seen),
        }
        for rank, (e, score, toks) in enumerate(seen, start=1)
    ]
