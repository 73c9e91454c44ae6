"""ROUGE-L and BERTScore baselines (distractors paper Table 2, §4.2): factprobe.metrics.overlap.

Expected values are worked out by hand from Lin 2004 §3.1 (ROUGE-L F, β = 1) and Zhang et al.
2020 §3 (greedy cosine matching), or recomputed with numpy from the encoder's hidden states.
"""

import math

import numpy as np
import pandas as pd
import pytest
from contract_frames import full_inputs
from factprobe.metrics import FAMILIES, MEASURES
from factprobe.metrics.meta import measure_families
from factprobe.metrics.overlap import BertScorer, best_rouge_l, lcs_length, overlap_per_prompt, rouge_l
from factprobe.metrics.pipeline import SuiteInputs, compute_suite_metrics
from factprobe.settings import ConfigError, Metrics, load_settings

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "paris", "france", "london", "city", "the", "of"]


def test_lcs_hand_worked():
    # "ABCBDAB" / "BDCABA": the textbook LCS of length 4 (e.g. BCBA).
    assert lcs_length(list("ABCBDAB"), list("BDCABA")) == 4
    assert lcs_length([], ["a"]) == 0
    assert lcs_length(["a", "b"], ["b", "a"]) == 1


def test_rouge_l_words_hand_worked():
    # candidate 5 words, reference 1 word, LCS 1: P = 1/5, R = 1, F = 2·(1/5)/(6/5) = 1/3.
    p, r, f = rouge_l("The city of Paris, France", "Paris")
    assert (p, r) == (0.2, 1.0)
    assert f == pytest.approx(1 / 3)
    # "new york city" vs "York New": LCS 1 (order matters): P = 1/3, R = 1/2, F = 0.4.
    assert rouge_l("New York City", "York New")[2] == pytest.approx(0.4)
    assert rouge_l("", "Paris") == (0.0, 0.0, 0.0)
    assert rouge_l("London", "Paris") == (0.0, 0.0, 0.0)


def test_rouge_l_characters_as_the_reference():
    # Raw characters, case-sensitive: "Pars" in "Paris": LCS 4, P = 4/4, R = 4/5, F = 8/9.
    p, r, f = rouge_l("Pars", "Paris", units="characters")
    assert (p, r, f) == pytest.approx((1.0, 0.8, 8 / 9))
    assert rouge_l("paris", "Paris", units="characters")[0] == pytest.approx(0.8)
    # B(c) as the reference decodes it keeps the leading space: " Paris" against "Paris" is
    # LCS 5, P = 5/6, R = 1, F = 10/11 (stripped it would be 1); words are unaffected.
    assert rouge_l(" Paris", "Paris", units="characters") == pytest.approx((5 / 6, 1.0, 10 / 11))
    assert best_rouge_l([" York", " Paris"], ["New York"], units="characters") == pytest.approx(
        2 * (5 / 5) * (5 / 8) / (5 / 5 + 5 / 8)
    )  # " York" in "New York": the space is matched too (LCS 5)
    assert rouge_l(" Paris", "Paris") == pytest.approx((1.0, 1.0, 1.0))
    with pytest.raises(ValueError, match="rouge_units"):
        rouge_l("a", "a", units="tokens")


def test_rouge_l_max_over_names_and_continuations():
    # Table 2: max over λ ∈ Λ(o) and b ∈ B(c): "Paris" gives F 1/3, "City of Paris" F = 2·(3/5)(3/3)/(8/5) = 0.75.
    conts = ["the city of paris france", "london"]
    assert best_rouge_l(conts, ["Paris", "City of Paris"]) == pytest.approx(0.75)
    assert math.isnan(best_rouge_l(conts, []))


def test_rouge_l_matches_rouge_score_package():
    rouge_scorer = pytest.importorskip("rouge_score.rouge_scorer")
    scorer = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=False)
    pairs = [
        ("Paris", "Paris is the capital"),
        ("the United States of America", "United States"),
        ("New York City", "York New"),
        ("a b c d e f", "f e d c b a b c"),
        ("Barack Obama, 44th president", "Obama"),
    ]
    for reference, candidate in pairs:
        ref = scorer.score(reference, candidate)["rougeL"]
        assert rouge_l(candidate, reference) == pytest.approx((ref.precision, ref.recall, ref.fmeasure)), (
            reference,
            candidate,
        )


@pytest.fixture(scope="module")
def tiny_encoder(tmp_path_factory):
    """A random 2-layer BERT and a word-level vocabulary saved to a folder (no download)."""
    torch = pytest.importorskip("torch")
    from transformers import BertConfig, BertModel, BertTokenizer

    folder = tmp_path_factory.mktemp("encoder")
    (folder / "vocab.txt").write_text("\n".join(VOCAB) + "\n")
    BertTokenizer(str(folder / "vocab.txt")).save_pretrained(folder)
    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=len(VOCAB),
        hidden_size=16,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=32,
    )
    BertModel(config).save_pretrained(folder)
    return str(folder)


def _hidden(folder: str, ids: list[int], layer: int) -> np.ndarray:
    """Unit-norm hidden states of ``layer`` for [CLS] ids [SEP], straight from the model."""
    import torch
    from transformers import BertModel

    model = BertModel.from_pretrained(folder).eval()
    with torch.no_grad():
        out = model(input_ids=torch.tensor([[2, *ids, 3]]), output_hidden_states=True)
    h = out.hidden_states[layer][0].numpy().astype(np.float64)
    return h / np.linalg.norm(h, axis=1, keepdims=True)


def test_bertscore_identical_strings_score_one(tiny_encoder):
    scorer = BertScorer.from_encoder(tiny_encoder)
    assert scorer.score("paris france", "paris france") == pytest.approx((1.0, 1.0, 1.0))
    assert scorer.score("", "paris") == (0.0, 0.0, 0.0)


@pytest.mark.parametrize("layer", [0, 1, 2])
def test_bertscore_two_token_case_against_numpy(tiny_encoder, layer):
    # candidate "paris france" = [CLS] c1 c2 [SEP], reference "paris" = [CLS] r1 [SEP]. As the
    # bert_score code: every token (special ones too) may be matched, only content tokens weigh:
    # P = (max_j cos(c1, r_j) + max_j cos(c2, r_j)) / 2, R = max_i cos(r1, c_i).
    c = _hidden(tiny_encoder, [5, 6], layer)
    r = _hidden(tiny_encoder, [5], layer)
    want_p = ((c[1] @ r.T).max() + (c[2] @ r.T).max()) / 2
    want_r = (r[1] @ c.T).max()
    want_f = 2 * want_p * want_r / (want_p + want_r)
    got = BertScorer.from_encoder(tiny_encoder, layer=layer).score("paris france", " paris ")
    assert got == pytest.approx((want_p, want_r, want_f), abs=1e-6)


def test_bertscore_idf_weights_hand_worked(tiny_encoder):
    # Names "paris" and "paris france": M = 2, df(paris) = 2, df(france) = 1:
    # idf(paris) = log(3/3) = 0, idf(france) = log(3/2); unseen tokens log 3.
    scorer = BertScorer.from_encoder(tiny_encoder, use_idf=True)
    scorer.fit_idf(["paris", "paris france", "paris"])
    assert scorer.idf[5] == pytest.approx(0.0)
    assert scorer.idf[6] == pytest.approx(math.log(1.5))
    assert scorer.idf[-1] == pytest.approx(math.log(3))
    # Recall of "paris france" against itself: only france carries weight, matched exactly: 1.
    assert scorer.score("paris france", "paris france")[1] == pytest.approx(1.0)


def test_bertscore_encoder_error_names_the_setting(tmp_path):
    with pytest.raises(ValueError, match="metrics.family_settings.overlap.encoder"):
        BertScorer.from_encoder(str(tmp_path / "absent"))


def small_suite(generations: pd.DataFrame | None) -> SuiteInputs:
    """Two facts, two prompts each; the object of fact 1 is named "Paris" and "City of Paris"."""
    facts = pd.DataFrame(
        {
            "fact_id": ["F|P36|Q90", "U|P36|Q84"],
            "subject": ["F", "U"],
            "property": "P36",
            "object": ["Q90", "Q84"],
        }
    )
    prompts = pd.DataFrame(
        {
            "prompt_id": ["p1", "p2", "u1", "u2"],
            "fact_id": ["F|P36|Q90", "F|P36|Q90", "U|P36|Q84", "U|P36|Q84"],
            "template_id": ["t1", "t2", "t1", "t2"],
            "lang": "en",
            "verbalization": "template",
            "text": [
                "The capital of France is",
                "France's capital:",
                "The capital of UK is",
                "UK's capital:",
            ],
        }
    )
    names = {"Q90": ["Paris", "City of Paris"], "Q84": ["London"]}
    rows = []
    for pid, fid in zip(prompts["prompt_id"], prompts["fact_id"], strict=True):
        obj = fid.rsplit("|", 1)[1]
        rows += [(pid, obj, form, -1.0, 1, -1.0, 0.0, fid) for form in names[obj]]
        rows.append((pid, "Q1", "Nowhere", -3.0, 1, -3.0, 0.0, fid))  # a distractor: not a name of o
    scores = pd.DataFrame(
        rows,
        columns=[
            "prompt_id",
            "entity",
            "form",
            "logprob",
            "n_tokens",
            "first_logprob",
            "end_logprob",
            "fact_id",
        ],
    )
    cands = pd.DataFrame(
        {
            "fact_id": ["F|P36|Q90", "F|P36|Q90", "U|P36|Q84", "U|P36|Q84"],
            "entity": ["Q90", "Q1", "Q84", "Q1"],
            "role": ["object", "distractor"] * 2,
            "strategy": ["object", "random"] * 2,
            "rank": [0, 1] * 2,
        }
    )
    return full_inputs(
        SuiteInputs(scores=scores, prompts=prompts, candidates=cands, facts=facts, generations=generations)
    )


GENERATIONS = pd.DataFrame(
    {
        # p1: "paris" among 5 words (F 1/3 for Paris; "City of Paris" F 0.75); p2: exact "Paris" (1);
        # u1: "london" among 2 words (F = 2/3); u2: nothing shared (0). A sample row is ignored.
        "prompt_id": ["p1", "p2", "u1", "u2", "p2"],
        "sample": [0, 0, 0, 0, 1],
        "text": ["the city of paris france", "Paris", "London, England", "a city", "London"],
        "logprob": -1.0,
    }
)


def test_overlap_end_to_end_through_compute_suite_metrics(tiny_encoder):
    metrics = Metrics(families={}, ns=[1], family_settings={"overlap": {"encoder": tiny_encoder}})
    per_fact, _ = compute_suite_metrics(small_suite(GENERATIONS), metrics, ["knowledge", "overlap"])
    rouge = per_fact[per_fact["measure"] == "rouge_l"].set_index("fact_id")
    # Table 2: mean over the fact's cloze sentences of the per-sentence max.
    assert rouge.loc["F|P36|Q90", "value"] == pytest.approx((0.75 + 1.0) / 2)
    assert rouge.loc["U|P36|Q84", "value"] == pytest.approx((2 / 3 + 0.0) / 2)
    assert set(rouge["n_prompts"]) == {2}
    bert = per_fact[per_fact["measure"] == "bertscore"].set_index("fact_id")
    scorer = BertScorer.from_encoder(tiny_encoder)
    want = (max(scorer.score("the city of paris france", n)[2] for n in ["Paris", "City of Paris"]) + 1.0) / 2
    assert bert.loc["F|P36|Q90", "value"] == pytest.approx(want, abs=1e-6)
    # Selectable in §4.2's human alignment as their own families (meta.measure_families).
    families = measure_families(per_fact)
    assert families["rouge_l"] == [{"measure": "rouge_l", "strategy": "", "n": 0}]
    assert "bertscore" in families


def test_overlap_without_encoder_or_generations():
    per_fact, _ = compute_suite_metrics(small_suite(GENERATIONS), Metrics(families={}, ns=[1]), ["overlap"])
    assert set(per_fact["measure"]) == {"rouge_l"}
    per_fact, _ = compute_suite_metrics(small_suite(None), Metrics(families={}, ns=[1]), ["overlap"])
    assert per_fact.empty


def test_prompt_without_greedy_continuation_gets_no_value():
    names = pd.DataFrame({"prompt_id": ["p1", "p2"], "fact_id": "f", "form": "Paris"})
    gens = pd.DataFrame({"prompt_id": ["p1"], "sample": [0], "text": ["Paris"], "logprob": [0.0]})
    out = overlap_per_prompt(gens, names)
    assert out.to_dict("records") == [{"prompt_id": "p1", "fact_id": "f", "n": 0, "rouge_l": 1.0}]


def test_registry_and_settings():
    assert FAMILIES["overlap"].reads == ()
    assert {k: s.default for k, s in FAMILIES["overlap"].settings.items()} == {
        "rouge_units": "words",
        "encoder": "",
        "layer": None,
        "idf": False,
    }
    for name in ("rouge_l", "bertscore"):
        assert MEASURES[name].family == "overlap" and MEASURES[name].higher_is_better
    assert (
        load_settings(
            Metrics, {"families": {}, "family_settings": {"overlap": {"rouge_units": "characters"}}}
        ).own("overlap")["rouge_units"]
        == "characters"
    )
    with pytest.raises(ConfigError, match=r"family 'overlap' has no setting\(s\) \['model'\]"):
        load_settings(Metrics, {"families": {}, "family_settings": {"overlap": {"model": "x"}}})


def test_encoder_row_is_prepared_not_scored():
    """metrics.family_settings.overlap.encoder naming a models.tsv row keeps that row out of the scored models."""
    from pathlib import Path

    import yaml
    from factprobe.config_check import read_config, read_registry, resolve_config_paths
    from factprobe.plumbing import run_settings as R

    root = Path(__file__).resolve().parents[2]
    schemas = root / "workflow" / "schemas"
    raw = yaml.safe_load((root / "config" / "config.yaml").read_text())
    raw["metrics"]["family_settings"]["overlap"] = {"encoder": "smollm2"}
    raw["suites"][next(iter(raw["suites"]))]["generate"] = "greedy"
    cfg = read_config(resolve_config_paths(raw, root), schemas / "config.schema.yaml")
    models = {r["name"]: r for r in read_registry(cfg.models, schemas / "models.schema.yaml", key="name")}
    dumps = {r["dump"]: r for r in read_registry(cfg.dumps, schemas / "dumps.schema.yaml", key="dump")}
    run = R.resolve(cfg, dumps, models)
    assert R.encoder_models(cfg, models) == ["smollm2"]
    assert "smollm2" not in run.score_models and "control" in run.score_models


def test_byte_level_bpe_encoder_gets_a_leading_space(tmp_path):
    """bert_score encodes RoBERTa inputs with add_prefix_space=True: " paris", not "paris"."""
    import json

    torch = pytest.importorskip("torch")
    from transformers import RobertaConfig, RobertaModel, RobertaTokenizer

    vocab = {
        t: i for i, t in enumerate(["<s>", "<pad>", "</s>", "<unk>", "Ġ", "p", "a", "r", "i", "s", "Ġp"])
    }
    (tmp_path / "vocab.json").write_text(json.dumps(vocab))
    (tmp_path / "merges.txt").write_text("#version: 0.2\nĠ p\n")
    RobertaTokenizer(str(tmp_path / "vocab.json"), str(tmp_path / "merges.txt")).save_pretrained(tmp_path)
    torch.manual_seed(0)
    config = RobertaConfig(
        vocab_size=len(vocab),
        hidden_size=8,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=16,
        max_position_embeddings=40,
        pad_token_id=1,
    )
    RobertaModel(config).save_pretrained(tmp_path)
    scorer = BertScorer.from_encoder(str(tmp_path))
    assert scorer.prefix_space
    ids, _, special = scorer.embed(["paris"])[0]
    # <s> Ġp a r i s </s>: the merged "Ġp" shows the leading space went in.
    assert ids.tolist() == [0, 10, 6, 7, 8, 9, 2]
    assert special.tolist() == [True, False, False, False, False, False, True]
    assert scorer.score("paris", "paris") == pytest.approx((1.0, 1.0, 1.0))


def test_rouge_l_in_human_alignment_table():
    """§4.2 / Table 3: rouge_l is a family of the human-alignment stage; values ordered as the
    human scores give τ = 1 on every held-out fold."""
    from factprobe.metrics.common import conform_fact_table
    from factprobe.metrics.meta import human_alignment

    facts = [f"S{i}|P36|O{i}" for i in range(9)]
    per_fact = conform_fact_table(
        pd.DataFrame(
            {"fact_id": facts, "measure": "rouge_l", "value": [i / 10 for i in range(9)], "n_prompts": 1}
        )
    )
    human = pd.DataFrame({"fact_id": facts, "score": [i / 20 for i in range(9)]})
    out = human_alignment(per_fact, human, k=3)
    row = out[(out["family"] == "rouge_l") & (out["fold"] == -1)].iloc[0]
    assert row["test_tau"] == pytest.approx(1.0) and row["n_facts"] == 9


def test_beam_widths_give_one_value_each():
    """Table 2 with §4.2's beam grid: B(c) of width w is the w sequences of that search; the
    value at n = w is the max over them (characters, as the reference: "Pars" vs "Paris" 8/9)."""
    names = pd.DataFrame({"prompt_id": ["p1"], "fact_id": "f", "form": ["Paris"]})
    gens = pd.DataFrame(
        {
            "prompt_id": "p1",
            "sample": [0, 0, 1, 0, 1, 2],
            "text": ["London", "London", "Pars", "Lyon", "Pars", "Paris"],
            "logprob": -1.0,
            "beam_width": [1, 2, 2, 3, 3, 3],
        }
    )
    out = overlap_per_prompt(gens, names, units="characters").set_index("n")["rouge_l"]
    # "London" vs "Paris": no common character -> 0
    assert out.to_dict() == pytest.approx({1: 0.0, 2: 8 / 9, 3: 1.0})
