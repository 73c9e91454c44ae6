"""Scoring fails closed: a NaN, an infinity or a missing result stops the job, names the model,
suite and request, and never reaches the request cache or a score table; a model lost mid-suite
leaves no cache entry for the requests it did not finish."""

import math

import numpy as np
import pandas as pd
import pytest
import torch
from factprobe.lm import CachingLM, HFCausalLM, RequestCache
from factprobe.lm.api import (
    LM,
    GenerateRequest,
    GenerateResult,
    LoglikRequest,
    LoglikResult,
    TopkRequest,
    TopkResult,
)
from factprobe.scoring.control import train_bpe_tokenizer
from factprobe.scoring.failclosed import CheckedLM, ScoringError, ScoringJob, require_finite_scores
from factprobe.scoring.suite import score_pairs

torch.set_num_threads(1)

JOB = ScoringJob("tiny-model", "knowledge")
REQUESTS = [LoglikRequest(f"Prompt {i} is", f" answer{i}") for i in range(6)]


class ScriptedLM(LM):
    """Result ``i`` is ``-(i + 1)`` (one token) unless ``bad`` replaces it; raises after ``fail_after``
    requests (a lost model); reports each request to ``on_done`` as soon as it is done."""

    def __init__(self, bad=None, fail_after=None, drop_last=False, topk_value=-1.0):
        self.bad = bad or {}
        self.fail_after = fail_after
        self.drop_last = drop_last
        self.topk_value = topk_value
        self.calls = 0

    @property
    def identity(self):
        return ("scripted", "1", "none")

    def loglikelihood(self, requests, progress=False, on_done=None):
        out = []
        for i, request in enumerate(requests):
            if self.fail_after is not None and self.calls >= self.fail_after:
                raise RuntimeError("CUDA error: device lost (simulated)")
            self.calls += 1
            number = int(request.continuation.removeprefix(" answer"))
            result = self.bad.get(number, LoglikResult(-(number + 1.0), 1, -(number + 1.0), 0.0))
            out.append(result)
            if on_done is not None and result is not None:
                on_done([i], [result])
        return out[:-1] if self.drop_last else out

    def topk(self, requests):
        return [TopkResult((0,), ("a",), (self.topk_value,)) for _ in requests]

    def generate(self, requests, progress=False):
        return [[GenerateResult("Paris", self.topk_value)] for _ in requests]


def cached(folder, lm, requests):
    """Which of ``requests`` the cache folder holds (a fresh reader: what a rerun would see)."""
    found, lp, _, _ = RequestCache(folder).lookup(CachingLM(lm, RequestCache(None)).keys(requests))
    return found.tolist(), lp


@pytest.mark.parametrize(
    "value, shown",
    [(math.nan, "logprob is nan"), (math.inf, "logprob is inf"), (-math.inf, "logprob is -inf")],
)
def test_non_finite_logprob_fails_naming_job_and_request_and_is_not_cached(tmp_path, value, shown):
    backend = ScriptedLM(bad={3: LoglikResult(value, 1, -1.0, 0.0)})
    lm = CachingLM(CheckedLM(backend, JOB), RequestCache(tmp_path, flush_every=1))
    with pytest.raises(ScoringError) as err:
        lm.loglikelihood(REQUESTS)
    message = str(err.value)
    assert "'tiny-model'" in message and "'knowledge'" in message
    assert "' answer3'" in message and "'Prompt 3 is'" in message and shown in message
    found, lp = cached(tmp_path, backend, REQUESTS)
    # requests 0-2 were final (and flushed) before request 3 failed; 3 and later never reached the cache
    assert found == [True, True, True, False, False, False]
    assert lp[:3].tolist() == [-1.0, -2.0, -3.0]


def test_non_finite_first_or_end_logprob_fails(tmp_path):
    for bad in (LoglikResult(-1.0, 1, math.nan, 0.0), LoglikResult(-1.0, 1, -1.0, math.inf)):
        lm = CachingLM(CheckedLM(ScriptedLM(bad={0: bad}), JOB), RequestCache(tmp_path / "c", flush_every=1))
        with pytest.raises(ScoringError, match="(first|end)_logprob is (nan|inf)"):
            lm.loglikelihood(REQUESTS[:1])


def test_missing_result_fails(tmp_path):
    # request 5 gets None (never reported as done)
    lm = CachingLM(CheckedLM(ScriptedLM(bad={5: None}), JOB), RequestCache(tmp_path, flush_every=1))
    with pytest.raises(ScoringError, match=r"' answer5'.*no result \(got None\)"):
        lm.loglikelihood(REQUESTS)
    # a backend that returns one result too few
    lm = CheckedLM(ScriptedLM(drop_last=True), JOB)
    with pytest.raises(ScoringError, match="the backend gave 5 results for 6 requests"):
        lm.loglikelihood(REQUESTS)
    with pytest.raises(ScoringError, match="n_tokens is 0"):
        CheckedLM(ScriptedLM(bad={0: LoglikResult(0.0, 0, 0.0, 0.0)}), JOB).loglikelihood(REQUESTS[:1])


def test_non_finite_topk_fails():
    with pytest.raises(ScoringError, match="log-probability nan"):
        CheckedLM(ScriptedLM(topk_value=math.nan), JOB).topk([TopkRequest("Prompt 0 is", 1)])
    assert CheckedLM(ScriptedLM(), JOB).topk([TopkRequest("x", 1)])[0].logprobs == (-1.0,)


def test_non_finite_generation_logprob_fails():
    with pytest.raises(ScoringError, match=r"an answer to context 'Prompt 0 is' has log-probability -inf"):
        CheckedLM(ScriptedLM(topk_value=-math.inf), JOB).generate([GenerateRequest("Prompt 0 is")])
    assert CheckedLM(ScriptedLM(), JOB).generate([GenerateRequest("x")])[0][0].logprob == -1.0


def test_score_table_with_a_cached_nan_is_refused():
    scores = pd.DataFrame(
        {
            "prompt_id": ["p1", "p1", "p2"],
            "entity": ["Q1", "Q2", "Q1"],
            "form": ["Paris", "Rome", "Paris"],
            "logprob": [-1.0, np.nan, np.nan],
            "first_logprob": [-1.0, -2.0, -1.0],
            "end_logprob": [0.0, 0.0, 0.0],
        }
    )
    with pytest.raises(
        ScoringError, match=r"2 score row\(s\) with logprob not finite, the first prompt 'p1', entity 'Q2'"
    ):
        require_finite_scores(scores, JOB)
    require_finite_scores(scores.fillna(-3.0), JOB)


def pairs(n):
    return pd.DataFrame(
        {
            "prompt_id": [f"p{i}" for i in range(n)],
            "entity": [f"Q{i}" for i in range(n)],
            "form": [f"answer{i}" for i in range(n)],
            "fact_id": [f"f{i}" for i in range(n)],
            "lang": "en",
            "prompt_text": [f"Prompt {i} is" for i in range(n)],
            "continuation": [f" answer{i}" for i in range(n)],
        }
    )


def test_model_lost_mid_suite_leaves_no_table_and_no_cache_entry_for_failed_requests(tmp_path):
    backend = ScriptedLM(fail_after=4)
    lm = CachingLM(CheckedLM(backend, JOB), RequestCache(tmp_path, flush_every=1))
    with pytest.raises(RuntimeError, match="device lost"):
        score_pairs(lm, pairs(6), progress=False)  # raises: the rule script never writes a table
    found, lp = cached(tmp_path, backend, REQUESTS)
    assert found == [True, True, True, True, False, False]
    assert lp[:4].tolist() == [-1.0, -2.0, -3.0, -4.0]
    # the rerun computes only the two lost requests
    again = ScriptedLM()
    scores = score_pairs(CachingLM(CheckedLM(again, JOB), RequestCache(tmp_path)), pairs(6), progress=False)
    assert again.calls == 2
    assert scores["logprob"].tolist() == [-1.0, -2.0, -3.0, -4.0, -5.0, -6.0]


CORPUS = ["The capital of France is Paris. Berlin is in Germany. Rome is in Italy."] * 10


@pytest.fixture(scope="module")
def tiny():
    from transformers import GPT2Config, GPT2LMHeadModel

    tok = train_bpe_tokenizer(CORPUS, vocab_size=300, add_bos=True)
    torch.manual_seed(1)
    model = GPT2LMHeadModel(GPT2Config(vocab_size=len(tok), n_positions=64, n_embd=32, n_layer=1, n_head=2))
    return model.eval(), tok


def test_oom_that_persists_at_the_budget_floor_fails_and_caches_only_finished_requests(
    tiny, tmp_path, monkeypatch
):
    model, tok = tiny
    # one prompt per row: every forward pass is one (prompt, continuation) row once the budget is small
    table = pairs(6)
    reference = score_pairs(HFCausalLM(model, tok, source="tiny", token_budget=8), table, progress=False)
    original = model.forward
    forwards = []

    def lost_after_two(*args, **kwargs):
        forwards.append(kwargs["input_ids"].shape)
        if len(forwards) > 2:
            raise torch.OutOfMemoryError("CUDA out of memory (simulated, persists)")
        return original(*args, **kwargs)

    monkeypatch.setattr(model, "forward", lost_after_two)
    hf = HFCausalLM(model, tok, source="tiny", token_budget=8)
    lm = CachingLM(CheckedLM(hf, JOB), RequestCache(tmp_path, flush_every=1))
    with pytest.raises(RuntimeError, match="out of memory on a single request"):
        score_pairs(lm, table, progress=False)
    # halved once (8 -> 4): the budget's floor is one request's row, which cannot be split further
    assert hf.budget.tokens == 4
    requests = [LoglikRequest(p, c) for p, c in zip(table["prompt_text"], table["continuation"], strict=True)]
    found, lp = RequestCache(tmp_path).lookup(lm.keys(requests))[:2]
    # the two forward passes that ran finished two requests (one row each at a budget of 8 tokens)
    assert int(found.sum()) == 2
    by_request = dict(zip(table["continuation"], reference["logprob"], strict=True))
    for hit, value, request in zip(found, lp, requests, strict=True):
        if hit:
            assert value == pytest.approx(by_request[request.continuation], abs=1e-6)
