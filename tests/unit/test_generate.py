"""Generation mode (BELIEF-ICL, belief-myriadlama §3.2): greedy = argmax, seeded samples, and the
stop at the first line break. Answer matching is tested in test_belief_matching."""

import math

import pandas as pd
import pytest
import torch
from factprobe.lm import GenerateRequest, HFCausalLM
from factprobe.scoring.control import train_bpe_tokenizer
from factprobe.scoring.generate import generate_answers
from reference import sequence_logprob

torch.set_num_threads(1)


@pytest.fixture(scope="module")
def tiny():
    from transformers import GPT2Config, GPT2LMHeadModel

    tok = train_bpe_tokenizer(["The capital of France is Paris.\nThe capital of Italy is Rome."] * 20, 300)
    torch.manual_seed(3)
    model = GPT2LMHeadModel(
        GPT2Config(vocab_size=len(tok), n_positions=64, n_embd=32, n_layer=1, n_head=2)
    ).eval()
    return model, tok


def test_greedy_is_argmax_and_samples_are_seeded(tiny):
    model, tok = tiny
    lm = HFCausalLM(model, tok, generation_batch_size=2)
    prompts = pd.DataFrame(
        {
            "prompt_id": ["a", "b", "c"],
            "text": ["The capital of France is", "The capital of", "Rome"],
            "context": "",
        }
    )
    out = generate_answers(lm, prompts, samples=3, max_new_tokens=5, progress=False)
    assert len(out) == 3 * 4 and set(out["sample"]) == {0, 1, 2, 3}
    # greedy by hand: repeated full forwards, argmax, stop after EOS or a token with a line break
    ids = tok("The capital of France is")["input_ids"]
    start = len(ids)
    for _ in range(5):
        with torch.no_grad():
            nxt = int(model(input_ids=torch.tensor([ids])).logits[0, -1].argmax())
        ids.append(nxt)
        if nxt == tok.eos_token_id or "\n" in tok.decode([nxt]):
            break
    greedy = out[(out.prompt_id == "a") & (out["sample"] == 0)].iloc[0]
    text = tok.decode(ids[start:], skip_special_tokens=True).split("\n", 1)[0].strip()
    assert greedy["text"] == text
    assert abs(greedy["logprob"] - sequence_logprob(model, ids, start)[0]) < 1e-4
    # samples of a prompt do not depend on which other prompts are generated with it
    alone = generate_answers(lm, prompts.iloc[[2]], samples=3, max_new_tokens=5, progress=False)
    pd.testing.assert_frame_equal(alone, out[out.prompt_id == "c"].reset_index(drop=True))


def test_generation_stops_at_first_line_break_per_row(tiny):
    """transformers' cached path (``invariant=False``), a model that never emits EOS: row 0 breaks
    the line at its 2nd token, row 1 at its 4th.

    Generation must end after 4 forward passes (not ``max_new_tokens`` = 20), each row cut at its
    own line break, in one batch.
    """
    model, tok = tiny
    lm = HFCausalLM(model, tok, generation_batch_size=2, invariant=False)
    newline = next(i for i in lm.line_break_ids() if tok.decode([i]) == "\n")
    calls = []

    def force(module, args, kwargs, output):
        calls.append(1)
        logits = output.logits
        logits[:, -1, tok.eos_token_id] = -math.inf  # never EOS
        logits[:, -1, lm.line_break_ids()] = -math.inf  # no line break unless forced below
        if len(calls) == 2:
            logits[0, -1, newline] = 1e4
        if len(calls) == 4:
            logits[1, -1, newline] = 1e4
        return output

    handle = model.register_forward_hook(force, with_kwargs=True)
    try:
        prompt = "The capital of Italy is"
        answers = lm.generate([GenerateRequest(prompt, max_new_tokens=20)] * 2)
    finally:
        handle.remove()
    assert len(calls) == 4
    (row0,), (row1,) = answers
    # the first generated token, independently: argmax of one full forward without EOS/line breaks
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([tok(prompt)["input_ids"]])).logits[0, -1]
    logits[[tok.eos_token_id, *lm.line_break_ids()]] = -math.inf
    first = tok.decode([int(logits.argmax())]).strip()
    assert row0.text == first
    assert row1.text.startswith(first) and len(row1.text) > len(first) and "\n" not in row1.text
    assert row0.logprob <= 0 and row1.logprob < row0.logprob


def test_invariant_generation_stops_at_first_line_break_per_row(tiny, monkeypatch):
    """The batch-invariant path: one packed pass per step for the live rows; row 0 breaks the
    line at its 2nd token, row 1 at its 4th; each answer's log-probability is the sum of its
    tokens' up to and including the line break."""
    import factprobe.lm.hf as hf

    model, tok = tiny
    lm = HFCausalLM(model, tok, generation_batch_size=2)
    newline = next(i for i in lm.line_break_ids() if tok.decode([i]) == "\n")
    word = tok("Paris")["input_ids"][-1]
    assert word not in lm.line_break_ids() and word != tok.eos_token_id
    steps = []

    def fake(model, queries, budget, states=None):
        steps.append(len(queries))
        rows = []
        for k, (_prefix, partial, tokens) in enumerate(queries):
            assert tokens is None  # generation asks for the whole vocabulary
            lp = torch.full((len(tok),), -30.0, dtype=torch.float64)
            stop_at = 1 if len(queries) == 2 and k == 0 else 3  # row 0 is first while it lives
            lp[newline if len(partial) == stop_at else word] = -0.5
            rows.append(lp)
        return rows

    monkeypatch.setattr(hf, "continuation_logprobs", fake)
    (row0,), (row1,) = lm.generate([GenerateRequest("The capital of Italy is", max_new_tokens=20)] * 2)
    assert steps == [2, 2, 1, 1]
    assert row0.text == tok.decode([word]).strip() and row0.logprob == -1.0
    assert row1.text == tok.decode([word] * 3).strip() and row1.logprob == -2.0


def _naive_sample(model, tok, prompt: str, seed: int, max_new_tokens: int, stops: set[int]):
    """One sample by hand: full forward per token, argmax(log-softmax + Gumbel(seeded U))."""
    from factprobe.lm.hf import sample_seed

    gen = torch.Generator().manual_seed(sample_seed(seed, 0))
    ids = tok(prompt)["input_ids"]
    start = len(ids)
    for _ in range(max_new_tokens):
        with torch.no_grad():
            logits = model(input_ids=torch.tensor([ids])).logits[0, -1].double()
        u = torch.rand(logits.shape[-1], generator=gen, dtype=torch.float64)
        nxt = int((torch.log_softmax(logits, -1) - torch.log(-torch.log(u))).argmax())
        ids.append(nxt)
        if nxt in stops:
            break
    return ids, start


def test_batched_samples_match_a_naive_seeded_gumbel_max_per_row(tiny):
    """Samples are batched across prompts; each row equals its own draw alone."""
    model, tok = tiny
    lm = HFCausalLM(model, tok, generation_batch_size=8)
    stops = set(lm.line_break_ids()) | {tok.eos_token_id}
    prompts = ["The capital of France is", "Rome", "The capital of Italy", "Paris is"]
    answers = lm.generate(
        [GenerateRequest(p, max_new_tokens=6, samples=1, seed=100 + k) for k, p in enumerate(prompts)]
    )
    for k, prompt in enumerate(prompts):
        ids, start = _naive_sample(model, tok, prompt, 100 + k, 6, stops)
        (answer,) = answers[k]
        assert answer.text == tok.decode(ids[start:], skip_special_tokens=True).split("\n", 1)[0].strip()
        assert abs(answer.logprob - sequence_logprob(model, ids, start)[0]) < 1e-4


def test_sample_frequencies_follow_the_model_distribution(tiny):
    """Gumbel-max is multinomial sampling at temperature 1: first-token frequencies over 3000
    seeded samples match softmax probabilities within 4 standard errors. The random model's logits
    are scaled x40 (a hook) so that a few tokens carry most of the mass."""
    model, tok = tiny

    def sharpen(module, args, output):
        output.logits.mul_(40)

    handle = model.register_forward_hook(sharpen)
    try:
        lm = HFCausalLM(model, tok, generation_batch_size=512)
        prompt = "The capital of"
        answers = lm.generate([GenerateRequest(prompt, max_new_tokens=1, samples=3000, seed=7)])[0]
        with torch.no_grad():
            logits = model(input_ids=torch.tensor([tok(prompt)["input_ids"]])).logits[0, -1]
    finally:
        handle.remove()
    logp = torch.log_softmax(logits.double(), -1)
    top = logp.topk(4)
    assert top.values.exp().sum() > 0.6  # the check below covers most of the mass
    drawn = torch.tensor([a.logprob for a in answers], dtype=torch.float64)
    for value in top.values.tolist():
        p = math.exp(value)
        seen = float((drawn - value).abs().lt(1e-4).double().mean())
        assert abs(seen - p) <= 4 * math.sqrt(p * (1 - p) / len(answers)), (seen, p)
