"""PROBELM accuracy, MRR, NDCG and PLAUSIBILITY (probelm-plausibility §4.2) on hand tables."""

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd
import pytest
from contract_frames import full, full_prompt_frame
from factprobe.metrics import plausibility
from factprobe.metrics.common import entity_scores
from factprobe.metrics.plausibility import plausibility_per_fact, plausibility_score

L2 = math.log2


# --------------------------------------------------------------------------- scalar reference
# One scenario group under one prompt, written from the definitions of §4.2 (module docstring of
# factprobe.metrics.plausibility); the vectorised library code is checked against it below.


def grades(alternative_ranks: Sequence[float]) -> tuple[float, list[float]]:
    """(object grade, grades of the alternatives in the given order) from the generator's ranks."""
    order = np.argsort(np.asarray(alternative_ranks, dtype=float), kind="stable")
    m = len(order)
    out = [0.0] * m
    for position, index in enumerate(order, start=1):
        out[index] = float(m + 1 - position)
    return float(m + 1), out


def rank_scenarios(scores: Sequence[float], grade_list: Sequence[float]) -> np.ndarray:
    """Indices of scenarios from most to least plausible (higher score first; ties: lower grade first)."""
    return np.lexsort((np.asarray(grade_list, dtype=float), -np.asarray(scores, dtype=float)))


def _gain(grade: np.ndarray, gain: str) -> np.ndarray:
    """Linear (the grade, Järvelin & Kekäläinen) or exponential (2^g - 1) gain."""
    return grade if gain == "linear" else np.power(2.0, grade) - 1.0


def ndcg(ranked_grades: Sequence[float], gain: str = "exponential", normalization: str = "ideal") -> float:
    """NDCG of a ranked list of graded scenarios (§4.2): DCG / ideal DCG, or min-max scaled
    between the worst and the ideal order (module docstring of factprobe.metrics.plausibility)."""
    g = np.asarray(ranked_grades, dtype=float)
    discount = 1.0 / np.log2(np.arange(2, g.size + 2))
    dcg = float((_gain(g, gain) * discount).sum())
    ideal = float((_gain(np.sort(g)[::-1], gain) * discount).sum())
    worst = float((_gain(np.sort(g), gain) * discount).sum()) if normalization == "minmax" else 0.0
    return (dcg - worst) / (ideal - worst) if ideal > worst else 1.0


def scenario_group_scores(
    object_score: float,
    alternative_scores: Sequence[float],
    alternative_ranks: Sequence[float],
    gain: str,
    normalization: str = "ideal",
) -> tuple[float, float, float]:
    """(accuracy, reciprocal rank, NDCG) of one scenario group under one prompt (§4.2).

    Scores are mean log-probabilities per token (higher = lower perplexity = more plausible).
    """
    top, alt = grades(alternative_ranks)
    all_grades = [top, *alt]
    order = rank_scenarios([object_score, *alternative_scores], all_grades)
    rank = int(np.flatnonzero(order == 0)[0]) + 1
    return float(rank == 1), 1.0 / rank, ndcg([all_grades[i] for i in order], gain, normalization)


def test_grades_from_alternative_ranks():
    assert grades([2, 1, 3]) == (4.0, [2.0, 3.0, 1.0])


def test_scenario_group_hand_values():
    # Object (grade 3) ranked second behind the top alternative (grade 2); alt 2 (grade 1) last.
    acc, rr, nd = scenario_group_scores(-1.0, [-0.5, -2.0], [1, 2], "exponential")
    dcg = (2**2 - 1) / L2(2) + (2**3 - 1) / L2(3) + (2**1 - 1) / L2(4)
    idcg = (2**3 - 1) / L2(2) + (2**2 - 1) / L2(3) + (2**1 - 1) / L2(4)
    assert (acc, rr) == (0.0, 0.5)
    assert nd == pytest.approx(dcg / idcg)
    assert nd == pytest.approx(7.916508 / 9.392789, abs=1e-6)
    _, _, lin = scenario_group_scores(-1.0, [-0.5, -2.0], [1, 2], "linear")
    assert lin == pytest.approx((2 + 3 / L2(3) + 1 / 2) / (3 + 2 / L2(3) + 1 / 2))


def test_tie_with_object_is_a_failure():
    acc, rr, _ = scenario_group_scores(-1.0, [-1.0], [1], "exponential")
    assert (acc, rr) == (0.0, 0.5)


def test_perfect_ranking_and_single_scenario():
    assert ndcg([3, 2, 1]) == pytest.approx(1.0)
    assert scenario_group_scores(-1.0, [], [], "exponential") == (1.0, 1.0, 1.0)


def test_per_fact_per_style_and_plausibility_mean_of_nine():
    facts = pd.DataFrame({"fact_id": ["F"], "subject": ["S"], "property": ["P"], "object": ["O"]})
    styles = ["statement", "completion", "question"]
    prompts = full_prompt_frame(
        pd.DataFrame({"prompt_id": [f"p{i}" for i in range(3)], "fact_id": "F", "style": styles})
    )
    cands = pd.DataFrame(
        {
            "fact_id": "F",
            "entity": ["O", "A1", "A2", "R9"],
            "role": ["object", "distractor", "distractor", "distractor"],
            "strategy": ["object", "cooccur", "cooccur", "random"],  # random is not a scenario
            "rank": [0, 1, 2, 1],
        }
    )
    rows = []
    # statement: O first. completion: A1 first, O second (perplexity over 2 tokens). question: O last.
    per_style = {
        "p0": {"O": (-1, 1), "A1": (-2, 1), "A2": (-3, 1)},
        "p1": {"O": (-3, 2), "A1": (-1, 1), "A2": (-4, 2)},
        "p2": {"O": (-5, 1), "A1": (-1, 1), "A2": (-2, 1)},
    }
    for pid, ents in per_style.items():
        for e, (lp, nt) in ents.items():
            rows.append((pid, e, e.lower(), float(lp), nt))
        rows.append((pid, "R9", "r9", 0.0, 1))
    scores = pd.DataFrame(rows, columns=["prompt_id", "entity", "form", "logprob", "n_tokens"])
    out = plausibility_per_fact(
        entity_scores(full("scores", scores)), prompts, full("candidates", cands), facts, ["cooccur"]
    )
    got = out.set_index(["style", "measure"])["value"]
    assert got[("statement", "plaus_acc")] == 1.0
    assert got[("completion", "plaus_rr")] == 0.5  # O: -1.5/token vs A1 -1.0, A2 -2.0
    assert got[("question", "plaus_rr")] == pytest.approx(1 / 3)
    # Standard NDCG (linear gain = grade): the question ranks grades 2, 1, 3.
    assert got[("question", "plaus_ndcg")] == pytest.approx((2 + 1 / L2(3) + 3 / 2) / (3 + 2 / L2(3) + 1 / 2))
    q_dcg = (2**2 - 1) / L2(2) + (2**1 - 1) / L2(3) + (2**3 - 1) / L2(4)
    q_idcg = (2**3 - 1) + (2**2 - 1) / L2(3) + 1 / L2(4)
    means = out.groupby(["lang", "verbalization", "style", "shots", "measure"])["value"].mean().reset_index()
    score = plausibility_score(means)
    assert int(score["n_parts"].iloc[0]) == 9
    # PLAUSIBILITY: accuracy, MRR and the headline (min-max) NDCG, not the standard one.
    main = out[out["measure"].isin(["plaus_acc", "plaus_rr", "plaus_ndcg_minmax"])]
    assert score["value"].iloc[0] == pytest.approx(main["value"].mean())
    # plaus_ndcg_minmax (exponential gain, min-max scale): the worst order (grades 1, 2, 3) is 0,
    # so the question's value is (DCG - worst) / (ideal - worst).
    q_worst = 1 + (2**2 - 1) / L2(3) + (2**3 - 1) / L2(4)
    assert got[("question", "plaus_ndcg_minmax")] == pytest.approx((q_dcg - q_worst) / (q_idcg - q_worst))
    assert got[("statement", "plaus_ndcg_minmax")] == 1.0 == got[("statement", "plaus_ndcg")]


def test_headline_ndcg_is_min_max_and_enters_plausibility():
    """One prompt, three scenarios: the fact (grade 3) second, behind alternative A (grade 2),
    alternative B (grade 1) last, so the ranked grades are [2, 3, 1]. By hand:

    standard (plaus_ndcg): DCG = 2 + 3 / log2 3 + 1 / 2 = 4.392789, ideal 3 + 2 / log2 3 + 1 / 2 =
    4.761860, NDCG = 0.922495;
    min-max (plaus_ndcg_minmax, gains 2^g - 1 = 3, 7, 1): DCG = 3 + 7 / log2 3 + 1 / 2 = 7.916508,
    ideal 7 + 3 / log2 3 + 1 / 2 = 9.392789, worst 1 + 3 / log2 3 + 7 / 2 = 6.392789,
    NDCG = 1.523719 / 3 = 0.507906;
    PLAUSIBILITY of the one style = (acc 0 + RR 0.5 + headline 0.507906) / 3 = 0.335969 (with the
    standard NDCG it would be 0.474165)."""
    assert plausibility.HEADLINE == "plaus_ndcg_minmax"
    assert plausibility.PARTS == ["plaus_acc", "plaus_rr", "plaus_ndcg_minmax"]
    facts = pd.DataFrame({"fact_id": ["F"], "subject": ["S"], "property": ["P"], "object": ["O"]})
    prompts = full_prompt_frame(pd.DataFrame({"prompt_id": ["p"], "fact_id": ["F"]}))
    cands = pd.DataFrame(
        {
            "fact_id": "F",
            "entity": ["O", "A", "B"],
            "role": ["object", "distractor", "distractor"],
            "strategy": ["object", "cooccur", "cooccur"],
            "rank": [0, 1, 2],
        }
    )
    scores = pd.DataFrame(
        {"prompt_id": "p", "entity": ["O", "A", "B"], "form": ["o", "a", "b"], "logprob": [-2.0, -1.0, -3.0]}
    ).assign(n_tokens=1)
    out = plausibility_per_fact(
        entity_scores(full("scores", scores)), prompts, full("candidates", cands), facts, ["cooccur"]
    )
    got = out.set_index("measure")["value"]
    assert (got["plaus_acc"], got["plaus_rr"]) == (0.0, 0.5)
    assert got["plaus_ndcg"] == pytest.approx(0.922495, abs=1e-6)
    assert got["plaus_ndcg_minmax"] == pytest.approx(0.507906, abs=1e-6)
    means = out.groupby(["lang", "verbalization", "style", "shots", "measure"])["value"].mean().reset_index()
    score = plausibility_score(means)
    assert int(score["n_parts"].iloc[0]) == 3
    assert score["value"].iloc[0] == pytest.approx(0.335969, abs=1e-6)


def test_plausibility_per_fact_matches_scalar_reference_on_random_scores():
    rng = np.random.default_rng(5)
    facts = pd.DataFrame({"fact_id": ["F"], "subject": ["S"], "property": ["P"], "object": ["O"]})
    prompts = full_prompt_frame(pd.DataFrame({"prompt_id": ["p"], "fact_id": ["F"]}))
    alts = ["A1", "A2", "A3", "A4"]
    cands = pd.DataFrame(
        {
            "fact_id": "F",
            "entity": ["O", *alts],
            "role": ["object"] + ["distractor"] * 4,
            "strategy": ["object"] + ["cooccur"] * 4,
            "rank": [0, 3, 1, 4, 2],
        }
    )
    for trial in range(20):
        values = rng.normal(size=5).round(1)  # per-token log-probabilities, ties likely
        scores = pd.DataFrame(
            {
                "prompt_id": "p",
                "entity": ["O", *alts],
                "form": ["o", "a1", "a2", "a3", "a4"],
                "logprob": values,
                "n_tokens": 1,
            }
        )
        out = plausibility_per_fact(
            entity_scores(full("scores", scores)), prompts, full("candidates", cands), facts, ["cooccur"]
        )
        got = out.set_index("measure")["value"]
        for name, gain, norm in (
            ("plaus_ndcg", "linear", "ideal"),
            ("plaus_ndcg_minmax", "exponential", "minmax"),
        ):
            acc, rr, nd = scenario_group_scores(values[0], values[1:], [3, 1, 4, 2], gain, norm)
            assert (got["plaus_acc"], got["plaus_rr"]) == (acc, rr), trial
            assert got[name] == pytest.approx(nd), (trial, name)


class WordLM:
    """A hand-made model: every word has a fixed log-probability, whatever precedes it.

    ``loglikelihood`` sums the continuation's words (end marker ``none``); the sentence mode of
    the model interface (an empty context) then sums every word of the sentence.
    """

    end_marker = "none"

    def __init__(self, logprobs: dict[str, float]):
        self.logprobs = logprobs

    def loglikelihood(self, requests, progress=False, on_done=None):
        from factprobe.lm import LoglikResult

        out = []
        for r in requests:
            words = r.continuation.split()
            lps = [self.logprobs[w] for w in words]
            out.append(LoglikResult(sum(lps), len(words), lps[0], 0.0))
        return out

    def sentence_loglikelihood(self, requests, progress=False):
        from factprobe.lm import LM

        return LM.sentence_loglikelihood(self, requests, progress)


def test_sentence_perplexity_flips_the_top_answer():
    """PROBELM §4.1 ranks the 11 scenarios by the perplexity of the *whole* sentence.

    Hand example: every prompt word has log-probability -1 ("Marcelo is a citizen of": -5 over 5
    words); "Spain" -3; "United" -2, "Kingdom" -3.
    Answer only (per-token log-prob): Spain -3/1 = -3 < United Kingdom -5/2 = -2.5: the distractor
    is on top. Whole sentence: Spain (-5 - 3)/6 = -1.333 > United Kingdom (-5 - 5)/7 = -1.429:
    the plausible scenario is on top (accuracy 1, RR 1).
    """
    from factprobe.scoring.suite import build_pairs, score_pairs

    lm = WordLM(
        {"Marcelo": -1, "is": -1, "a": -1, "citizen": -1, "of": -1, "Spain": -3, "United": -2, "Kingdom": -3}
    )
    facts = pd.DataFrame({"fact_id": ["F"], "subject": ["Q1"], "property": ["P27"], "object": ["Q29"]})
    prompts = pd.DataFrame(
        {
            "prompt_id": ["p"],
            "fact_id": ["F"],
            "lang": ["en"],
            "text": ["Marcelo is a citizen of"],
            "context": [""],
        }
    )
    cands = pd.DataFrame(
        {
            "fact_id": "F",
            "entity": ["Q29", "Q145"],
            "role": ["object", "distractor"],
            "strategy": ["object", "cooccur"],
            "rank": [0, 1],
        }
    )
    forms = pd.DataFrame({"entity": ["Q29", "Q145"], "lang": "en", "form": ["Spain", "United Kingdom"]})
    pairs = build_pairs(prompts, cands, forms)
    measures = {}
    for sentence in (False, True):
        scores = score_pairs(lm, pairs, progress=False, sentence=sentence)
        per = plausibility.plausibility_per_prompt(
            entity_scores(full("scores", scores)),
            full_prompt_frame(prompts),
            full("candidates", cands),
            facts,
            ["cooccur"],
        )
        measures[sentence] = per.iloc[0]
        if sentence:
            got = scores.set_index("entity")
            assert got.loc["Q29", ["logprob", "n_tokens"]].tolist() == [-8.0, 6]
            assert got.loc["Q145", ["logprob", "n_tokens"]].tolist() == [-10.0, 7]
    assert (measures[False]["plaus_acc"], measures[False]["plaus_rr"]) == (0.0, 0.5)
    assert (measures[True]["plaus_acc"], measures[True]["plaus_rr"]) == (1.0, 1.0)


def released_group(n_alternatives: int = 10, filtered: Sequence[int] = ()):
    """One PRobELM scenario group as the workflow holds it: the fact (released rank 1, relevance
    n + 1) and alternatives ranked i = 1..n (released rank i + 1, relevance n + 1 - i); ``filtered``
    ranks are missing (no form, Ω), leaving gaps as in the released files (ranks 1, 2, 3, 7, 8)."""
    facts = pd.DataFrame({"fact_id": ["F"], "subject": ["S"], "property": ["P"], "object": ["O"]})
    prompts = full_prompt_frame(pd.DataFrame({"prompt_id": ["p"], "fact_id": ["F"]}))
    ranks = [i for i in range(1, n_alternatives + 1) if i not in filtered]
    cands = pd.DataFrame(
        {
            "fact_id": "F",
            "entity": ["O", *[f"A{i}" for i in ranks]],
            "role": ["object"] + ["distractor"] * len(ranks),
            "strategy": ["object"] + ["cooccur"] * len(ranks),
            "rank": [0, *ranks],
            "relevance": [n_alternatives + 1.0, *[n_alternatives + 1.0 - i for i in ranks]],
        }
    )
    return facts, prompts, cands


def test_ndcg_grades_are_the_released_ranks_with_gaps():
    """§4.2 graded relevance: the released data keeps ranks 1, 2, 3, 7, 8 after filtering, so the
    grades are 11, 10, 9, 5, 4 (relevance = 12 - rank), not re-numbered 5, 4, 3, 2, 1."""
    facts, prompts, cands = released_group(10, filtered=[3, 4, 5, 8, 9, 10])
    # Model order: A1 (grade 10), O (11), A7 (4), A2 (9), A6 (5).
    lp = {"A1": -1.0, "O": -2.0, "A7": -3.0, "A2": -4.0, "A6": -5.0}
    scores = pd.DataFrame(
        {"prompt_id": "p", "entity": list(lp), "form": list(lp), "logprob": list(lp.values()), "n_tokens": 1}
    )
    got = plausibility_per_fact(
        entity_scores(full("scores", scores)), prompts, full("candidates", cands), facts, ["cooccur"]
    )
    got = got.set_index("measure")["value"]
    d = [1 / L2(p + 1) for p in range(1, 6)]
    dcg = 10 * d[0] + 11 * d[1] + 4 * d[2] + 9 * d[3] + 5 * d[4]
    idcg = 11 * d[0] + 10 * d[1] + 9 * d[2] + 5 * d[3] + 4 * d[4]
    assert got["plaus_ndcg"] == pytest.approx(dcg / idcg)
    assert got["plaus_rr"] == 0.5


def test_random_ranker_ndcg_chance_levels():
    """A random order of the 11 scenarios (§4.1): MRR H(11)/11 = 0.2745. The standard NDCG
    (linear gain = grade 1..11, ideal DCG) gives a random ranker 0.832, three times MRR, while the
    paper's NDCG tracks its MRR within a point (Table 2): the paper's convention is not standard
    and not stated. The min-max adaptation (2^g - 1, worst order = 0) gives 0.306. The library's
    expectation is exact (E[DCG] = mean gain x sum of discounts); a simulation with the scalar
    reference above agrees."""
    facts, prompts, cands = released_group(10)
    entities = list(cands["entity"])
    scores = pd.DataFrame(
        {"prompt_id": "p", "entity": entities, "form": entities, "logprob": -np.arange(11.0), "n_tokens": 1}
    )
    got = plausibility_per_fact(
        entity_scores(full("scores", scores)), prompts, full("candidates", cands), facts, ["cooccur"]
    )
    got = got.set_index("measure")["value"]
    assert got["plaus_ndcg"] == 1.0 == got["plaus_ndcg_minmax"]  # the released order itself is ideal
    chance = {"ideal": got["plaus_ndcg_chance"], "minmax": got["plaus_ndcg_minmax_chance"]}
    mrr_chance = sum(1 / i for i in range(1, 12)) / 11
    assert got["plaus_rr_chance"] == pytest.approx(mrr_chance)
    assert chance["ideal"] == pytest.approx(0.832, abs=1e-3)
    assert chance["minmax"] == pytest.approx(0.306, abs=1e-3)
    rng = np.random.default_rng(0)
    grades = np.arange(11.0, 0.0, -1.0)
    sims = {"ideal": [], "minmax": []}
    for _ in range(4000):
        order = rng.permutation(11)
        sims["ideal"].append(ndcg(grades[order], "linear", "ideal"))
        sims["minmax"].append(ndcg(grades[order], "exponential", "minmax"))
    for norm in sims:
        assert abs(np.mean(sims[norm]) - chance[norm]) < 0.01, norm
    assert chance["minmax"] - mrr_chance < 0.05 < chance["ideal"] - mrr_chance


def test_subject_swaps_fill_the_subject_slot_and_are_ranked_on_their_own():
    """PROBELM Algorithm 1 makes two lists, object swaps and subject swaps ("repeat with o fixed");
    the released data has both (10 + 10 per scenario). A subject swap replaces the prompt's
    subject and keeps the object (by its label), and its group is the true scenario + the subject
    swaps, ranked by sentence perplexity (§4.1).

    Words: prompt words -1 each, Spain -3, España -0.5 (an alias), United -2, Kingdom -3,
    Pepe -0.5, Kaka -4.
    Object side: "Marcelo is a citizen of España" -5.5/6 = -0.917 beats Spain -8/6 and
    "United Kingdom" -10/7: accuracy 1.
    Subject side (object by its label "Spain"): "Pepe is a citizen of Spain" (-0.5 - 4 - 3)/6 =
    -1.25 beats the true "Marcelo ... Spain" -8/6 = -1.333, which beats "Kaka ... Spain" -11/6:
    the true scenario is 2nd of 3, RR 0.5.
    """
    from factprobe.distractors.swaps import subject_swaps
    from factprobe.scoring.suite import build_pairs, score_pairs

    lm = WordLM(
        {"Marcelo": -1, "is": -1, "a": -1, "citizen": -1, "of": -1, "Spain": -3, "España": -0.5}
        | {"United": -2, "Kingdom": -3, "Pepe": -0.5, "Kaka": -4}
    )
    facts = pd.DataFrame({"fact_id": ["F"], "subject": ["Q1"], "property": ["P27"], "object": ["Q29"]})
    prompts = pd.DataFrame(
        {
            "prompt_id": ["p"],
            "fact_id": ["F"],
            "lang": ["en"],
            "text": ["Marcelo is a citizen of"],
            "context": [""],
            "subject_form": ["Marcelo"],
            "style": ["statement"],
        }
    )
    cands = pd.DataFrame(
        {
            "fact_id": "F",
            "entity": ["Q29", "Q145", "Q100", "Q200"],
            "role": ["object", "distractor", "distractor", "distractor"],
            "strategy": ["object", "cooccur", "cooccur", "cooccur"],
            "rank": [0, 1, 1, 2],
            "relevance": [11.0, 10.0, 10.0, 9.0],
            "side": ["object", "object", "subject", "subject"],
        }
    )
    forms = pd.DataFrame(
        {
            "entity": ["Q29", "Q29", "Q145", "Q100", "Q200"],
            "lang": "en",
            "form": ["España", "Spain", "United Kingdom", "Pepe", "Kaka"],
            "source": ["alias", "label", "label", "label", "label"],
        }
    )
    # Without subject swaps the subject-side alternatives are not put in the object slot.
    plain = build_pairs(prompts, cands, forms)
    assert set(plain["entity"]) == {"Q29", "Q145"}
    # The subject swaps are prompts of their own (real ids, real subject entities), grouped by
    # the prompt they swap; the true scenario is the prompt itself with the fact's subject.
    swaps = subject_swaps(prompts, cands, forms, facts)
    assert set(swaps["group_prompt_id"]) == {"p"} and swaps["prompt_id"].is_unique
    assert dict(zip(swaps["subject"], swaps["text"], strict=True)) == {
        "Q1": "Marcelo is a citizen of",
        "Q100": "Pepe is a citizen of",
        "Q200": "Kaka is a citizen of",
    }
    pairs = build_pairs(prompts, cands, forms, swaps=swaps)
    swapped = pairs[pairs["prompt_id"].isin(swaps["prompt_id"])]
    sentences = dict(zip(swapped["entity"], swapped["prompt_text"] + swapped["continuation"], strict=True))
    assert sentences == {
        "Q1": "Marcelo is a citizen of Spain",
        "Q100": "Pepe is a citizen of Spain",
        "Q200": "Kaka is a citizen of Spain",
    }
    scores = score_pairs(lm, pairs, progress=False, sentence=True)
    out = plausibility_per_fact(
        entity_scores(full("scores", scores)),
        full_prompt_frame(prompts),
        full("candidates", cands),
        facts,
        ["cooccur"],
        swaps,
    )
    got = out.set_index(["strategy", "measure"])["value"]
    assert (got[("object", "plaus_acc")], got[("object", "plaus_rr")]) == (1.0, 1.0)
    assert (got[("subject", "plaus_acc")], got[("subject", "plaus_rr")]) == (0.0, 0.5)
    # Subject-side NDCG (exponential gain, min-max): order grades 10, 11, 9.
    g = {11: 2.0**11 - 1, 10: 2.0**10 - 1, 9: 2.0**9 - 1}
    dcg = g[10] + g[11] / L2(3) + g[9] / L2(4)
    ideal = g[11] + g[10] / L2(3) + g[9] / L2(4)
    worst = g[9] + g[10] / L2(3) + g[11] / L2(4)
    assert got[("subject", "plaus_ndcg_minmax")] == pytest.approx((dcg - worst) / (ideal - worst))
    # Standard NDCG (linear gain): (10 + 11 / log2 3 + 9 / 2) / (11 + 10 / log2 3 + 9 / 2).
    assert got[("subject", "plaus_ndcg")] == pytest.approx((10 + 11 / L2(3) + 4.5) / (11 + 10 / L2(3) + 4.5))
    assert got[("subject", "plaus_rr_chance")] == pytest.approx((1 + 1 / 2 + 1 / 3) / 3)


def _changes():
    """A diff 20141201 -> 20190201: four additions, dated 2015-06-01, 2017-03-01 and 2019-06-01
    (a statement dated after the newer dump, e.g. a scheduled event) and one undated."""
    return pd.DataFrame(
        {
            "subject": [1, 2, 3, 4, 5],
            "property": [27, 27, 27, 27, 27],
            "object": [10, 20, 30, 40, 50],
            "status": ["new", "new", "new", "unknown", "static"],
            "rule": ["added", "added", "added", "added_undated", "same"],
            "start": [20150601, pd.NA, 20190601, pd.NA, pd.NA],
            "point_in_time": [pd.NA, 20170301, pd.NA, pd.NA, pd.NA],
        }
    ).astype({"start": "Int32", "point_in_time": "Int32"})


def test_plausible_facts_are_those_after_the_models_own_cutoff():
    """PROBELM §3.1: a model's plausible scenarios are the Wikidata additions after *its* training
    cut-off. Suite facts: the four additions (Q5 is unchanged). Cut-off 2016-01-01: the 2015 fact
    was seen, 3 stay. Cut-off 2018-01-01: the 2017 one too, 2 stay (2019-06 and the undated one,
    added at an unknown time between the dumps). Cut-off 2019-03-01, after the newer dump: the
    undated addition was already in the 2019-02-01 dump, only the 2019-06 statement is new."""
    from factprobe.contracts import ContractError
    from factprobe.diff.rules import new_since, statement_date
    from factprobe.metrics.plausibility import facts_new_to_model

    # The facts table carries each fact's date and status (the probes stage's reading of the diff).
    changes = _changes()
    picked = changes.merge(
        new_since(changes, 0, ("new",), ("added_undated",)), on=["subject", "property", "object"]
    )
    facts = pd.DataFrame(
        {
            "fact_id": [f"Q{s}|P27|Q{o}" for s, o in zip(picked["subject"], picked["object"], strict=True)],
            "date": statement_date(picked),
            "status": picked["status"],
        }
    )
    assert facts["fact_id"].tolist() == [f"Q{i}|P27|Q{i * 10}" for i in (1, 2, 3, 4)]
    base = {"dump": "20190201", "diff_old": "20141201", "statuses": ["new"], "rules": ["added_undated"]}
    kept = {}
    for cut in ("20160101", "20180101", "20190301"):
        out, rows = facts_new_to_model(facts, {**base, "cutoff": cut})
        kept[cut] = sorted(out["fact_id"])
        assert rows["plausible_facts"] + rows["facts_seen_by_model"] == 4
        assert rows["cutoff_after_dump"] == float(cut >= "20190201")
    assert kept["20160101"] == ["Q2|P27|Q20", "Q3|P27|Q30", "Q4|P27|Q40"]
    assert kept["20180101"] == ["Q3|P27|Q30", "Q4|P27|Q40"]
    assert kept["20190301"] == ["Q3|P27|Q30"]
    with pytest.raises(ContractError, match=r"lacks column\(s\) \['date'\]"):
        facts_new_to_model(facts.drop(columns="date"), {**base, "cutoff": "20160101"})


def test_model_cutoff_setting_comes_from_models_tsv_else_the_suite():
    from pathlib import Path

    import yaml
    from factprobe import config_rules
    from factprobe.config_check import read_config

    root = Path(__file__).resolve().parents[2]
    raw = yaml.safe_load((root / "config/config.yaml").read_text())
    cfg = read_config(raw, root / "workflow/schemas/config.schema.yaml")
    own = config_rules.suite_model_cutoff(cfg, "plausibility", {"name": "gpt2", "cutoff": "2019-02-15"})
    assert (own["cutoff"], own["source"], own["dump"]) == ("20190215", "model", "20190201")
    assert (
        config_rules.suite_model_cutoff(cfg, "plausibility", {"name": "x", "cutoff": ""})["cutoff"]
        == "20160101"
    )
    assert config_rules.suite_model_cutoff(cfg, "knowledge", {"name": "x", "cutoff": "2019-02-15"}) == {}
