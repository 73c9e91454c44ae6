"""Generation-overlap baselines of the distractors paper (Table 2, §4.2, Table 3): ROUGE-L and BERTScore.

Table 2 defines both over the fact's cloze sentences C, the object's names Λ(o) and the best
sequences B(c) that beam search gives after c:

    ROUGE-L(f)   = 1/|C| Σ_{c∈C} max_{λ∈Λ(o), b∈B(c)} ROUGE_L(λ, b)
    BERTScore(f) = 1/|C| Σ_{c∈C} max_{λ∈Λ(o), b∈B(c)} BERTScore(λ, b)

§4.2 grids the beam width over {1, 2, 5, 10, 20, 30, 50, 100}. With ``suites.<suite>.generate:
beams`` B(c) is the ``w`` sequences of the beam search of width ``w``, for every width of
``scoring.beam_widths`` (the generations table's ``beam_width`` rows,
:func:`factprobe.scoring.generate.beam_answers`): each measure has one value per width, ``n`` =
the width, a configuration of §4.2's grid. With ``generate: greedy`` B(c) is the greedy
continuation (``sample`` 0, ``n`` 0). Both scores are F-measures, as the reference
implementation (DistFactAssessLM, ``src/know/generation.py``) reports the F1 of each and takes
the best name by it:

* ROUGE_L (Lin 2004 §3.1): LCS-based F with β = 1, P = LCS/|b|, R = LCS/|λ|. ``units="words"``
  (default, Lin's definition) compares lower-cased alphanumeric words, as the ``rouge-score``
  package tokenizes ASCII text (Unicode letters kept as words here); ``units="characters"``
  compares the raw strings character by character, as the reference's LCS runs over Python
  strings.
* BERTScore (Zhang et al. 2020 §3): contextual token embeddings of a layer of an encoder
  (``metrics.family_settings.overlap.encoder``, a local folder; the reference calls ``bert_score`` with
  ``lang="en"``: roberta-large, layer 17), each token matched greedily to its most similar
  token of the other string by cosine, R = mean over λ's tokens, P = mean over b's tokens,
  F = 2PR/(P+R); optional idf weights over the suite's names (``idf``); no baseline rescaling
  (the reference uses none). As the authors' ``bert_score`` code (0.3.13) that the reference
  calls: strings are stripped, byte-level BPE tokenizers (RoBERTa, GPT-2) get a leading space,
  special tokens ([CLS], [SEP], <s>, </s>) are in the input and may be matched but weigh 0 in
  the means.

Λ(o) is the object's forms scored for the prompt (the Probability baseline's names).
"""

from __future__ import annotations

import logging
import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from .common import GROUP_KEYS, average_per_fact

log = logging.getLogger(__name__)

ROUGE_UNITS = ("words", "characters")
_WORD = re.compile(r"[^\W_]+")


def rouge_units(text: str, units: str = "words") -> list[str]:
    """The units ROUGE-L compares: lower-cased alphanumeric words, or the raw characters."""
    if units == "words":
        return _WORD.findall(text.lower())
    if units == "characters":
        return list(text)
    raise ValueError(
        f"metrics.family_settings.overlap.rouge_units: {units!r}; choose from {list(ROUGE_UNITS)}"
    )


def lcs_length(a: Sequence[str], b: Sequence[str]) -> int:
    """Length of the longest common subsequence of ``a`` and ``b`` (dynamic programming, O(|a||b|))."""
    if len(a) < len(b):
        a, b = b, a
    row = [0] * (len(b) + 1)
    for x in a:
        prev_diag = 0
        for j, y in enumerate(b, start=1):
            up = row[j]
            row[j] = prev_diag + 1 if x == y else max(row[j], row[j - 1])
            prev_diag = up
    return row[-1]


def rouge_l(candidate: str, reference: str, units: str = "words") -> tuple[float, float, float]:
    """(P, R, F) of ROUGE-L (Lin 2004 §3.1, β = 1): LCS over ``candidate``'s and ``reference``'s units.

    P = LCS/|candidate|, R = LCS/|reference|, F = 2PR/(P+R); all 0 when either is empty or no
    unit is shared.
    """
    c, r = rouge_units(candidate, units), rouge_units(reference, units)
    if not c or not r:
        return 0.0, 0.0, 0.0
    common = lcs_length(c, r)
    if common == 0:
        return 0.0, 0.0, 0.0
    p, rec = common / len(c), common / len(r)
    return p, rec, 2 * p * rec / (p + rec)


def best_rouge_l(continuations: Iterable[str], names: Iterable[str], units: str = "words") -> float:
    """Table 2: max over names λ and continuations b of ROUGE_L(λ, b) (its F); NaN without names."""
    names = list(names)
    scores = [rouge_l(b, lam, units)[2] for b in continuations for lam in names]
    return max(scores) if scores else float("nan")


@dataclass
class BertScorer:
    """BERTScore (Zhang et al. 2020 §3) with one encoder: token embeddings of ``layer``
    (``hidden_states[layer]``, 0 = the embedding layer; None = the last), greedy cosine matching.

    ``tokenizer`` and ``model`` are a ``transformers`` tokenizer and encoder; :meth:`from_encoder` reads
    them from a folder. Embeddings are computed once per distinct string.
    """

    tokenizer: Any
    model: Any
    layer: int | None = None
    batch_size: int = 32
    use_idf: bool = False
    prefix_space: bool = False
    idf: Mapping[int, float] | None = None
    _cache: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]] = field(default_factory=dict)

    @classmethod
    def from_encoder(cls, encoder: str, layer: int | None = None, use_idf: bool = False) -> BertScorer:
        """The encoder in folder (or cached hub name) ``encoder``; errors name the setting."""
        from transformers import AutoModel, AutoTokenizer

        try:
            tokenizer = AutoTokenizer.from_pretrained(encoder)
            model = AutoModel.from_pretrained(encoder)
        except OSError as err:
            raise ValueError(
                f"metrics.family_settings.overlap.encoder: cannot load {encoder!r} ({err}); point it at a local "
                "folder holding the encoder and its tokenizer (the run is offline)"
            ) from None
        model.eval()
        # bert_score encodes RoBERTa / GPT-2 inputs with add_prefix_space=True.
        byte_bpe = type(tokenizer).__name__.startswith(("Roberta", "GPT2"))
        return cls(tokenizer, model, layer, use_idf=use_idf, prefix_space=byte_bpe)

    def embed(self, texts: Sequence[str]) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """Per text: (token ids, unit-norm embeddings, special-token flags), special tokens included."""
        import torch

        todo = [t for t in dict.fromkeys(texts) if t not in self._cache]
        for start in range(0, len(todo), self.batch_size):
            chunk = todo[start : start + self.batch_size]
            inputs = [(" " if self.prefix_space else "") + t.strip() for t in chunk]
            enc = self.tokenizer(
                inputs, padding=True, truncation=True, return_tensors="pt", return_special_tokens_mask=True
            )
            special = enc.pop("special_tokens_mask").bool()
            with torch.no_grad():
                out = self.model(**enc, output_hidden_states=True)
            states = out.hidden_states[-1 if self.layer is None else self.layer].float()
            keep = enc["attention_mask"].bool()
            for i, text in enumerate(chunk):
                vecs = states[i][keep[i]].numpy().astype(np.float64)
                norms = np.linalg.norm(vecs, axis=1, keepdims=True)
                ids, flags = enc["input_ids"][i][keep[i]].numpy(), special[i][keep[i]].numpy()
                self._cache[text] = (ids, vecs / np.maximum(norms, 1e-12), flags)
        return [self._cache[t] for t in texts]

    def score(self, candidate: str, reference: str) -> tuple[float, float, float]:
        """(P, R, F) of BERTScore; 0 when either string has no (non-special) token."""
        (c_ids, c, c_special), (r_ids, r, r_special) = self.embed([candidate, reference])
        w_r, w_c = self._weights(r_ids, r_special), self._weights(c_ids, c_special)
        if w_r.sum() <= 0 or w_c.sum() <= 0:
            return 0.0, 0.0, 0.0
        sim = r @ c.T  # reference tokens x candidate tokens, special ones included
        rec = float(np.dot(w_r, sim.max(axis=1)) / w_r.sum())
        prec = float(np.dot(w_c, sim.max(axis=0)) / w_c.sum())
        f = 2 * prec * rec / (prec + rec) if prec + rec > 0 else 0.0
        return prec, rec, f

    def _weights(self, ids: np.ndarray, special: np.ndarray) -> np.ndarray:
        """Weight of each token: its idf (1 without idf), 0 for special tokens."""
        if self.idf is None:
            weights = np.ones(len(ids))
        else:
            default = self.idf.get(-1, 1.0)
            weights = np.array([self.idf.get(int(i), default) for i in ids], dtype=np.float64)
        return np.where(special, 0.0, weights)

    def fit_idf(self, references: Sequence[str]) -> None:
        """idf(w) = log((M + 1)/(df(w) + 1)) over the ``M`` distinct reference strings (Zhang et
        al. §3 "Importance weighting", with the +1 smoothing of their released code so unseen
        tokens get log(M + 1), kept under key -1)."""
        refs = list(dict.fromkeys(references))
        df: Counter[int] = Counter()
        for ids, _, special in self.embed(refs):
            df.update({int(i) for i, s in zip(ids, special, strict=True) if not s})
        m = len(refs)
        self.idf = {tok: math.log((m + 1) / (n + 1)) for tok, n in df.items()}
        self.idf[-1] = math.log(m + 1)

    def best(self, continuations: Iterable[str], names: Iterable[str]) -> float:
        """Table 2: max over names λ and continuations b of BERTScore(λ, b) (its F); NaN without names."""
        names = list(names)
        scores = [self.score(b, lam)[2] for b in continuations for lam in names]
        return max(scores) if scores else float("nan")


def object_names(scores: pd.DataFrame, prompts: pd.DataFrame, facts: pd.DataFrame) -> pd.DataFrame:
    """Λ(o) per prompt: ``prompt_id, fact_id, form`` for the forms of the fact's object scored there."""
    base = prompts[["prompt_id", "fact_id"]].merge(facts[["fact_id", "object"]].astype(str), on="fact_id")
    rows = scores[["prompt_id", "entity", "form"]].astype(str)
    named = base.merge(rows, left_on=["prompt_id", "object"], right_on=["prompt_id", "entity"])
    return named[["prompt_id", "fact_id", "form"]].drop_duplicates()


def beam_sets(generations: pd.DataFrame) -> dict[int, pd.Series]:
    """B(c) per prompt, by beam width: ``{width: prompt_id -> [texts]}``. Beam rows
    (``beam_width`` > 0) give one entry per width; otherwise the greedy continuation (``sample``
    0) is B(c) under width 0."""
    if "beam_width" in generations.columns and (generations["beam_width"] > 0).any():
        beams = generations[generations["beam_width"] > 0]
        return {
            int(w): rows[["prompt_id", "text"]].astype(str).groupby("prompt_id")["text"].apply(list)
            for w, rows in beams.groupby("beam_width")
        }
    greedy = generations[generations["sample"] == 0][["prompt_id", "text"]].astype(str)
    return {0: greedy.groupby("prompt_id")["text"].apply(list)}


def overlap_per_prompt(
    generations: pd.DataFrame,
    names: pd.DataFrame,
    units: str = "words",
    scorer: BertScorer | None = None,
) -> pd.DataFrame:
    """``prompt_id, fact_id, n, rouge_l[, bertscore]``: Table 2's inner max per cloze sentence c,
    per beam width ``n`` (:func:`beam_sets`; 0 = the greedy continuation).

    A prompt without B(c), or whose object has no scored name, gets no row (logged).
    """
    rows, missing = [], 0
    for width, conts in beam_sets(generations).items():
        part, lost = _overlap_rows(conts, names, units, scorer)
        rows += [{**row, "n": width} for row in part]
        missing += lost
    if missing:
        log.warning("overlap: %d prompt(s) x width(s) have no generated sequence; they get no value", missing)
    cols = ["prompt_id", "fact_id", "n", "rouge_l", *(["bertscore"] if scorer is not None else [])]
    return pd.DataFrame(rows, columns=cols)


def _overlap_rows(
    greedy: pd.Series, names: pd.DataFrame, units: str, scorer: BertScorer | None
) -> tuple[list[dict], int]:
    """Rows of :func:`overlap_per_prompt` for one B(c) per prompt, and how many prompts lack one."""
    by_prompt = names.groupby(["prompt_id", "fact_id"])["form"].apply(list)
    if scorer is not None:
        scorer.embed([*names["form"].unique(), *greedy.explode().unique()])  # in batches, once
        if scorer.use_idf and scorer.idf is None:
            scorer.fit_idf(names["form"].tolist())
    rows, missing = [], 0
    for (pid, fid), forms in by_prompt.items():
        conts = greedy.get(pid)
        if conts is None:
            missing += 1
            continue
        row = {"prompt_id": pid, "fact_id": fid, "rouge_l": best_rouge_l(conts, forms, units)}
        if scorer is not None:
            row["bertscore"] = scorer.best(conts, forms)
        rows.append(row)
    return rows, missing


def overlap(f: Any) -> tuple[list[pd.DataFrame], list[pd.DataFrame]]:
    """ROUGE-L and BERTScore per fact (distractors paper Table 2, §4.2) from the greedy continuations.

    ``f`` is the suite's :class:`factprobe.metrics.pipeline.SuiteFrame`; the family's own
    settings (``metrics.family_settings.overlap``) name the ROUGE units and the BERTScore encoder (empty: ROUGE-L only).
    """
    if f.inputs.generations is None:
        log.warning(
            "overlap requested but the suite has no generations (set suites.<suite>.generate: greedy)"
        )
        return [], []
    s = f.settings.own("overlap")
    scorer = BertScorer.from_encoder(s["encoder"], s["layer"], s["idf"]) if s["encoder"] else None
    if scorer is None:
        log.warning(
            "overlap: metrics.family_settings.overlap.encoder is empty, BERTScore skipped (ROUGE-L only)"
        )
    names = object_names(f.scores, f.prompts, f.facts)
    per_prompt = overlap_per_prompt(f.inputs.generations, names, s["rouge_units"], scorer)
    keys = f.prompts[["prompt_id", *GROUP_KEYS]]
    measures = [c for c in ("rouge_l", "bertscore") if c in per_prompt.columns]
    return [average_per_fact(per_prompt.merge(keys, on="prompt_id"), ["n"], measures)], []
