"""BELIEF Acc@1 fluctuation, Consist, Ovconf, coverage, BELIEF-ICL matching (belief-myriadlama §2–3, §7)."""

import math

import numpy as np
import pandas as pd
import pytest
from contract_frames import full
from factprobe.hashing import stable_hash
from factprobe.metrics.belief import (
    accuracy_fluctuation,
    belief_dataset,
    belief_per_fact,
    calibration_bins,
    consistency,
    coverage,
    generation_predictions,
    normalize,
    one_way_match,
    overconfidence,
    ranking_predictions,
    sampled_accuracies,
    two_way_match,
    vocabulary_predictions,
)
from factprobe.metrics.common import correct_entities, entity_scores, prompt_frame

ln = math.log


def test_consistency_pairwise():
    assert consistency(["A", "A", "B"]) == pytest.approx(1 / 3)
    assert consistency(["A", "A", "A", "A"]) == 1.0
    assert math.isnan(consistency(["A"]))
    assert consistency(["a guitar", "guitar", "piano"], match="two_way") == pytest.approx(1 / 3)


def test_string_matching_of_generations():
    gen = normalize("He plays guitars.")
    assert gen == ("he", "play", "guitar")
    assert one_way_match(gen, normalize("guitar"))
    assert not one_way_match(normalize("guitar"), normalize("a guitar"))  # one-directional
    assert two_way_match(normalize("guitar"), normalize("a guitar"))
    assert not one_way_match(normalize("New Zealand"), normalize("New York"))
    assert not one_way_match(gen, ())  # an empty answer never matches
    assert normalize("Paris", "en") == ("paris",)  # -s after i is kept


def test_ovconf_equal_bins_one_bin_and_all_correct():
    conf = [0.9, 0.8, 0.7, 0.6]
    acc = [1, 0, 1, 0]
    bins = calibration_bins(conf, acc, n_bins=2)
    assert list(bins["size"]) == [2, 2]
    assert bins["conf"].tolist() == pytest.approx([0.85, 0.65])
    assert bins["acc"].tolist() == [0.5, 0.5]
    assert overconfidence(bins) == pytest.approx(0.5 * 0.35 + 0.5 * 0.15)
    one = calibration_bins(conf, acc, n_bins=1)
    assert overconfidence(one) == pytest.approx(0.75 - 0.5)
    every = calibration_bins(conf, [1, 1, 1, 1], n_bins=10)  # fewer prompts than bins
    assert len(every) == 4
    assert overconfidence(every) == pytest.approx(0.75 - 1.0)  # negative: underconfident


def test_ovconf_unequal_bins_weighted_by_size():
    bins = calibration_bins([0.5, 0.4, 0.3, 0.2, 0.1], [0, 0, 1, 1, 1], n_bins=2)
    assert list(bins["size"]) == [3, 2]
    want = 3 / 5 * (0.4 - 1 / 3) + 2 / 5 * (0.15 - 1.0)
    assert overconfidence(bins) == pytest.approx(want)


def test_sampled_accuracies_are_hash_seeded():
    per = pd.DataFrame(
        {
            "pair": ["t1", "t1", "t2", "t3", "t3", "t3"],
            "prompt_id": ["a", "b", "c", "d", "e", "f"],
            "correct": [1, 0, 1, 0, 0, 1],
        }
    )
    accs = sampled_accuracies(per, 20, seed="s")
    vals = {"t1": [1, 0], "t2": [1], "t3": [0, 0, 1]}
    mask = 2**64 - 1

    def mix(x):  # SplitMix64 finaliser in plain Python integers (independent of numpy's uint64)
        x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & mask
        x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & mask
        return x ^ (x >> 31)

    def pick(t, j):
        return vals[t][mix((stable_hash("s", t) + (j + 1) * 0x9E3779B97F4A7C15) & mask) % len(vals[t])]

    want = [np.mean([pick(t, j) for t in ("t1", "t2", "t3")]) for j in range(20)]
    # Chunked evaluation gives the same draws.
    assert sampled_accuracies(per, 20, seed="s", chunk_cells=4).tolist() == pytest.approx(want)
    assert accs.tolist() == pytest.approx(want)
    shuffled = sampled_accuracies(per.iloc[::-1], 20, seed="s")
    assert shuffled.tolist() == pytest.approx(want)  # independent of row order
    fl = accuracy_fluctuation(accs)
    assert fl["acc_range"] == pytest.approx(max(want) - min(want))
    assert fl["acc_sd"] == pytest.approx(float(np.std(want)))
    single = per.drop_duplicates("pair")
    assert accuracy_fluctuation(sampled_accuracies(single, 5))["acc_range"] == 0.0


def test_coverage_average_maximum_oracle():
    per = pd.DataFrame(
        {
            "pair": ["s1", "s1", "s1", "s2", "s2", "s3"],
            "property": ["P1", "P1", "P1", "P1", "P1", "P2"],
            "template_id": ["t1", "t1", "t2", "t1", "t2", "u1"],
            "prompt_id": list("abcdef"),
            # s1: t1 right with its second subject form; s2: only t2 right; s3 (P2) wrong.
            "correct": [0, 1, 0, 0, 1, 0],
        }
    )
    cov = coverage(per, np.array([0.2, 0.4]))
    assert cov["cov_average"] == pytest.approx(0.3)
    # P1: t1 covers s1 only (0.5), t2 covers s2 only (0.5) -> max 0.5 over 2 pairs; P2: 0 over 1.
    assert cov["cov_maximum"] == pytest.approx((0.5 * 2 + 0 * 1) / 3)
    assert cov["cov_oracle"] == pytest.approx(2 / 3)


FACTS = full(
    "facts",
    pd.DataFrame(
        {
            "fact_id": ["S|P|A", "T|P|B", "T|P|C"],
            "subject": ["S", "T", "T"],
            "property": ["P", "P", "P"],
            "object": ["A", "B", "C"],
            "objects": [["A"], ["B", "C"], ["B", "C"]],
        }
    ),
)
PROMPTS = prompt_frame(
    full(
        "prompts",
        pd.DataFrame(
            {
                "prompt_id": ["s1", "s2", "s3", "tb1", "tc1"],
                "fact_id": ["S|P|A", "S|P|A", "S|P|A", "T|P|B", "T|P|C"],
                "template_id": ["x", "y", "z", "x", "x"],
                # The N-M pair's two facts share one prompt text: counted once.
                "text": ["S is", "S was", "S, i.e.", "T is", "T is"],
            }
        ),
    )
)
CANDS = full(
    "candidates",
    pd.DataFrame(
        {
            "fact_id": ["S|P|A", "S|P|A", "T|P|B", "T|P|C"],
            "entity": ["A", "D", "D", "D"],
            "role": ["object", "distractor", "distractor", "distractor"],
            "strategy": ["object", "random", "random", "random"],
            "rank": [0, 1, 1, 1],
        }
    ),
)
SCORES = pd.DataFrame(
    [
        ("s1", "A", "a", ln(0.6)),
        ("s1", "D", "d", ln(0.2)),
        ("s2", "A", "a", ln(0.3)),
        ("s2", "D", "d", ln(0.3)),  # tie -> predicted D
        ("s3", "A", "a", ln(0.1)),
        ("s3", "D", "d", ln(0.3)),
        ("tb1", "B", "b", ln(0.1)),
        ("tb1", "C", "c", ln(0.5)),
        ("tb1", "D", "d", ln(0.2)),
        ("tc1", "B", "b", ln(0.1)),
        ("tc1", "C", "c", ln(0.5)),
        ("tc1", "D", "d", ln(0.2)),
    ],
    columns=["prompt_id", "entity", "form", "logprob"],
).assign(n_tokens=1)
SCORES = full("scores", SCORES)


def test_ranking_predictions_ties_nm_and_confidence():
    pp = ranking_predictions(entity_scores(SCORES), PROMPTS, CANDS, FACTS, correct_entities(FACTS))
    got = pp.set_index("prompt_id")
    assert len(pp) == 4  # tc1 duplicates tb1's text within pair T|P
    assert got.loc["s1", "prediction"] == "A" and got.loc["s1", "correct"] == 1.0
    assert got.loc["s1", "confidence"] == pytest.approx(0.6 / 0.8)
    assert got.loc["s2", "prediction"] == "D" and got.loc["s2", "correct"] == 0.0
    assert got.loc["s2", "confidence"] == pytest.approx(0.5)
    assert got.loc["tb1", "prediction"] == "C" and got.loc["tb1", "correct"] == 1.0  # other valid object
    assert got.loc["tb1", "confidence"] == pytest.approx(0.5 / 0.8)
    per_fact = belief_per_fact(pp, FACTS, "belief", "exact").set_index(["fact_id", "measure"])["value"]
    assert per_fact[("S|P|A", "belief_acc")] == pytest.approx(1 / 3)
    assert per_fact[("T|P|C", "belief_acc")] == 1.0
    # Consist and coverage are per pair, in the suite table only.
    assert not per_fact.index.get_level_values("measure").str.contains("consist|oracle").any()
    ds = belief_dataset(pp, "belief", 50, 10).set_index(["measure", "bin"])["value"]
    # S|P: A, D, D -> 1/3; T|P has one prompt (tc1 repeats tb1): no term in eq. (1).
    assert ds[("belief_consist", -1)] == pytest.approx(1 / 3)
    assert ds[("belief_cov_oracle", -1)] == 1.0
    assert ds[("belief_cov_maximum", -1)] == pytest.approx(1.0)  # template x covers both pairs
    # (confidence, correct): s1 (0.6/0.8, 1), s2 (0.3/0.6, 0), s3 (0.3/0.4, 0), tb1 (0.5/0.8, 1); 4 one-prompt bins.
    pairs = [(0.75, 1), (0.5, 0), (0.75, 0), (0.625, 1)]
    assert ds[("belief_ovconf", -1)] == pytest.approx(np.mean([c - a for c, a in pairs]))
    assert ds[("belief_calib_conf", 0)] == pytest.approx(0.75)


def test_generation_predictions():
    gens = pd.DataFrame(
        [
            ("s1", 0, "the guitars", -1.0),
            ("s1", 1, "guitar", -1.0),
            ("s1", 2, "piano", -2.0),
            ("s1", 3, "guitars", -1.5),
            ("s2", 0, "piano", -1.0),
            ("tb1", 0, "C city", -1.0),
        ],
        columns=["prompt_id", "sample", "text", "logprob"],
    )
    forms = pd.DataFrame({"entity": ["A", "C"], "lang": ["en", "en"], "form": ["Guitar", "C"]})
    pp = generation_predictions(gens, PROMPTS, FACTS, correct_entities(FACTS), forms).set_index("prompt_id")
    assert pp.loc["s1", "correct"] == 1.0
    assert pp.loc["s1", "confidence"] == pytest.approx(2 / 3)
    assert pp.loc["s2", "correct"] == 0.0 and math.isnan(pp.loc["s2", "confidence"])
    assert pp.loc["tb1", "correct"] == 1.0
    ds = belief_dataset(pp.reset_index(), "belief_icl", 10, 10).set_index("measure")["value"]
    assert ds["belief_icl_consist"] == 0.0  # S|P: "the guitar" vs "piano"; T|P: one prompt


def test_one_matcher_lemmatises_plurals():
    """§3.2: strings are tokenised and lemmatised, "a guitar" ~ "guitars"."""
    assert normalize("cities") == normalize("city") == ("city",)
    assert normalize("a guitar") == ("a", "guitar") and normalize("guitars") == ("guitar",)
    assert normalize("boxes") == ("box",) and normalize("churches") == ("church",)
    assert (
        normalize("Texas") == ("texas",) and normalize("Paris") == ("paris",) and normalize("bus") == ("bus",)
    )
    assert one_way_match(normalize("the twin cities of Kyoto"), normalize("city"))
    assert not one_way_match(normalize("city"), normalize("twin city"))  # Acc: one way only
    assert two_way_match(normalize("city"), normalize("twin cities"))  # Consist: either way


def test_vocabulary_argmax_prediction_and_confidence():
    """§2.1: ŵ = argmax over the vocabulary; §2.4: confidence o_max = Pr(ŵ).

    Top-1 next tokens: s1 " a" (0.3, a name of A: right), s2 " the" (0.2, wrong), s3 " d" (0.1,
    a distractor's name: wrong), tb1 " c" (0.4, C is a valid object of the N-M pair T|P: right);
    tc1 repeats tb1's text. Four one-prompt bins: Ovconf = mean(conf - acc) =
    ((0.3-1) + (0.2-0) + (0.1-0) + (0.4-1)) / 4 = -0.25. The candidate-set variant on the same
    prompts renormalises (s1: 0.6/0.8 = 0.75) — the inflation the paper's definition avoids.
    """
    topk = pd.DataFrame(
        [
            ("s1", 1, " a", ln(0.3)),
            ("s1", 2, " d", ln(0.2)),
            ("s2", 1, " the", ln(0.2)),
            ("s2", 2, " a", ln(0.1)),
            ("s3", 1, " d", ln(0.1)),
            ("tb1", 1, " c", ln(0.4)),
            ("tc1", 1, " c", ln(0.4)),
        ],
        columns=["prompt_id", "rank", "token", "logprob"],
    )
    pp = vocabulary_predictions(topk, SCORES, PROMPTS, FACTS, correct_entities(FACTS))
    got = pp.set_index("prompt_id")
    assert len(pp) == 4
    assert got["correct"].to_dict() == {"s1": 1.0, "s2": 0.0, "s3": 0.0, "tb1": 1.0}
    assert got["confidence"].to_dict() == pytest.approx({"s1": 0.3, "s2": 0.2, "s3": 0.1, "tb1": 0.4})
    assert got.loc["s2", "prediction"] == "the"
    ds = belief_dataset(pp, "belief", 50, 10).set_index(["measure", "bin"])["value"]
    assert ds[("belief_ovconf", -1)] == pytest.approx(-0.25)
    assert ds[("belief_consist", -1)] == 0.0  # S|P: a, the, d; T|P: one prompt
    cand = ranking_predictions(entity_scores(SCORES), PROMPTS, CANDS, FACTS, correct_entities(FACTS))
    assert cand.set_index("prompt_id").loc["s1", "confidence"] == pytest.approx(0.75)
    assert vocabulary_predictions(None, SCORES, PROMPTS, FACTS, correct_entities(FACTS)).empty


def test_default_samplings_follow_the_paper():
    """§5.1: N = 50,000 samplings for Acc@1 mean/range/SD; §3.2: 100 samples per prompt."""
    import re
    from pathlib import Path

    from factprobe.settings import Metrics, Scoring

    assert Metrics(families={}).belief_samplings == 50_000
    assert Scoring().samples == 100 and Scoring().topk == 100
    rules = Path(__file__).resolve().parents[2] / "workflow" / "rules"
    text = (rules / "score.smk").read_text()
    # Per suite: scoring.samples, or 0 for a greedy-only suite (generate: greedy).
    assert re.search(r"samples=lookup\(dpath=\"\{suite\}\", within=RUN\.generation_samples\)", text)
    # (factprobe.plumbing.run_settings.generation_samples: tests/unit/test_run_settings.py)
    assert re.search(r"topk=CFG\.scoring\.topk", text)


def test_paper_scale_samplings_are_fast_and_converge():
    """§5.1 N = 50,000: the mean of the sampled Acc@1 converges to the mean per-pair accuracy
    (here (1/2 + 1 + 1/3) / 3 = 0.6111) and the SD to sqrt(Σ p(1-p)) / |T| = 0.2291."""
    import time

    per = pd.DataFrame(
        {
            "pair": ["t1", "t1", "t2", "t3", "t3", "t3"],
            "prompt_id": ["a", "b", "c", "d", "e", "f"],
            "correct": [1, 0, 1, 0, 0, 1],
        }
    )
    began = time.perf_counter()
    accs = sampled_accuracies(per, 50_000)
    assert time.perf_counter() - began < 5
    assert accs.mean() == pytest.approx((0.5 + 1 + 1 / 3) / 3, abs=0.005)
    assert accs.std() == pytest.approx(np.sqrt(0.25 + 0 + 2 / 9) / 3, abs=0.005)
