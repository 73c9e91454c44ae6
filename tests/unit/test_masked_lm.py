"""Backend ``masked`` (BELIEF §2, the BERT / ALBERT half): the distribution at the [MASK] token
over the vocabulary, checked against a naive computation (the model called on the hand-built
input, softmax at the mask position) on a small randomly initialised BERT built here."""

import math

import pytest
import torch
from factprobe.lm import LoglikRequest, TopkRequest, load_model
from factprobe.probes.layouts import target_text
from factprobe.probes.templates import Template

torch.set_num_threads(1)
WORDS = [
    "tokyo",
    "is",
    "the",
    "capital",
    "of",
    "japan",
    "paris",
    "france",
    "and",
    "are",
    "twin",
    "cities",
    ".",
]


@pytest.fixture(scope="module")
def bert_folder(tmp_path_factory):
    """A local BERT folder (random weights, a hand-written WordPiece vocabulary), as a user's."""
    from transformers import BertConfig, BertForMaskedLM, BertTokenizerFast

    folder = tmp_path_factory.mktemp("bert")
    vocab = folder / "vocab.txt"
    vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS, "##s"]) + "\n")
    tokenizer = BertTokenizerFast(vocab_file=str(vocab), do_lower_case=True)
    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=64,
    )
    BertForMaskedLM(config).eval().save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder, tokenizer


@pytest.fixture(scope="module")
def lm(bert_folder):
    folder, _ = bert_folder
    return load_model({"name": "bert-tiny", "source": str(folder), "backend": "masked", "device": "cpu"})


def naive_mask_logprobs(folder, tokenizer, text):
    """log-softmax at each [MASK] of ``text``, from a fresh load of the folder."""
    from transformers import BertForMaskedLM

    model = BertForMaskedLM.from_pretrained(folder).eval()
    enc = tokenizer(text, return_tensors="pt")
    with torch.no_grad():
        logits = model(**enc).logits[0]
    where = (enc["input_ids"][0] == tokenizer.mask_token_id).nonzero()[:, 0]
    return torch.log_softmax(logits[where].double(), -1)


def test_masked_backend_is_registered_and_loads_a_local_folder(lm):
    from factprobe import lm as lm_pkg

    assert lm_pkg.backend_class("masked").__name__ == "MaskedLM"
    assert type(lm).__name__ == "MaskedLM" and lm.identity[1]  # the folder's fingerprint


def test_topk_is_the_mask_distribution(lm, bert_folder):
    """§2.1: ŵ = argmax over the vocabulary at the mask, o_max its probability (§2.4)."""
    folder, tokenizer = bert_folder
    template = Template(
        id="P1376.en.s1", relation="P1376", lang="en", style="statement", text="[X] is the capital of [Y]."
    )
    prompt = target_text(template, "Tokyo", layout="mask")
    assert prompt == "Tokyo is the capital of [MASK]."
    (top,) = lm.topk([TopkRequest(prompt, 5)])
    want = naive_mask_logprobs(folder, tokenizer, prompt)[0]
    values, ids = want.topk(5)
    assert list(top.token_ids) == ids.tolist()
    assert list(top.logprobs) == pytest.approx(values.tolist(), abs=1e-5)
    assert top.tokens[0] == tokenizer.decode([int(ids[0])]).strip()
    assert math.exp(top.logprobs[0]) == pytest.approx(float(want.exp().max()), abs=1e-6)
    # words after the mask are part of the input: another continuation, another distribution
    (other,) = lm.topk([TopkRequest("[MASK] and Tokyo are twin cities.", 5)])
    assert other.logprobs != top.logprobs


def test_loglikelihood_of_one_and_of_two_tokens(lm, bert_folder):
    folder, tokenizer = bert_folder
    prompt = "Tokyo is the capital of [MASK]."
    one, two = lm.loglikelihood([LoglikRequest(prompt, " japan"), LoglikRequest(prompt, " paris cities")])
    japan = tokenizer.convert_tokens_to_ids("japan")
    assert one.logprob == pytest.approx(
        float(naive_mask_logprobs(folder, tokenizer, prompt)[0, japan]), abs=1e-5
    )
    assert one.n_tokens == 1
    # two tokens: two masks filled at once, each position's log-probability of its token summed
    both = naive_mask_logprobs(folder, tokenizer, "Tokyo is the capital of [MASK] [MASK].")
    ids = tokenizer.convert_tokens_to_ids(["paris", "cities"])
    assert two.logprob == pytest.approx(float(both[0, ids[0]] + both[1, ids[1]]), abs=1e-5)
    assert two.n_tokens == 2 and two.first_logprob == pytest.approx(float(both[0, ids[0]]), abs=1e-5)


def test_cloze_prompt_gets_the_mask_appended_and_generation_is_refused(lm, bert_folder):
    folder, tokenizer = bert_folder
    (top,) = lm.topk([TopkRequest("Tokyo is the capital of", 1)])
    want = naive_mask_logprobs(folder, tokenizer, "Tokyo is the capital of [MASK]")[0]
    assert top.token_ids[0] == int(want.argmax())
    with pytest.raises(NotImplementedError, match="BELIEF"):
        lm.generate([])


def test_prepared_local_folder_scores_the_same(bert_folder, lm, tmp_path):
    """A models.tsv row `bert-tiny  <folder>  backend masked`: prepare_model copies the folder,
    the scoring stage loads the copy; the distribution is the source folder's."""
    from factprobe.scoring.prepare import prepare_model

    folder, _ = bert_folder
    row = {"name": "bert-tiny", "source": str(folder), "backend": "masked", "device": "cpu"}
    manifest = prepare_model(row, tmp_path / "bert-tiny")
    assert manifest["kind"] == "local" and manifest["n_parameters"] > 0
    copy = load_model(row, model_dir=tmp_path / "bert-tiny")
    request = [TopkRequest("[MASK] and Tokyo are twin cities.", 3)]
    assert copy.topk(request) == lm.topk(request)
