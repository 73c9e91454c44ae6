"""The one encoding rule of the project: how a prompt and a candidate form become token ids.

* **Space:** a form follows its prompt after one space, except in languages written without spaces
  (:data:`NO_SPACE_LANGS`, overridable by ``scoring.no_space_languages``): :func:`continuation_text`.
* **BOS:** the context starts with the tokenizer's own leading special tokens (e.g. Llama's BOS,
  :func:`special_prefix`); with none and an empty prompt, the EOS token stands in as the context
  (as lm-evaluation-harness does), so the first form token has a conditioning position.
* **Trailing space:** trailing spaces of the prompt move to the continuation (:func:`context_ids`).
* **End:** spec Pl(o|c) = sum over forms lambda of Pr(lambda + EOS | c) (distractors-knowledge-measure
  §3.2, eq. 1); end marker ``eos`` appends the id of the model's *document-end* token, ``.`` appends
  a full stop to the text, ``none`` nothing (:func:`form_end`, the one place). For a plain-text prompt the EOS the
  paper means ends the document, not a chat turn; instruction-tuned tokenizers often set
  ``eos_token`` to the end of turn (``<|im_end|>`` for SmolLM2/Qwen-Instruct, ``<|eot_id|>`` for
  Llama-3-Instruct), so :func:`document_end` finds the document end of the vocabulary
  (rule in its docstring). The ``chat`` prompt format (:func:`chat_frame`) instead scores the
  prompt inside the model's chat template, with the end-of-turn token as the end marker.
* **Joint tokenization** (:func:`tokenize_pairs`): prompt and continuation are encoded *jointly* and
  split at the prompt's own token count, as lm-evaluation-harness does, so BPE merges inside the form
  are the model's canonical ones. When the joint encoding merges across the boundary (the prompt's
  last token is not a prefix of the joint encoding), the pair's score is the chain rule on canonical
  encodings, ``log P(prompt + form) - log P(prompt)``, computed from their longest common token
  prefix; it equals the plain sum whenever no merge happens.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass

import numpy as np

log = logging.getLogger(__name__)

#: The one list of scoring.end_marker values (:func:`form_end`; the config schemas' enums are tested equal).
END_MARKERS = ("eos", ".", "none")
#: Texts of document-end tokens, looked for in this order when the tokenizer's EOS is not one:
#: GPT-2 / Pythia / Qwen / SmolLM / Phi, Llama 3, Llama 1-2 / Mistral, Gemma.
DOCUMENT_END_TOKENS = ("<|endoftext|>", "<|end_of_text|>", "</s>", "<eos>")
#: models.tsv ``prompt_format`` values: ``plain`` text prompts, or prompts inside the chat template.
PROMPT_FORMATS = ("plain", "chat")
#: Languages written without spaces between words: forms follow the prompt directly.
NO_SPACE_LANGS = ("zh", "ja", "th", "lo", "km", "my", "bo")


def continuation_text(form: str, lang: str, no_space_langs: Collection[str] = NO_SPACE_LANGS) -> str:
    """A form as it follows a prompt: one leading space in languages written with spaces."""
    return form if lang in no_space_langs else " " + form


def context_ids(tokenizer, prompt: str, *, head: Sequence[int] | None = None) -> list[int]:
    """Token ids a continuation of ``prompt`` is conditioned on (generation, top-k, ApprOpt).

    The same prefix :func:`tokenize_pairs` gives a pair without a boundary merge: leading special
    tokens (or ``head``, e.g. a :func:`chat_frame`'s) + the prompt without its trailing spaces; EOS
    for an empty prompt without BOS.
    """
    stripped = prompt.rstrip(" ")
    start = special_prefix(tokenizer) if head is None else list(head)
    ids = start + (encode(tokenizer, [stripped])[0] if stripped else [])
    if not ids:
        if tokenizer.eos_token_id is None:
            raise ValueError("empty prompt and a tokenizer without BOS/EOS: no context token to condition on")
        ids = [int(tokenizer.eos_token_id)]
    return ids


@dataclass(frozen=True)
class PairPlan:
    """How one (prompt, continuation) pair is scored: ``sum(plus) - sum(minus)`` request scores."""

    plus: int
    minus: int | None
    n_tokens: int


def special_prefix(tokenizer) -> list[int]:
    """Token ids the tokenizer puts before any text (e.g. Llama's BOS); empty for GPT-2 style."""
    with_special = tokenizer("a", add_special_tokens=True)["input_ids"]
    plain = tokenizer("a", add_special_tokens=False)["input_ids"]
    for start in range(len(with_special) - len(plain) + 1):
        if with_special[start : start + len(plain)] == plain:
            return list(with_special[:start])
    return []


@dataclass(frozen=True)
class EndToken:
    """The token scored after each form under end marker ``eos``, and why it was chosen."""

    id: int
    text: str
    rule: str

    def describe(self) -> str:
        """``<|endoftext|> (id 0, <rule>)``: what manifests, logs and the report print."""
        return f"{self.text} (id {self.id}, {self.rule})"


def document_end(tokenizer, name: str = "") -> EndToken | None:
    """The document-end token of a tokenizer: what ``eos`` appends after a plain-text prompt.

    The rule, first match wins:

    1. ``name`` (models.tsv ``end_token``): that token text, which must be one token of the vocabulary;
    2. the tokenizer's EOS when it is a document end: its text is in :data:`DOCUMENT_END_TOKENS`, or
       BOS == EOS (GPT-2 / Pythia / ``builtin:control``: one token separates documents);
    3. the first of :data:`DOCUMENT_END_TOKENS` in the vocabulary (SmolLM2-Instruct and
       Qwen-Instruct: ``<|endoftext|>``, where EOS is ``<|im_end|>``; Llama-3-Instruct:
       ``<|end_of_text|>``, where EOS is ``<|eot_id|>``);
    4. the EOS token, with a logged warning (no document end known);

    ``None`` when the tokenizer has neither (end marker ``eos`` then fails, :func:`form_end`).
    """
    vocab = tokenizer.get_vocab()
    if name:
        if name not in vocab:
            raise ValueError(
                f"end_token {name!r} (models.tsv) is not a token of the vocabulary; "
                f"name one token, e.g. {tokenizer.eos_token!r}, or leave the cell empty"
            )
        return EndToken(int(vocab[name]), name, "models.tsv end_token")
    eos, eos_id = tokenizer.eos_token, tokenizer.eos_token_id
    if eos_id is not None and eos in DOCUMENT_END_TOKENS:
        return EndToken(int(eos_id), str(eos), "EOS is a document end")
    if eos_id is not None and eos == tokenizer.bos_token:
        return EndToken(int(eos_id), str(eos), "BOS == EOS")
    for text in DOCUMENT_END_TOKENS:
        if text in vocab:
            return EndToken(int(vocab[text]), text, f"document end of the vocabulary (EOS is {eos!r})")
    if eos_id is None:
        return None
    log.warning(
        "no document-end token (%s) in the vocabulary: scoring ends forms with EOS %r; name another "
        "with the models.tsv end_token column",
        ", ".join(DOCUMENT_END_TOKENS),
        eos,
    )
    return EndToken(int(eos_id), str(eos), "EOS fallback: no document end found")


@dataclass(frozen=True)
class ChatFrame:
    """Where a prompt sits in the chat template: ids before it and the end-of-turn token after it."""

    head: tuple[int, ...]
    end: EndToken


#: Stands for the scored text while a chat template is rendered (never a real token).
_SLOT = "\ue000FACTPROBE\ue000"


def chat_frame(tokenizer) -> ChatFrame:
    """The ``chat`` prompt format: the prompt and its form are the one assistant turn of the model's
    chat template; ``head`` is the template's text before that turn's content (BOS, default system
    prompt, turn header) and the end marker is the first token after it (the end of turn).

    A form is then scored as ``log Pr(form + end of turn | template head + prompt)``: the end of turn
    is the right end for text inside a chat turn, as the document end is for plain text.
    """
    if not getattr(tokenizer, "chat_template", None):
        raise ValueError("prompt_format chat: the tokenizer has no chat template; use prompt_format plain")
    text = tokenizer.apply_chat_template([{"role": "assistant", "content": _SLOT}], tokenize=False)
    before, found, after = text.partition(_SLOT)
    if not found:
        raise ValueError("prompt_format chat: the chat template drops the assistant turn's content")
    tail = encode(tokenizer, [after])[0] if after else []
    specials = set(tokenizer.all_special_ids) | set(getattr(tokenizer, "added_tokens_decoder", {}))
    if not tail or tail[0] not in specials:
        raise ValueError(
            f"prompt_format chat: no end-of-turn token after the assistant turn (template gives {after!r})"
        )
    end_text = tokenizer.convert_ids_to_tokens(tail[0])
    return ChatFrame(
        tuple(encode(tokenizer, [before])[0]), EndToken(int(tail[0]), end_text, "chat end of turn")
    )


def model_end_token(tokenizer, name: str = "", prompt_format: str = "plain") -> EndToken | None:
    """The token end marker ``eos`` scores after a form of this model: the models.tsv ``end_token``
    ``name`` when given, else under prompt format ``chat`` the template's end of turn
    (:func:`chat_frame`), else the tokenizer's :func:`document_end`. Scoring, the model manifest
    and the lm-eval read-back all ask this one function."""
    if prompt_format not in PROMPT_FORMATS:
        raise ValueError(f"prompt_format {prompt_format!r}: use one of {PROMPT_FORMATS}")
    if name or prompt_format == "plain":
        return document_end(tokenizer, name)
    return chat_frame(tokenizer).end


@dataclass(frozen=True)
class FormEnd:
    """What follows every scored form under one end marker: ``suffix`` is text encoded together
    with the form (``.``), ``token`` one token appended after the encoded form (``eos``: an
    :class:`EndToken`, or only its text where no tokenizer is at hand, as in an lm-eval export)."""

    marker: str
    suffix: str = ""
    token: EndToken | str | None = None

    @property
    def text(self) -> str:
        """The end as text: what an lm-eval export appends to each choice, which the model's
        tokenizer encodes to the ids scoring appends."""
        token = self.token.text if isinstance(self.token, EndToken) else (self.token or "")
        return self.suffix + token

    @property
    def ids(self) -> list[int]:
        """Token ids appended after the encoded form (the end token's id under ``eos``)."""
        if self.token is None:
            return []
        if not isinstance(self.token, EndToken):
            raise ValueError(f"end token {self.token!r} is known by its text only: no id to score")
        return [self.token.id]


def form_end(end_marker: str, token: EndToken | str | None, *, missing: str = "") -> FormEnd:
    """The one end rule (spec Pl(o|c) = sum over forms of Pr(form + EOS | c), distractors paper
    §3.2 eq. 1): ``eos`` ends a form with ``token`` (the paper's choice), ``.`` with a full stop
    encoded with the form's text, ``none`` with nothing. ``missing`` says why an ``eos`` end has no
    token and what to do, for the error."""
    if end_marker not in END_MARKERS:
        raise ValueError(f"end marker {end_marker!r}: use one of {END_MARKERS}")
    if end_marker == ".":
        return FormEnd(end_marker, ".")
    if end_marker == "none":
        return FormEnd(end_marker)
    if token is None or token == "":
        raise ValueError(f"end marker 'eos' but {missing or 'no end token'}")
    return FormEnd(end_marker, token=token)


_NO_TOKEN = "the tokenizer has no EOS or document-end token; set scoring.end_marker to '.' or 'none'"


def scoring_end(tokenizer, end: str, *, end_token: EndToken | None = None) -> FormEnd:
    """:func:`form_end` for scoring with ``tokenizer``: ``end_token`` (the model's
    :func:`model_end_token`), by default the tokenizer's :func:`document_end` (looked up only under
    ``eos``)."""
    token = end_token if end_token is not None or end != "eos" else document_end(tokenizer)
    return form_end(end, token, missing=_NO_TOKEN)


def end_ids(tokenizer, end: str, *, end_token: EndToken | None = None) -> list[int]:
    """Token ids appended after the form (:func:`scoring_end`): ``end_token`` under ``eos``,
    nothing for ``.`` and ``none``."""
    return scoring_end(tokenizer, end, end_token=end_token).ids


def tokenizer_normalizer(tokenizer) -> Callable[[str], str]:
    """The text normalization ``tokenizer`` applies before it splits words, surrounding whitespace
    stripped: what makes two strings one token to it. A fast tokenizer's own normalizer (BERT
    ``-uncased``: lower-casing and accent stripping; ALBERT: its precompiled map and lower-casing;
    none: the text as it is), else a slow tokenizer's ``do_lower_case``.

    BELIEF (§2.1) counts ŵ correct when it is one of the object's tokens according to the model's
    tokenizer: with an uncased vocabulary "japan" is the token of "Japan"."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    normalizer = getattr(backend, "normalizer", None)
    if normalizer is not None:
        return lambda text: normalizer.normalize_str(str(text).strip()).strip()
    if getattr(tokenizer, "do_lower_case", False):
        return lambda text: str(text).strip().lower()
    return lambda text: str(text).strip()


def encode(tokenizer, texts: list[str]) -> list[list[int]]:
    if not texts:
        return []
    return [list(ids) for ids in tokenizer(texts, add_special_tokens=False)["input_ids"]]


def tokenize_pairs(
    tokenizer,
    prompts: Sequence[str],
    continuations: Sequence[str],
    end: str = "eos",
    *,
    end_token: EndToken | None = None,
    head: Sequence[int] | None = None,
) -> tuple[list[tuple[tuple[int, ...], tuple[int, ...]]], list[PairPlan]]:
    """Joint tokenization of pairs into deduplicated ``(prefix, continuation)`` token requests.

    Returns the requests and one :class:`PairPlan` per input pair. The prefix starts with the
    tokenizer's own leading special tokens (BOS), or ``head`` when given (a :func:`chat_frame`);
    with none and an empty prompt, the EOS token stands in as the context (as lm-evaluation-harness
    does), so the first form token has a conditioning position. End marker ``.`` is appended to the
    text before encoding; ``eos`` appends ``end_token`` (default :func:`document_end`) after it;
    ``none`` appends nothing.
    """
    final = scoring_end(tokenizer, end, end_token=end_token)
    if len(prompts) != len(continuations):
        raise ValueError("prompts and continuations differ in length")
    head = special_prefix(tokenizer) if head is None else list(head)
    tail = final.ids
    moved_prompts, moved_conts = _move_trailing_spaces(prompts, continuations, final.suffix)
    prompt_ids = _encode_unique(tokenizer, moved_prompts)
    whole_texts = [p + c for p, c in zip(moved_prompts, moved_conts, strict=True)]
    whole_ids = _encode_unique(tokenizer, whole_texts)
    requests = _RequestIndex()
    plans = []
    for prompt, cont, whole_text in zip(moved_prompts, moved_conts, whole_texts, strict=True):
        if not cont.strip() and not tail:
            raise ValueError(f"empty continuation after prompt {prompt!r}: nothing to score")
        plans.append(_pair_plan(tokenizer, head, tail, prompt_ids[prompt], whole_ids[whole_text], requests))
    return requests.requests, plans


def _move_trailing_spaces(
    prompts: Sequence[str], continuations: Sequence[str], suffix: str
) -> tuple[list[str], list[str]]:
    """The prompts without their trailing spaces, and each continuation with those spaces in
    front and ``suffix`` behind (a space belongs to the next word's token)."""
    moved_prompts, moved_conts = [], []
    for prompt, cont in zip(prompts, continuations, strict=True):
        stripped = prompt.rstrip(" ")
        moved_prompts.append(stripped)
        moved_conts.append(prompt[len(stripped) :] + cont + suffix)
    return moved_prompts, moved_conts


def _encode_unique(tokenizer, texts: Sequence[str]) -> dict[str, list[int]]:
    """Token ids of each distinct text, each encoded once (sorted, one tokenizer call)."""
    uniq = sorted(set(texts))
    return dict(zip(uniq, encode(tokenizer, uniq), strict=True))


class _RequestIndex:
    """Deduplicated ``(prefix, continuation)`` token requests in order of first use."""

    def __init__(self) -> None:
        self.requests: list[tuple[tuple[int, ...], tuple[int, ...]]] = []
        self.index: dict[tuple[tuple[int, ...], tuple[int, ...]], int] = {}

    def __call__(self, prefix: list[int], cont: list[int]) -> int:
        key = (tuple(prefix), tuple(cont))
        if key not in self.index:
            self.index[key] = len(self.requests)
            self.requests.append(key)
        return self.index[key]


def _pair_plan(
    tokenizer, head: list[int], tail: list[int], p_ids: list[int], w_ids: list[int], request: _RequestIndex
) -> PairPlan:
    """The plan of one pair from its prompt's ids and its whole text's ids: one request when the
    prompt's tokens are a prefix of the whole's, else the whole minus the prompt after their common
    tokens (a merge across the boundary)."""
    start = list(head)
    if not start and not p_ids:
        if tokenizer.eos_token_id is None:
            raise ValueError("empty prompt and a tokenizer without BOS/EOS: no context token to condition on")
        start = [int(tokenizer.eos_token_id)]
    if w_ids[: len(p_ids)] == p_ids and len(w_ids) > len(p_ids) or (w_ids == p_ids and tail):
        plus = request(start + p_ids, w_ids[len(p_ids) :] + tail)
        return PairPlan(plus, None, len(w_ids) - len(p_ids) + len(tail))
    common = 0
    while common < min(len(p_ids), len(w_ids)) and p_ids[common] == w_ids[common]:
        common += 1
    if not start and common == 0:
        # No shared token and no BOS: condition both on EOS, like an empty context.
        start = [int(tokenizer.eos_token_id)]
    prefix = start + w_ids[:common]
    plus = request(prefix, w_ids[common:] + tail)
    minus = request(prefix, p_ids[common:])
    return PairPlan(plus, minus, max(1, len(w_ids) - len(p_ids) + len(tail)))


def combine(
    plans: Sequence[PairPlan], req_logprob: np.ndarray, req_first: np.ndarray
) -> tuple[np.ndarray, ...]:
    """Per-pair (logprob, n_tokens, first_logprob) from per-request scores and the pair plans.

    ``first_logprob`` is the log-probability of the first token that carries the form (the first
    continuation token; after a boundary merge, the first token of the merged encoding).
    """
    logprob = np.empty(len(plans), dtype=np.float64)
    first = np.empty(len(plans), dtype=np.float64)
    n_tokens = np.empty(len(plans), dtype=np.int32)
    for i, plan in enumerate(plans):
        value = req_logprob[plan.plus]
        if plan.minus is not None:
            value -= req_logprob[plan.minus]
        logprob[i] = value
        first[i] = req_first[plan.plus]
        n_tokens[i] = plan.n_tokens
    return logprob, n_tokens, first


def end_logprobs(plans: Sequence[PairPlan], req_last: np.ndarray, end: str) -> np.ndarray:
    """Per-pair log-probability of the end marker: the last token of the pair's ``plus`` request.

    With ``end="none"`` nothing is appended and the value is 0, so ``logprob - end_logprob`` is
    log Pr(form | c) without an end marker for every setting (distractors paper Table 2,
    Probability). For ``"."`` it is the final token's log-probability (the period, which BPE
    vocabularies encode as a token of its own after a word).
    """
    out = np.zeros(len(plans), dtype=np.float64)
    if end == "none":
        return out
    for i, plan in enumerate(plans):
        out[i] = req_last[plan.plus]
    return out
