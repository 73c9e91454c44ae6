"""Request cache and resume: only missing requests reach the model."""

import numpy as np
import pandas as pd
import pytest
import torch
from factprobe.lm import CachingLM, HFCausalLM, RequestCache
from factprobe.lm.cache import request_key
from factprobe.scoring.control import train_bpe_tokenizer
from factprobe.scoring.suite import build_pairs, score_pairs, shard_of

torch.set_num_threads(1)

CORPUS = ["The capital of France is Paris. Berlin is in Germany. Rome is in Italy."] * 10


@pytest.fixture(scope="module")
def loaded():
    from transformers import GPT2Config, GPT2LMHeadModel

    tok = train_bpe_tokenizer(CORPUS, vocab_size=300, add_bos=True)
    torch.manual_seed(1)
    model = GPT2LMHeadModel(GPT2Config(vocab_size=len(tok), n_positions=64, n_embd=32, n_layer=1, n_head=2))
    return HFCausalLM(model, tok, source="tiny", token_budget=10)


def tables(n_facts):
    facts = [f"Q{i}|P36|Q{100 + i}" for i in range(n_facts)]
    prompts = pd.DataFrame(
        {
            "prompt_id": [f"{f}|t1|en|0|0" for f in facts],
            "fact_id": facts,
            "lang": "en",
            "text": [f"The capital of country {i} is" for i in range(n_facts)],
            "context": "",
        }
    )
    candidates = pd.DataFrame(
        [(f, e) for i, f in enumerate(facts) for e in (f"Q{100 + i}", "Q900", "Q901")],
        columns=["fact_id", "entity"],
    )
    forms = pd.DataFrame(
        [(f"Q{100 + i}", "en", f"City{i}") for i in range(n_facts)]
        + [("Q900", "en", "Paris"), ("Q900", "en", "Paname"), ("Q901", "en", "Rome"), ("Q901", "de", "Rom")],
        columns=["entity", "lang", "form"],
    )
    return prompts, candidates, forms


class Counter:
    def __init__(self, model):
        self.calls = 0
        self.handle = model.register_forward_hook(self.hook)

    def hook(self, *args):
        self.calls += 1


def test_pairs_join_forms_in_prompt_language():
    prompts, candidates, forms = tables(2)
    pairs = build_pairs(prompts, candidates, forms)
    # per prompt: own object (1 form) + Q900 (2 forms) + Q901 (1 English form; "Rom" is German)
    assert len(pairs) == 2 * 4
    assert set(pairs["continuation"]) >= {" Paris", " Paname", " Rome", " City0"}
    assert "Rom" not in set(pairs["form"])


def test_rerun_kill_and_new_prompts_compute_only_missing(loaded, tmp_path):
    cache_dir = tmp_path / "cache"
    counter = Counter(loaded.model)
    prompts, candidates, forms = tables(6)
    pairs = build_pairs(prompts, candidates, forms)
    first = score_pairs(CachingLM(loaded, RequestCache(cache_dir)), pairs, progress=False)
    assert counter.calls > 0
    full_calls = counter.calls

    counter.calls = 0  # a plain re-run: nothing to compute
    again = score_pairs(CachingLM(loaded, RequestCache(cache_dir)), pairs, progress=False)
    assert counter.calls == 0
    np.testing.assert_array_equal(first["logprob"].to_numpy(), again["logprob"].to_numpy())

    counter.calls = 0  # a new dump with two more facts: only their requests are computed
    prompts8, candidates8, forms8 = tables(8)
    pairs8 = build_pairs(prompts8, candidates8, forms8)
    fresh = tmp_path / "fresh"
    new_only = pairs8[~pairs8["prompt_id"].isin(pairs["prompt_id"])]
    score_pairs(CachingLM(loaded, RequestCache(fresh)), new_only, progress=False)
    expected = counter.calls
    counter.calls = 0
    both = score_pairs(CachingLM(loaded, RequestCache(cache_dir)), pairs8, progress=False)
    assert 0 < counter.calls == expected
    merged = both.merge(first, on=["prompt_id", "entity", "form"], suffixes=("", "_old"))
    assert len(merged) == len(first)
    np.testing.assert_allclose(merged["logprob"], merged["logprob_old"])

    # a job killed after some batches: the finished requests were flushed, only the rest run
    killed = tmp_path / "killed"
    state = {"n": 0}

    def die(*args):
        state["n"] += 1
        if state["n"] == 3:
            raise KeyboardInterrupt

    handle = loaded.model.register_forward_hook(die)
    with pytest.raises(KeyboardInterrupt):
        score_pairs(CachingLM(loaded, RequestCache(killed, flush_every=1)), pairs, progress=False)
    handle.remove()
    assert len(RequestCache(killed)) > 0
    counter.calls = 0
    resumed = score_pairs(CachingLM(loaded, RequestCache(killed)), pairs, progress=False)
    assert counter.calls == full_calls - 2
    np.testing.assert_allclose(resumed["logprob"].to_numpy(), first["logprob"].to_numpy(), atol=1e-9)
    counter.handle.remove()


def test_key_covers_model_revision_dtype_and_text():
    base = request_key("m", "r", "float32", "ctx", " x")
    assert (
        len(
            {
                base,
                request_key("m2", "r", "float32", "ctx", " x"),
                request_key("m", "r2", "float32", "ctx", " x"),
                request_key("m", "r", "bfloat16", "ctx", " x"),
                request_key("m", "r", "float32", "ctx ", "x"),
                request_key("m", "r", "float32", "ctx", " y"),
            }
        )
        == 6
    )


def test_shards_partition_prompts():
    ids = [f"p{i}" for i in range(200)]
    shards = [shard_of(i, 4) for i in ids]
    assert set(shards) == {0, 1, 2, 3}
    assert shards == [shard_of(i, 4) for i in ids]


def test_first_token_ranks_from_topk_by_hand():
    import numpy as np
    import pandas as pd
    from factprobe.scoring.suite import first_token_ranks

    # Prompt p: top-3 first tokens with log-probs -1, -2, -3 (k = 3).
    topk = pd.DataFrame({"prompt_id": ["p"] * 3, "rank": [1, 2, 3], "logprob": [-1.0, -2.0, -3.0]})
    scores = pd.DataFrame(
        {
            "prompt_id": ["p", "p", "p", "p", "q"],
            # the best token itself (float noise below tol), the 3rd, one below the top 3,
            # a form without a first token, and a prompt missing from the top-k table
            "first_logprob": [-1.00001, -3.0, -3.5, np.nan, -0.5],
        }
    )
    ranks = first_token_ranks(scores, topk)
    assert ranks[0] == 1 and ranks[1] == 3
    assert np.isinf(ranks[2]) and np.isnan(ranks[3]) and np.isinf(ranks[4])
