"""ApprOpt: LM-guided distractors (distractors paper §3.3, "Approximation of Optimal Distractors").

Eq. 4 asks for the n entities of Ω(f) with the highest Pl(o*|c). ApprOpt approximates it with a
beam search of width n over the model's continuations of the cloze sentence c, constrained by a
token trie so that every hypothesis is λ + EOS for a form λ of an entity in Ω(f). As the
reference implementation (which runs its search per template sentence), the search runs **per
cloze sentence**: every prompt of the fact in ``lang`` and ``styles`` gets its own list, and
K(f|c) of that sentence uses that list (rows carry the sentence's ``prompt_id``).

* **Trie ids = scoring's ids.** A form's path is the continuation ids scoring gives the pair
  (prompt, form): joint tokenization split at the prompt's end, end marker appended
  (:meth:`factprobe.lm.api.LM.continuation_paths`), so a distractor's score is its scoring
  log-likelihood log Pr(λ + EOS | c). A pair whose encoding merges across the prompt's end is not
  a path after the prompt: it is left out and counted.
* **Pool.** The Ω-valid entities of o's declared types (o and the valid objects left out, so the
  beam is not spent on them; the reference put them in, widened the beam by their number and
  dropped them after). For a huge type (humans: millions of labels) the pool is capped at
  ``max_candidates``: the first ``max_candidates`` Ω-valid members by a cheap prior (sitelinks
  when the rule gives them, else ascending id); how many members were cut is logged.
* **Search.** Each beam step is a batch-invariant packed pass (:mod:`factprobe.lm.beam`), so a
  sentence's beams do not depend on the others searched with it; sentences of many facts
  share each forward pass, about ``batch_rows`` beam rows per batch. Several forms of one entity
  can take several beams, so fewer than n distinct entities may come back (the paper notes
  this); the count is recorded in ``found``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
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

#: Default cap on the candidate pool of one fact (config ``distractors.appropt.max_candidates``).
MAX_CANDIDATES = 100_000
#: Beam rows (sentences x width) per forward pass of the batched search.
BATCH_ROWS = 1024
#: Prior of an entity for the cap: higher first (e.g. sitelinks); None = ascending id.
Prior = Callable[[np.ndarray], np.ndarray]


@dataclass
class Counts:
    """What the search left out, for the log (capped facts, type members cut, merged pairs),
    and the prior-ordered members of each capped type set (facts share their objects' types)."""

    capped: int = 0
    cut: int = 0
    merged: int = 0
    ordered: dict = field(default_factory=dict)


def build_trie(
    lm: LM, prompt: str, pool: list[int], forms: dict[int, list[str]], lang: str
) -> tuple[list[int], TokenTrie, int]:
    """The context ids of ``prompt`` and the trie of every form (in ``lang``) of every entity of
    ``pool``, with scoring's continuation ids; leaves hold ``(entity, form)``. Also returns the
    number of pairs left out (joint encoding merged across the prompt's end)."""
    pairs = [(e, f) for e in pool for f in forms.get(e, ())]
    prefix, paths = lm.continuation_paths(prompt, [f for _, f in pairs], lang)
    trie = TokenTrie(lm.eos_id)
    merged = 0
    for (e, form), path in zip(pairs, paths, strict=True):
        if path is None:
            merged += 1
        else:
            trie.add_path(path, (e, form))
    return prefix, trie, merged


def sentence_prompts(prompts: pd.DataFrame, lang: str, styles: list[str]) -> pd.DataFrame:
    """Every cloze sentence ApprOpt searches: the prompts in ``lang`` whose style is in
    ``styles`` (all of them, each with its own few-shot context), by fact then prompt_id."""
    p = prompts[(prompts["lang"] == lang) & prompts["style"].isin(styles)]
    p = p.sort_values(["fact_id", "prompt_id"])
    return p[["fact_id", "prompt_id", "context", "text"]].reset_index(drop=True)


def candidate_pool(
    omega: Omega, s: int, r: int, o: int, cap: int | None, prior: Prior | None, counts: Counts
) -> list[int]:
    """Ω(f) ∩ members of o's declared types, at most ``cap`` (None: no cap): the first ``cap``
    Ω-valid members in ``prior`` order (highest first, ties by id; no prior: ascending id)."""
    types = omega.types_of(o)
    members = omega.members(types)
    if cap is None or len(members) <= cap:
        return omega.filter(s, r, o, members)
    if prior is not None:
        key = tuple(int(t) for t in types)
        if key not in counts.ordered:
            rank = -np.asarray(prior(members), dtype=np.float64)
            counts.ordered[key] = members[np.lexsort((members, rank))]
        members = counts.ordered[key]
    counts.capped += 1
    counts.cut += len(members) - cap
    return omega.filter(s, r, o, members, limit=cap)


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
    max_candidates: int | None = MAX_CANDIDATES,
    prior: Prior | None = None,
    batch_rows: int = BATCH_ROWS,
) -> pd.DataFrame:
    """ApprOpt rows (candidates columns, strategy ``appropt``) for every cloze sentence of a fact.

    Extra columns: ``score`` (log Pr(λ + EOS | c) of the best form found, = its scoring
    log-likelihood), ``form``, ``prompt_id`` (the sentence c searched; its list is Δn(f) for c
    only) and ``found`` (distinct entities found for the sentence, ≤ n). The search is the
    model's :meth:`trie_search` (a backend without one cannot run ApprOpt).
    """
    width = width or n
    chosen = sentence_prompts(prompts, lang, styles or ["completion", "statement", "question"])
    f = entity_forms[entity_forms["lang"] == lang]
    forms = f.assign(id=id_ints(f["entity"])).groupby("id")["form"].agg(list).to_dict()
    records = list(facts.merge(chosen, on="fact_id", how="inner").itertuples(index=False))
    counts = Counts()
    searched = _search(
        lm, records, omega, forms, lang, width, max(1, batch_rows // width), (max_candidates, prior, counts)
    )
    rows = [row for rec, hyps in zip(records, searched, strict=True) for row in _sentence_rows(rec, hyps, n)]
    log.info(
        "appropt: %d sentences of %d facts, %d distractors (n=%d, width=%d); pool capped at %s for %d "
        "facts (%d type members cut); %d (sentence, form) pairs merged across the prompt's end left out",
        len(records),
        len({r.fact_id for r in records}),
        len(rows),
        n,
        width,
        max_candidates,
        counts.capped,
        counts.cut,
        counts.merged,
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
    lm: LM, records: list, omega: Omega, forms: dict, lang: str, width: int, batch: int, cap: tuple
) -> list[list[Hyp]]:
    """The trie search of every sentence, ``batch`` sentences per forward pass. A fact's pool is
    drawn once (``cap``: max_candidates, prior, counts); each sentence's trie has its own ids."""
    max_candidates, prior, counts = cap
    searched: list[list[Hyp]] = []
    pool_of: tuple[str, list[int]] = ("", [])
    with tqdm(total=len(records), desc="appropt", mininterval=5) as bar:
        for start in range(0, len(records), batch):
            chunk = records[start : start + batch]
            tries, prefixes = [], []
            for rec in chunk:
                if pool_of[0] != rec.fact_id:  # records come by fact: a pool serves its sentences
                    s, r, o = id_int(rec.subject), id_int(rec.property), id_int(rec.object)
                    pool_of = (rec.fact_id, candidate_pool(omega, s, r, o, max_candidates, prior, counts))
                prompt = str(rec.context or "") + str(rec.text)
                prefix, trie, merged = build_trie(lm, prompt, pool_of[1], forms, lang)
                counts.merged += merged
                tries.append(trie)
                prefixes.append(prefix)
            searched += lm.trie_search(prefixes, tries, width)
            bar.update(len(chunk))
    return searched


def _sentence_rows(rec, hyps: list[Hyp], n: int) -> list[dict]:
    """One sentence's rows: the best hypothesis of each distinct entity, at most ``n``, best first."""
    seen: list[tuple[int, float, str]] = []
    taken = set()
    for _toks, score, leaf in hyps:
        pick = next(((e, form) for e, form in sorted(leaf) if e not in taken), None)
        if pick is not None:
            taken.add(pick[0])
            seen.append((pick[0], score, pick[1]))
    seen = seen[:n]
    return [
        {
            "fact_id": rec.fact_id,
            "entity": qid(e),
            "role": "distractor",
            "strategy": "appropt",
            "rank": rank,
            "relevance": None,
            "score": score,
            "form": form,
            "prompt_id": rec.prompt_id,
            "found": len(seen),
        }
        for rank, (e, score, form) in enumerate(seen, start=1)
    ]
