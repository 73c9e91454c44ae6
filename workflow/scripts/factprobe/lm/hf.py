"""HFCausalLM: the one Hugging Face causal LM of the project.

It owns loading (a models.tsv row, a local folder or ``builtin:control``, :mod:`factprobe.lm.load`),
device and dtype, the encoding rule (:mod:`factprobe.lm.encoding`: BOS, trailing spaces, the
no-space languages, the end marker), the out-of-memory policy (:class:`~factprobe.lm.packed.TokenBudget`,
shared by all calls) and the three operations: exact packed log-likelihoods, top-k next tokens and
generation that stops at the first line break.
"""

from __future__ import annotations

import logging
import os
from collections import defaultdict
from collections.abc import Collection, Sequence
from typing import Any

import numpy as np
import torch

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
from factprobe.lm.encoding import (
    NO_SPACE_LANGS,
    EndToken,
    chat_frame,
    combine,
    context_ids,
    continuation_text,
    encode,
    end_logprobs,
    model_end_token,
    tokenize_pairs,
)
from factprobe.lm.load import ModelSpec, load_hf, spec_from_row
from factprobe.lm.packed import TokenBudget, continuation_logprobs, next_token_logprobs, score_requests

log = logging.getLogger(__name__)


class _StopAtTokens:
    """Stopping criterion: a row is done once its last token is one of ``ids`` (per row, batched)."""

    def __init__(self, ids: Sequence[int], device: torch.device):
        self.ids = torch.tensor(sorted(ids), dtype=torch.long, device=device)

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor, **kwargs) -> torch.Tensor:
        return torch.isin(input_ids[:, -1], self.ids)


class HFCausalLM(LM):
    """A ``transformers`` causal LM with its tokenizer, scoring, ranking and generating text."""

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        *,
        source: str = "model",
        fingerprint: str = "",
        end_marker: str = "eos",
        token_budget: int = 4096,
        no_space_langs: Collection[str] = NO_SPACE_LANGS,
        generation_batch_size: int = 16,
        end_token: str = "",
        prompt_format: str = "plain",
        invariant: bool = True,
    ):
        self.model = model.eval()
        # Batch invariance (the default): every score and answer a function of its own request.
        # False scores on the shared-mask path and generates with transformers' KV cache: faster
        # where it is, and a result's last bits then depend on what was computed beside it.
        self.invariant = invariant
        self.tokenizer = tokenizer
        param = next(model.parameters())
        self.device, self.dtype = param.device, param.dtype
        self.source, self.fingerprint = source, fingerprint
        self.end_marker = end_marker
        self.head, self.end_token = _frame(tokenizer, end_token, prompt_format)
        self.prompt_format = prompt_format
        # Scores depend on the end token and the format: both go into the request cache key, left
        # out (as before they existed) for a plain prompt ended by the tokenizer's own EOS.
        as_before = (
            end_marker != "eos" or self.end_token is None or self.end_token.id == tokenizer.eos_token_id
        )
        self.encoding_tag = "" if prompt_format == "plain" and as_before else self.describe_end()
        if not invariant:  # its scores differ in the last bits: never mixed in one cache with these
            self.encoding_tag += "|shared-mask"
        self.budget = TokenBudget(token_budget)
        self.no_space_langs = tuple(no_space_langs)
        self.generation_batch_size = generation_batch_size
        self._line_ids: list[int] | None = None

    @classmethod
    def from_row(
        cls, row: dict[str, Any] | ModelSpec, model_dir: str | os.PathLike | None = None, **settings: Any
    ) -> HFCausalLM:
        """Load one models.tsv row from ``model_dir`` (its prepared or trained folder), else from its
        source; ``settings`` as in ``__init__``."""
        spec = row if isinstance(row, ModelSpec) else spec_from_row(row)
        loaded = load_hf(spec, model_dir)
        settings = {"end_token": spec.end_token, "prompt_format": spec.prompt_format, **settings}
        lm = cls(
            loaded.model, loaded.tokenizer, source=spec.source, fingerprint=loaded.fingerprint, **settings
        )
        log.info("%s: %s", spec.where, lm.describe_end())
        return lm

    def describe_end(self) -> str:
        """Which token ends a scored form, for logs, manifests and the report."""
        token = self.end_token.describe() if self.end_token is not None else "none (no EOS in the vocabulary)"
        return f"end token {token}, prompt format {self.prompt_format}"

    @property
    def identity(self) -> tuple[str, str, str]:
        return (self.source, self.fingerprint, str(self.dtype).removeprefix("torch."))

    # -- ApprOpt's constrained search (distractors paper §3.3) ---------------------------------

    @property
    def eos_id(self) -> int | None:
        """The id that end marker ``eos`` scores after a form (:func:`model_end_token`: a document
        end, or the chat template's end of turn): ApprOpt's paths end in it as scored forms do."""
        return self.end_token.id if self.end_token is not None else None

    def decode(self, ids: Sequence[int]) -> str:
        return self.tokenizer.decode(list(ids))

    def trie_search(self, prefixes: list[list[int]], tries: list, width: int) -> list[list]:
        """:func:`factprobe.lm.beam.batched_beam_search` on this model (batch-invariant beams, the
        model's token budget)."""
        from factprobe.lm.beam import batched_beam_search

        return batched_beam_search(self.model, prefixes, tries, width, token_budget=self.budget)

    # -- the encoding rule ---------------------------------------------------------------------

    def continuation(self, form: str, lang: str) -> str:
        """``form`` as it follows a prompt in ``lang`` (leading space unless a no-space language)."""
        return continuation_text(form, lang, self.no_space_langs)

    def context_ids(self, prompt: str) -> list[int]:
        """Token ids a continuation of ``prompt`` is conditioned on (BOS, no trailing spaces)."""
        return context_ids(self.tokenizer, prompt, head=self.head)

    def form_ids(self, form: str, lang: str) -> list[int]:
        """Token ids of a form on its own, as a continuation in ``lang`` (no end marker)."""
        return encode(self.tokenizer, [self.continuation(form, lang)])[0]

    def continuation_paths(
        self, prompt: str, forms: Sequence[str], lang: str
    ) -> tuple[list[int], list[tuple[int, ...] | None]]:
        """ApprOpt's trie paths: :func:`factprobe.lm.beam.continuation_paths` with this model's
        continuation rule, end marker, end token and prompt format (chat head), i.e. the ids
        :meth:`loglikelihood` scores."""
        from factprobe.lm.beam import continuation_paths

        conts = [self.continuation(f, lang) for f in forms]
        return continuation_paths(
            self.tokenizer, prompt, conts, self.end_marker, end_token=self.end_token, head=self.head
        )

    # -- operations ----------------------------------------------------------------------------

    def loglikelihood(
        self, requests: Sequence[LoglikRequest], progress: bool = False, on_done: OnDone | None = None
    ) -> list[LoglikResult]:
        """Exact log P(continuation + end marker | context) of each request, by the packed engine."""
        if not requests:
            return []
        token_requests, plans = tokenize_pairs(
            self.tokenizer,
            [r.context for r in requests],
            [r.continuation for r in requests],
            self.end_marker,
            end_token=self.end_token,
            head=self.head,
        )
        waiting = np.array([1 if plan.minus is None else 2 for plan in plans])
        plans_of_request: dict[int, list[int]] = defaultdict(list)
        for j, plan in enumerate(plans):
            plans_of_request[plan.plus].append(j)
            if plan.minus is not None:
                plans_of_request[plan.minus].append(j)
        req_lp = np.zeros(len(token_requests))
        req_first = np.full(len(token_requests), np.nan)
        req_last = np.full(len(token_requests), np.nan)
        end = self.end_marker

        def results(chosen: list) -> list[LoglikResult]:
            return _results(*combine(chosen, req_lp, req_first), end_logprobs(chosen, req_last, end))

        def finished(done, total, first) -> None:
            req_lp[done] = total
            req_first[done] = first
            ready = []
            for r in done:
                for j in plans_of_request[int(r)]:
                    waiting[j] -= 1
                    if waiting[j] == 0:
                        ready.append(j)
            if ready and on_done is not None:
                on_done(ready, results([plans[j] for j in ready]))

        score_requests(
            self.model,
            token_requests,
            token_budget=self.budget,
            progress=progress,
            on_batch=finished,
            last_out=req_last,
            invariant=self.invariant,
        )
        return results(plans)

    def topk(self, requests: Sequence[TopkRequest]) -> list[TopkResult]:
        """The ``k`` most likely next tokens after each context (the first token of any continuation),
        batch-invariant (:func:`factprobe.lm.packed.next_token_logprobs`)."""
        if not requests:
            return []
        seqs = [self.context_ids(r.context) for r in requests]
        k = max(r.k for r in requests)
        values, indices = next_token_logprobs(self.model, seqs, k, self.budget)
        out = []
        for b, r in enumerate(requests):
            top = indices[b, : r.k].tolist()
            tokens = tuple(self.tokenizer.decode([t]) for t in top)
            out.append(TopkResult(tuple(top), tokens, tuple(values[b, : r.k].tolist())))
        return out

    def generate(
        self, requests: Sequence[GenerateRequest], progress: bool = False
    ) -> list[list[GenerateResult]]:
        """Greedy and sampled answers of every request.

        A sampled row draws its noise from its own generator (:func:`sample_seed` of the request's
        seed and the sample's index). Batch-invariant (the default): rows, greedy or sampled, go
        through :meth:`_generate_invariant` in chunks of ``generation_batch_size``, and a row's
        answer is the same whatever else is generated. ``invariant=False``: transformers' cached generation in chunks of
        ``generation_batch_size`` (shortest contexts together), equal up to the last bits."""
        out: list[list[GenerateResult]] = [[] for _ in requests]
        rows = [(i, -1) for i, r in enumerate(requests) if r.samples == 0]
        rows += [(i, j) for i, r in enumerate(requests) for j in range(r.samples)]
        if self.invariant:
            # chunks of similar context length (less padding); a row's answer does not depend on
            # its chunk, so the chunking is free to follow speed
            rows.sort(key=lambda row: (len(requests[row[0]].context), row))
            results = {}
            size = self.generation_batch_size
            for start in range(0, len(rows), size):
                chunk = rows[start : start + size]
                answers = self._generate_invariant(
                    [requests[i].context for i, _ in chunk],
                    [sample_seed(requests[i].seed, j) if j >= 0 else None for i, j in chunk],
                    [requests[i].max_new_tokens for i, _ in chunk],
                )
                results.update(zip(chunk, answers, strict=True))
        else:
            results = self._generate_chunks(requests, rows, progress)
        for (i, _sample), answer in sorted(results.items()):
            out[i].append(answer)
        return out

    def beams(self, requests: Sequence[BeamRequest], progress: bool = False) -> list[list[GenerateResult]]:
        """B(c) of every request (:func:`factprobe.lm.beam.free_beam_search`, batch-invariant):
        requests of one width searched together, each to its own ``max_new_tokens``; texts decoded
        as the reference decodes them (its leading space kept: ROUGE-L over characters counts it)
        but without special tokens (the reference decodes the EOS it appends as text; here it is
        not text)."""
        from factprobe.lm.beam import free_beam_search

        out: list[list[GenerateResult]] = [[] for _ in requests]
        eos = self.tokenizer.eos_token_id
        groups: dict[int, list[int]] = defaultdict(list)
        for i, r in enumerate(requests):
            groups[r.width].append(i)
        for width, members in sorted(groups.items()):
            # similar limits side by side: a chunk's steps end with its longest limit
            members = sorted(members, key=lambda i: requests[i].max_new_tokens)
            size = max(1, self.generation_batch_size)
            for start in range(0, len(members), size):
                chunk = members[start : start + size]
                prefixes = [self.context_ids(requests[i].context) for i in chunk]
                steps = [requests[i].max_new_tokens for i in chunk]
                found = free_beam_search(self.model, prefixes, width, steps, eos, self.budget)
                for i, hyps in zip(chunk, found, strict=True):
                    out[i] = [
                        GenerateResult(self.tokenizer.decode(list(t), skip_special_tokens=True), v)
                        for t, v in hyps
                    ]
        return out

    def _generate_chunks(
        self, requests: Sequence[GenerateRequest], rows: list[tuple[int, int]], progress: bool
    ) -> dict[tuple[int, int], GenerateResult]:
        """:meth:`_generate` over ``rows`` (request, sample or -1) in chunks, halved on OOM."""
        from tqdm import tqdm

        # greedy rows first, then sampled ones, each by context length: a chunk never mixes the two
        # (only sampled rows get noise), so interleaving them would cut every chunk to a few rows
        rows = sorted(rows, key=lambda row: (row[1] >= 0, len(requests[row[0]].context.rstrip(" "))))
        results: dict[tuple[int, int], GenerateResult] = {}
        size = self.generation_batch_size
        bar = tqdm(total=len(rows), desc="generate", disable=not progress, mininterval=10)
        start = 0
        while start < len(rows):
            sampled = rows[start][1] >= 0
            chunk = rows[start : start + size]
            chunk = chunk[: next((k for k, row in enumerate(chunk) if (row[1] >= 0) != sampled), len(chunk))]
            longest = max(requests[i].max_new_tokens for i, _ in chunk)
            seeds = [sample_seed(requests[i].seed, j) for i, j in chunk] if sampled else None
            try:
                answers = self._generate([requests[i].context for i, _ in chunk], seeds, longest)
            except Exception as exc:
                if size == 1:
                    raise
                self.budget.shrink(exc, f"generation of {len(chunk)} rows")
                size = max(1, size // 2)
                continue
            results.update(zip(chunk, answers, strict=True))
            start += len(chunk)
            bar.update(len(chunk))
        bar.close()
        return results

    def line_break_ids(self) -> list[int]:
        """Ids of the tokens whose text contains a line break (generation stops after one)."""
        if self._line_ids is None:
            vocab = len(self.tokenizer)
            texts = self.tokenizer.batch_decode([[i] for i in range(vocab)])
            self._line_ids = [i for i, text in enumerate(texts) if "\n" in text]
        return self._line_ids

    def _generate_invariant(
        self,
        contexts: list[str],
        seeds: Sequence[int | None],
        max_new_tokens: Sequence[int],
        progress: bool = False,
    ) -> list[GenerateResult]:
        """Answers token by token through the packed engine: each step's distribution is a
        continuation unit (:func:`factprobe.lm.packed.continuation_logprobs`), so a row's answer and
        log-probability do not depend on the rows generated with it. Row k is greedy when
        ``seeds[k]`` is None, else sampled with that seed's Gumbel noise (as :class:`_GumbelNoise`),
        and stops after its line break or EOS or ``max_new_tokens[k]`` tokens. The rows of one
        prompt (greedy and samples) share its packed row; a context's keys and values are computed
        once (:func:`factprobe.lm.packed.prefix_states`), each step forwards the answers so far."""
        from tqdm import tqdm

        seqs = [self.context_ids(c) for c in contexts]
        eos = self.tokenizer.eos_token_id
        stops = set(self.line_break_ids()) | ({int(eos)} if eos is not None else set())
        generators = [torch.Generator().manual_seed(int(s)) if s is not None else None for s in seeds]
        answers: list[list[int]] = [[] for _ in seqs]
        totals = [0.0] * len(seqs)
        alive = [k for k in range(len(seqs)) if max_new_tokens[k] > 0]
        bar = tqdm(
            total=max(max_new_tokens, default=0), desc="generate", disable=not progress, mininterval=10
        )
        states: dict = {}  # each context's keys and values, computed once for all its steps
        while alive:
            queries = [(seqs[k], answers[k], None) for k in alive]
            steps = continuation_logprobs(self.model, queries, self.budget, states=states)
            still = []
            for k, lp in zip(alive, steps, strict=True):
                noise = generators[k]
                pick = lp if noise is None else lp + gumbel_noise(noise, lp.shape[-1])
                token = int(torch.argmax(pick))
                answers[k].append(token)
                totals[k] += float(lp[token])
                if token not in stops and len(answers[k]) < max_new_tokens[k]:
                    still.append(k)
            alive = still
            bar.update(1)
        bar.close()
        texts = [self.tokenizer.decode(a, skip_special_tokens=True) for a in answers]
        return [GenerateResult(t.split("\n", 1)[0].strip(), v) for t, v in zip(texts, totals, strict=True)]

    @torch.inference_mode()
    def _generate(
        self, contexts: list[str], seeds: Sequence[int] | None, max_new_tokens: int
    ) -> list[GenerateResult]:
        """Greedy continuations (``seeds`` None) or one multinomial sample per row (temperature 1,
        full vocabulary) drawn by the Gumbel-max trick with noise from the row's own generator."""
        from transformers import LogitsProcessorList, StoppingCriteriaList

        eos = self.tokenizer.eos_token_id
        pad = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else eos
        seqs = [self.context_ids(c) for c in contexts]
        width = max(len(s) for s in seqs)
        ids = torch.full((len(seqs), width), pad if pad is not None else 0, dtype=torch.long)
        mask = torch.zeros(len(seqs), width, dtype=torch.long)
        for b, s in enumerate(seqs):  # left padding: every row's next token is at the last column
            ids[b, width - len(s) :] = torch.tensor(s)
            mask[b, width - len(s) :] = 1
        stops = set(self.line_break_ids()) | ({int(eos)} if eos is not None else set())
        # Sampling is greedy decoding over log-probabilities plus Gumbel noise: the same draw as
        # torch.multinomial, but each row's noise comes from its own seeded generator.
        noise = LogitsProcessorList([_GumbelNoise(seeds)]) if seeds is not None else None
        out = self.model.generate(
            input_ids=ids.to(self.device),
            attention_mask=mask.to(self.device),
            max_new_tokens=max_new_tokens,
            do_sample=False,
            num_beams=1,
            return_dict_in_generate=True,
            output_logits=True,
            logits_processor=noise,
            pad_token_id=pad,
            eos_token_id=eos,
            stopping_criteria=StoppingCriteriaList([_StopAtTokens(stops, self.device)]),
        )
        new = out.sequences[:, width:]
        logits = torch.stack(out.logits, dim=1).float()  # the model's raw logits, before the noise
        lp = torch.log_softmax(logits, dim=-1).gather(2, new[:, :, None])[:, :, 0]
        is_stop = torch.isin(new, torch.tensor(sorted(stops), device=new.device))
        stopped = is_stop.long().cumsum(1)
        alive = (stopped == 0) | ((stopped == 1) & is_stop)  # tokens up to and including the stop
        totals = torch.where(alive, lp, 0.0).sum(1).double().cpu().tolist()
        texts = [
            self.tokenizer.decode(row[keep], skip_special_tokens=True)
            for row, keep in zip(new.cpu(), alive.cpu(), strict=True)
        ]
        return [GenerateResult(t.split("\n", 1)[0].strip(), v) for t, v in zip(texts, totals, strict=True)]


def _frame(tokenizer, name: str, prompt_format: str) -> tuple[list[int] | None, EndToken | None]:
    """(ids before every prompt, end token) of a prompt format: ``plain`` keeps the tokenizer's own
    leading special tokens (None), ``chat`` puts prompts in the chat template (:func:`chat_frame`);
    the end token is the one rule's (:func:`factprobe.lm.encoding.model_end_token`)."""
    token = model_end_token(tokenizer, name, prompt_format)
    return (None if prompt_format == "plain" else list(chat_frame(tokenizer).head)), token


def sample_seed(seed: int, index: int) -> int:
    """Seed of sample ``index`` of a request seeded with ``seed`` (a fixed 63-bit mix of both)."""
    return (seed * 0x9E3779B97F4A7C15 + index * 0xBF58476D1CE4E5B9 + 1) % (2**63)


def gumbel_noise(generator: torch.Generator, size: int) -> torch.Tensor:
    """Standard Gumbel noise ``-log(-log U)`` of ``size`` float64 draws from ``generator`` (CPU)."""
    uniform = torch.rand(size, generator=generator, dtype=torch.float64)
    return -torch.log(-torch.log(uniform.clamp_min(1e-300)))


class _GumbelNoise:
    """Logits processor: log-softmax plus per-row Gumbel noise, drawn on the CPU so that the same
    seed gives the same sample on every device."""

    def __init__(self, seeds: Sequence[int]):
        self.generators = [torch.Generator().manual_seed(int(s)) for s in seeds]

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        logp = torch.log_softmax(scores.double(), dim=-1)
        noise = torch.stack([gumbel_noise(g, scores.shape[-1]) for g in self.generators])
        return (logp + noise.to(scores.device)).to(scores.dtype)


def _results(
    logprob: np.ndarray, n_tokens: np.ndarray, first: np.ndarray, end: np.ndarray
) -> list[LoglikResult]:
    return [
        LoglikResult(float(a), int(b), float(c), float(d))
        for a, b, c, d in zip(logprob, n_tokens, first, end, strict=True)
    ]
