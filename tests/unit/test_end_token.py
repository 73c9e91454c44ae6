"""The end marker of instruction-tuned models.

The distractors paper scores Pl(o|c) = Σ_λ Pr(λ + EOS | c) (distractors-knowledge-measure §3.2,
eq. 1) on plain-text prompts: the EOS it means ends a *document*. Instruction-tuned tokenizers set
``eos_token`` to the chat end of turn (``<|im_end|>`` for SmolLM2/Qwen-Instruct), so
:func:`factprobe.lm.encoding.document_end` looks for the document end of the vocabulary. Each
tokenizer here is built in the test with token ids fixed by its vocabulary list, so the expected
id is read off that list by hand.
"""

import logging
from pathlib import Path

import numpy as np
import pytest
import torch
from factprobe.export.harness import check_end_text, end_text
from factprobe.lm import CachingLM, HFCausalLM, LoglikRequest, RequestCache
from factprobe.lm.encoding import (
    END_MARKERS,
    chat_frame,
    document_end,
    encode,
    end_ids,
    model_end_token,
    scoring_end,
    tokenize_pairs,
)
from reference import sequence_logprob

torch.set_num_threads(1)

WORDS = ["Paris", "is", "the", "capital", "of", "France", "Berlin", "user", "assistant", "system"]
CHATML = "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"


def word_tokenizer(specials: list[str], **roles):
    """A word-level tokenizer: ``specials`` get ids 0, 1, ... in order, then :data:`WORDS`."""
    from tokenizers import Tokenizer
    from tokenizers.models import WordLevel
    from tokenizers.pre_tokenizers import Whitespace
    from transformers import PreTrainedTokenizerFast

    vocab = {t: i for i, t in enumerate([*specials, "<unk>", *WORDS])}
    tok = Tokenizer(WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = Whitespace()
    return PreTrainedTokenizerFast(
        tokenizer_object=tok, unk_token="<unk>", additional_special_tokens=specials, **roles
    )


@pytest.fixture(scope="module")
def chatml():
    """SmolLM2-Instruct-like: ``<|endoftext|>`` = 0 is the document end, EOS is ``<|im_end|>`` = 2."""
    tok = word_tokenizer(
        ["<|endoftext|>", "<|im_start|>", "<|im_end|>"], bos_token="<|im_start|>", eos_token="<|im_end|>"
    )
    tok.chat_template = CHATML
    return tok


def test_gpt2_like_bos_equals_eos_is_the_document_end():
    tok = word_tokenizer(["<|endoftext|>"], bos_token="<|endoftext|>", eos_token="<|endoftext|>")
    token = document_end(tok)
    assert (token.id, token.text, token.rule) == (0, "<|endoftext|>", "EOS is a document end")
    # BOS == EOS under a name the list does not know (one token separates documents): EOS too.
    other = word_tokenizer(["<|sep|>"], bos_token="<|sep|>", eos_token="<|sep|>")
    assert (document_end(other).id, document_end(other).rule) == (0, "BOS == EOS")


def test_chatml_like_ends_plain_text_with_endoftext_not_im_end(chatml):
    token = document_end(chatml)
    assert chatml.eos_token_id == 2  # the end of turn, what end_ids used to append
    assert (token.id, token.text) == (0, "<|endoftext|>")
    assert end_ids(chatml, "eos") == [0] and end_ids(chatml, "none") == end_ids(chatml, ".") == []
    # every scored pair ends in id 0: "is the capital of" + " France" -> [4 5 6 7] + [8, 0]
    requests, plans = tokenize_pairs(chatml, ["Paris is the capital of"], [" France"])
    assert requests == [((4, 5, 6, 7, 8), (9, 0))] and plans[0].n_tokens == 2
    # a models.tsv end_token names another token; an unknown one is an error naming the fix
    assert document_end(chatml, "<|im_end|>").id == 2
    with pytest.raises(ValueError, match="end_token '<eot>'.*not a token"):
        document_end(chatml, "<eot>")


def test_without_document_end_falls_back_to_eos_with_a_warning(caplog):
    tok = word_tokenizer(["<|im_start|>", "<|im_end|>"], bos_token="<|im_start|>", eos_token="<|im_end|>")
    with caplog.at_level(logging.WARNING, logger="factprobe.lm.encoding"):
        token = document_end(tok)
    assert (token.id, token.rule) == (1, "EOS fallback: no document end found")
    assert "no document-end token" in caplog.text
    bare = word_tokenizer([])
    assert document_end(bare) is None
    with pytest.raises(ValueError, match="no EOS or document-end token"):
        end_ids(bare, "eos")


def test_chat_frame_is_the_assistant_turn_of_the_template(chatml):
    frame = chat_frame(chatml)
    # "<|im_start|>assistant\n" before the content, "<|im_end|>" (id 2) right after it
    assert frame.head == (1, 12) and (frame.end.id, frame.end.text) == (2, "<|im_end|>")


@pytest.mark.parametrize(
    ("name", "prompt_format", "token_text", "token_id"),
    [
        ("", "plain", "<|endoftext|>", 0),
        ("", "chat", "<|im_end|>", 2),
        ("<|im_start|>", "chat", "<|im_start|>", 1),
    ],
)
def test_export_and_scorer_end_forms_alike_for_every_marker(
    chatml, name, prompt_format, token_text, token_id
):
    """The lm-eval export's choice ending and the scorer's appended end come from one rule
    (:func:`factprobe.lm.encoding.form_end`): the same text for each marker, and that text
    encodes to the ids the scorer appends. Expected texts and ids are read off the vocabulary."""
    token = model_end_token(chatml, name, prompt_format)
    assert (token.text, token.id) == (token_text, token_id)
    for marker, want in [("eos", token_text), (".", "."), ("none", "")]:
        scorer = scoring_end(chatml, marker, end_token=token)
        exported = end_text(marker, token.text)
        assert scorer.text == exported == want
        assert (
            encode(chatml, ["Paris" + exported])[0]
            == encode(chatml, ["Paris" + scorer.suffix])[0] + scorer.ids
        )
    if prompt_format == "plain":  # the read-back accepts what the export wrote for this model
        check_end_text({"end_text": end_text("eos", token.text)}, chatml, name, "here")


def test_the_schemas_allow_exactly_the_end_markers_of_the_rule():
    """Every ``end_marker`` key of the config schemas takes the values :func:`form_end` knows."""
    import yaml

    def enums(node):
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "end_marker" and isinstance(value, dict):
                    yield value["enum"]
                yield from enums(value)
        elif isinstance(node, list):
            for value in node:
                yield from enums(value)

    schemas = Path(__file__).resolve().parents[2] / "workflow" / "schemas"
    found = [e for path in sorted(schemas.glob("*.yaml")) for e in enums(yaml.safe_load(path.read_text()))]
    assert len(found) == 3 and all(e == list(END_MARKERS) for e in found)


@pytest.fixture(scope="module")
def tiny_model(chatml):
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    cfg = GPT2Config(vocab_size=len(chatml), n_positions=32, n_embd=16, n_layer=1, n_head=2)
    return GPT2LMHeadModel(cfg).eval()


def test_scores_end_with_the_document_end_and_chat_with_end_of_turn(chatml, tiny_model, tmp_path):
    """log P(form + end | prompt) by the engine equals one naive forward over ids written by hand."""
    request = [LoglikRequest("Paris is the capital of", " France")]
    plain = HFCausalLM(tiny_model, chatml)
    chat = HFCausalLM(tiny_model, chatml, prompt_format="chat")
    named = HFCausalLM(tiny_model, chatml, end_token="<|im_end|>")
    prompt = [4, 5, 6, 7, 8]  # Paris is the capital of
    expected = {
        "plain": sequence_logprob(tiny_model, [*prompt, 9, 0], 5)[0],  # France <|endoftext|>
        "named": sequence_logprob(tiny_model, [*prompt, 9, 2], 5)[0],  # France <|im_end|>
        "chat": sequence_logprob(tiny_model, [1, 12, *prompt, 9, 2], 7)[0],  # in the assistant turn
    }
    got = {
        k: lm.loglikelihood(request)[0].logprob
        for k, lm in [("plain", plain), ("named", named), ("chat", chat)]
    }
    np.testing.assert_allclose([got[k] for k in expected], list(expected.values()), atol=1e-5)
    assert plain.eos_id == 0 and chat.eos_id == 2  # ApprOpt's paths end where scored forms do
    assert chat.context_ids("Paris is") == [1, 12, 4, 5]
    # scores that differ never share a request cache key
    keys = {
        k: CachingLM(lm, RequestCache(tmp_path / k)).keys(request)[0]
        for k, lm in [("plain", plain), ("named", named), ("chat", chat)]
    }
    assert len(set(keys.values())) == 3
    assert "<|endoftext|>" in plain.describe_end() and "chat" in chat.describe_end()
