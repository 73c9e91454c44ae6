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


SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def bert_tokenizer(words: list[str], lower: bool):
    """A BERT tokenizer over a hand-written WordPiece vocabulary. ``vocab=`` (a dict) is what
    transformers 5 builds the vocabulary from (``vocab_file=`` alone is ignored there and leaves
    the five special tokens, every word ``[UNK]``)."""
    from transformers import BertTokenizerFast

    vocab = {w: i for i, w in enumerate([*SPECIAL, *words])}
    return BertTokenizerFast(vocab=vocab, do_lower_case=lower)


def bert_folder_of(folder, tokenizer, favour: str | None = None):
    """A local BERT folder (random weights; ``favour``: that token's output bias raised so far
    that it is the argmax at every mask, with probability ≈ 1), as a user's."""
    from transformers import BertConfig, BertForMaskedLM

    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=64,
    )
    model = BertForMaskedLM(config).eval()
    if favour is not None:
        with torch.no_grad():
            model.cls.predictions.bias[tokenizer.convert_tokens_to_ids(favour)] = 40.0
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def bert_folder(tmp_path_factory):
    """An uncased BERT (lower-cased WordPiece vocabulary)."""
    tokenizer = bert_tokenizer([*WORDS, "##s"], lower=True)
    return bert_folder_of(tmp_path_factory.mktemp("bert"), tokenizer), tokenizer


def test_the_vocabulary_is_real():
    """The tokenizer holds the written vocabulary (5 special tokens + 14 words) and splits words by
    it, lower-casing for the uncased one; the cased one keeps case ("Tokyo" is not in it)."""
    uncased = bert_tokenizer([*WORDS, "##s"], lower=True)
    assert len(uncased) == 5 + 14
    expected = "tokyo is the capital of japan .".split()
    assert uncased.tokenize("Tokyo is the capital of Japan.") == expected
    assert uncased.tokenize("cities twins") == ["cities", "twin", "##s"]
    cased = bert_tokenizer(["Japan", "japan", "is"], lower=False)
    assert len(cased) == 8
    assert cased.tokenize("Tokyo is Japan") == ["[UNK]", "is", "Japan"]


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


def belief_inputs(folder, lm):
    """Two pairs: Tokyo → Japan (Q17) and Paris → France (Q142), one mask-layout prompt each, the
    model's top-k after them, the objects' names in the score table."""
    import pandas as pd
    from contract_frames import full, full_inputs
    from factprobe.metrics.pipeline import SuiteInputs
    from factprobe.scoring.suite import topk_table

    facts = pd.DataFrame(
        {
            "fact_id": ["Q1|P1376|Q17", "Q90|P1376|Q142"],
            "subject": ["Q1", "Q90"],
            "property": "P1376",
            "object": ["Q17", "Q142"],
            "objects": [["Q17"], ["Q142"]],
        }
    )
    prompts = pd.DataFrame(
        {
            "prompt_id": ["p1", "p2"],
            "fact_id": facts["fact_id"],
            "template_id": "P1376.en.s1",
            "text": ["Tokyo is the capital of [MASK].", "Paris is the capital of [MASK]."],
            "lang": "en",
            "context": "",
        }
    )
    cands = pd.DataFrame(
        {
            "fact_id": [*facts["fact_id"], *facts["fact_id"]],
            "entity": ["Q17", "Q142", "Q142", "Q17"],
            "role": ["object", "object", "distractor", "distractor"],
            "strategy": ["object", "object", "random", "random"],
            "rank": [0, 0, 1, 1],
        }
    )
    name = {"Q17": "Japan", "Q142": "France"}
    scores = pd.DataFrame(
        [(p, e, name[e], math.log(0.1), 1) for p in ("p1", "p2") for e in name],
        columns=["prompt_id", "entity", "form", "logprob", "n_tokens"],
    )
    topk = topk_table(lm, full("prompts", prompts), 3)
    inputs = SuiteInputs(scores=scores, prompts=prompts, candidates=cands, facts=facts, topk=topk)
    inputs.tokenizer = str(folder)
    return full_inputs(inputs)


@pytest.mark.parametrize(
    ("words", "lower", "favour", "correct"),
    [
        # uncased: the model predicts "japan", the tokenizer's token of "Japan": Tokyo right
        (["japan", "france", "is", "the", "capital", "of", "tokyo", "paris", "."], True, "japan", [1.0, 0.0]),
        # cased, with both "Japan" and "japan": "japan" is no token of "Japan"
        (["Japan", "japan", "France", "is", "the", "capital", "of", "."], False, "japan", [0.0, 0.0]),
        (["Japan", "japan", "France", "is", "the", "capital", "of", "."], False, "Japan", [1.0, 0.0]),
    ],
)
def test_belief_matches_the_prediction_by_the_models_tokenizer(tmp_path, words, lower, favour, correct):
    """BELIEF §2.1: ŵ is correct when it is one of the object's tokens according to the model's
    tokenizer. The model predicts ``favour`` at every mask with probability ≈ 1, so by hand:
    Acc@1 = the share of the two pairs whose object is that token, Ovconf (one bin per prompt,
    weights 1/2) = mean(o_max) − Acc@1, coverage oracle = Acc@1 (one prompt per pair)."""
    from factprobe.metrics.belief import vocabulary_predictions
    from factprobe.metrics.common import correct_entities, prompt_frame
    from factprobe.metrics.pipeline import compute_suite_metrics
    from factprobe.settings import Metrics

    folder = bert_folder_of(tmp_path / "bert", bert_tokenizer(words, lower), favour)
    lm = load_model({"name": "bert", "source": str(folder), "backend": "masked", "device": "cpu"})
    inputs = belief_inputs(folder, lm)
    top = inputs.topk[inputs.topk["rank"] == 1]
    assert list(top["token"]) == [favour, favour]
    o_max = float(math.exp(top["logprob"].mean()))
    assert o_max == pytest.approx(1.0, abs=1e-9)
    _, suite = compute_suite_metrics(inputs, Metrics(families={}, belief_samplings=20), ["belief"])
    got = suite[suite["style"] == ""].set_index("measure")["value"]
    acc = sum(correct) / 2
    assert got["belief_acc_mean"] == pytest.approx(acc)
    assert got["belief_cov_oracle"] == pytest.approx(acc)
    assert got["belief_ovconf"] == pytest.approx(o_max - acc, abs=1e-9)
    # the former rule (stripped strings, no tokenizer) misses the uncased match
    pp = vocabulary_predictions(
        inputs.topk, inputs.scores, prompt_frame(inputs.prompts), inputs.facts, correct_entities(inputs.facts)
    )
    assert list(pp.sort_values("prompt_id")["correct"]) == ([0.0, 0.0] if lower else correct)
