"""ApprOpt: LM-guided distractors (distractors paper §3.3, "Approximation of Optimal Distractors").

Eq. 4 asks for the n entities of Ω(f) with the highest Pl(o*|c). ApprOpt approximates it with a
beam search of width n over the model's continuations of the cloze sentence c, constrained by a
token trie so that every hypothesis is λ + EOS for a form λ of an entity in Ω(f). As the
reference implementation (which runs its search per template sentence), the search runs **per
cloze sentence**: every prompt of the fact in ``lang`` and ``styles`` gets its own list, and
K(f|c) of that sentence uses that list (rows carry the sentence's ``prompt_id``).

* **Trie ids = scoring's ids.** A label's path is the continuation ids scoring gives the pair
  (prompt, label): joint tokenization split at the prompt's end, the model's end token appended
  and, under ``prompt_format: chat``, the chat template's head before the prompt
  (:meth:`factprobe.lm.api.LM.continuation_paths`), so a distractor's score is its scoring
  log-likelihood log Pr(λ + end | c). A pair whose encoding merges across the prompt's end is not
  a path after the prompt: it is left out and counted.
* **One label per entity**, as the reference (DistFactAssessLM) builds its trie: the entity's
  label in ``lang`` (its first ``label`` form; an entity without one, its first form). Aliases
  are no paths, so they cannot take beams from other entities. Namesakes share one path, which
  gives one distractor, the lowest id of them (the reference maps a decoded label to one
  entity): one comparison per surface form, as the metrics stage counts them
  (:func:`factprobe.metrics.knowledge.one_per_surface_form`).
* **Pool.** The Ω-valid entities of o's declared types, plus the fact's valid objects (o and
  ``objects``). For a huge type (humans: millions of labels) the Ω-valid members are capped at
  ``max_candidates``: the first ``max_candidates`` by a cheap prior (sitelinks when the rule gives
  them, else ascending id); how many members were cut is logged.
* **Search.** As the reference, the beam is n + |valid objects in the trie| wide and the first n
  hypotheses that are not valid objects are kept; finished hypotheses keep their beam slots until
  the search ends, as the reference's search keeps them (:func:`factprobe.lm.beam.pool_step`). With one path per entity a sentence gets fewer
  than n only when its pool has fewer than n Ω-valid entities with a path (the paper's other
  cause, one label tokenized two ways, cannot arise: a pair has one encoding); both counts are
  logged (``found`` per row). Each beam step is a batch-invariant packed pass
  (:mod:`factprobe.lm.beam`), so a sentence's beams do not depend on the others searched with it;
  sentences share each forward pass, about ``batch_rows`` beam rows per batch.
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
    Hyp,
    TokenTrie,
    batched_beam_search,
    constrained_beam_search,
)
from factprobe.settings import Appropt

log = logging.getLogger(__name__)

#: Default cap on the candidate pool of one fact (config ``distractors.appropt.max_candidates``).
MAX_CANDIDATES = 100_000
#: Beam rows (sentences x width) per forward pass of the batched search.
BATCH_ROWS = 1024
#: ``distractors.appropt`` with the defaults of a suite of its own: n = 10 distractors, English sentences.
APPROPT = Appropt(n=10, lang="en", max_candidates=MAX_CANDIDATES)
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
    #: Sentences with fewer than n distractors: the pool had fewer than n paths / for another cause.
    short_pool: int = 0
    short_other: int = 0


def entity_labels(entity_forms: pd.DataFrame, lang: str) -> dict[int, str]:
    """One label per entity in ``lang`` (module docstring): its first ``label`` form, else its
    first form."""
    f = entity_forms[entity_forms["lang"] == lang]
    if "source" in f.columns:
        f = f.assign(_label=f["source"] != "label").sort_values("_label", kind="stable")
    return f.assign(id=id_ints(f["entity"])).groupby("id", sort=False)["form"].first().to_dict()


def build_trie(
    lm: LM, prompt: str, pool: list[int], labels: dict[int, str], lang: str
) -> tuple[list[int], TokenTrie, int]:
    """The context ids of ``prompt`` and the trie of the label (in ``lang``) of every entity of
    ``pool`` that has one, with scoring's continuation ids; leaves hold ``(entity, label)``. Also
    returns the number of pairs left out (joint encoding merged across the prompt's end)."""
    pairs = [(e, labels[e]) for e in pool if e in labels]
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
    settings: Appropt = APPROPT,
    prior: Prior | None = None,
    batch_rows: int = BATCH_ROWS,
) -> pd.DataFrame:
    """ApprOpt rows (candidates columns, strategy ``appropt``) for every cloze sentence of a fact.

    ``settings``: the ``distractors.appropt`` section resolved for the suite
    (:func:`factprobe.config_rules.suite_appropt`: ``n`` and ``lang`` set): ``n`` distractors per
    sentence in language ``lang``, its sentences of ``styles``, the beam ``width`` and the cap
    ``max_candidates`` on one fact's pool (``prior`` orders it).

    Extra columns: ``score`` (log Pr(λ + end | c) of the label, = its scoring log-likelihood),
    ``form`` (the label), ``prompt_id`` (the sentence c searched; its list is Δn(f) for c only)
    and ``found`` (distinct entities found for the sentence, ≤ n). The beam is ``width`` (default
    n) + the number of the fact's valid objects in the trie wide (module docstring). The search
    is the model's :meth:`trie_search` (a backend without one cannot run ApprOpt).
    """
    n, lang, max_candidates = settings.n, settings.lang, settings.max_candidates
    if n is None or not lang:
        raise ValueError(
            f"appropt settings {settings}: n and lang unresolved; pass the suite's "
            "(factprobe.config_rules.suite_appropt)"
        )
    width = settings.width or n
    chosen = sentence_prompts(prompts, lang, settings.styles or ["completion", "statement", "question"])
    labels = entity_labels(entity_forms, lang)
    records = list(facts.merge(chosen, on="fact_id", how="inner").itertuples(index=False))
    counts = Counts()
    searched = _search(
        lm, records, omega, labels, lang, width, max(1, batch_rows // width), (max_candidates, prior, counts)
    )
    rows = []
    for rec, (hyps, valid, pool_paths) in zip(records, searched, strict=True):
        got = _sentence_rows(rec, hyps, n, valid)
        rows += got
        if len(got) < n:
            if pool_paths < n:
                counts.short_pool += 1
            else:
                counts.short_other += 1
    _log_counts(counts, records, len(rows), n, width, max_candidates)
    out = pd.DataFrame(rows, columns=APPROPT_COLUMNS)
    out["rank"] = out["rank"].astype("int32")
    out["relevance"] = out["relevance"].astype("float64")
    out["found"] = out["found"].astype("int32")
    return out


def _log_counts(
    counts: Counts, records: list, distractors: int, n: int, width: int, max_candidates: int | None
) -> None:
    """Log what one ApprOpt job found and what it left out; warn when a sentence whose pool had n
    labels or more still got fewer than n."""
    log.info(
        "appropt: %d sentences of %d facts, %d distractors (n=%d, width=%d + valid objects); pool capped "
        "at %s for %d facts (%d type members cut); %d (sentence, label) pairs merged across the "
        "prompt's end left out; fewer than n: %d sentences whose pool has fewer than n labels, %d others",
        len(records),
        len({r.fact_id for r in records}),
        distractors,
        n,
        width,
        max_candidates,
        counts.capped,
        counts.cut,
        counts.merged,
        counts.short_pool,
        counts.short_other,
    )
    if counts.short_other:
        log.warning(
            "appropt: %d sentences with a pool of n labels or more got fewer than n", counts.short_other
        )


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


def valid_objects(rec) -> list[int]:
    """The fact's valid objects (``object`` and ``objects``): in the trie, never kept."""
    objs = [rec.object, *(list(rec.objects) if getattr(rec, "objects", None) is not None else [])]
    return sorted({id_int(o) for o in objs})


def _search(
    lm: LM, records: list, omega: Omega, labels: dict, lang: str, width: int, batch: int, cap: tuple
) -> list[tuple[list[Hyp], set[int], int]]:
    """The trie search of every sentence, ``batch`` sentences per forward pass: per sentence its
    hypotheses, the valid objects in its trie and the number of other labels in it. A fact's pool
    is drawn once (``cap``: max_candidates, prior, counts); each sentence's trie has its own ids.
    Sentences of one batch are searched in groups of equal width (batch-invariant: the same
    result as alone)."""
    max_candidates, prior, counts = cap
    searched: list[tuple[list[Hyp], set[int], int]] = []
    pool_of: tuple[str, list[int], list[int]] = ("", [], [])
    with tqdm(total=len(records), desc="appropt", mininterval=5) as bar:
        for start in range(0, len(records), batch):
            chunk = records[start : start + batch]
            prepared = []
            for rec in chunk:
                if pool_of[0] != rec.fact_id:  # records come by fact: a pool serves its sentences
                    s, r, o = id_int(rec.subject), id_int(rec.property), id_int(rec.object)
                    pool = candidate_pool(omega, s, r, o, max_candidates, prior, counts)
                    pool_of = (rec.fact_id, pool, valid_objects(rec))
                prompt = str(rec.context or "") + str(rec.text)
                prefix, trie, merged = build_trie(lm, prompt, [*pool_of[1], *pool_of[2]], labels, lang)
                counts.merged += merged
                in_trie = {e for _, leaf in trie.paths() for e, _ in leaf}
                valid = set(pool_of[2]) & in_trie
                prepared.append((prefix, trie, valid, len(in_trie - valid)))
            results: list = [None] * len(prepared)
            for w in sorted({width + len(p[2]) for p in prepared}):
                idx = [i for i, p in enumerate(prepared) if width + len(p[2]) == w]
                for i, hyps in zip(
                    idx,
                    lm.trie_search([prepared[i][0] for i in idx], [prepared[i][1] for i in idx], w),
                    strict=True,
                ):
                    results[i] = hyps
            searched += [(hyps, p[2], p[3]) for hyps, p in zip(results, prepared, strict=True)]
            bar.update(len(chunk))
    return searched


def _sentence_rows(rec, hyps: list[Hyp], n: int, valid: set[int] = frozenset()) -> list[dict]:
    """One sentence's rows: the entities of the hypotheses, best first, valid objects left out, the
    first ``n``."""
    seen: list[tuple[int, float, str]] = []
    taken = set(valid)
    for _toks, score, leaf in hyps:
        # Namesakes share a path: one distractor, the lowest id; a path that names a valid
        # object is that answer's string and gives none.
        ents = sorted((e, form) for e, form in leaf if e not in taken)
        if ents and not any(e in valid for e, _ in leaf):
            e, form = ents[0]
            taken.add(e)
            seen.append((e, score, form))
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
