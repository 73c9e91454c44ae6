"""PROBELM scenario sentences (probelm-plausibility §4.1): the whole sentence is
scored, the template's text after [Y] included; one label per entity (best of forms as an
option); the first token scored after BOS / EOS or left out (``scoring.sentence_first_token``).

The scores are checked against a naive forward written here: one sentence per forward pass, the
log-softmax of each token given the tokens before it, independent of the library's packing and
encoding code.
"""

import pandas as pd
import pytest
import torch
from factprobe.distractors.swaps import subject_swaps
from factprobe.lm import HFCausalLM
from factprobe.probes.templates import Template
from factprobe.probes.verbalize import ending, prompt_text
from factprobe.scoring.control import train_bpe_tokenizer
from factprobe.scoring.suite import build_pairs, score_pairs

torch.set_num_threads(1)

CORPUS = [
    "Ada Lovelace was born in London.",
    "Charles Babbage was born in London.",
    "Marie Curie was born in Warsaw. Paris is a city.",
    "Question: Where was Ada Lovelace born? Answer: London",
] * 20

STATEMENT = Template("t.statement.P19", "P19", "en", "statement", "[X] was born in [Y].")
QUESTION = Template("t.question.P19", "P19", "en", "question", "Question: Where was [X] born? Answer: [Y]")


def suite_tables():
    """One fact (Ada Lovelace, P19, London) asked by both templates; an object swap (Paris) and a
    subject swap (Charles Babbage); London has an alias."""
    rows = []
    for t in (STATEMENT, QUESTION):
        rows.append(
            {
                "prompt_id": f"F|{t.id}|en|0|none",
                "fact_id": "F",
                "lang": "en",
                "template_id": t.id,
                "style": t.style,
                "subject_form": "Ada Lovelace",
                "text": prompt_text(t, "Ada Lovelace"),
                "context": "",
                "ending": ending(t),
            }
        )
    prompts = pd.DataFrame(rows)
    cands = pd.DataFrame(
        {
            "fact_id": "F",
            "entity": ["Q84", "Q90", "Q46633"],
            "role": ["object", "distractor", "distractor"],
            "strategy": ["object", "cooccur", "cooccur"],
            "rank": [0, 1, 1],
            "side": ["object", "object", "subject"],
        }
    )
    forms = pd.DataFrame(
        {
            "entity": ["Q84", "Q84", "Q90", "Q46633"],
            "lang": "en",
            "form": ["City of London", "London", "Paris", "Charles Babbage"],
            "source": ["alias", "label", "label", "label"],
        }
    )
    return prompts, cands, forms


def swaps_of(prompts, cands, forms):
    """The suite's subject-swap prompts (rule build_subject_swaps): Ada Lovelace is Q7259."""
    facts = pd.DataFrame({"fact_id": ["F"], "subject": ["Q7259"]})
    return subject_swaps(prompts, cands, forms, facts, "label")


def test_template_ending_is_the_text_after_the_object_slot():
    assert (prompt_text(STATEMENT, "Ada Lovelace"), ending(STATEMENT)) == ("Ada Lovelace was born in", ".")
    assert ending(QUESTION) == ""
    assert ending(STATEMENT, layout="qa") == ""  # the Q/A layouts end at the answer cue


def test_scored_sentences_end_with_the_templates_rest_one_label_per_entity():
    prompts, cands, forms = suite_tables()
    pairs = build_pairs(
        prompts, cands, forms, swaps=swaps_of(prompts, cands, forms), ending=True, sentence_forms="label"
    )
    got = sorted(pairs["prompt_text"] + pairs["continuation"])
    assert got == [
        "Ada Lovelace was born in London.",  # the subject swap group's true scenario
        "Ada Lovelace was born in London.",
        "Ada Lovelace was born in Paris.",
        "Charles Babbage was born in London.",
        "Question: Where was Ada Lovelace born? Answer: London",
        "Question: Where was Ada Lovelace born? Answer: London",
        "Question: Where was Ada Lovelace born? Answer: Paris",
        "Question: Where was Charles Babbage born? Answer: London",
    ]
    statement = pairs[pairs["prompt_id"] == "F|t.statement.P19|en|0|none"]
    assert dict(zip(statement["entity"], statement["continuation"], strict=True)) == {
        "Q84": " London.",
        "Q90": " Paris.",
    }
    # Best of forms (the option): the alias is scored too; continuation mode keeps no ending.
    every = build_pairs(prompts, cands, forms, ending=True, sentence_forms="all")
    assert " City of London." in set(every["continuation"])
    plain = build_pairs(prompts, cands, forms)
    assert set(plain["continuation"]) == {" London", " City of London", " Paris"}
    with pytest.raises(ValueError, match="sentence_forms 'best'"):
        build_pairs(prompts, cands, forms, sentence_forms="best")


def naive_sentence(model, tok, sentence: str, first_token: str) -> tuple[float, int]:
    """Sum of log P(token_t | tokens < t) over the sentence's tokens, from one forward pass.

    The context of the first token is the tokenizer's BOS when it adds one, else the EOS token
    (the library's documented rule); ``unscored`` leaves the first sentence token out.
    """
    ids = tok(sentence, add_special_tokens=True)["input_ids"]
    plain = tok(sentence, add_special_tokens=False)["input_ids"]
    if len(ids) == len(plain):  # no BOS: EOS stands in
        ids = [tok.eos_token_id, *plain]
    with torch.no_grad():
        logp = torch.log_softmax(model(torch.tensor([ids])).logits[0].double(), dim=-1)
    start = 1 if first_token == "conditioned" else 2
    total = sum(float(logp[t - 1, ids[t]]) for t in range(start, len(ids)))
    return total, len(ids) - start


@pytest.mark.parametrize("bos", [False, True], ids=["gpt2-no-bos", "bos"])
@pytest.mark.parametrize("first_token", ["conditioned", "unscored"])
def test_sentence_score_equals_a_naive_forward(bos, first_token):
    from transformers import GPT2Config, GPT2LMHeadModel

    tok = train_bpe_tokenizer(CORPUS, vocab_size=300, add_bos=bos)
    torch.manual_seed(0)
    cfg = GPT2Config(vocab_size=len(tok), n_positions=64, n_embd=32, n_layer=2, n_head=4)
    model = GPT2LMHeadModel(cfg).eval()
    lm = HFCausalLM(model, tok, end_marker="none")
    prompts, cands, forms = suite_tables()
    pairs = build_pairs(
        prompts, cands, forms, swaps=swaps_of(prompts, cands, forms), ending=True, sentence_forms="label"
    )
    scores = score_pairs(lm, pairs, progress=False, sentence=True, first_token=first_token)
    assert len(scores) == len(pairs) == 8
    for sentence, lp, n in zip(
        pairs["prompt_text"] + pairs["continuation"], scores["logprob"], scores["n_tokens"], strict=True
    ):
        want, want_n = naive_sentence(model, tok, sentence, first_token)
        assert n == want_n, sentence
        assert lp == pytest.approx(want, abs=1e-4), sentence
    with pytest.raises(ValueError, match="sentence_first_token"):
        score_pairs(lm, pairs, progress=False, sentence=True, first_token="dropped")
