"""Exactness of the packed scorer against a naive one-pair-at-a-time forward.

Two tiny models with byte-level BPE tokenizers trained here: a GPT-2 (no BOS, learned positions)
and a Llama (BOS added by the tokenizer, rotary positions). The naive reference computes
log P(prompt + form + end) - log P(prompt) from two full forwards of canonical encodings.
"""

import numpy as np
import pytest
import torch
from factprobe.lm import HFCausalLM, LoglikRequest, TopkRequest
from factprobe.lm.canonical import padded_width
from factprobe.lm.encoding import tokenize_pairs
from factprobe.lm.packed import score_requests
from factprobe.scoring.control import train_bpe_tokenizer
from reference import naive_pair_logprob

torch.set_num_threads(1)

CORPUS = [
    "The capital of France is Paris.",
    "The capital of Germany is Berlin.",
    "Paris is a city. Berlin is a city. Parisians live in Paris.",
    "Q: Who wrote Hamlet? A: William Shakespeare",
    "Ada Lovelace was born in London. London is big.",
    "東京は日本の首都です。",
] * 20

PROMPTS = [
    "The capital of France is",
    "The capital of Germany is ",  # trailing space moves to the continuation
    "Q: Who wrote Hamlet? A:",
    "The capital of France is Paris.\nThe capital of Germany is Berlin.\nAda Lovelace was born in",
    "",  # empty context
    "Par",  # boundary merge with a no-space continuation
]
CONTS = [" Paris", " Berlin", " William Shakespeare", " London", " Lovelace é", "is"]


def tiny_gpt2(tok):
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    cfg = GPT2Config(
        vocab_size=len(tok),
        n_positions=128,
        n_embd=32,
        n_layer=2,
        n_head=4,
        bos_token_id=tok.eos_token_id,
        eos_token_id=tok.eos_token_id,
    )
    return GPT2LMHeadModel(cfg).eval()


def tiny_llama(tok):
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    cfg = LlamaConfig(
        vocab_size=len(tok),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=128,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
    )
    return LlamaForCausalLM(cfg).eval()


@pytest.fixture(scope="module", params=["gpt2", "llama"])
def tiny(request):
    if request.param == "gpt2":
        tok = train_bpe_tokenizer(CORPUS, vocab_size=400, add_bos=False)
        model = tiny_gpt2(tok)
    else:
        tok = train_bpe_tokenizer(CORPUS, vocab_size=400, add_bos=True)
        model = tiny_llama(tok)
    return request.param, model, tok


def all_pairs():
    prompts, conts = [], []
    for p in PROMPTS:
        for c in CONTS:
            prompts.append(p)
            conts.append(c)
    return prompts, conts


def test_boundary_merge_case_is_exercised(tiny):
    _, _, tok = tiny
    p = tok("Par", add_special_tokens=False)["input_ids"]
    w = tok("Paris", add_special_tokens=False)["input_ids"]
    assert w[: len(p)] != p  # the hard case really happens with this tokenizer
    _, plans = tokenize_pairs(tok, ["Par"], ["is"], "eos")
    assert plans[0].minus is not None


@pytest.mark.parametrize("end", ["eos", ".", "none"])
def test_engine_equals_naive(tiny, end):
    name, model, tok = tiny
    prompts, conts = all_pairs()
    naive = np.array([naive_pair_logprob(model, tok, p, c, end) for p, c in zip(prompts, conts, strict=True)])
    requests = [LoglikRequest(p, c) for p, c in zip(prompts, conts, strict=True)]
    for budget in (8, 40, 4096):
        results = HFCausalLM(model, tok, end_marker=end, token_budget=budget).loglikelihood(requests)
        lp = np.array([r.logprob for r in results])
        nt = np.array([r.n_tokens for r in results])
        fl = np.array([r.first_logprob for r in results])
        assert np.max(np.abs(lp - naive)) < 1e-4, (name, end, budget)
        assert np.all(nt >= 1)
        plain = np.array([p != "Par" for p in prompts])  # "Par" pairs are chain-rule differences
        assert np.all(fl[plain] >= lp[plain] - 1e-9)  # one token's log-prob >= the sum of all


def test_bos_and_first_logprob(tiny):
    name, model, tok = tiny
    requests, plans = tokenize_pairs(tok, ["The capital of France is"], [" Paris"], "eos")
    prefix, cont = requests[plans[0].plus]
    if name == "llama":
        assert prefix[0] == tok.bos_token_id
    else:
        assert prefix[0] != tok.bos_token_id
    assert cont[-1] == tok.eos_token_id
    assert plans[0].n_tokens == len(cont)
    # first_logprob by hand: log-softmax of the prefix's last position at the first form token
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([list(prefix)])).logits[0, -1]
    expected = torch.log_softmax(logits.double(), -1)[cont[0]].item()
    _, first = score_requests(model, requests)
    assert abs(first[plans[0].plus] - expected) < 1e-5


def test_trailing_space_moves_to_continuation(tiny):
    _, _, tok = tiny
    a, pa = tokenize_pairs(tok, ["The capital of Germany is "], ["Berlin"], "none")
    b, pb = tokenize_pairs(tok, ["The capital of Germany is"], [" Berlin"], "none")
    assert a[pa[0].plus] == b[pb[0].plus]


def test_prefix_computed_once_per_prompt(tiny):
    """All forms of all candidates of one prompt go into one packed row (one forward)."""
    _, model, tok = tiny
    conts = [" Paris", " Berlin", " London", " William Shakespeare", " Paris.", " Lovelace"]
    requests, _ = tokenize_pairs(tok, ["The capital of France is"] * len(conts), conts, "eos")
    calls = []
    handle = model.register_forward_hook(
        lambda m, a, k, o: calls.append(k["input_ids"].shape), with_kwargs=True
    )
    try:
        score_requests(model, requests, token_budget=4096)
    finally:
        handle.remove()
    assert len(calls) == 1 and calls[0][0] == 1
    prefix_len = len(requests[0][0])
    # the row, padded to a whole number of ROW_QUANTUM tokens (factprobe.lm.canonical)
    assert calls[0][1] == padded_width(prefix_len + sum(len(c) - 1 for _, c in requests), 1)


def test_long_rows_split_at_the_packed_token_cap_with_the_prefix_repeated(tiny, monkeypatch):
    """Past ``PACKED_TOKENS`` continuation tokens a prompt's forms go to a second row that repeats
    the prefix; the scores do not change."""
    import factprobe.lm.packed as packed

    _, model, tok = tiny
    conts = [" Paris", " Berlin", " London", " William Shakespeare", " Paris.", " Lovelace"]
    requests, _ = tokenize_pairs(tok, ["The capital of France is"] * len(conts), conts, "eos")
    reference, _ = score_requests(model, requests, token_budget=4096)
    body = sum(len(c) - 1 for _, c in requests)
    monkeypatch.setattr(packed, "PACKED_TOKENS", body // 2)
    widths = []
    handle = model.register_forward_hook(
        lambda m, a, k, o: widths.extend([k["input_ids"].shape[1]] * k["input_ids"].shape[0]),
        with_kwargs=True,
    )
    try:
        got, _ = score_requests(model, requests, token_budget=4096)
    finally:
        handle.remove()
    prefix = len(requests[0][0])
    longest = prefix + body // 2 + max(len(c) for _, c in requests)
    assert len(widths) >= 2 and max(widths) <= padded_width(longest, 1)
    assert np.max(np.abs(got - reference)) < 1e-5


def test_oom_halves_budget_and_continues(tiny, monkeypatch):
    _, model, tok = tiny
    prompts, conts = all_pairs()
    requests, _ = tokenize_pairs(tok, prompts, conts, "eos")
    reference, _ = score_requests(model, requests, token_budget=4096)
    original = model.forward
    sizes = []

    def flaky(*args, **kwargs):
        ids = kwargs["input_ids"]
        sizes.append(ids.numel())
        if ids.numel() > 48:  # rows are padded to 16-token multiples
            raise torch.OutOfMemoryError("CUDA out of memory (simulated)")
        return original(*args, **kwargs)

    monkeypatch.setattr(model, "forward", flaky)
    got, _ = score_requests(model, requests, token_budget=4096)
    assert np.max(np.abs(got - reference)) < 1e-4
    assert max(sizes) > 48 and any(s <= 48 for s in sizes)


def test_model_rows_load_locally_and_fail_clearly(tmp_path, monkeypatch):
    from factprobe.lm import ModelLoadError

    tok = train_bpe_tokenizer(CORPUS, vocab_size=300, add_bos=True)
    model = tiny_gpt2(tok)
    model.save_pretrained(tmp_path / "m")
    tok.save_pretrained(tmp_path / "m")
    row = {"name": "tiny", "source": str(tmp_path / "m"), "dtype": "float32", "device": "cpu", "_line": 3}
    loaded = HFCausalLM.from_row(row)
    assert loaded.dtype == torch.float32 and loaded.device.type == "cpu"
    assert loaded.identity[1]  # a local directory is identified by a content hash
    (result,) = loaded.loglikelihood([LoglikRequest("The capital of France is", " Paris")])
    assert abs(result.logprob - naive_pair_logprob(model, tok, "The capital of France is", " Paris")) < 1e-4

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(
        ModelLoadError, match=r"(?s)line 4.*no-such-org/no-such-model.*local-dir resources/models/ghost"
    ):
        HFCausalLM.from_row({"name": "ghost", "source": "no-such-org/no-such-model", "_line": 4})
    with pytest.raises(ModelLoadError, match="does not exist"):
        HFCausalLM.from_row({"name": "gone", "source": str(tmp_path / "missing" / "dir"), "_line": 5})
    with pytest.raises(ModelLoadError, match="train_control"):
        HFCausalLM.from_row({"name": "control", "source": "builtin:control"}, model_dir=tmp_path / "nothing")


def test_topk_first_tokens_match_first_logprob(tiny):
    _, model, tok = tiny
    prompts = ["The capital of France is", "Q: Who wrote Hamlet? A:", "The capital of Germany is "]
    top = HFCausalLM(model, tok, token_budget=20).topk([TopkRequest(p, 5) for p in prompts])
    for prompt, result in zip(prompts, top, strict=True):
        ids, lps = list(result.token_ids), list(result.logprobs)
        assert list(result.tokens) == [tok.decode([i]) for i in ids]
        assert len(ids) == 5 and lps == sorted(lps, reverse=True)
        # independent: one full forward of the scorer's prefix for this prompt
        requests, plans = tokenize_pairs(tok, [prompt], [" x"], "none")
        prefix = requests[plans[0].plus][0]
        with torch.no_grad():
            expected = torch.log_softmax(
                model(input_ids=torch.tensor([list(prefix)])).logits[0, -1].double(), -1
            )
        values, indices = expected.topk(5)
        assert ids == indices.tolist()
        np.testing.assert_allclose(lps, values.numpy(), atol=1e-5)


def test_model_keeps_its_halved_budget_across_topk_and_scoring(tiny, monkeypatch):
    """The OOM policy lives in the model: top-k halves the budget, scoring starts from it."""
    _, model, tok = tiny
    prompts, conts = all_pairs()
    requests = [LoglikRequest(p, c) for p, c in zip(prompts, conts, strict=True)]
    tops = [TopkRequest(p, 3) for p in PROMPTS]
    want_lp = [r.logprob for r in HFCausalLM(model, tok).loglikelihood(requests)]
    want_top = HFCausalLM(model, tok).topk(tops)
    original = model.forward
    sizes = []

    def flaky(*args, **kwargs):
        sizes.append(kwargs["input_ids"].numel())
        if sizes[-1] > 40:
            raise torch.OutOfMemoryError("CUDA out of memory (simulated)")
        return original(*args, **kwargs)

    monkeypatch.setattr(model, "forward", flaky)
    lm = HFCausalLM(model, tok, token_budget=4096)
    got_top = lm.topk(tops)
    assert lm.budget.tokens <= 40 and max(sizes) > 40
    sizes.clear()
    got_lp = [r.logprob for r in lm.loglikelihood(requests)]
    assert [t.token_ids for t in got_top] == [t.token_ids for t in want_top]
    np.testing.assert_allclose([t.logprobs for t in got_top], [t.logprobs for t in want_top], atol=1e-5)
    np.testing.assert_allclose(got_lp, want_lp, atol=1e-4)
    assert max(sizes) <= 40  # the budget learnt in top-k was kept: no second OOM


SENTENCES = [
    "The capital of France is Paris",
    "The capital of France is Berlin",
    "Q: Who wrote Hamlet? A: William Shakespeare",
    "Par",
    "東京は日本の首都です。",
    "Ada Lovelace was born in London. London is big. Paris is a city. Berlin is a city.",
]


@pytest.mark.parametrize("end", ["eos", ".", "none"])
def test_sentence_scoring_equals_one_sentence_per_forward(tiny, end):
    """PROBELM §4.1 ranks scenarios by the perplexity of the whole sentence: the sentence mode of
    the model interface scores every token from the first (after BOS / EOS) and equals a naive
    one-sentence-per-forward computation for every packing budget."""
    from factprobe.lm import SentenceRequest
    from reference import naive_sentence_logprob

    name, model, tok = tiny
    naive = [naive_sentence_logprob(model, tok, s, end) for s in SENTENCES]
    for budget in (8, 40, 4096):
        lm = HFCausalLM(model, tok, end_marker=end, token_budget=budget)
        results = lm.sentence_loglikelihood([SentenceRequest(s) for s in SENTENCES])
        lp = np.array([r.logprob for r in results])
        assert np.max(np.abs(lp - np.array([n[0] for n in naive]))) < 1e-4, (name, end, budget)
        assert [r.n_tokens for r in results] == [n[1] for n in naive]
    with pytest.raises(ValueError, match="empty sentence"):
        HFCausalLM(model, tok).sentence_loglikelihood([SentenceRequest(" ")])
    if name != "llama":
        return  # without BOS the continuation mode conditions on the prompt alone, not on EOS + prompt
    # The sentence's score is the prompt's plus the answer's (chain rule): a prompt-only score is
    # what the continuation mode leaves out.
    lm = HFCausalLM(model, tok, end_marker=end)
    whole = lm.sentence_loglikelihood([SentenceRequest("The capital of France is Paris")])[0]
    prompt = lm.sentence_loglikelihood([SentenceRequest("The capital of France is")])[0]
    answer = lm.loglikelihood([LoglikRequest("The capital of France is", " Paris")])[0]
    prompt_only = prompt.logprob - prompt.end_logprob
    assert abs(whole.logprob - (prompt_only + answer.logprob)) < 1e-4


def test_suites_with_different_end_markers_score_differently(tiny, tmp_path):
    """Two suites of one config with their own end markers (``none`` for the
    Fluent-mLAMA reference, ``eos`` for the distractors paper) score the same pairs differently,
    each equal to the naive two-forward reference with its marker, through one shared request
    cache (whose key must therefore hold the marker)."""
    import pandas as pd
    from factprobe import config_rules
    from factprobe import settings as S
    from factprobe.lm import CachingLM, RequestCache
    from factprobe.scoring.suite import build_pairs, score_pairs
    from reference import naive_pair_logprob

    name, model, tok = tiny
    suite = {"kind": "multilingual", "dump": "20190201", "relations": ["P1"]}
    cfg = S.load_settings(
        S.Config,
        {
            "dumps": "d.tsv",
            "models": "m.tsv",
            "extract": {"languages": ["en"], "max_bad_fraction": 0.0, "chunk_mb": 1},
            "diff": {"single_value": "list", "single_value_list": "x.tsv"},
            "templates": {"sets": {"team": {"format": "yaml", "path": "t"}}},
            "scoring": {"end_marker": "eos"},
            "suites": {"fluent": dict(suite, scoring={"end_marker": "none"}), "distractors": suite},
        },
    )
    prompts = pd.DataFrame(
        {
            "prompt_id": ["a", "b"],
            "fact_id": ["f", "f"],
            "lang": ["en", "en"],
            "text": ["The capital of France is", "Ada Lovelace was born in"],
            "context": ["", ""],
        }
    )
    candidates = pd.DataFrame({"fact_id": ["f", "f"], "entity": ["Q1", "Q2"]})
    forms = pd.DataFrame({"entity": ["Q1", "Q2"], "lang": ["en", "en"], "form": ["Paris", "London"]})
    pairs = build_pairs(prompts, candidates, forms)
    cache = RequestCache(tmp_path / "cache")
    scored = {}
    for suite_name in ("fluent", "distractors", "fluent"):  # the last run reads the cache
        end = config_rules.suite_end_marker(cfg, suite_name)
        lm = CachingLM(HFCausalLM(model, tok, end_marker=end), cache)
        scores = score_pairs(lm, pairs, progress=False)
        naive = [
            naive_pair_logprob(model, tok, p, c, end)
            for p, c in zip(pairs["prompt_text"], pairs["continuation"], strict=True)
        ]
        assert np.allclose(scores["logprob"], naive, atol=1e-4), (name, suite_name)
        scored.setdefault(suite_name, scores["logprob"].to_numpy())
        assert np.array_equal(scored[suite_name], scores["logprob"].to_numpy())
    assert (
        config_rules.suite_end_marker(cfg, "fluent"),
        config_rules.suite_end_marker(cfg, "distractors"),
    ) == ("none", "eos")
    # EOS costs probability: the eos suite's scores are lower, by the end token's log-probability.
    assert np.all(scored["distractors"] < scored["fluent"] - 1e-6)
