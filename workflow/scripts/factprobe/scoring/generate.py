"""Generation mode for BELIEF-ICL (belief-myriadlama §3.2): greedy answers and sampled confidence.

For each prompt: one greedy continuation (``sample = 0``) and ``m`` multinomial samples
(``sample = 1..m``, full vocabulary, temperature 1, no top-k/top-p), each cut at the first line
break (few-shot examples are one per line) and at EOS. Samples are seeded by
``stable_hash(prompt_id)``, so a prompt's samples do not depend on batch composition.

Matching (§3.2): strings are normalized by tokenizing and lemmatizing ("a guitar" -> [a, guitar],
"guitars" -> [guitar]); two strings match when one normalized token list is contained in the
other. Acc@1 uses one-directional matching (the gold answer contained in the generation);
Consist and the sampled confidence use bi-directional matching.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence

import numpy as np
import pandas as pd
import torch

from factprobe.hashing import stable_hash

log = logging.getLogger(__name__)

_WORD = re.compile(r"\w+", re.UNICODE)
_KEEP_S = ("ss", "us", "is", "os", "as")


def lemma(word: str) -> str:
    """Rule-based English lemma of a lower-cased word (plural nouns, 3rd person -s).

    A small, deterministic stand-in for a lemmatizer: the paper only needs number and article
    variation to collapse ("guitars" ~ "a guitar"); other languages are left unchanged.
    """
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 4 and word.endswith(("sses", "xes", "ches", "shes", "zes")):
        return word[:-2]
    if len(word) > 3 and word.endswith("s") and not word.endswith(_KEEP_S):
        return word[:-1]
    return word


def normalize(text: str, lang: str = "en") -> list[str]:
    """Tokenize (unicode words), lower-case and, for English, lemmatize (§3.2)."""
    words = [w.lower() for w in _WORD.findall(text or "")]
    if lang == "en":
        words = [lemma(w) for w in words]
    return words


def _contains(outer: Sequence[str], inner: Sequence[str]) -> bool:
    if not inner:
        return False
    n = len(inner)
    return any(list(outer[i : i + n]) == list(inner) for i in range(len(outer) - n + 1))


def matches(answer: str, generated: str, lang: str = "en", bidirectional: bool = False) -> bool:
    """BELIEF §3.2 partial match: ``answer`` contained in ``generated`` (or either way)."""
    a, g = normalize(answer, lang), normalize(generated, lang)
    if bidirectional:
        return _contains(g, a) or _contains(a, g)
    return _contains(g, a)


def sampled_confidence(greedy: str, samples: Sequence[str], lang: str = "en") -> float:
    """Share of samples that match the greedy answer (bi-directional): BELIEF-ICL confidence."""
    if not samples:
        return float("nan")
    return float(np.mean([matches(greedy, s, lang, bidirectional=True) for s in samples]))


def _first_line(text: str) -> str:
    return text.split("\n", 1)[0].strip()


@torch.inference_mode()
def _generate(model, tokenizer, texts: list[str], do_sample: bool, max_new_tokens: int):
    device = next(model.parameters()).device
    enc = tokenizer(texts, return_tensors="pt", padding=True, add_special_tokens=True).to(device)
    eos = tokenizer.eos_token_id
    kwargs = {"do_sample": do_sample, "num_beams": 1}
    if do_sample:
        kwargs.update(temperature=1.0, top_k=0, top_p=1.0)
    out = model.generate(
        **enc,
        max_new_tokens=max_new_tokens,
        return_dict_in_generate=True,
        output_scores=True,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=eos,
        **kwargs,
    )
    new = out.sequences[:, enc["input_ids"].shape[1] :]
    logits = torch.stack(out.scores, dim=1).float()  # raw processed scores; no warpers at T=1, k=0
    lp = torch.log_softmax(logits, dim=-1).gather(2, new[:, :, None])[:, :, 0]
    alive = torch.ones_like(new, dtype=torch.bool)
    if eos is not None:
        ended = (new == eos).long().cumsum(1)
        alive = (ended == 0) | ((ended == 1) & (new == eos))  # tokens up to and including EOS
    total = (lp * alive).sum(1).double().cpu().numpy()
    texts_out = [tokenizer.decode(row[mask], skip_special_tokens=True) for row, mask in zip(new.cpu(), alive.cpu(), strict=True)]
    return texts_out, total


def generate_answers(
    model,
    tokenizer,
    prompts: pd.DataFrame,
    samples: int = 10,
    max_new_tokens: int = 12,
    batch_size: int = 16,
    progress: bool = True,
) -> pd.DataFrame:
    """Greedy + ``samples`` sampled answers per prompt: ``prompt_id, sample, text, logprob``.

    ``prompts`` needs ``prompt_id, text`` and optionally ``context`` (the input is context + text).
    ``logprob`` is the summed log-probability of the generated tokens (up to and including EOS).
    """
    from tqdm import tqdm

    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    tokenizer.padding_side = "left"
    ids = prompts["prompt_id"].tolist()
    context = prompts["context"].fillna("") if "context" in prompts.columns else ""
    texts = (context + prompts["text"]).str.rstrip(" ").tolist()
    rows = []
    order = np.argsort([len(t) for t in texts], kind="stable")
    for start in tqdm(range(0, len(order), batch_size), desc="greedy", disable=not progress, mininterval=10):
        chunk = order[start : start + batch_size]
        out, lp = _generate(model, tokenizer, [texts[i] for i in chunk], False, max_new_tokens)
        rows += [(ids[i], 0, _first_line(t), float(v)) for i, t, v in zip(chunk, out, lp, strict=True)]
    if samples > 0:
        for i in tqdm(range(len(ids)), desc="samples", disable=not progress, mininterval=10):
            torch.manual_seed(stable_hash("belief-sample", ids[i]) % (2**63))
            out, lp = _generate(model, tokenizer, [texts[i]] * samples, True, max_new_tokens)
            rows += [(ids[i], k, _first_line(t), float(v)) for k, (t, v) in enumerate(zip(out, lp, strict=True), 1)]
    frame = pd.DataFrame(rows, columns=["prompt_id", "sample", "text", "logprob"])
    frame["sample"] = frame["sample"].astype("int32")
    log.info("generated %d answers for %d prompts (%d samples each)", len(frame), len(ids), samples)
    return frame.sort_values(["prompt_id", "sample"]).reset_index(drop=True)
