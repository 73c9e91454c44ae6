"""Typed requests and results of a language model, and the interface every model implements.

The seam of lm-evaluation-harness (``Instance`` requests, an ``LM`` with ``loglikelihood`` and
``generate_until``), without its registry and task machinery. Requests carry *text*; how text
becomes tokens (BOS, spaces, EOS) is the model's business (:mod:`factprobe.lm.encoding`), so every
consumer - scoring, top-k, generation, ApprOpt, the control model - gets the same rule.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class LoglikRequest:
    """Score ``continuation`` (a form with its leading space, see ``continuation_text``) after ``context``."""

    context: str
    continuation: str


@dataclass(frozen=True, slots=True)
class LoglikResult:
    """Summed log-probability of the continuation tokens and the end marker, their count, and the
    log-probability of the first token that carries the form (Precision@n)."""

    logprob: float
    n_tokens: int
    first_logprob: float
    #: The end marker's share of ``logprob`` (0 with end marker ``none``): ``logprob - end_logprob``
    #: is log Pr(form | c) without it (distractors paper Table 2, Probability).
    end_logprob: float = 0.0


@dataclass(frozen=True, slots=True)
class SentenceRequest:
    """Score the whole of ``text`` from its first token: log P(text + end marker), the sentence
    log-likelihood whose per-token mean is minus the log perplexity (PROBELM §4.1).

    The first token is conditioned on the tokenizer's BOS (or EOS standing in for it, as for an
    empty context), so every token of the text is scored; ``text`` is encoded as given (no
    leading space is added)."""

    text: str


@dataclass(frozen=True, slots=True)
class TopkRequest:
    """The ``k`` most likely next tokens after ``context``."""

    context: str
    k: int


@dataclass(frozen=True, slots=True)
class TopkResult:
    """Token ids, their text and log-probabilities, most likely first."""

    token_ids: tuple[int, ...]
    tokens: tuple[str, ...]
    logprobs: tuple[float, ...]


@dataclass(frozen=True, slots=True)
class GenerateRequest:
    """Continue ``context``: greedily (``samples = 0``) or with ``samples`` multinomial samples
    (temperature 1, full vocabulary) drawn after seeding the generator with ``seed``.

    Generation stops at the first line break or EOS (or after ``max_new_tokens``).
    """

    context: str
    max_new_tokens: int = 12
    samples: int = 0
    seed: int = 0


@dataclass(frozen=True, slots=True)
class BeamRequest:
    """B(c) of the distractors paper (Table 2): the ``width`` best sequences of a beam search of
    width ``width`` after ``context``, each ending at EOS or after ``max_new_tokens`` tokens."""

    context: str
    width: int
    max_new_tokens: int = 12


@dataclass(frozen=True, slots=True)
class GenerateResult:
    """One answer: its first line, and the summed log-probability of its tokens up to and
    including the token that ended it (line break or EOS)."""

    text: str
    logprob: float


# Called with (indices of finished requests, their results) as scoring progresses.
OnDone = Callable[[Sequence[int], Sequence[LoglikResult]], None]


class LM(ABC):
    """A scorable language model. ``identity`` and ``end_marker`` name its scores in cache keys."""

    #: What follows a scored form: ``eos`` (the paper's choice), ``.`` or ``none`` (see encoding).
    end_marker: str = "eos"
    #: Encoding settings the scores depend on beyond ``identity`` and ``end_marker`` (a non-default
    #: end token or prompt format); part of the request cache key when not empty.
    encoding_tag: str = ""

    @property
    @abstractmethod
    def identity(self) -> tuple[str, str, str]:
        """(model, revision or content hash, dtype + encoding settings): what the scores depend on."""

    @abstractmethod
    def loglikelihood(
        self, requests: Sequence[LoglikRequest], progress: bool = False, on_done: OnDone | None = None
    ) -> list[LoglikResult]:
        """One result per request; ``on_done`` sees results as soon as they are final."""

    def sentence_loglikelihood(
        self, requests: Sequence[SentenceRequest], progress: bool = False
    ) -> list[LoglikResult]:
        """One result per request: ``logprob`` = log P(text + end marker) summed from the first
        token, ``n_tokens`` = tokens scored (text + end marker), ``first_logprob`` = the first
        token's, ``end_logprob`` = the end marker's.

        A sentence is the continuation of an empty context (the encoding rule conditions it on BOS,
        or EOS in its place), so the packed engine, the request cache and the OOM policy of
        :meth:`loglikelihood` serve it unchanged and exactly."""
        empty = [r for r in requests if not r.text.strip()]
        if empty:
            raise ValueError(f"sentence scoring: {len(empty)} empty sentence(s); nothing to score")
        return self.loglikelihood([LoglikRequest("", r.text) for r in requests], progress=progress)

    @abstractmethod
    def topk(self, requests: Sequence[TopkRequest]) -> list[TopkResult]:
        """One result per request."""

    @abstractmethod
    def generate(
        self, requests: Sequence[GenerateRequest], progress: bool = False
    ) -> list[list[GenerateResult]]:
        """Per request: one answer when greedy, else ``samples`` answers."""

    def beams(self, requests: Sequence[BeamRequest], progress: bool = False) -> list[list[GenerateResult]]:
        """Per request: its beam's sequences, best first (text without special tokens, summed
        log-probability of the tokens, the EOS that ended one included)."""
        raise NotImplementedError(f"{type(self).__name__} cannot run a beam search: B(c) needs token ids")

    # -- what ApprOpt asks of a model (distractors paper §3.3); a backend without it cannot run it --

    @property
    def eos_id(self) -> int | None:
        """The end token id that closes every ApprOpt path: the one end marker ``eos`` scores."""
        raise NotImplementedError(
            f"{type(self).__name__} has no token ids: ApprOpt needs a token-level backend"
        )

    def context_ids(self, prompt: str) -> list[int]:
        """Token ids of a prompt, by the model's encoding rule."""
        raise NotImplementedError(
            f"{type(self).__name__} has no token ids: ApprOpt needs a token-level backend"
        )

    def form_ids(self, form: str, lang: str) -> list[int]:
        """Token ids of a form as continuation in ``lang``, by the model's encoding rule."""
        raise NotImplementedError(
            f"{type(self).__name__} has no token ids: ApprOpt needs a token-level backend"
        )

    def continuation_paths(
        self, prompt: str, forms: Sequence[str], lang: str
    ) -> tuple[list[int], list[tuple[int, ...] | None]]:
        """Context ids of ``prompt`` and each form's continuation ids (end marker included), as
        scoring encodes the pair; None for a pair scoring does not score as a path after the prompt."""
        raise NotImplementedError(
            f"{type(self).__name__} has no token ids: ApprOpt needs a token-level backend"
        )

    def decode(self, ids: Sequence[int]) -> str:
        """Text of token ids."""
        raise NotImplementedError(
            f"{type(self).__name__} has no token ids: ApprOpt needs a token-level backend"
        )

    def trie_search(self, prefixes: list[list[int]], tries: list, width: int) -> list[list]:
        """Per prefix: the beam search of ``width`` over its trie (:mod:`factprobe.lm.beam`)."""
        raise NotImplementedError(f"{type(self).__name__} cannot search a token trie: ApprOpt needs it")
