"""B(c) of the distractors paper (Table 2: "the best sequences obtained from the LM using beam
search given the prompt c"; §4.2 grids the width over {1, 2, 5, 10, 20, 30, 50, 100}), searched
as the reference's ``src/utils/beamsearch.py`` does: summed log-probabilities, finished
hypotheses (ended by EOS) compete with open ones, the ``width`` best kept each step."""

import math

import pandas as pd
import pytest
import torch
from factprobe.lm import HFCausalLM
from factprobe.lm.beam import free_beam_step
from factprobe.scoring.control import train_bpe_tokenizer
from factprobe.scoring.generate import BEAM_GRID, beam_answers

torch.set_num_threads(1)


def test_paper_grid():
    from factprobe.metrics import meta
    from factprobe.settings import Scoring

    assert BEAM_GRID == meta.BEAM_GRID == tuple(Scoring().beam_widths) == (1, 2, 5, 10, 20, 30, 50, 100)


def test_beam_widths_are_configurations_of_the_grid():
    """§4.2 grid search: ROUGE-L and BERTScore over the beam widths (30 and 50 are not in the
    distractor grid {1, 2, 5, 10} ∪ {20, 40, ..., 200}), the distractor measures over n."""
    from factprobe.metrics.meta import measure_families

    per_fact = pd.DataFrame(
        [
            {"fact_id": "f", "measure": m, "strategy": s, "n": n, "value": 0.5}
            for m, s, n in [
                ("rouge_l", "", 30),
                ("rouge_l", "", 50),
                ("rouge_l", "", 3),
                ("bertscore", "", 100),
                ("k_min", "random", 30),
                ("k_min", "random", 40),
                ("probability", "", 0),
            ]
        ]
    )
    families = measure_families(per_fact)
    assert [c["n"] for c in families["rouge_l"]] == [30, 50]
    assert [c["n"] for c in families["bertscore"]] == [100]
    assert [c["n"] for c in families["dist:random"]] == [40]


def test_beam_steps_by_hand():
    """Width 2, EOS = token 0, vocabulary of 3."""
    log = lambda *p: torch.log(torch.tensor(p, dtype=torch.float64))  # noqa: E731
    hyps = free_beam_step([((), 0.0, False)], [log(0.5, 0.3, 0.2)], 2, 0)
    assert [(h[0], h[2]) for h in hyps] == [((0,), True), ((1,), False)]
    # (0,) is finished at log 0.5 and stays; (1,) spreads: (1, 1) at 0.3 * 0.6, (1, 2) at 0.09
    hyps = free_beam_step(hyps, [log(0.1, 0.6, 0.3)], 2, 0)
    assert [h[0] for h in hyps] == [(0,), (1, 1)]
    assert hyps[1][1] == pytest.approx(math.log(0.18))
    hyps = free_beam_step(hyps, [log(0.9, 0.05, 0.05)], 2, 0)
    assert [h[0] for h in hyps] == [(0,), (1, 1, 0)] and all(h[2] for h in hyps)
    assert hyps[1][1] == pytest.approx(math.log(0.18 * 0.9))


@pytest.fixture(scope="module")
def tiny():
    from transformers import GPT2Config, GPT2LMHeadModel

    tok = train_bpe_tokenizer(["The capital of France is Paris.\nThe capital of Italy is Rome."] * 20, 300)
    torch.manual_seed(5)
    model = GPT2LMHeadModel(
        GPT2Config(vocab_size=len(tok), n_positions=64, n_embd=32, n_layer=1, n_head=2)
    ).eval()
    # EOS made likely after a few tokens, so that finished hypotheses compete with open ones
    with torch.no_grad():
        model.transformer.wte.weight[tok.eos_token_id] *= 4
    return model, tok


def naive_beams(model, prefix, width, steps, eos):
    """The same search by full forwards over the whole vocabulary (no packing, no top-k)."""
    hyps = [((), 0.0, False)]
    for _ in range(steps):
        if all(done for _, _, done in hyps):
            break
        cands = [h for h in hyps if h[2]]
        for toks, score, done in hyps:
            if done:
                continue
            with torch.no_grad():
                logits = model(input_ids=torch.tensor([prefix + list(toks)])).logits[0, -1].double()
            lp = torch.log_softmax(logits, -1).tolist()
            cands += [((*toks, t), score + v, t == eos) for t, v in enumerate(lp)]
        cands.sort(key=lambda h: (-h[1], h[0]))
        hyps = cands[:width]
    return hyps


@pytest.mark.parametrize("width", [1, 2, 5])
def test_beams_match_a_naive_search(tiny, width):
    model, tok = tiny
    lm = HFCausalLM(model, tok, generation_batch_size=2)
    prompts = pd.DataFrame({"prompt_id": ["a", "b"], "text": ["The capital of France is", "Rome"]})
    out = beam_answers(lm, prompts, [width], max_new_tokens=4)
    for pid, text in zip(prompts["prompt_id"], prompts["text"], strict=True):
        want = naive_beams(model, lm.context_ids(text), width, 4, tok.eos_token_id)
        got = out[(out["prompt_id"] == pid) & (out["beam_width"] == width)].sort_values("sample")
        assert len(got) == width and got["sample"].tolist() == list(range(width))
        # decoded as the reference decodes B(c): the leading space stays (no special tokens)
        assert got["text"].tolist() == [tok.decode(list(t), skip_special_tokens=True) for t, _, _ in want]
        assert got["logprob"].to_numpy() == pytest.approx([s for _, s, _ in want], abs=1e-4)
    if width == 5:  # some beam ended with EOS before the step limit
        lengths = [len(t) for t, _, _ in naive_beams(model, lm.context_ids("Rome"), 5, 4, tok.eos_token_id)]
        assert min(lengths) < 4


def test_beam_answers_rows_per_width(tiny):
    model, tok = tiny
    lm = HFCausalLM(model, tok, generation_batch_size=4)
    prompts = pd.DataFrame({"prompt_id": ["a"], "text": ["The capital of"], "context": ["Q: "]})
    out = beam_answers(lm, prompts, [1, 2, 5], max_new_tokens=3)
    assert out.groupby("beam_width").size().to_dict() == {1: 1, 2: 2, 5: 5}
    assert list(out.columns) == ["prompt_id", "sample", "text", "logprob", "beam_width"]
    # width 1 is the greedy continuation until EOS (the context precedes the text)
    ids = lm.context_ids("Q: The capital of")
    assert out[out["beam_width"] == 1]["text"].iloc[0] == naive_text(model, tok, ids, 3)
    assert out["text"].str.startswith(" ").any()  # a byte-level BPE word after the prompt


def naive_text(model, tok, ids, steps):
    ids, start = list(ids), len(ids)
    for _ in range(steps):
        with torch.no_grad():
            nxt = int(model(input_ids=torch.tensor([ids])).logits[0, -1].argmax())
        ids.append(nxt)
        if nxt == tok.eos_token_id:
            break
    return tok.decode(ids[start:], skip_special_tokens=True)
