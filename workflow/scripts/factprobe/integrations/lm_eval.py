"""lm-evaluation-harness model type ``factprobe``: lm-eval's requests on factprobe's packed engine.

Importing this module registers :class:`FactprobeLM` as ``factprobe`` in lm-eval's model
registry, so ``simple_evaluate(model="factprobe", model_args=...)`` and
``simple_evaluate(model=FactprobeLM(...))`` work in a Python session. lm-eval 0.4.13's command line
looks models up in that registry only (no plugin entry points; ``--include_path`` adds tasks, not
models), so the command line is this module, which registers the model type and hands its
arguments to lm-eval's own ``cli_evaluate``::

    python -m factprobe.integrations.lm_eval --model factprobe \\
        --model_args pretrained=resources/models/smollm2,dtype=float32 --device cpu \\
        --include_path results/export/lm_eval --tasks factprobe_knowledge --log_samples --output_path out/

What is computed is what lm-eval's ``hf`` model (HFLM) computes, on another engine:

* **Tokens:** lm-eval's own :class:`~lm_eval.api.model.TemplateLM` turns a ``(context,
  continuation)`` request into token ids (trailing whitespace of the context moves to the
  continuation; context and whole encoded, split at the context's length; an empty context is the
  prefix token, BOS else EOS), with HFLM's ``tok_encode`` rule for special tokens
  (``add_bos_token``, a text that already starts with BOS) and its left truncation past the
  model's context (:meth:`FactprobeLM._loglikelihood_tokens`).
* **Scores:** the token requests go to :func:`factprobe.lm.packed.score_requests`: requests of one
  context share one packed row, attention runs per unit (:mod:`factprobe.lm.canonical`), so each
  log-likelihood is the same float whatever else is scored with it and however lm-eval batches
  (``batch_size`` is accepted and has no effect; ``token_budget`` bounds a forward). HFLM's
  values move in their last bits with its batch composition; the two agree to 1e-4 nats
  (tests/unit/test_export_lm_eval.py).
* **Rolling log-likelihood** (perplexity tasks): lm-eval's disjoint rolling windows over the
  model's context, each window a token request of the same engine.
* **Generation** (``generate_until``): greedy decoding, token by token through the engine's
  continuation units (each context computed once), stopped at lm-eval's stop strings, the EOS
  text, an EOS id or ``max_gen_toks``; cut at the first stop string as HFLM does. Sampling
  (``do_sample``, a temperature above 0) and beam search are refused with an error.

The model is loaded by :func:`factprobe.lm.load.load_hf` (a local folder or hub id; ``dtype``
``auto`` = fp32 on CPU, bf16/fp16 on GPU) or given loaded (``pretrained=`` a ``PreTrainedModel``
with ``tokenizer=``).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

try:
    import lm_eval.models  # noqa: F401  (fills the registry with lm-eval's own models first)
    from lm_eval.api.model import TemplateLM
    from lm_eval.api.registry import register_model
except ImportError as exc:  # pragma: no cover - the locked environment has it
    raise ImportError(
        "factprobe.integrations.lm_eval needs lm-evaluation-harness: pip install 'factprobe[lm-eval]'"
    ) from exc

log = logging.getLogger(__name__)

#: Generation settings a greedy decoder honours; any other key of a task's ``generation_kwargs``
#: asks for something it does not do and is refused.
GREEDY_KEYS = frozenset({"do_sample", "temperature", "until", "max_gen_toks", "top_p", "top_k"})


class FactprobeLM(TemplateLM):
    """An lm-eval ``LM`` over factprobe's batch-invariant packed engine (module docstring).

    ``pretrained``: a model folder or hub id, or a loaded ``PreTrainedModel`` (then ``tokenizer``,
    a tokenizer or its folder, is required). ``dtype``: ``auto``, ``float32``, ``bfloat16`` or
    ``float16``; ``device``: ``auto``, ``cpu``, ``cuda[:n]`` (a CUDA device on a machine without
    one falls back to the CPU with a warning, as HFLM does: lm-eval's CLI passes ``cuda:0`` unless
    told ``--device``). ``token_budget``: padded tokens per forward, halved on out-of-memory.
    ``max_length``, ``add_bos_token``, ``prefix_token_id``, ``max_gen_toks``: as HFLM's.
    ``invariant=False`` scores on the engine's shared-mask path (faster where it is, last bits
    then depend on the batch). ``batch_size`` and ``max_batch_size`` are accepted for lm-eval's
    CLI and ignored (the token budget batches).
    """

    backend = "causal"
    _DEFAULT_MAX_LENGTH = 2048

    def __init__(
        self,
        pretrained: Any,
        tokenizer: Any = None,
        dtype: str = "auto",
        device: str | None = None,
        revision: str = "",
        trust_remote_code: bool = False,
        token_budget: int = 4096,
        max_length: int | None = None,
        add_bos_token: bool | None = None,
        prefix_token_id: int | None = None,
        max_gen_toks: int = 256,
        invariant: bool = True,
        batch_size: Any = None,
        max_batch_size: Any = None,
    ) -> None:
        super().__init__()
        from factprobe.lm.packed import TokenBudget

        self.model, self.tokenizer, self.identity = _load(
            pretrained, tokenizer, dtype, _device(device), revision, bool(trust_remote_code)
        )
        self.model.eval()
        self._device = next(self.model.parameters()).device
        self.budget = TokenBudget(int(token_budget))
        self.invariant = bool(invariant)
        self.add_bos_token = add_bos_token
        self.custom_prefix_token_id = prefix_token_id
        self._max_length = max_length
        self._max_gen_toks = int(max_gen_toks)

    # -- what lm-eval's TemplateLM asks of a model ---------------------------------------------

    @property
    def eot_token_id(self) -> int:
        return self.tokenizer.eos_token_id

    @property
    def prefix_token_id(self) -> int:
        """The token an empty context stands for: HFLM's (custom, else BOS, else EOS)."""
        if self.custom_prefix_token_id is not None:
            return int(self.custom_prefix_token_id)
        if self.tokenizer.bos_token_id is not None:
            return self.tokenizer.bos_token_id
        return self.tokenizer.eos_token_id

    @property
    def max_length(self) -> int:
        """The model's context in tokens, found as HFLM finds it."""
        if self._max_length:
            return int(self._max_length)
        from lm_eval.models.utils import resolve_max_length

        return resolve_max_length(self.model.config, self.tokenizer, default=self._DEFAULT_MAX_LENGTH)

    @property
    def max_gen_toks(self) -> int:
        return self._max_gen_toks

    @property
    def tokenizer_name(self) -> str:
        return self.tokenizer.name_or_path.replace("/", "__")

    def tok_encode(
        self, string: str, add_special_tokens: bool | None = None, left_truncate_len: int | None = None, **_
    ) -> list[int]:
        """Token ids of ``string`` by HFLM's rule: the tokenizer's own special tokens unless
        ``add_special_tokens`` (else ``add_bos_token``) says otherwise, none when the text already
        starts with the prefix token's text."""
        from lm_eval.models.utils import has_bos_prefix

        special = _special_kwargs(add_special_tokens, self.add_bos_token)
        if add_special_tokens is None and has_bos_prefix(string, self.tokenizer.decode(self.prefix_token_id)):
            special["add_special_tokens"] = False
        ids = self.tokenizer.encode(string, **special)
        return ids[-left_truncate_len:] if left_truncate_len else ids

    def _loglikelihood_tokens(
        self, requests: Sequence[tuple[Any, list[int], list[int]]], disable_tqdm: bool = False, **_
    ) -> list[tuple[float, bool]]:
        """(log P(continuation | context), is_greedy) of each ``(key, context ids, continuation
        ids)``; a request past the model's context loses context tokens from the left (HFLM)."""
        import numpy as np

        from factprobe.lm.packed import score_requests

        token_requests = [self._fit(ctx, cont, key) for key, ctx, cont in requests]
        unique = list(dict.fromkeys(token_requests))
        where = {r: i for i, r in enumerate(unique)}
        greedy = np.ones(len(unique), dtype=bool)
        total, _ = score_requests(
            self.model,
            unique,
            token_budget=self.budget,
            progress=not disable_tqdm,
            invariant=self.invariant,
            greedy_out=greedy,
        )
        out = []
        for (key, _, _), request in zip(requests, token_requests, strict=True):
            answer = (float(total[where[request]]), bool(greedy[where[request]]))
            if key is not None:
                self.cache_hook.add_partial("loglikelihood", key, answer)
            out.append(answer)
        return out

    def _fit(self, ctx: list[int], cont: list[int], key: Any) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """The token request of one pair, left-truncated to ``max_length + 1`` tokens as HFLM does."""
        if not cont:
            raise ValueError(
                f"lm-eval request {key!r}: the continuation encodes to no token; nothing to score"
            )
        if len(cont) > self.max_length:
            raise ValueError(
                f"lm-eval request {key!r}: a continuation of {len(cont)} tokens exceeds the model's "
                f"context of {self.max_length} tokens"
            )
        excess = len(ctx) + len(cont) - (self.max_length + 1)
        if excess > 0:
            log.warning(
                "context (%d) + continuation (%d) tokens exceed the model's context (%d): %d context "
                "tokens cut from the left",
                len(ctx),
                len(cont),
                self.max_length,
                excess,
            )
            ctx = ctx[excess:]
        return tuple(ctx), tuple(cont)

    def loglikelihood_rolling(self, requests: list, disable_tqdm: bool = False) -> list[float]:
        """log P(text) of each ``(text,)`` request over lm-eval's disjoint rolling windows of the
        model's context (the first conditioned on the prefix token), summed per text."""
        from lm_eval.utils import get_rolling_token_windows, make_disjoint_window

        windows, owners = [], []
        for i, (text,) in enumerate(req.args for req in requests):
            pairs = get_rolling_token_windows(
                token_list=self.tok_encode(text),
                prefix_token=self.prefix_token_id,
                max_seq_len=self.max_length,
                context_len=1,
            )
            for ctx, cont in map(make_disjoint_window, pairs):
                windows.append((None, ctx, cont))
                owners.append(i)
        scores = self._loglikelihood_tokens(windows, disable_tqdm=disable_tqdm)
        totals = [0.0] * len(requests)
        for i, (value, _) in zip(owners, scores, strict=True):
            totals[i] += value
        for req, value in zip(requests, totals, strict=True):
            self.cache_hook.add_partial("loglikelihood_rolling", req.args, value)
        return totals

    def generate_until(self, requests: list, disable_tqdm: bool = False) -> list[str]:
        """Greedy continuations of each ``(context, generation kwargs)`` request (module docstring)."""
        from lm_eval.models.utils import (
            handle_stop_sequences,
            normalize_gen_kwargs,
            postprocess_generated_text,
        )

        eos_text = self.tokenizer.decode(self.eot_token_id, skip_special_tokens=False)
        contexts, stops, limits = [], [], []
        for context, gen_kwargs in (req.args for req in requests):
            kwargs = normalize_gen_kwargs(gen_kwargs, self.max_gen_toks)
            _refuse_non_greedy(kwargs)
            stops.append(handle_stop_sequences(kwargs.pop("until", None), eos=eos_text))
            limits.append(int(kwargs.pop("max_gen_toks")))
            if self.max_length - limits[-1] <= 0:
                raise ValueError(
                    f"max_gen_toks {limits[-1]} leaves no room for a context in the model's "
                    f"{self.max_length} tokens"
                )
            ids = self._context_ids(context, self.max_length - limits[-1])
            contexts.append(ids)
        answers = self._greedy(contexts, stops, limits)
        out = []
        for req, answer, until in zip(requests, answers, stops, strict=True):
            text = self.tokenizer.decode(answer, skip_special_tokens=True)
            text = postprocess_generated_text(generation=text, stop=until, think_end_token=None)
            self.cache_hook.add_partial("generate_until", req.args, text)
            out.append(text)
        return out

    def _context_ids(self, context: str, keep: int) -> list[int]:
        """A generation context's ids as HFLM's ``tok_batch_encode`` makes them, last ``keep`` kept."""
        from lm_eval.models.utils import has_bos_prefix

        special = {}
        if has_bos_prefix(context, getattr(self.tokenizer, "bos_token", None)):
            special = {"add_special_tokens": False}
        elif self.add_bos_token is not None:
            special = {"add_special_tokens": self.add_bos_token}
        ids = self.tokenizer(context, **special)["input_ids"][-keep:]
        if not ids:
            raise ValueError(f"generate_until: context {context[:60]!r} encodes to no token")
        return list(ids)

    def _greedy(
        self, contexts: list[list[int]], stops: list[list[str]], limits: list[int]
    ) -> list[list[int]]:
        """Greedy tokens after each context, one engine step for all live rows at a time, each
        row's next token a function of its own context and answer so far; a row stops after an
        EOS id, once its text holds a stop string, or at its limit."""
        import torch

        from factprobe.lm.packed import continuation_logprobs

        eos_ids = _eos_ids(self.tokenizer, self.model)
        answers: list[list[int]] = [[] for _ in contexts]
        alive = [k for k in range(len(contexts)) if limits[k] > 0]
        states: dict = {}  # each context's keys and values, computed once for all its steps
        while alive:
            queries = [(contexts[k], answers[k], None) for k in alive]
            steps = continuation_logprobs(self.model, queries, self.budget, states=states)
            still = []
            for k, lp in zip(alive, steps, strict=True):
                token = int(torch.argmax(lp))
                answers[k].append(token)
                text = self.tokenizer.decode(answers[k], skip_special_tokens=False)
                done = token in eos_ids or len(answers[k]) >= limits[k] or any(s in text for s in stops[k])
                if not done:
                    still.append(k)
            alive = still
        return answers

    def get_model_info(self) -> dict:
        """What lm-eval writes into its results' config: the model and the engine."""
        from factprobe import __version__

        source, fingerprint, dtype = self.identity
        return {
            "model_source": source,
            "model_fingerprint": fingerprint,
            "model_dtype": dtype,
            "engine": "factprobe packed " + ("batch-invariant" if self.invariant else "shared-mask"),
            "factprobe_version": __version__,
        }


if __name__ != "__main__":  # run as a script, main() imports this module by name, which registers it
    register_model("factprobe")(FactprobeLM)


def _special_kwargs(add_special_tokens: bool | None, add_bos: bool | None) -> dict:
    """The ``add_special_tokens`` argument HFLM passes its tokenizer (none: the tokenizer's default)."""
    if add_special_tokens is not None:
        return {"add_special_tokens": add_special_tokens}
    if add_bos is not None:
        return {"add_special_tokens": add_bos}
    return {}


def _refuse_non_greedy(kwargs: dict) -> None:
    """Fail on generation settings a greedy decoder would silently ignore."""
    if kwargs.get("do_sample") or float(kwargs.get("temperature") or 0.0) > 0.0:
        raise NotImplementedError(
            "the factprobe model type generates greedily; this task asks for sampling "
            f"(do_sample={kwargs.get('do_sample')}, temperature={kwargs.get('temperature')}): "
            "run it with --model hf, or set do_sample=False through --gen_kwargs"
        )
    other = sorted(set(kwargs) - GREEDY_KEYS)
    if other:
        raise NotImplementedError(
            f"the factprobe model type generates greedily; generation settings {other} are not "
            "supported: run this task with --model hf"
        )


def _eos_ids(tokenizer, model) -> set[int]:
    """Token ids that end a generation: the tokenizer's EOS and the model's generation EOS ids."""
    ids = {int(tokenizer.eos_token_id)} if tokenizer.eos_token_id is not None else set()
    config = getattr(model, "generation_config", None)
    extra = getattr(config, "eos_token_id", None)
    if extra is not None:
        ids |= {int(i) for i in (extra if isinstance(extra, list | tuple) else [extra])}
    return ids


def _device(device: str | None) -> str:
    """The device to load on: ``auto`` when unset; a CUDA device without CUDA falls back to the
    CPU with a warning (HFLM's behaviour: lm-eval's CLI passes ``cuda:0`` by default)."""
    if not device:
        return "auto"
    if str(device).startswith("cuda"):
        import torch

        if not torch.cuda.is_available():
            log.warning("device %s requested but CUDA is not available: running on the CPU", device)
            return "cpu"
    return str(device)


def _load(
    pretrained: Any, tokenizer: Any, dtype: str, device: str, revision: str, trust_remote_code: bool
) -> tuple[Any, Any, tuple[str, str, str]]:
    """(model, tokenizer, identity) of a folder or hub id (:func:`factprobe.lm.load.load_hf`) or
    of a loaded model and its tokenizer."""
    from factprobe.lm.load import DTYPES, ModelSpec, load_hf

    if dtype not in ("auto", *DTYPES):
        raise ValueError(f"dtype {dtype!r}: use one of auto, {', '.join(DTYPES)}")
    if not isinstance(pretrained, str | Path):
        if tokenizer is None:
            raise ValueError("pretrained is a loaded model: pass its tokenizer as tokenizer=")
        tok = _tokenizer(tokenizer, trust_remote_code)
        param = next(pretrained.parameters())
        name = getattr(pretrained.config, "name_or_path", "") or type(pretrained).__name__
        return pretrained, tok, (str(name), "", str(param.dtype).removeprefix("torch."))
    source = str(pretrained)
    spec = ModelSpec(
        name=Path(source).name or source,
        source=source,
        revision=revision or "",
        dtype=dtype,
        device=device,
        trust_remote_code=trust_remote_code,
    )
    loaded = load_hf(spec)
    tok = loaded.tokenizer if tokenizer is None else _tokenizer(tokenizer, trust_remote_code)
    return loaded.model, tok, (source, loaded.fingerprint, str(loaded.dtype).removeprefix("torch."))


def _tokenizer(tokenizer: Any, trust_remote_code: bool) -> Any:
    if isinstance(tokenizer, str | Path):
        from transformers import AutoTokenizer

        return AutoTokenizer.from_pretrained(str(tokenizer), trust_remote_code=trust_remote_code)
    return tokenizer


def main(argv: list[str] | None = None) -> None:
    """lm-eval's command line with the ``factprobe`` model type registered (module docstring)."""
    import importlib
    import sys

    from lm_eval.__main__ import cli_evaluate

    importlib.import_module("factprobe.integrations.lm_eval")  # registers ``factprobe``
    if argv is not None:
        sys.argv = [sys.argv[0], *argv]
    cli_evaluate()


if __name__ == "__main__":
    main()
