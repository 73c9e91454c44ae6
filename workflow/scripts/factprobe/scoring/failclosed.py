"""Scoring fails closed: a log-probability that is not a finite number stops the job.

A backend that returns NaN (a float16 overflow), ±inf or nothing at all for a request must never
turn into a score: a failed request read as log-probability 0 makes a broken model look good.
:class:`CheckedLM` sits between the backend and the request cache
(``CachingLM(CheckedLM(model, ...), cache)``), so a bad result raises before the cache sees it,
and :func:`require_finite_scores` checks the score table (cached entries included) before it is
written. Both name the model, the suite and the request.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from factprobe.lm.api import (
    LM,
    BeamRequest,
    GenerateRequest,
    GenerateResult,
    LoglikRequest,
    LoglikResult,
    OnDone,
    TopkRequest,
    TopkResult,
)

#: The log-probability fields of a result; each must be a finite float.
LOGPROB_FIELDS = ("logprob", "first_logprob", "end_logprob")


class ScoringError(RuntimeError):
    """A backend gave a result that is not a score; the job must stop without writing it."""


@dataclass(frozen=True)
class ScoringJob:
    """What a scoring error names: the models.tsv row and the suite."""

    model: str
    suite: str

    def fail(self, what: str) -> ScoringError:
        return ScoringError(
            f"model {self.model!r}, suite {self.suite!r}: {what}; the job stops so that no score "
            "table and no cache entry holds it. Check the model's dtype (float16 overflows give NaN) "
            "and its backend, then run the job again."
        )


def _request_text(request: LoglikRequest) -> str:
    return f"request (context {request.context[-80:]!r}, continuation {request.continuation!r})"


def result_problem(result: object) -> str | None:
    """Why ``result`` is not a usable score (None when it is): missing, or a field not finite."""
    if not isinstance(result, LoglikResult):
        return f"no result (got {result!r})"
    for field in LOGPROB_FIELDS:
        value = getattr(result, field)
        if not isinstance(value, numbers.Real) or not math.isfinite(float(value)):
            return f"{field} is {value!r}, not a finite number"
    if not isinstance(result.n_tokens, numbers.Integral) or result.n_tokens < 1:
        return f"n_tokens is {result.n_tokens!r}: no token was scored"
    return None


def check_results(
    job: ScoringJob, requests: Sequence[LoglikRequest], index: Sequence[int], results: Sequence[object]
) -> None:
    """Raise :class:`ScoringError` for the first of ``results`` (of ``requests[index]``) that is bad."""
    if len(index) != len(results):
        raise job.fail(f"the backend gave {len(results)} results for {len(index)} requests")
    for i, result in zip(index, results, strict=True):
        problem = result_problem(result)
        if problem is not None:
            raise job.fail(f"{_request_text(requests[i])}: {problem}")


class CheckedLM(LM):
    """``lm`` whose every log-likelihood result is checked before anyone (the cache) sees it."""

    def __init__(self, lm: LM, job: ScoringJob):
        self.lm = lm
        self.job = job
        self.end_marker = lm.end_marker
        self.encoding_tag = getattr(lm, "encoding_tag", "")

    @property
    def identity(self) -> tuple[str, str, str]:
        return self.lm.identity

    def loglikelihood(
        self, requests: Sequence[LoglikRequest], progress: bool = False, on_done: OnDone | None = None
    ) -> list[LoglikResult]:
        def checked(done: Sequence[int], results: Sequence[LoglikResult]) -> None:
            check_results(self.job, requests, list(done), list(results))
            if on_done is not None:
                on_done(done, results)

        out = self.lm.loglikelihood(requests, progress=progress, on_done=checked)
        out = list(out) if out is not None else []
        if len(out) != len(requests):
            raise self.job.fail(f"the backend gave {len(out)} results for {len(requests)} requests")
        check_results(self.job, requests, range(len(requests)), out)
        return out

    def topk(self, requests: Sequence[TopkRequest]) -> list[TopkResult]:
        out = self.lm.topk(requests)
        for request, result in zip(requests, out, strict=True):
            bad = [v for v in result.logprobs if not math.isfinite(v)]
            if bad:
                raise self.job.fail(
                    f"top-{request.k} of context {request.context[-80:]!r}: log-probability {bad[0]!r}"
                )
        return out

    def generate(
        self, requests: Sequence[GenerateRequest], progress: bool = False
    ) -> list[list[GenerateResult]]:
        out = self.lm.generate(requests, progress=progress)
        return self._checked_answers(requests, out, "answer lists", "an answer to context")

    def beams(self, requests: Sequence[BeamRequest], progress: bool = False) -> list[list[GenerateResult]]:
        out = self.lm.beams(requests, progress=progress)
        return self._checked_answers(requests, out, "beam lists", "a beam after context")

    def _checked_answers(
        self, requests: Sequence, out: list[list[GenerateResult]], lists: str, what: str
    ) -> list[list[GenerateResult]]:
        """``out`` if it has one list per request and every log-probability is finite, else fail."""
        if len(out) != len(requests):
            raise self.job.fail(f"the backend gave {len(out)} {lists} for {len(requests)} prompts")
        for request, answers in zip(requests, out, strict=True):
            bad = [a.logprob for a in answers if not math.isfinite(a.logprob)]
            if bad:
                raise self.job.fail(f"{what} {request.context[-80:]!r} has log-probability {bad[0]!r}")
        return out


def require_finite_scores(scores: pd.DataFrame, job: ScoringJob) -> None:
    """Raise :class:`ScoringError` when a score-table row has a log-probability that is not finite
    (a cached entry written before these checks existed), naming the row and how many there are."""
    for field in LOGPROB_FIELDS:
        if field not in scores.columns:
            continue
        bad = ~np.isfinite(pd.to_numeric(scores[field], errors="coerce").to_numpy(dtype=float))
        if bad.any():
            row = scores[bad].iloc[0]
            raise job.fail(
                f"{int(bad.sum())} score row(s) with {field} not finite, the first prompt "
                f"{row['prompt_id']!r}, entity {row['entity']!r}, form {row['form']!r} ({row[field]!r}); "
                "if it came from the request cache, delete that model's cache folder"
            )
