"""Batch invariance: a score, a top-k list, a beam and a generated answer are functions of their
own request, bit for bit, whatever else is computed with them (:mod:`factprobe.lm.canonical`).

Each request set is scored once as a whole (the reference), then in random subsets, orders,
token budgets and packed-row caps, with one and two threads: every float must be equal (==, not
close). The shared-mask path (``invariant=False``, the engine before batch invariance) is run on
the same trials to show the check can fail.
"""

from __future__ import annotations

import random

import numpy as np
import pandas as pd
import pytest
import torch
from factprobe.lm import GenerateRequest, HFCausalLM
from factprobe.lm.beam import TokenTrie, batched_beam_search, continuation_paths
from factprobe.lm.encoding import tokenize_pairs
from factprobe.lm.packed import next_token_logprobs, score_requests
from factprobe.scoring.control import train_bpe_tokenizer
from factprobe.scoring.generate import generate_answers
from test_scoring import CORPUS, tiny_gpt2, tiny_llama

PROMPTS = [
    "The capital of France is",
    "The capital of Germany is",
    "Q: Who wrote Hamlet? A:",
    "The capital of France is Paris.\nThe capital of Germany is Berlin.\nAda Lovelace was born in",
    "Ada Lovelace was born in",
    "Paris is a city. Berlin is",
]
FORMS = [" Paris", " Berlin", " William Shakespeare", " London", " Lovelace", " Rome", " a city", " Tokyo"]


@pytest.fixture(scope="module", params=["gpt2", "llama"])
def tiny(request):
    tok = train_bpe_tokenizer(CORPUS, vocab_size=400, add_bos=request.param == "llama")
    model = tiny_gpt2(tok) if request.param == "gpt2" else tiny_llama(tok)
    return model, tok


@pytest.fixture(scope="module")
def requests_(tiny):
    _, tok = tiny
    prompts = [p for p in PROMPTS for _ in FORMS]
    forms = [f for _ in PROMPTS for f in FORMS]
    requests, _ = tokenize_pairs(tok, prompts, forms, "eos")
    return requests


def trials(n: int, seed: int = 0):
    """(subset indices in random order, token budget, packed-row cap) of random trials."""
    rng = random.Random(seed)
    for _ in range(12):
        keep = rng.uniform(0.2, 1.0)
        idx = [i for i in range(n) if rng.random() < keep] or [0]
        rng.shuffle(idx)
        yield idx, rng.choice([16, 48, 128, 512, 4096]), rng.choice([4, 16, 64, 256])


@pytest.mark.parametrize("threads", [1, 2])
def test_scores_do_not_depend_on_batch_order_budget_or_threads(tiny, requests_, threads, monkeypatch):
    import factprobe.lm.packed as packed

    model, _ = tiny
    torch.set_num_threads(1)
    reference, first_ref = score_requests(model, requests_, 4096)
    torch.set_num_threads(threads)
    try:
        for idx, budget, cap in trials(len(requests_)):
            monkeypatch.setattr(packed, "PACKED_TOKENS", cap)
            got, first = score_requests(model, [requests_[i] for i in idx], budget)
            assert np.array_equal(got, reference[idx]), (budget, cap)
            assert np.array_equal(first, first_ref[idx]), (budget, cap)
    finally:
        torch.set_num_threads(1)


def test_the_check_catches_the_shared_mask_path(tiny, requests_, monkeypatch):
    """The same trials on the shared-mask path move scores: the invariance test can fail."""
    import factprobe.lm.packed as packed

    model, _ = tiny
    reference, _ = score_requests(model, requests_, 4096, invariant=False)
    worst = 0.0
    for idx, budget, cap in trials(len(requests_)):
        monkeypatch.setattr(packed, "PACKED_TOKENS", cap)
        got, _ = score_requests(model, [requests_[i] for i in idx], budget, invariant=False)
        worst = max(worst, float(np.max(np.abs(got - reference[idx]))))
    assert 0 < worst < 1e-4  # float noise, not a wrong score


def test_topk_lists_do_not_depend_on_the_other_prompts(tiny):
    model, tok = tiny
    ids = [tok(p)["input_ids"] for p in PROMPTS]
    values, indices = next_token_logprobs(model, ids, 5)
    for idx, budget, _ in trials(len(ids), seed=1):
        v, i = next_token_logprobs(model, [ids[k] for k in idx], 5, budget)
        assert torch.equal(v, values[idx]) and torch.equal(i, indices[idx])


def test_beams_do_not_depend_on_the_other_searches(tiny):
    model, tok = tiny
    tries, prefixes = [], []
    for prompt in PROMPTS:
        prefix, paths = continuation_paths(tok, prompt, FORMS, "eos")
        trie = TokenTrie(tok.eos_token_id)
        for form, path in zip(FORMS, paths, strict=True):
            trie.add_path(path, form)
        tries.append(trie)
        prefixes.append(prefix)
    together = batched_beam_search(model, prefixes, tries, width=3, token_budget=64)
    for k in range(len(PROMPTS)):
        alone = batched_beam_search(model, [prefixes[k]], [tries[k]], width=3)
        assert alone[0] == together[k]  # tokens, float scores and leaves, exactly


def test_answers_do_not_depend_on_the_other_prompts(tiny):
    model, tok = tiny
    lm = HFCausalLM(model, tok, generation_batch_size=3)
    frame = pd.DataFrame(
        {"prompt_id": [f"p{i}" for i in range(len(PROMPTS))], "text": PROMPTS, "context": ""}
    )
    together = generate_answers(lm, frame, samples=2, max_new_tokens=4, progress=False)
    for k in (0, 3, 5):
        alone = generate_answers(lm, frame.iloc[[k]], samples=2, max_new_tokens=4, progress=False)
        mine = together[together.prompt_id == f"p{k}"].reset_index(drop=True)
        pd.testing.assert_frame_equal(alone, mine, check_exact=True)


def test_invariant_generation_equals_the_cached_path_up_to_float_noise(tiny):
    model, tok = tiny
    requests = [GenerateRequest(p, 4, samples=2, seed=7) for p in PROMPTS]
    fast = HFCausalLM(model, tok, invariant=False).generate(requests)
    exact = HFCausalLM(model, tok).generate(requests)
    for a, b in zip(fast, exact, strict=True):
        assert [x.text for x in a] == [x.text for x in b]
        assert np.allclose([x.logprob for x in a], [x.logprob for x in b], atol=1e-4)


def test_stored_prefix_states_give_the_recomputed_floats(tiny):
    """A search or generation keeps each prompt's keys and values across its steps
    (``states``): every next-token distribution equals the one recomputed with the prompt."""
    from factprobe.lm.packed import continuation_logprobs

    model, tok = tiny
    prefixes = [tok(p)["input_ids"] for p in PROMPTS]
    partials = [(), (5,), (5, 9), (17, 3, 40), (8,)]
    queries = [(p, q, None) for p in prefixes for q in partials]
    queries += [(prefixes[0], (5, 9), [1, 2, 3])]
    recomputed = continuation_logprobs(model, queries)
    states = {}
    for budget in (4096, 32):  # the states are reused on the second pass
        stored = continuation_logprobs(model, queries, budget, states=states)
        assert all(torch.equal(a, b) for a, b in zip(recomputed, stored, strict=True))
    assert set(states) == {tuple(p) for p in prefixes}
