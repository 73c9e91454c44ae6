"""ApprOpt per cloze sentence with scoring's token ids (distractors paper §3.3).

A Llama-2-style SentencePiece tokenizer is built here: the normalizer of Llama-2's
``tokenizer.json`` (prepend ``▁``, spaces to ``▁``: ``add_dummy_prefix``), pieces that start at a
``▁`` (SentencePiece's ``split_by_whitespace``), a BOS post-processor, trained as BPE on sentences
of the real demo labels; the model is a tiny random ``LlamaForCausalLM``. With it a form encoded
on its own (``" " + form``) starts with a lone ``▁`` that the joint encoding of prompt + form never
has, so a trie built from it would search token sequences scoring never scores.

Expected values are computed independently: continuation ids by encoding prompt and prompt + form
with the tokenizer and splitting (checked against the hand-read pieces once), scores by the packed
scorer (``HFCausalLM.loglikelihood``) and by full forward passes (``tests/reference.py``).
"""

from __future__ import annotations

import logging

import numpy as np
import pandas as pd
import pytest
import torch
from contract_frames import full
from factprobe.distractors.appropt import (
    Counts,
    appropt_distractors,
    build_trie,
    candidate_pool,
    entity_labels,
)
from factprobe.lm import HFCausalLM
from factprobe.lm.api import LoglikRequest
from factprobe.metrics.common import candidates_for_prompts
from factprobe.scoring.suite import build_pairs
from factprobe.settings import Appropt
from reference import naive_pair_logprob
from test_distractors_common import demo_omega, demo_suite

PROMPTS = ["The capital of X is", "X has its seat of government in"]


@pytest.fixture(scope="module")
def suite(demo_tables):
    facts, forms = demo_suite(demo_tables)
    return facts, forms, demo_omega(demo_tables, facts, forms)


@pytest.fixture(scope="module")
def llama(suite):
    """A Llama-2-style SentencePiece tokenizer and a tiny random LlamaForCausalLM."""
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    torch.set_num_threads(1)
    _, forms, _ = suite
    en = forms.loc[forms["lang"] == "en", "form"].tolist()
    texts = [f"The capital of {a} is {b}." for a, b in zip(en, en[::-1], strict=True)] + PROMPTS
    raw = Tokenizer(models.BPE(unk_token="<unk>", byte_fallback=False))
    raw.normalizer = normalizers.Sequence([normalizers.Prepend("▁"), normalizers.Replace(" ", "▁")])
    raw.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="never", split=True)
    raw.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.Fuse(), decoders.Strip(" ", 1, 0)])
    alphabet = sorted(set("".join(texts)) | {"▁"})
    raw.train_from_iterator(
        texts,
        trainers.BpeTrainer(
            vocab_size=600, special_tokens=["<unk>", "<s>", "</s>"], initial_alphabet=alphabet
        ),
    )
    raw.post_processor = processors.TemplateProcessing(
        single="<s> $A", pair="<s> $A <s> $B", special_tokens=[("<s>", raw.token_to_id("<s>"))]
    )
    tok = PreTrainedTokenizerFast(tokenizer_object=raw, bos_token="<s>", eos_token="</s>", unk_token="<unk>")
    torch.manual_seed(0)
    cfg = LlamaConfig(
        vocab_size=len(tok),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=128,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
    )
    return HFCausalLM(LlamaForCausalLM(cfg).eval(), tok)


def p36_facts(suite, k: int = 2) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Two real capital facts, each with the two cloze sentences of ``PROMPTS``."""
    facts = suite[0]
    facts = facts[facts["property"] == "P36"].head(k)
    prompts = pd.DataFrame(
        [
            {
                "prompt_id": f"{fid}|t{i}|en|0|",
                "fact_id": fid,
                "lang": "en",
                "template_id": f"t{i}",
                "style": "statement",
                "subject_form": "X",
                "text": text,
                "context": "",
                "verbalization": "template",
                "shots": "",
            }
            for fid in facts["fact_id"]
            for i, text in enumerate(PROMPTS)
        ]
    )
    return facts, prompts


def en_forms(forms: pd.DataFrame) -> dict[int, list[str]]:
    """Each entity's one trie label (ApprOpt puts one label per entity in the trie), as a list."""
    return {e: [label] for e, label in entity_labels(forms, "en").items()}


def test_the_tokenizer_has_the_lone_dummy_prefix_problem(llama):
    """The case the issue names: " Paris" on its own is ▁ + ▁Paris..., jointly ▁Paris...."""
    tok = llama.tokenizer
    alone = tok.convert_ids_to_tokens(tok(" Paris", add_special_tokens=False)["input_ids"])
    joint = tok.convert_ids_to_tokens(tok("The capital of X is Paris", add_special_tokens=False)["input_ids"])
    assert alone[0] == "▁" and alone[1].startswith("▁P")
    assert joint[-len(alone) + 1 :] == alone[1:]
    assert tok("a")["input_ids"][0] == tok.bos_token_id


def test_trie_ids_are_scorings_continuation_ids(llama, suite):
    """Every trie path = encode(prompt + " " + form) split after encode(prompt), + EOS; the
    context = BOS + encode(prompt); the old ids (form alone) differ by the lone ▁."""
    tok = llama.tokenizer
    facts, forms, omega = suite
    fact = p36_facts(suite, 1)[0].iloc[0]
    s, r, o = (int(fact[c][1:]) for c in ("subject", "property", "object"))
    pool = omega.filter(s, r, o, omega.members(omega.types_of(o)))
    by_entity = en_forms(forms)
    prompt = PROMPTS[0]
    prefix, trie, merged = build_trie(llama, prompt, pool, entity_labels(forms, "en"), "en")
    p_ids = tok(prompt, add_special_tokens=False)["input_ids"]
    assert prefix == [tok.bos_token_id, *p_ids]
    assert merged == 0
    want = {}
    for e in pool:
        for form in by_entity.get(e, ()):
            w_ids = tok(prompt + " " + form, add_special_tokens=False)["input_ids"]
            assert w_ids[: len(p_ids)] == p_ids
            want.setdefault((*w_ids[len(p_ids) :], tok.eos_token_id), []).append((e, form))
    got = dict(trie.paths())
    assert sorted(got) == sorted(want) and len(got) > 20
    assert all(sorted(got[k]) == sorted(want[k]) for k in want)
    lone = tok.convert_tokens_to_ids("▁")
    assert not any(path[0] == lone for path in got)
    assert any(tuple(llama.form_ids(f, "en"))[0] == lone for fs in by_entity.values() for f in fs)


def test_beam_scores_equal_packed_scorer_per_sentence(llama, suite):
    """Each sentence gets its own list (its prompt_id); a distractor's ApprOpt score equals the
    packed scorer's log-likelihood of (sentence, " " + form) and a full-forward reference; with a
    beam as wide as the trie each list is the exhaustive top n of its own sentence."""
    facts, prompts = p36_facts(suite)
    _, forms, omega = suite
    by_entity = en_forms(forms)
    out = appropt_distractors(llama, facts, prompts, forms, omega, Appropt(n=4, lang="en", width=4))
    assert set(out["prompt_id"]) == set(prompts["prompt_id"])
    text = prompts.set_index("prompt_id")["text"]
    results = llama.loglikelihood(
        [
            LoglikRequest(text[pid], " " + form)
            for pid, form in zip(out["prompt_id"], out["form"], strict=True)
        ]
    )
    assert out["score"].tolist() == pytest.approx([r.logprob for r in results], abs=1e-4)
    for pid, form, score in zip(out["prompt_id"], out["form"], out["score"], strict=True):
        assert score == pytest.approx(
            naive_pair_logprob(llama.model, llama.tokenizer, text[pid], " " + form), abs=1e-4
        )
    fid = facts["fact_id"].iloc[0]
    s, r, o = (int(x[1:]) for x in fid.split("|"))
    pool = omega.filter(s, r, o, omega.members(omega.types_of(o)))
    paths = sum(len(by_entity.get(e, ())) for e in pool)
    wide = appropt_distractors(
        llama, facts.head(1), prompts, forms, omega, Appropt(n=4, lang="en", width=paths)
    )
    lists = []
    for pid, group in wide.groupby("prompt_id", sort=True):
        best: dict[int, float] = {}
        for e in pool:
            for form in by_entity.get(e, ()):
                lp = naive_pair_logprob(llama.model, llama.tokenizer, text[pid], " " + form)
                best[e] = max(best.get(e, -np.inf), lp)
        top = sorted(best.items(), key=lambda kv: -kv[1])[:4]
        assert [int(e[1:]) for e in group["entity"]] == [e for e, _ in top]
        assert group["score"].tolist() == pytest.approx([v for _, v in top], abs=1e-4)
        assert (group["found"] == 4).all() and group["rank"].tolist() == [1, 2, 3, 4]
        lists.append(group["entity"].tolist())
    assert len(lists) == 2


def test_pool_cap_keeps_the_first_valid_members_by_prior(suite):
    """max_candidates = M keeps the first M Ω-valid type members by the prior (highest first, ties
    by id), worked out here from the uncapped pool; counts of capped facts and cut members."""
    facts, _, omega = suite
    fact = facts[facts["property"] == "P36"].iloc[0]
    s, r, o = (int(fact[c][1:]) for c in ("subject", "property", "object"))
    members = omega.members(omega.types_of(o))
    full = omega.filter(s, r, o, members)
    prior = lambda ids: np.asarray(ids) % 7  # noqa: E731 (a made-up prior with many ties)
    want = sorted(full, key=lambda e: (-(e % 7), e))[:5]
    counts = Counts()
    assert candidate_pool(omega, s, r, o, 5, prior, counts) == want
    assert (counts.capped, counts.cut) == (1, len(members) - 5)
    counts = Counts()
    assert candidate_pool(omega, s, r, o, None, prior, counts) == full
    assert candidate_pool(omega, s, r, o, len(members), prior, counts) == full
    assert counts.capped == 0
    # No prior: ascending id.
    assert candidate_pool(omega, s, r, o, 5, None, Counts()) == sorted(full)[:5]


def test_appropt_logs_the_cap(llama, suite, caplog):
    facts, prompts = p36_facts(suite, 1)
    _, forms, omega = suite
    with caplog.at_level(logging.INFO, logger="factprobe.distractors.appropt"):
        out = appropt_distractors(
            llama, facts, prompts, forms, omega, Appropt(n=2, lang="en", max_candidates=3)
        )
    assert "pool capped at 3 for 1 facts" in caplog.text
    assert out.groupby("prompt_id")["entity"].nunique().max() <= 2


def test_sentence_lists_reach_only_their_sentence():
    """Scoring pairs and the metrics' candidate rows: a row with a prompt_id serves that prompt
    only; a row without one (retrieved strategies) every prompt of its fact."""
    prompts = pd.DataFrame(
        {"prompt_id": ["f|a", "f|b"], "fact_id": "f", "lang": "en", "text": ["A is", "B is"], "context": ""}
    )
    cands = pd.DataFrame(
        {
            "fact_id": "f",
            "entity": ["Q1", "Q2", "Q3", "Q2"],
            "role": "distractor",
            "strategy": ["random", "appropt", "appropt", "appropt"],
            "rank": [1, 1, 2, 1],
            "prompt_id": [None, "f|a", "f|a", "f|b"],
        }
    )
    forms = pd.DataFrame({"entity": ["Q1", "Q2", "Q3"], "lang": "en", "form": ["one", "two", "three"]})
    prompts, cands = full("prompts", prompts), full("candidates", cands)
    pairs = build_pairs(prompts, cands, forms)
    got = sorted(zip(pairs["prompt_id"], pairs["entity"], strict=True))
    assert got == [("f|a", "Q1"), ("f|a", "Q2"), ("f|a", "Q3"), ("f|b", "Q1"), ("f|b", "Q2")]
    rows = candidates_for_prompts(prompts, cands)
    got = sorted(zip(rows["prompt_id"], rows["strategy"], rows["entity"], rows["rank"], strict=True))
    assert got == [
        ("f|a", "appropt", "Q2", 1),
        ("f|a", "appropt", "Q3", 2),
        ("f|a", "random", "Q1", 1),
        ("f|b", "appropt", "Q2", 1),
        ("f|b", "random", "Q1", 1),
    ]
