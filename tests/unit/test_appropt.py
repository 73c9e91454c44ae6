"""ApprOpt (distractors paper §3.3): trie-constrained beam search with the KV cache.

A tiny randomly initialised GPT-2 and a byte-level BPE tokenizer trained here on the real demo
labels. The beam search is checked against an independent exhaustive computation: every trie
path scored by a full forward pass without cache.
"""

from __future__ import annotations

import math

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
    """Issue 15: many prompts of different lengths (left padding) and tries in one batch give
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
    out = appropt_distractors(lm, facts, prompts, forms, omega, n=5, lang="en")
    assert set(out["fact_id"]) == set(facts["fact_id"])
    en = forms[forms["lang"] == "en"]
    for fid, group in out.groupby("fact_id"):
        s, r, o = (int(x[1:]) for x in fid.split("|"))
        ents = [int(e[1:]) for e in group["entity"]]
        assert len(ents) == group["found"].iloc[0] <= 5
        assert omega.filter(s, r, o, ents) == ents  # every clause of Ω holds
        assert list(group["score"]) == sorted(group["score"], reverse=True)
        assert list(group["rank"]) == list(range(1, len(ents) + 1))
        # Each returned form is a form of its entity, i.e. a trie path.
        for e, form in zip(group["entity"], group["form"], strict=True):
            assert form in set(en.loc[en["entity"] == e, "form"])
        # Independent check: best score per entity over all its forms, exhaustively.
        pool = omega.filter(s, r, o, omega.members(omega.types_of(o)))
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
            lm, facts[facts["fact_id"] == fid], prompts, forms, omega, n=5, width=len(trie.paths())
        )
        top = sorted(best.items(), key=lambda kv: -kv[1])[:5]
        assert [int(e[1:]) for e in wide["entity"]] == [e for e, _ in top]
        assert list(wide["score"]) == pytest.approx([v for _, v in top], abs=1e-4)
