"""Masked LM backend (``backend: masked`` in models.tsv): BERT / ALBERT for BELIEF (belief-myriadlama §2).

BELIEF probes an encoder with a masked prompt: the template's [Y] becomes the mask token and the
model's output distribution over the vocabulary at that position gives the prediction ŵ (its
argmax) and the confidence o_max (its probability), §2.1 and §2.4. MyriadLAMA follows LAMA-UHN in
keeping only objects that are one token of the BERT tokenizer (§4.1, footnote 6): one mask, one
token. :meth:`MaskedLM.topk` is that distribution's top-k, which the BELIEF measures read
(``metrics/belief.py``, mode ``vocabulary``).

Where the mask goes: at the prompt's ``mask_token`` text (``suites.<s>.mask_token``, "[MASK]" by
default; layout ``mask`` writes the whole sentence with it, so words after the object stay in the
input as BERT sees them), else after the prompt (a cloze prompt cut before the object).

Log-likelihoods (the scoring stage's candidate scores; not a BELIEF measure): a form of one token
is scored exactly, log p(token | masked prompt). BELIEF has no multi-token object; for one of k
tokens this backend puts k masks in place of the one and sums each position's log-probability of
its token, all masks filled at once (the independent multi-mask scoring of X-FACTR, Jiang et al.
2020), an adaptation named here and in config/README.md. No generation: BELIEF-ICL's generations
are a causal LM's.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import torch

from factprobe.lm.api import (
    LM,
    GenerateRequest,
    GenerateResult,
    LoglikRequest,
    LoglikResult,
    OnDone,
    TopkRequest,
    TopkResult,
)
from factprobe.lm.load import ModelSpec, load_hf, spec_from_row

#: The mask written in prompts (``suites.<s>.mask_token``), replaced by the tokenizer's own.
PROMPT_MASK = "[MASK]"


class MaskedLM(LM):
    """A ``transformers`` masked LM (``AutoModelForMaskedLM``) with its tokenizer."""

    end_marker = "none"

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        *,
        source: str = "model",
        fingerprint: str = "",
        prompt_mask: str = PROMPT_MASK,
        batch_size: int = 32,
        **_ignored: Any,
    ):
        if tokenizer.mask_token is None:
            raise ValueError(f"{source}: the tokenizer has no mask token; backend masked needs a masked LM")
        self.model = model.eval()
        self.tokenizer = tokenizer
        param = next(model.parameters())
        self.device, self.dtype = param.device, param.dtype
        self.source, self.fingerprint = source, fingerprint
        self.prompt_mask = prompt_mask
        self.batch_size = batch_size
        self.encoding_tag = "masked"

    @classmethod
    def from_row(
        cls, row: dict[str, Any] | ModelSpec, model_dir: str | os.PathLike | None = None, **settings: Any
    ) -> MaskedLM:
        """Load one models.tsv row (a local BERT / ALBERT folder, or a cached hub id) as a masked LM."""
        spec = row if isinstance(row, ModelSpec) else spec_from_row(row)
        loaded = load_hf(spec, model_dir, attn_implementation="eager", masked=True)
        return cls(
            loaded.model, loaded.tokenizer, source=spec.source, fingerprint=loaded.fingerprint, **settings
        )

    @property
    def identity(self) -> tuple[str, str, str]:
        return (self.source, self.fingerprint, str(self.dtype).removeprefix("torch."))

    # -- inputs ---------------------------------------------------------------------------------

    def masked_ids(self, context: str, n_masks: int = 1) -> tuple[list[int], list[int]]:
        """Token ids of ``context`` with ``n_masks`` mask tokens where its prompt mask stands
        (else after it), special tokens added, and the masks' positions."""
        mask = self.tokenizer.mask_token
        masks = " ".join([mask] * n_masks)
        if self.prompt_mask in context:
            text = context.replace(self.prompt_mask, masks, 1)
        else:
            text = f"{context.rstrip()} {masks}"
        ids = self.tokenizer(text)["input_ids"]
        where = [i for i, t in enumerate(ids) if t == self.tokenizer.mask_token_id]
        if len(where) != n_masks:
            raise ValueError(
                f"masked prompt {text[-80:]!r}: expected {n_masks} mask token(s), found {len(where)}"
            )
        return ids, where

    def form_tokens(self, continuation: str) -> list[int]:
        """Token ids of a form (the continuation, its leading space dropped), no special tokens."""
        return self.tokenizer(continuation.strip(), add_special_tokens=False)["input_ids"]

    @torch.inference_mode()
    def _mask_logprobs(self, inputs: list[tuple[list[int], list[int]]]) -> list[torch.Tensor]:
        """Per input: log-softmax over the vocabulary at each mask position (float64, masks x V)."""
        out: list[torch.Tensor] = []
        pad = self.tokenizer.pad_token_id or 0
        for start in range(0, len(inputs), self.batch_size):
            chunk = inputs[start : start + self.batch_size]
            width = max(len(ids) for ids, _ in chunk)
            ids = torch.full((len(chunk), width), pad, dtype=torch.long)
            attn = torch.zeros(len(chunk), width, dtype=torch.long)
            for b, (seq, _) in enumerate(chunk):  # right padding, masked out of attention
                ids[b, : len(seq)] = torch.tensor(seq)
                attn[b, : len(seq)] = 1
            logits = self.model(input_ids=ids.to(self.device), attention_mask=attn.to(self.device)).logits
            for b, (_, where) in enumerate(chunk):
                out.append(torch.log_softmax(logits[b, where].double(), dim=-1).cpu())
        return out

    # -- the LM interface -----------------------------------------------------------------------

    def topk(self, requests: Sequence[TopkRequest]) -> list[TopkResult]:
        """§2.1: the ``k`` most probable tokens at the (one) mask, best first, with log-probabilities."""
        dists = self._mask_logprobs([self.masked_ids(r.context) for r in requests])
        results = []
        for request, dist in zip(requests, dists, strict=True):
            values, ids = dist[0].topk(min(request.k, dist.shape[-1]))
            ids_list = [int(i) for i in ids]
            tokens = tuple(self.tokenizer.decode([i]).strip() for i in ids_list)
            results.append(TopkResult(tuple(ids_list), tokens, tuple(float(v) for v in values)))
        return results

    def loglikelihood(
        self, requests: Sequence[LoglikRequest], progress: bool = False, on_done: OnDone | None = None
    ) -> list[LoglikResult]:
        """log p(form | masked prompt): one mask per token of the form, the sum of each mask's
        log-probability of its token (exact for one token, the BELIEF case)."""
        forms = [self.form_tokens(r.continuation) for r in requests]
        empty = [r.continuation for r, f in zip(requests, forms, strict=True) if not f]
        if empty:
            raise ValueError(f"masked LM: form {empty[0]!r} has no token to score")
        inputs = [self.masked_ids(r.context, len(f)) for r, f in zip(requests, forms, strict=True)]
        dists = self._mask_logprobs(inputs)
        out = []
        for form, dist in zip(forms, dists, strict=True):
            per_token = [float(dist[i, t]) for i, t in enumerate(form)]
            out.append(_result(per_token))
        if on_done is not None:
            on_done(range(len(out)), out)
        return out

    def generate(
        self, requests: Sequence[GenerateRequest], progress: bool = False
    ) -> list[list[GenerateResult]]:
        raise NotImplementedError(
            "backend masked does not generate: BELIEF (§2) reads a masked LM's top-k; "
            "generate: true (BELIEF-ICL) needs a causal LM"
        )


def _result(per_token: list[float]) -> LoglikResult:
    """A LoglikResult from the per-token log-probabilities of one form (no end marker)."""
    return LoglikResult(sum(per_token), len(per_token), per_token[0], 0.0)
