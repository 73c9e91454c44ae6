"""ApprOpt (distractors paper §3.3): trie-constrained beam search with the KV cache.

A tiny randomly initialised GPT-2 and a byte-level BPE tokenizer trained here on the real demo
labels. The beam search is checked against an independent exhaustive computation: every trie
path scored by a full forward pass without cache.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import torch
from factprobe.distractors.appropt import (
    TokenTrie,
    appropt_distractors,
    batched_beam_search,
    build_trie,
    constrained_beam_search,
    entity_labels,
)
from factprobe.lm import HFCausalLM
from factprobe.settings import Appropt
from reference import continuation_logprob as sequence_logprob
from test_distractors_common import demo_omega, demo_suite


@pytest.fixture(scope="module")
def suite(demo_tables):
    facts, forms = demo_suite(demo_tables)
    return facts, forms, demo_omega(demo_tables, facts, forms)


@pytest.fixture(scope="module")
def tiny(suite):
    from tokenizers import ByteLevelBPETokenizer
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    torch.set_num_threads(1)
    _, forms, _ = suite
    texts = [f"The capital of {f} is {g}." for f, g in zip(forms["form"], forms["form"][::-1], strict=True)]
    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(texts, vocab_size=400, min_frequency=2, special_tokens=["<|endoftext|>"])
    tok = PreTrainedTokenizerFast(tokenizer_object=bpe._tokenizer, eos_token="<|endoftext|>")
    torch.manual_seed(0)
    cfg = GPT2Config(
        vocab_size=len(tok), n_positions=128, n_embd=32, n_layer=2, n_head=2, eos_token_id=tok.eos_token_id
    )
    model = GPT2LMHeadModel(cfg).eval()
    return model, tok


def small_trie(model, tok, forms: list[str]) -> TokenTrie:
    lm = HFCausalLM(model, tok)
    trie = TokenTrie(tok.eos_token_id)
    for i, form in enumerate(forms):
        trie.add(lm.form_ids(form, "en"), i)
    return trie


FORMS = ["Paris", "Berlin", "Bern", "Bernau", "Brasília", "Lyon", "Lyons", "Rome", "Romania"]


def exhaustive(model, prefix, trie):
    return sorted(
        ((sequence_logprob(model, prefix, list(p)), p) for p, _ in trie.paths()), key=lambda x: (-x[0], x[1])
    )


def test_trie_paths_end_in_eos_and_share_prefixes(tiny):
    model, tok = tiny
    trie = small_trie(model, tok, FORMS)
    paths = trie.paths()
    assert len(paths) == len(FORMS)
    assert all(p[-1] == tok.eos_token_id for p, _ in paths)
    decoded = sorted(tok.decode(list(p[:-1])).strip() for p, _ in paths)
    assert decoded == sorted(FORMS)


def test_wide_beam_equals_exhaustive_search(tiny):
    model, tok = tiny
    trie = small_trie(model, tok, FORMS)
    prefix = tok("The capital of France is")["input_ids"]
    got = constrained_beam_search(model, prefix, trie, width=len(FORMS))
    want = exhaustive(model, prefix, trie)
    assert [h[0] for h in got] == [p for _, p in want]
    for (_toks, score, _), (ref, _) in zip(got, want, strict=True):
        assert score == pytest.approx(ref, abs=1e-4)


def test_narrow_beam_returns_sorted_trie_paths_with_exact_scores(tiny):
    model, tok = tiny
    trie = small_trie(model, tok, FORMS)
    paths = {p for p, _ in trie.paths()}
    prefix = tok("Rome is the capital of")["input_ids"]
    got = constrained_beam_search(model, prefix, trie, width=3)
    assert 1 <= len(got) <= 3
    scores = [h[1] for h in got]
    assert scores == sorted(scores, reverse=True)
    for toks, score, _ in got:
        assert toks in paths
        assert score == pytest.approx(sequence_logprob(model, prefix, list(toks)), abs=1e-4)
    # Width 1 is greedy over the trie: its single hypothesis follows the best token at each step.
    best = constrained_beam_search(model, prefix, trie, width=1)[0][0]
    node, ids = trie.root, list(prefix)
    for t in best:
        allowed = trie.allowed(node)
        with torch.no_grad():
            logp = torch.log_softmax(model(input_ids=torch.tensor([ids])).logits[0, -1], -1)
        assert t == max(allowed, key=lambda a: (float(logp[a]), -a))
        ids.append(t)
        node = node[t]


def test_batched_search_equals_one_prompt_searches(tiny):
    """Many prompts of different lengths (left padding) and tries in one batch give
    each prompt's own search, hypotheses and scores; an empty trie gives nothing."""
    model, tok = tiny
    prompts = ["The capital of France is", "Rome", "The capital of the big country of Italy is", "Bern is in"]
    tries = [
        small_trie(model, tok, FORMS),
        small_trie(model, tok, FORMS[:3]),
        small_trie(model, tok, FORMS[4:]),
        TokenTrie(tok.eos_token_id),
    ]
    prefixes = [tok(p)["input_ids"] for p in prompts]
    for width in (1, 3, len(FORMS)):
        batched = batched_beam_search(model, prefixes, tries, width, pad_id=tok.eos_token_id)
        assert batched[3] == []
        for prefix, trie, got in zip(prefixes, tries, batched, strict=True):
            alone = constrained_beam_search(model, prefix, trie, width)
            assert [(h[0], h[2]) for h in got] == [(h[0], h[2]) for h in alone]
            assert [h[1] for h in got] == pytest.approx([h[1] for h in alone], abs=1e-4)
            for toks, score, _ in got:
                assert score == pytest.approx(sequence_logprob(model, prefix, list(toks)), abs=1e-4)


def test_appropt_on_demo_facts_is_omega_valid_and_matches_exhaustive(tiny, suite):
    model, tok = tiny
    facts, forms, omega = suite
    facts = facts[facts["property"] == "P36"].head(2)
    prompts = pd.DataFrame(
        {
            "prompt_id": facts["fact_id"] + "|t|en|0|",
            "fact_id": facts["fact_id"],
            "lang": "en",
            "template_id": "t",
            "style": "statement",
            "subject_form": "x",
            "text": "The capital of X is",
            "context": "",
            "verbalization": "template",
            "shots": "",
        }
    )
    lm = HFCausalLM(model, tok)
    out = appropt_distractors(lm, facts, prompts, forms, omega, Appropt(n=5, lang="en"))
    assert set(out["fact_id"]) == set(facts["fact_id"])
    en = forms[forms["lang"] == "en"]
    for fid, group in out.groupby("fact_id"):
        s, r, o = (int(x[1:]) for x in fid.split("|"))
        ents = [int(e[1:]) for e in group["entity"]]
        assert len(ents) == group["found"].iloc[0]
        assert omega.filter(s, r, o, ents) == ents  # every clause of Ω holds
        assert list(group["score"]) == sorted(group["score"], reverse=True)
        assert list(group["rank"]) == list(range(1, len(ents) + 1))
        # Each returned form is a form of its entity, i.e. a trie path.
        for e, form in zip(group["entity"], group["form"], strict=True):
            assert form in set(en.loc[en["entity"] == e, "form"])
        # Independent check: best score per entity over all its forms, exhaustively.
        pool = omega.filter(s, r, o, omega.members(omega.types_of(o)))
        # n distinct entities whenever the pool has n labels (one label per entity, beam n + valid)
        assert len(ents) == min(5, len(set(pool) & set(entity_labels(forms, "en"))))
        prefix, trie, _ = build_trie(
            lm,
            "The capital of X is",
            pool,
            entity_labels(forms, "en"),
            "en",
        )
        assert 20 < len(trie.paths()) < 300  # real type members: big enough to matter, cheap enough
        assert prefix == tok("The capital of X is")["input_ids"]
        best = {}
        for p, ents_at in trie.paths():
            lp = sequence_logprob(model, prefix, list(p))
            for e, _form in ents_at:
                best[e] = max(best.get(e, -math.inf), lp)
        wide = appropt_distractors(
            lm,
            facts[facts["fact_id"] == fid],
            prompts,
            forms,
            omega,
            Appropt(n=5, lang="en", width=len(trie.paths())),
        )
        top = sorted(best.items(), key=lambda kv: -kv[1])[:5]
        assert [int(e[1:]) for e in wide["entity"]] == [e for e, _ in top]
        assert list(wide["score"]) == pytest.approx([v for _, v in top], abs=1e-4)


# --------------------------------------------------------------------------- reference behaviour


class ScoredLM:
    """A hand-scored model: a label's path is its characters + an end id, its score is the given
    log-probability; the search returns the ``width`` best paths (an exhaustive beam)."""

    eos_id = 0

    def __init__(self, scores: dict[str, float]):
        self.scores = scores
        self.widths: list[int] = []

    def continuation_paths(self, prompt, forms, lang):
        return [1], [(*(ord(c) for c in f), 0) for f in forms]

    def trie_search(self, prefixes, tries, width):
        self.widths.append(width)
        out = []
        for trie in tries:
            hyps = [(p, self.scores["".join(chr(t) for t in p[:-1])], leaf) for p, leaf in trie.paths()]
            out.append(sorted(hyps, key=lambda h: (-h[1], h[0]))[:width])
        return out


class ListedOmega:
    """Ω of a hand-made fact: the type's members, the valid objects left out by ``filter``."""

    def __init__(self, members, valid):
        self.all, self.valid = np.asarray(members), set(valid)

    def types_of(self, o):
        return [1]

    def members(self, types):
        return self.all

    def filter(self, s, r, o, members, limit=None):
        kept = [int(e) for e in members if int(e) not in self.valid]
        return kept[:limit] if limit is not None else kept


def test_one_label_per_entity_and_beam_widened_by_the_valid_objects():
    """Fact Q1 P36 Q10 (valid objects Q10, Q11); pool Q20 (label "Alpha", aliases "A1", "A2"),
    Q21 "Beta", Q22 "Gamma". Hand scores: A1 -0.1, A2 -0.2, Q10's "Ten" -0.3, Q11's "Eleven"
    -0.4, Alpha -1, Beta -2, Gamma -3. n = 2.

    With every form a path and a beam of n (the former rule) the beam holds A1 and A2, one entity.
    Reference: one label per entity, so the trie holds Ten, Eleven, Alpha, Beta, Gamma; the beam is
    n + 2 valid objects = 4 wide: Ten, Eleven, Alpha, Beta; the valid objects dropped: [Q20, Q21]
    with scores -1, -2."""
    import logging

    from factprobe.distractors.appropt import appropt_distractors

    forms = pd.DataFrame(
        {
            "entity": ["Q20", "Q20", "Q20", "Q21", "Q22", "Q10", "Q11"],
            "lang": "en",
            "form": ["Alpha", "A1", "A2", "Beta", "Gamma", "Ten", "Eleven"],
            "source": ["label", "alias", "alias", "label", "label", "label", "label"],
        }
    )
    facts = pd.DataFrame(
        {
            "fact_id": ["Q1|P36|Q10"],
            "subject": "Q1",
            "property": "P36",
            "object": "Q10",
            "objects": [["Q10", "Q11"]],
        }
    )
    prompts = pd.DataFrame(
        {
            "prompt_id": ["p"],
            "fact_id": "Q1|P36|Q10",
            "lang": "en",
            "style": "statement",
            "context": "",
            "text": "X",
        }
    )
    lm = ScoredLM(
        {"A1": -0.1, "A2": -0.2, "Ten": -0.3, "Eleven": -0.4, "Alpha": -1.0, "Beta": -2.0, "Gamma": -3.0}
    )
    omega = ListedOmega([10, 11, 20, 21, 22], [10, 11])
    out = appropt_distractors(lm, facts, prompts, forms, omega, Appropt(n=2, lang="en"))
    assert lm.widths == [4]
    assert out["entity"].tolist() == ["Q20", "Q21"] and out["form"].tolist() == ["Alpha", "Beta"]
    assert out["score"].tolist() == [-1.0, -2.0] and (out["found"] == 2).all()
    # a pool of fewer than n labels: fewer than n, counted as the pool's shortfall
    small = ListedOmega([10, 11, 20], [10, 11])
    logger = logging.getLogger("factprobe.distractors.appropt")
    records: list[str] = []
    handler = logging.Handler()
    handler.emit = lambda rec: records.append(rec.getMessage())
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        out = appropt_distractors(lm, facts, prompts, forms, small, Appropt(n=2, lang="en"))
    finally:
        logger.removeHandler(handler)
    assert out["entity"].tolist() == ["Q20"] and (out["found"] == 1).all()
    assert any("fewer than n: 1 sentences whose pool has fewer than n labels, 0 others" in m for m in records)


def test_beam_keeps_the_first_n_non_valid_and_fills_n_on_demo(tiny, suite):
    """The demo's facts (four relations) under two sentences each, n = 5. With the configured
    width (n + valid objects) every sentence whose pool has at least n labels gets n distinct
    entities. With the beam as wide as the trie (width = paths - valid objects, so n + valid =
    every path) each list equals the exhaustive answer: every pool entity's label path scored by a
    full forward pass, valid objects left out, top n. (A narrower beam on a random model prunes
    other paths, as any beam search does.)"""
    model, tok = tiny
    facts, forms, omega = suite
    facts = facts.groupby("property").head(2).head(8)
    texts = ["The answer about X is", "Y"]
    prompts = pd.DataFrame(
        [
            dict(prompt_id=f"{f}|{i}", fact_id=f, lang="en", style="statement", context="", text=t)
            for f in facts["fact_id"]
            for i, t in enumerate(texts)
        ]
    )
    lm = HFCausalLM(model, tok)
    n = 5
    out = appropt_distractors(lm, facts, prompts, forms, omega, Appropt(n=n, lang="en"))
    labels = entity_labels(forms, "en")
    lists = out.drop_duplicates("prompt_id").set_index("prompt_id")["found"]
    checked = full_lists = 0
    for rec in facts.itertuples(index=False):
        s, r, o = (int(x[1:]) for x in (rec.subject, rec.property, rec.object))
        valid = {int(v[1:]) for v in [rec.object, *rec.objects]}
        pool = [e for e in omega.filter(s, r, o, omega.members(omega.types_of(o))) if e in labels]
        for i, text in enumerate(texts):
            prefix, trie, _ = build_trie(lm, text, pool, labels, "en")
            scored = sorted(
                ((sequence_logprob(model, prefix, list(p)), leaf[0][0]) for p, leaf in trie.paths()),
                key=lambda x: -x[0],
            )
            want = [e for _, e in scored if e not in valid][:n]
            pid = f"{rec.fact_id}|{i}"
            if len(pool) >= n:
                assert lists[pid] == n and (out["prompt_id"] == pid).sum() == n
                full_lists += 1
            width = len(trie.paths()) - len(valid & {leaf[0][0] for _, leaf in trie.paths()})
            one = prompts[prompts["prompt_id"] == pid]
            wide = appropt_distractors(
                lm,
                facts[facts["fact_id"] == rec.fact_id],
                one,
                forms,
                omega,
                Appropt(n=n, lang="en", width=width),
            )
            assert [int(e[1:]) for e in wide["entity"]] == want, pid
            checked += 1
    assert checked == 16 and full_lists >= 8


def test_trie_uses_the_model_end_token_and_chat_head(tiny):
    """models.tsv ``end_token`` and ``prompt_format: chat`` reach the trie as scoring uses them:
    every path ends with the end token scoring appends, the context starts with the chat head, and
    a path's score is the scorer's log-likelihood of the pair."""
    from factprobe.lm import LoglikRequest

    model, tok = tiny
    dot = tok.convert_tokens_to_ids(".")
    lm = HFCausalLM(model, tok, end_token=".")
    prefix, paths = lm.continuation_paths("The capital of France is", FORMS[:3], "en")
    assert all(p[-1] == dot != tok.eos_token_id for p in paths)
    want = lm.loglikelihood([LoglikRequest("The capital of France is", " " + f) for f in FORMS[:3]])
    for path, res in zip(paths, want, strict=True):
        assert sequence_logprob(model, prefix, list(path)) == pytest.approx(res.logprob, abs=1e-4)
    chat = tok.__class__(tokenizer_object=tok.backend_tokenizer, eos_token=tok.eos_token)
    chat.chat_template = "{% for m in messages %}Q: {{ m['content'] }}<|endoftext|>{% endfor %}"
    lm = HFCausalLM(model, chat, prompt_format="chat")
    prefix, paths = lm.continuation_paths("The capital of France is", FORMS[:3], "en")
    head = chat("Q:", add_special_tokens=False)["input_ids"]
    assert prefix[: len(head)] == head and all(p[-1] == tok.eos_token_id for p in paths)
    want = lm.loglikelihood([LoglikRequest("The capital of France is", " " + f) for f in FORMS[:3]])
    for path, res in zip(paths, want, strict=True):
        assert sequence_logprob(model, prefix, list(path)) == pytest.approx(res.logprob, abs=1e-4)


# --------------------------------------------------------------------------- the reference's bookkeeping


class ReferenceLimiter:
    """The token limiter of the reference's search, rebuilt here: the label paths of the pool, and
    the tokens that may follow a generated prefix (a path's next token, EOS ending it)."""

    def __init__(self, paths: list[tuple[int, ...]]):
        self.paths = paths

    def allowed(self, generated: tuple[int, ...]) -> list[int]:
        k = len(generated)
        return sorted({p[k] for p in self.paths if len(p) > k and p[:k] == generated})


@torch.no_grad()
def reference_beam_search(model, prefix: list[int], limiter: ReferenceLimiter, width: int, eos: int):
    """DistFactAssessLM ``beam_search`` re-implemented: a pool of at most ``width`` hypotheses;
    each step every unfinished one (full forward, no cache) spreads to its ``width`` best allowed
    tokens, the finished ones stay with their score (and get EOS appended), the ``width`` best of
    all (no -inf) form the next pool; until every hypothesis of the pool has ended with EOS."""
    seqs = [list(prefix)]
    scores = torch.zeros(1, dtype=torch.float64)
    finished = [False]
    start = len(prefix)
    while not all(finished):
        fin = [i for i, f in enumerate(finished) if f]
        unf = [i for i, f in enumerate(finished) if not f]
        # every hypothesis has as many tokens (one per step): one batch, no padding
        logits = model(input_ids=torch.tensor([seqs[i] for i in unf])).logits[:, -1]
        logp = torch.log_softmax(logits.double(), -1)
        for row, i in enumerate(unf):
            mask = torch.ones(logp.shape[-1], dtype=torch.bool)
            mask[limiter.allowed(tuple(seqs[i][start:]))] = False
            logp[row, mask] = -torch.inf
        top_lp, top_tok = logp.topk(width, dim=-1)
        cand_seqs = [seqs[i] + [eos] for i in fin]
        cand_scores = [float(scores[i]) for i in fin]
        for row, i in enumerate(unf):
            for lp, t in zip(top_lp[row].tolist(), top_tok[row].tolist(), strict=True):
                cand_seqs.append(seqs[i] + [t])
                cand_scores.append(float(scores[i]) + lp)
        pre = torch.tensor(cand_scores, dtype=torch.float64)
        _, idx = pre.topk(min(width, len(cand_scores)))
        idx = [j for j in idx.tolist() if not math.isinf(cand_scores[j])]
        seqs = [cand_seqs[j] for j in idx]
        scores = torch.tensor([cand_scores[j] for j in idx], dtype=torch.float64)
        finished = [s[-1] == eos for s in seqs]
    order = torch.argsort(scores, descending=True).tolist()
    return [seqs[j][start:] for j in order]


def reference_list(model, tok, lm, prompt, pool, labels, valid, n, width):
    """The reference's ApprOpt for one sentence: its search over the labels' paths, each sequence
    decoded (leading space dropped) to a label, the label mapped to one entity (the lowest id),
    valid objects dropped, first occurrences, the first n."""
    ents = [e for e in pool if e in labels]
    _, paths = lm.continuation_paths(prompt, [labels[e] for e in ents], "en")
    prefix = tok(prompt)["input_ids"]
    label2entity: dict[str, int] = {}
    for e in sorted(ents):
        label2entity.setdefault(labels[e], e)
    found = reference_beam_search(
        model, prefix, ReferenceLimiter(sorted(set(paths))), width, tok.eos_token_id
    )
    decoded = [tok.decode(seq, skip_special_tokens=True)[1:] for seq in found]
    out = [label2entity[d] for d in decoded if d in label2entity]
    out = [e for e in out if e not in valid and labels[e] not in {labels.get(v) for v in valid}]
    return list(dict.fromkeys(out))[:n]


def test_appropt_lists_equal_the_references_bookkeeping(tiny, suite):
    """Every ApprOpt list (n = 5, beam n + valid objects, finished hypotheses keeping their slots)
    equals the reference's search re-implemented above, on 24 sentences of the demo's facts whose
    pools (20 to 300 labels) a beam of 5 to 7 prunes. Four of these lists differ under the
    former bookkeeping (finished hypotheses in a list of their own, ``width`` open beams always
    going on): those of "It is" for Q597, Q586, Q585 and Q2272."""
    model, tok = tiny
    facts, forms, omega = suite
    facts = facts.groupby("property").head(3).head(12)
    texts = ["It is", "The capital of the country is"]
    prompts = pd.DataFrame(
        [
            dict(prompt_id=f"{f}|{i}", fact_id=f, lang="en", style="statement", context="", text=t)
            for f in facts["fact_id"]
            for i, t in enumerate(texts)
        ]
    )
    lm = HFCausalLM(model, tok)
    n = 5
    out = appropt_distractors(lm, facts, prompts, forms, omega, Appropt(n=n, lang="en"))
    labels = entity_labels(forms, "en")
    equal = 0
    for rec in facts.itertuples(index=False):
        s, r, o = (int(x[1:]) for x in (rec.subject, rec.property, rec.object))
        valid = {int(v[1:]) for v in [rec.object, *rec.objects]}
        pool = [*omega.filter(s, r, o, omega.members(omega.types_of(o))), *sorted(valid)]
        width = n + len(valid & set(labels))
        for i, text in enumerate(texts):
            pid = f"{rec.fact_id}|{i}"
            got = [int(e[1:]) for e in out.loc[out["prompt_id"] == pid, "entity"]]
            want = reference_list(model, tok, lm, text, pool, labels, valid, n, width)
            assert got == want, pid
            equal += 1
    assert equal == 24
