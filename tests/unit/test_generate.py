"""Generation mode and the BELIEF §3.2 normalization / matching rule."""

import pandas as pd
import pytest
import torch
from factprobe.scoring.control import train_bpe_tokenizer
from factprobe.scoring.generate import generate_answers, matches, normalize, sampled_confidence
from factprobe.scoring.loglik import sequence_logprob

torch.set_num_threads(1)


def test_normalize_tokenizes_and_lemmatizes():
    assert normalize("A guitar!") == ["a", "guitar"]
    assert normalize("guitars") == ["guitar"]
    assert normalize("Cities, bosses and boxes") == ["city", "boss", "and", "box"]
    assert normalize("Paris") == ["paris"] == normalize("paris")  # "-is" is not a plural
    assert normalize("Gitarren", lang="de") == ["gitarren"]


def test_matching_paper_examples():
    # "John Lennon can play [MASK]": both "guitars" and "a guitar" are correct (§3.2)
    assert matches("guitar", "a guitar")
    assert matches("guitar", "guitars")
    assert matches("guitars", "a guitar")
    # one-directional for Acc@1: the gold must be inside the generation, not the reverse
    assert matches("United Kingdom", "the United Kingdom of Great Britain")
    assert not matches("United Kingdom of Great Britain", "United Kingdom")
    assert matches("United Kingdom of Great Britain", "United Kingdom", bidirectional=True)
    # contiguous token lists, not bags of words
    assert not matches("New York", "York New")
    assert not matches("", "anything")


def test_sampled_confidence():
    assert sampled_confidence("Paris", ["Paris", "paris.", "Lyon", "the Paris"]) == 0.75
    assert sampled_confidence("Paris", []) != sampled_confidence("Paris", [])  # NaN


@pytest.fixture(scope="module")
def tiny():
    from transformers import GPT2Config, GPT2LMHeadModel

    tok = train_bpe_tokenizer(["The capital of France is Paris.\nThe capital of Italy is Rome."] * 20, 300)
    torch.manual_seed(3)
    model = GPT2LMHeadModel(GPT2Config(vocab_size=len(tok), n_positions=64, n_embd=32, n_layer=1, n_head=2)).eval()
    return model, tok


def test_greedy_is_argmax_and_samples_are_seeded(tiny):
    model, tok = tiny
    prompts = pd.DataFrame(
        {"prompt_id": ["a", "b", "c"], "text": ["The capital of France is", "The capital of", "Rome"], "context": ""}
    )
    out = generate_answers(model, tok, prompts, samples=3, max_new_tokens=5, batch_size=2, progress=False)
    assert len(out) == 3 * 4 and set(out["sample"]) == {0, 1, 2, 3}
    # greedy by hand: repeated full forwards, argmax, stop at EOS
    ids = tok("The capital of France is")["input_ids"]
    start = len(ids)
    for _ in range(5):
        with torch.no_grad():
            nxt = int(model(input_ids=torch.tensor([ids])).logits[0, -1].argmax())
        ids.append(nxt)
        if nxt == tok.eos_token_id:
            break
    greedy = out[(out.prompt_id == "a") & (out["sample"] == 0)].iloc[0]
    text = tok.decode(ids[start:], skip_special_tokens=True).split("\n", 1)[0].strip()
    assert greedy["text"] == text
    assert abs(greedy["logprob"] - sequence_logprob(model, ids, start)[0]) < 1e-4
    # samples of a prompt do not depend on which other prompts are generated with it
    alone = generate_answers(model, tok, prompts.iloc[[2]], samples=3, max_new_tokens=5, progress=False)
    pd.testing.assert_frame_equal(alone, out[out.prompt_id == "c"].reset_index(drop=True))
