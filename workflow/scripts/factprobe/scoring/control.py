"""builtin:control - a tiny GPT-2-style LM whose knowledge is known.

It is trained on verbalizations (every prompt style, zero-shot text + " " + object form + EOS) of
the facts whose hash-chosen ``split`` is ``taught``; the ``untaught`` half is never seen. Measures
must then separate the halves: on taught facts the object beats its distractors (Avg@n near 1);
on untaught facts the model knows nothing about (s, r). Chance is 0.5 there only if the object
and its distractors are equally familiar answers of the relation: with taught facts alone the
model prefers the objects it was taught for the relation, and ranks an untaught object below
distractors that happen to be taught objects (Avg ~0.27 on the demo). :func:`prior_docs` therefore
adds, for every candidate entity of a relation, documents with a made-up subject, so that every
candidate is an object of "other taught facts" equally often.

Everything is seeded; training is a fixed number of steps (no wall-clock cut), so the same
inputs give the same weights on the same torch build; rule ``train_control`` also trains on one
thread with the settings of :mod:`factprobe.reproducible`, so the weights are the same on any
x86-64 CPU (AVX2, AVX-512 and AMX machines alike).
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Collection, Iterable, Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from factprobe import contracts
from factprobe.hashing import stable_hash, stable_hashes
from factprobe.lm.encoding import NO_SPACE_LANGS, continuation_text
from factprobe.probes.timeline import UNDATED

log = logging.getLogger(__name__)

EOS = "<|endoftext|>"


def train_bpe_tokenizer(corpus: Iterable[str], vocab_size: int = 2000, add_bos: bool = True):
    """Byte-level BPE tokenizer trained on ``corpus`` (GPT-2 style), as a transformers fast tokenizer.

    ``<|endoftext|>`` is BOS, EOS and padding; with ``add_bos`` it is prepended to every encoding
    (so scoring conditions the first word on it, as in training).
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=[EOS],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(list(corpus), trainer)
    if add_bos:
        eos_id = tok.token_to_id(EOS)
        tok.post_processor = processors.TemplateProcessing(
            single=f"{EOS} $A", pair=f"{EOS} $A $B", special_tokens=[(EOS, eos_id)]
        )
    return PreTrainedTokenizerFast(tokenizer_object=tok, bos_token=EOS, eos_token=EOS, pad_token=EOS)


def build_gpt2(
    vocab_size: int,
    n_layer: int = 2,
    n_embd: int = 128,
    n_head: int = 4,
    n_positions: int = 256,
    seed: int = 0,
):
    """A randomly initialised GPT-2 of the given size (dropout off: a memorisation control)."""
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(seed)
    config = GPT2Config(
        vocab_size=vocab_size,
        n_positions=n_positions,
        n_embd=n_embd,
        n_layer=n_layer,
        n_head=n_head,
        resid_pdrop=0.0,
        embd_pdrop=0.0,
        attn_pdrop=0.0,
        bos_token_id=0,
        eos_token_id=0,
    )
    return GPT2LMHeadModel(config)


def fact_split(facts: pd.DataFrame) -> pd.DataFrame:
    """The taught/untaught split of the facts (their ``split`` column), one row per triple.

    A triple present in several suites must have one split; the hash-chosen column guarantees it,
    and a conflict is an error rather than a silent leak of untaught facts into training.
    """
    contracts.check(facts, "facts", "facts", contracts.columns("split"))
    split = facts[contracts.columns("split")].drop_duplicates()
    bad = set(split["split"]) - {"taught", "untaught"}
    if bad:
        raise ValueError(f"facts: split values {sorted(bad)} are not taught/untaught")
    clash = split.duplicated(["subject", "property", "object"], keep=False)
    if clash.any():
        row = split[clash].iloc[0]
        raise ValueError(
            f"fact {row.subject}|{row.property}|{row.object} is both taught and untaught across suites"
        )
    return split.sort_values(["subject", "property", "object"]).reset_index(drop=True)


def _unit_hash(salt: str, keys: pd.Series) -> np.ndarray:
    """``stable_hash(salt, key)`` of every key mapped to [0, 1)."""
    return stable_hashes((salt,), keys.astype(str).tolist()).astype(np.float64) / 2.0**64


def unknown_subjects(subjects: pd.Series, share: float) -> np.ndarray:
    """Whether each subject is one the control never sees: ``stable_hash("control-unknown-subject",
    subject) / 2**64 < share``, a function of the subject alone (so every fact of it agrees, in
    every suite)."""
    return _unit_hash("control-unknown-subject", subjects) < share


def teaching_draw(facts: pd.DataFrame) -> np.ndarray:
    """Each fact's draw in [0, 1): ``stable_hash("control-taught", subject, property, object) /
    2**64``, a function of the triple alone; a fact is taught when it is below its slice's fraction."""
    triple = (
        facts["subject"].astype(str)
        + "\x1f"
        + facts["property"].astype(str)
        + "\x1f"
        + facts["object"].astype(str)
    )
    return _unit_hash("control-taught", triple)


def slice_fractions(
    facts: pd.DataFrame, until: str | int | None = None, fractions: dict | None = None
) -> np.ndarray:
    """The taught fraction of each fact's slice: 1 for the undated slices (static and the known
    subjects' anchors, facts true before any cut-off); for a dated slice its
    ``fractions`` entry (keyed by the slice's YYYYMMDD end), else 1 when it ends on or before
    ``until`` and 0 otherwise."""
    fractions = {int(k): float(v) for k, v in (fractions or {}).items()}
    end = pd.to_numeric(facts["slice_end"], errors="coerce")
    known = (end <= int(until)).fillna(False).to_numpy() if until else np.zeros(len(facts), dtype=bool)
    out = known.astype(np.float64)
    listed = end.isin(list(fractions)).to_numpy()
    out[listed] = end[listed].astype("int64").map(fractions).to_numpy(dtype=np.float64)
    out[facts["slice"].isin(UNDATED).to_numpy()] = 1.0
    return out


def timeline_split(
    facts: pd.DataFrame,
    until: str | int | None = None,
    fractions: dict | None = None,
    untaught_subjects: float = 0.0,
) -> pd.DataFrame:
    """``facts`` of a timeline suite with the ``split`` of a control whose knowledge over time is known.

    With ``until`` or ``fractions`` set, a fact is taught when its :func:`teaching_draw` is below
    its slice's fraction (:func:`slice_fractions`):
    a function of the triple alone, so a fraction of 1 teaches the whole slice and 0 none of it
    (``until`` alone gives exactly the static slice and the slices up to it), a slice at 0 between
    slices at 1 is a gap, and steps of fraction between 1 and 0 a gradual cut-off. Otherwise the
    facts' own hash-chosen ``split`` stays. Then every fact of a subject chosen by
    :func:`unknown_subjects` is untaught, static ones included: a subject the model never heard of,
    whose new facts say nothing about its cut-off (issue: subject-conditioned curves).
    """
    out = facts.copy()
    if until or fractions:
        taught = teaching_draw(out) < slice_fractions(out, until, fractions)
        out["split"] = np.where(taught, "taught", "untaught")
    if untaught_subjects > 0:
        out.loc[unknown_subjects(out["subject"], untaught_subjects), "split"] = "untaught"
    return out


def verbalizations(
    facts: pd.DataFrame,
    prompts: pd.DataFrame,
    forms: pd.DataFrame,
    max_forms: int = 3,
    no_space_langs: Collection[str] = NO_SPACE_LANGS,
) -> list[str]:
    """Training documents: each zero-shot prompt of a taught fact + " " + a form of its object.

    Only ``text`` is used, never ``context``: few-shot contexts may quote untaught facts. Up to ``max_forms`` forms of
    the object are used (the label first, then hash-chosen aliases), since Pl sums over forms.
    """
    taught = facts[facts["split"] == "taught"]
    p = prompts.merge(taught[["fact_id", "object"]], on="fact_id", how="inner")
    f = forms.rename(columns={"entity": "object"}).copy()
    f["order"] = np.where(f["source"] == "label", 0, 1)
    f["tie"] = [stable_hash("control-form", e, form) for e, form in zip(f["object"], f["form"], strict=True)]
    f = f.sort_values(["object", "lang", "order", "tie"]).groupby(["object", "lang"]).head(max_forms)
    docs = p.merge(f[["object", "lang", "form"]], on=["object", "lang"], how="inner")
    texts = {
        text + continuation_text(form, lang, no_space_langs)
        for text, form, lang in zip(
            docs["text"].astype(str), docs["form"].astype(str), docs["lang"], strict=True
        )
    }
    return sorted(texts)


def nonce_name(key: str) -> str:
    """A made-up, deterministic subject name (two or three syllables, capitalised)."""
    syllables = ["zor", "vek", "li", "mar", "tu", "qen", "sa", "bri", "dol", "ax", "ny", "pho", "ri", "gam"]
    h = stable_hash("nonce", key)
    parts = [syllables[(h >> (8 * i)) % len(syllables)] for i in range(2 + h % 2)]
    return "".join(parts).capitalize()


def prior_docs(
    facts: pd.DataFrame,
    prompts: pd.DataFrame,
    candidates: pd.DataFrame,
    forms: pd.DataFrame,
    copies: int = 2,
    no_space_langs: Collection[str] = NO_SPACE_LANGS,
) -> list[str]:
    """Prior-balancing documents: each candidate entity of a relation after nonce subjects.

    For every (property, language) and every entity that is a candidate (object or distractor)
    of one of its facts, ``copies`` documents ``template(nonce subject) + " " + label``, with a
    hash-chosen template of that property and a hash-chosen made-up subject. Every candidate is
    then an equally familiar answer of the relation, so for a subject whose fact was never taught
    the model has no reason to prefer the object over a distractor (Avg@n near 0.5), while taught
    facts are still memorised. Needs the ``subject_form`` column of prompts.
    """
    if candidates.empty:
        return []
    p = prompts.merge(
        facts[["fact_id", "property"]].drop_duplicates(), on="fact_id", how="inner", suffixes=("_p", "")
    )
    p = p[[sf in text for sf, text in zip(p["subject_form"], p["text"], strict=True)]]
    templates = p.drop_duplicates(["property", "lang", "template_id"])[
        ["property", "lang", "template_id", "text", "subject_form"]
    ]
    by_rel = {k: g.sort_values("template_id") for k, g in templates.groupby(["property", "lang"])}
    cand = (
        candidates[["fact_id", "entity"]]
        .merge(facts[["fact_id", "property"]], on="fact_id")
        .drop_duplicates(["property", "entity"])
    )
    labels = forms.copy()
    labels["order"] = np.where(labels["source"] == "label", 0, 1)
    labels = labels.sort_values(["entity", "lang", "order", "form"])
    labels = labels.drop_duplicates(["entity", "lang"]).set_index(["entity", "lang"])["form"]
    docs = set()
    for (prop, lang), tpl in by_rel.items():
        for entity in cand.loc[cand["property"] == prop, "entity"]:
            form = labels.get((entity, lang))
            if form is None:
                continue
            for k in range(copies):
                row = tpl.iloc[stable_hash("prior-template", prop, lang, entity, k) % len(tpl)]
                subject = nonce_name(f"{prop}|{entity}|{k}")
                docs.add(
                    row["text"].replace(row["subject_form"], subject, 1)
                    + continuation_text(form, lang, no_space_langs)
                )
    return sorted(docs)


def _padded(seqs: list[list[int]], longest: int, pad: int) -> tuple:
    """``(ids, labels, lengths)``: the sequences padded with ``pad`` to ``longest``; labels -100
    past each sequence (the model shifts labels itself)."""
    ids = torch.full((len(seqs), longest), pad, dtype=torch.long)
    labels = torch.full((len(seqs), longest), -100, dtype=torch.long)
    for i, s in enumerate(seqs):
        ids[i, : len(s)] = torch.tensor(s)
        labels[i, : len(s)] = torch.tensor(s)
    return ids, labels, torch.tensor([len(s) for s in seqs])


def _train_steps(
    model, ids, labels, lengths, steps: int, batch_size: int, lr: float, seed: int
) -> list[float]:
    """``steps`` AdamW steps (linear warm-up, cosine decay, clipped gradients) over batches drawn
    in a seeded random order, each cut to its longest sequence; the loss of every step."""
    from tqdm import tqdm

    gen = torch.Generator().manual_seed(seed)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0, betas=(0.9, 0.98))
    warmup = max(1, steps // 20)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / warmup) * 0.5 * (1 + math.cos(math.pi * min(s, steps) / steps))
    )
    model.train()
    order = torch.randperm(len(ids), generator=gen)
    cursor = 0
    losses = []
    for _step in tqdm(range(steps), desc="train control", mininterval=10):
        if cursor + batch_size > len(order):
            order = torch.randperm(len(ids), generator=gen)
            cursor = 0
        idx = order[cursor : cursor + batch_size]
        cursor += batch_size
        width = int(lengths[idx].max())
        out = model(input_ids=ids[idx, :width], labels=labels[idx, :width])
        out.loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        opt.zero_grad(set_to_none=True)
        losses.append(out.loss.item())
    return losses


def train_control(
    docs: Sequence[str],
    out_dir: str | Path,
    vocab_size: int = 2000,
    n_layer: int = 2,
    n_embd: int = 128,
    n_head: int = 4,
    steps: int = 600,
    batch_size: int = 32,
    lr: float = 3e-3,
    seed: int = 0,
    threads: int = 2,
) -> dict:
    """Train the control LM on ``docs`` (each ``BOS doc EOS``) and save it as a HF directory.

    Returns training statistics (final loss, seconds, documents, parameters).
    """

    if not docs:
        raise ValueError("no training documents: no taught fact has a prompt and an object form")
    torch.set_num_threads(threads)
    started = time.time()
    tokenizer = train_bpe_tokenizer(docs, vocab_size=vocab_size)
    encoded = tokenizer(list(docs), add_special_tokens=True)["input_ids"]
    eos = tokenizer.eos_token_id
    seqs = [ids + [eos] for ids in encoded]
    longest = max(len(s) for s in seqs)
    # Few-shot prompts at scoring time are far longer than the training documents.
    model = build_gpt2(len(tokenizer), n_layer, n_embd, n_head, n_positions=max(1024, longest), seed=seed)
    ids, labels, lengths = _padded(seqs, longest, eos)
    losses = _train_steps(model, ids, labels, lengths, steps, batch_size, lr, seed)
    model.eval()
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out_dir)
    tokenizer.save_pretrained(out_dir)
    stats = {
        "documents": len(seqs),
        "parameters": sum(p.numel() for p in model.parameters()),
        "vocab": len(tokenizer),
        "steps": steps,
        "final_loss": float(np.mean(losses[-50:])),
        "seconds": round(time.time() - started, 1),
    }
    log.info("control model trained: %s", stats)
    return stats
