"""What rules ``score_shard`` and ``score_suite`` do, as functions: the one code path of the
workflow and of :func:`factprobe.api.score`.

A suite's prompts are split into ``scoring.shards`` hash-chosen shards (:func:`shard_of`); each
shard's (prompt, candidate, form) pairs are scored (:func:`score_prompts`), then the shards are
gathered into the ``scores`` table, sorted, with each form's first-token rank filled from the
top-k table (:func:`gather_scores`). The model is any :class:`factprobe.lm.api.LM`; the caller
wraps it in :class:`~factprobe.scoring.failclosed.CheckedLM` (and a request cache, the workflow),
so a result that is not a score stops the job before it is cached or written.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd

from factprobe import contracts
from factprobe.scoring.failclosed import ScoringJob, require_finite_scores
from factprobe.scoring.suite import build_pairs, first_token_ranks, score_pairs, shard_of, topk_table


@dataclass(frozen=True)
class ScoreSettings:
    """A suite's scoring settings (config ``scoring``, resolved per suite by
    :mod:`factprobe.plumbing.run_settings`): what rule ``score_shard`` receives as params."""

    mode: str = "continuation"  # or "sentence" (PROBELM §4.1)
    end_marker: str = "eos"
    token_budget: int = 4096
    no_space_languages: tuple[str, ...] = ()
    topk: int = 0
    shards: int = 1
    sentence_forms: str = "label"
    sentence_first_token: str = "conditioned"

    @property
    def sentence(self) -> bool:
        return self.mode == "sentence"


def shard_prompts(prompts: pd.DataFrame, shard: int, shards: int) -> pd.DataFrame:
    """The prompts of one shard (their ``prompt_id`` hashed, :func:`shard_of`)."""
    return prompts[[shard_of(p, shards) == shard for p in prompts["prompt_id"]]]


def shard_swaps(swaps: pd.DataFrame | None, shard: int, shards: int) -> pd.DataFrame | None:
    """Subject swaps (sentence mode) scored in the shard of the prompt they swap."""
    if swaps is None:
        return None
    return swaps[[shard_of(p, shards) == shard for p in swaps["group_prompt_id"]]]


def score_prompts(
    lm,
    prompts: pd.DataFrame,
    candidates: pd.DataFrame,
    forms: pd.DataFrame,
    settings: ScoreSettings,
    job: ScoringJob,
    swaps: pd.DataFrame | None = None,
    progress: bool = True,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(``score_shard`` table, ``topk`` table) of ``prompts``: every pair of
    :func:`~factprobe.scoring.suite.build_pairs` scored by ``lm``; no row whose log-probability is
    not finite (:func:`~factprobe.scoring.failclosed.require_finite_scores`)."""
    sentence = settings.sentence
    # Sentence mode scores whole scenario sentences: the template's ending too, one label per entity.
    pairs = build_pairs(
        prompts,
        candidates,
        forms,
        tuple(settings.no_space_languages),
        swaps=swaps,
        ending=sentence,
        sentence_forms=settings.sentence_forms if sentence else "all",
    )
    scores = score_pairs(
        lm, pairs, progress=progress, sentence=sentence, first_token=settings.sentence_first_token
    )
    require_finite_scores(scores, job)
    return scores, topk_table(lm, prompts, int(settings.topk))


def gather_scores(
    parts: Sequence[pd.DataFrame], topk_parts: Sequence[pd.DataFrame]
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(``scores``, ``topk``) of one (suite, model) from its shards, in shard order: rows sorted by
    (prompt, entity, form), ``first_rank`` from the top-k table
    (:func:`~factprobe.scoring.suite.first_token_ranks`)."""
    scores = pd.concat(list(parts), ignore_index=True).sort_values(
        ["prompt_id", "entity", "form"], kind="stable"
    )
    topk = pd.concat(list(topk_parts), ignore_index=True)
    scores["first_rank"] = first_token_ranks(scores, topk)
    return scores, topk.sort_values(["prompt_id", "rank"], kind="stable")


def engine_metadata() -> dict[bytes, bytes]:
    """The Parquet schema metadata of a score table: the engine version that scored it
    (:data:`factprobe.lm.cache.ENGINE_VERSION`, which also keys the request cache)."""
    from factprobe.lm.cache import ENGINE_VERSION

    return {contracts.ENGINE_KEY: ENGINE_VERSION.encode()}
