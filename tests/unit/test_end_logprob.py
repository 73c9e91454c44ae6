"""end_logprob in the score table: Pr(form | c) without the end marker is recoverable.

Distractors paper Table 2 ("Probability" = 1/|C| Σ_c Σ_λ Pr(λ|c)) scores the labels alone, while
K (§3.2 eq. 1) scores λ + EOS. The scorer records the end marker's log-probability separately, so
``logprob - end_logprob`` must equal an independent naive log P(prompt + form) - log P(prompt).
"""

import numpy as np
import pytest
import torch
from factprobe.lm import CachingLM, HFCausalLM, LoglikRequest, RequestCache
from factprobe.lm.cache import request_key
from factprobe.scoring.control import train_bpe_tokenizer
from reference import naive_pair_logprob

torch.set_num_threads(1)

CORPUS = ["The capital of France is Paris.", "The capital of Germany is Berlin.", "Par is not Paris."] * 20
PROMPTS = ["The capital of France is", "The capital of Germany is ", "Par"]
CONTS = [" Paris", " Berlin", "is"]


@pytest.fixture(scope="module")
def tiny():
    from transformers import GPT2Config, GPT2LMHeadModel

    tok = train_bpe_tokenizer(CORPUS, vocab_size=300, add_bos=False)
    torch.manual_seed(0)
    cfg = GPT2Config(
        vocab_size=len(tok),
        n_positions=64,
        n_embd=32,
        n_layer=2,
        n_head=4,
        bos_token_id=tok.eos_token_id,
        eos_token_id=tok.eos_token_id,
    )
    return GPT2LMHeadModel(cfg).eval(), tok


def scores(lm, prompts, conts) -> tuple[np.ndarray, np.ndarray]:
    """(logprob, end_logprob) of each pair through the model interface."""
    results = lm.loglikelihood([LoglikRequest(p, c) for p, c in zip(prompts, conts, strict=True)])
    return np.array([r.logprob for r in results]), np.array([r.end_logprob for r in results])


def pairs():
    return [p for p in PROMPTS for _ in CONTS], [c for _ in PROMPTS for c in CONTS]


def test_end_logprob_recovers_form_probability(tiny, tmp_path):
    model, tok = tiny
    prompts, conts = pairs()
    lp, end = scores(HFCausalLM(model, tok), prompts, conts)
    with_eos = np.array(
        [naive_pair_logprob(model, tok, p, c, "eos") for p, c in zip(prompts, conts, strict=True)]
    )
    no_end = np.array(
        [naive_pair_logprob(model, tok, p, c, "none") for p, c in zip(prompts, conts, strict=True)]
    )
    # The end marker's share is log P(EOS | prompt + form); the rest is log P(form | prompt).
    assert np.max(np.abs(end - (with_eos - no_end))) < 1e-4
    assert np.max(np.abs((lp - end) - no_end)) < 1e-4
    assert np.all(end < 0)
    # end marker "none": nothing appended, end_logprob is exactly 0.
    _, end_none = scores(HFCausalLM(model, tok, end_marker="none"), prompts, conts)
    assert np.all(end_none == 0.0)
    # The request cache keeps end_logprob: a second run reads the same values.
    scores(CachingLM(HFCausalLM(model, tok), RequestCache(tmp_path / "cache")), prompts, conts)
    cached = CachingLM(HFCausalLM(model, tok), RequestCache(tmp_path / "cache"))
    assert len(cached.cache) == len(set(zip(prompts, conts, strict=True)))
    _, again = scores(cached, prompts, conts)
    assert np.allclose(again, end, atol=1e-6)


def test_cache_shard_without_end_logprob_is_recomputed(tiny, tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    model, tok = tiny
    lm = HFCausalLM(model, tok)
    model_id, revision, dtype = lm.identity
    key = request_key(model_id, revision, dtype, PROMPTS[0], f"{CONTS[0]}\x00end=eos")
    (tmp_path / "c").mkdir()
    old = pa.table({"key": [key], "logprob": [-99.0], "n_tokens": [2], "first_logprob": [-1.0]})
    pq.write_table(old, tmp_path / "c" / "part-old.parquet")
    lp, end = scores(CachingLM(lm, RequestCache(tmp_path / "c")), PROMPTS[:1], CONTS[:1])
    assert lp[0] != -99.0 and np.isfinite(end[0])
