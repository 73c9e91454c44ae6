"""B(c)'s length rule (distractors paper §4.2, as the reference DistFactAssessLM bounds each cloze
sentence's beam search): at most the object's longest name + 5 new tokens, per prompt. Token
counts worked out by hand on a byte-level tokenizer without merges (one token per UTF-8 byte)."""

import pandas as pd
import pytest
import torch
from factprobe.lm import HFCausalLM
from factprobe.scoring.control import train_bpe_tokenizer
from factprobe.scoring.generate import BEAM_SLACK, beam_answers, beam_limits
from test_beams import naive_beams

torch.set_num_threads(1)

PROMPTS = pd.DataFrame(
    {
        "prompt_id": ["fr_en", "fr_zh", "it_en", "none_en"],
        "fact_id": ["f1", "f1", "f2", "f3"],
        "lang": ["en", "zh", "en", "en"],
        "text": ["The capital of France is", "法国的首都是", "Italy's capital is", "X is"],
        "context": ["Q: ", "", "", ""],
    }
)
FACTS = pd.DataFrame({"fact_id": ["f1", "f2", "f3"], "object": ["Q90", "Q220", "Q999"]})
FORMS = pd.DataFrame(
    [
        ("Q90", "en", "Paris"),
        ("Q90", "en", "Lutetia"),
        ("Q90", "en", " "),  # blank: never scored, not counted
        ("Q90", "fr", "Lutèce-la-Grande"),  # another language
        ("Q90", "zh", "巴黎"),
        ("Q220", "en", "Rome"),
        ("Q1", "en", "A distractor with a much longer name"),  # not an object
    ],
    columns=["entity", "lang", "form"],
)


@pytest.fixture(scope="module")
def bytes_tok():
    tok = train_bpe_tokenizer(["The capital of France is Paris."], vocab_size=257)
    assert len(tok) == 257  # the 256 bytes and <|endoftext|>: no merges
    return tok


def test_limits_by_hand(bytes_tok):
    limits = beam_limits(bytes_tok, PROMPTS, FACTS, FORMS, fallback=7)
    assert BEAM_SLACK == 5
    assert limits == {
        "fr_en": len(" Lutetia") + 5,  # 8 bytes, the longer English name
        "fr_zh": len("巴黎".encode()) + 5,  # zh is written without spaces: 6 bytes
        "it_en": len(" Rome") + 5,
        "none_en": 7,  # no form of Q999: the fallback (scoring.max_new_tokens)
    }


def test_limits_follow_the_tokenizer_merges():
    """With merges the count is the model's tokens, not characters: " Paris" learnt as one word."""
    tok = train_bpe_tokenizer(["The capital of France is Paris."] * 50, vocab_size=300)
    cont = tok("The capital of France is Paris", add_special_tokens=False)["input_ids"]
    head = tok("The capital of France is", add_special_tokens=False)["input_ids"]
    want = len(cont) - len(head)
    assert want < len(" Paris")
    prompts = PROMPTS[PROMPTS["prompt_id"] == "fr_en"].assign(context="")
    forms = FORMS[FORMS["form"] == "Paris"]
    assert beam_limits(tok, prompts, FACTS, forms) == {"fr_en": want + 5}


def test_prompts_with_their_own_limits_in_one_batch(bytes_tok):
    """Two prompts searched together, each to its own limit, give what each gives alone, and
    that is the naive search run for the prompt's own number of steps."""
    torch.manual_seed(3)
    from transformers import GPT2Config, GPT2LMHeadModel

    model = GPT2LMHeadModel(
        GPT2Config(vocab_size=len(bytes_tok), n_positions=96, n_embd=32, n_layer=1, n_head=2)
    ).eval()
    prompts = PROMPTS[PROMPTS["prompt_id"].isin(["fr_en", "it_en"])]
    limits = beam_limits(bytes_tok, prompts, FACTS, FORMS)
    assert limits == {"fr_en": 13, "it_en": 10}
    together = beam_answers(
        HFCausalLM(model, bytes_tok, generation_batch_size=2), prompts, [2], progress=False, limits=limits
    )
    for pid in limits:
        alone = beam_answers(
            HFCausalLM(model, bytes_tok, generation_batch_size=1),
            prompts[prompts["prompt_id"] == pid],
            [2],
            progress=False,
            limits=limits,
        )
        got = together[together["prompt_id"] == pid].reset_index(drop=True)
        assert got[["sample", "text", "beam_width"]].equals(alone[["sample", "text", "beam_width"]])
        assert got["logprob"].to_numpy() == pytest.approx(alone["logprob"].to_numpy(), abs=1e-5)
        row = prompts.set_index("prompt_id").loc[pid]
        ids = HFCausalLM(model, bytes_tok).context_ids(row["context"] + row["text"])
        want = naive_beams(model, ids, 2, limits[pid], bytes_tok.eos_token_id)
        assert got["logprob"].to_numpy() == pytest.approx([s for _, s, _ in want], abs=1e-4)
        # the limit binds: the best sequence runs to it (no EOS before)
        assert len(want[0][0]) == limits[pid] and want[0][0][-1] != bytes_tok.eos_token_id


def test_every_prompt_needs_a_limit(bytes_tok):
    with pytest.raises(ValueError, match="no token limit for 1 prompt"):
        beam_answers(object(), PROMPTS.head(2), [1], limits={"fr_en": 3})
