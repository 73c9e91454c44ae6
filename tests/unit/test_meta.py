"""Meta-evaluation (distractors-knowledge-measure §4.2–4.3): Kendall τ vs human scores, k-fold CV
with a grid, robustness τ. The project has no human annotation file; the TSV below is hand-made."""

import json

import numpy as np
import pandas as pd
import pytest
from factprobe.metrics.meta import (
    PAPER_GRID_NS,
    alignment_for_models,
    configuration_grid,
    cross_validated_tau,
    human_alignment,
    kendall_tau,
    measure_families,
    read_human,
    read_human_scores,
    robustness_tau,
    shuffled_folds,
    values_for,
    verbalization_robustness,
)

# Hand-made human judgement table (subject, relation, object, score), 9 facts.
HUMAN_TSV = "subject\trelation\tobject\tscore\n" + "".join(
    f"Q{i}\tP36\tQ{100 + i}\t{s}\n" for i, s in enumerate([0.0, 0.1, 0.2, 0.3, 0.5, 0.6, 0.7, 0.9, 1.0])
)


def test_kendall_tau_by_hand():
    # pairs (1,2) and (1,3) concordant, (2,3) discordant: (2 - 1) / 3
    assert kendall_tau([1, 2, 3], [1, 3, 2]) == pytest.approx(1 / 3)
    assert kendall_tau([1, 2, 3], [3, 2, 1]) == pytest.approx(-1.0)
    assert np.isnan(kendall_tau([1, 1, 1], [1, 2, 3]))


def test_read_human_scores_and_errors(tmp_path):
    path = tmp_path / "human.tsv"
    path.write_text(HUMAN_TSV)
    human = read_human_scores(path)
    assert len(human) == 9 and human["fact_id"].iloc[1] == "Q1|P36|Q101" and human["score"].iloc[8] == 1.0
    path.write_text(HUMAN_TSV + "Q9\tP36\tQ109\thigh\n")
    with pytest.raises(ValueError, match=r"human.tsv: line 11: score 'high' is not a number"):
        read_human_scores(path)
    path.write_text(HUMAN_TSV + "Q0\tP36\tQ100\t0.4\n")
    with pytest.raises(ValueError, match="line 11: fact Q0|P36|Q100 already scored on line 2"):
        read_human_scores(path)
    path.write_text("subject\trelation\tscore\n")
    with pytest.raises(ValueError, match=r"line 1: header lacks \['object'\]"):
        read_human_scores(path)


def test_folds_are_the_references_shuffled_kfold():
    """§4.2 "K = 3 folds" as the reference splits them: KFold(3, shuffle=True, random_state=42).
    RandomState(42).permutation(9) = [7 1 5 0 8 2 4 3 6]: fold 0 = {7, 1, 5}, 1 = {0, 8, 2},
    2 = {4, 3, 6}; with 10 items the first fold takes 4 (permutation(10) starts 8 1 5 0)."""
    from sklearn.model_selection import KFold

    assert shuffled_folds(9, 3).tolist() == [1, 0, 1, 2, 2, 0, 2, 0, 1]
    for n in (9, 10, 77):
        folds = shuffled_folds(n, 3)
        for fold, (_, test) in enumerate(KFold(3, shuffle=True, random_state=42).split(np.arange(n))):
            assert np.flatnonzero(folds == fold).tolist() == test.tolist()
    assert sorted(np.bincount(shuffled_folds(10, 3)).tolist()) == [3, 3, 4]
    assert shuffled_folds(9, 3, seed=7).tolist() != shuffled_folds(9, 3).tolist()


def test_fold_sd_is_the_sample_sd():
    """Table 3's SD over folds is pandas' std (ddof = 1). Nine facts, human scores 0..8 in file
    order, one configuration (folds of the test above):
    fold 0 = facts 1, 5, 7, values 1, 5, 7: every pair concordant, τ = 1;
    fold 1 = facts 0, 2, 8, values 0, 2, 1: (0,2) +, (0,8) +, (2,8) -, τ = 1/3;
    fold 2 = facts 3, 4, 6, values 3, 6, 2.5: (3,4) +, (3,6) -, (4,6) -, τ = -1/3.
    Mean 1/3; sample SD √(((2/3)² + 0 + (2/3)²) / 2) = 2/3 (the population SD would be 0.544)."""
    human = pd.DataFrame({"fact_id": [f"f{i}" for i in range(9)], "score": np.arange(9.0)})
    values = {0: 0, 1: 1, 2: 2, 3: 3, 4: 6, 5: 5, 6: 2.5, 7: 7, 8: 1}
    per_fact = pd.DataFrame(
        [(f"f{i}", "probability", "", 0, v) for i, v in values.items()],
        columns=["fact_id", "measure", "strategy", "n", "value"],
    )
    result = cross_validated_tau(per_fact, human, [{"measure": "probability", "strategy": "", "n": 0}], k=3)
    assert [f["test_tau"] for f in result["folds"]] == pytest.approx([1, 1 / 3, -1 / 3])
    assert result["mean"] == pytest.approx(1 / 3) and result["std"] == pytest.approx(2 / 3)


def test_grid_is_the_papers_n_and_short_lists_take_the_largest_defined_n():
    """§4.2 grid n ∈ {1, 2, 5, 10} ∪ {20, 40, ..., 200}: a table with n = 1..200 gives 14 n per
    aggregation. A fact with 3 distractors has K undefined at n ≥ 4 (no row); at n = 5 and 200
    the reference scores it with K at n = 3, its largest defined n (Fig. 1 keeps it undefined)."""
    assert PAPER_GRID_NS == (1, 2, 5, 10, 20, 40, 60, 80, 100, 120, 140, 160, 180, 200)
    rows = [("long", "k_min", "sem", n, 1.0 / n) for n in range(1, 201)]
    rows += [("short", "k_min", "sem", n, [0.9, 0.6, 0.4][n - 1]) for n in (1, 2, 3)]
    rows += [("short", "probability", "", 0, 0.5)]
    table = pd.DataFrame(rows, columns=["fact_id", "measure", "strategy", "n", "value"])
    families = measure_families(table)
    assert [c["n"] for c in families["dist:sem"]] == list(PAPER_GRID_NS)
    assert families["probability"] == [{"measure": "probability", "strategy": "", "n": 0}]
    assert len(measure_families(table, None)["dist:sem"]) == 200
    at5 = values_for(table, {"measure": "k_min", "strategy": "sem", "n": 5})
    assert at5.to_dict() == pytest.approx({"long": 0.2, "short": 0.4})
    at200 = values_for(table, {"measure": "k_min", "strategy": "sem", "n": 200})
    assert at200.to_dict() == pytest.approx({"long": 0.005, "short": 0.4})
    assert values_for(table, {"measure": "k_min", "strategy": "sem", "n": 2})["short"] == pytest.approx(0.6)
    strict = values_for(table, {"measure": "k_min", "strategy": "sem", "n": 5}, "undefined")
    assert strict.to_dict() == pytest.approx({"long": 0.2})


def test_largest_defined_n_is_the_facts_shortest_list_over_all_groups():
    """§4.2 as the reference computes K(f) in its grid: the mean over all the fact's cloze
    sentences of their Min/Avg@1..n curves (undefined where one sentence is short), walked back
    to its last defined n. Two verbalizations of one fact: template has K up to n = 2 (0.8,
    0.6), sentence up to n = 1 (0.2). Both are defined up to n = 1 only, so at n = 5 the fact
    reads mean(0.8, 0.2) = 0.5 (not the per-group walk-back's mean(0.6, 0.2) = 0.4)."""
    table = pd.DataFrame(
        [
            ("f", "k_avg", "sem", 1, 0.8, "template"),
            ("f", "k_avg", "sem", 2, 0.6, "template"),
            ("f", "k_avg", "sem", 1, 0.2, "sentence"),
        ],
        columns=["fact_id", "measure", "strategy", "n", "value", "verbalization"],
    )
    assert values_for(table, {"measure": "k_avg", "strategy": "sem", "n": 5})["f"] == pytest.approx(0.5)
    assert values_for(table, {"measure": "k_avg", "strategy": "sem", "n": 1})["f"] == pytest.approx(0.5)


def test_human_alignment_passes_the_conventions_on():
    """A short-listed fact is in the folds (largest defined n), so the family keeps 6 facts."""
    human = pd.DataFrame({"fact_id": [f"f{i}" for i in range(6)], "score": np.arange(6.0)})
    rows = [(f"f{i}", "k_min", "sem", n, i + n / 10) for i in range(5) for n in (1, 5)]
    rows += [("f5", "k_min", "sem", 1, 9.0)]  # one distractor only: no row at n = 5
    table = pd.DataFrame(rows, columns=["fact_id", "measure", "strategy", "n", "value"])
    out = human_alignment(table, human)
    summary = out[out["fold"] == -1].iloc[0]
    assert summary["n_facts"] == 6 and summary["test_tau"] == pytest.approx(1.0)
    with pytest.raises(ValueError, match="short_n"):
        values_for(table, {"measure": "k_min", "strategy": "sem", "n": 5}, "drop")


def per_fact_table(human):
    """Two configurations: Avg@5 follows the human order, Min@1 reverses it; one noisy n=2."""
    rows = []
    for i, (fid, score) in enumerate(zip(human["fact_id"], human["score"], strict=True)):
        rows.append((fid, "k_avg", "sem", 5, score, "template"))
        rows.append((fid, "k_min", "sem", 1, 1 - score, "template"))
        rows.append((fid, "k_avg", "sem", 2, float(i % 2), "template"))
        # A second verbalization: Avg@5 keeps the order, Min@1 is shuffled.
        rows.append((fid, "k_avg", "sem", 5, score + 0.01, "sentence"))
        rows.append((fid, "k_min", "sem", 1, [3, 1, 4, 1, 5, 9, 2, 6, 5][i] / 10, "sentence"))
    return pd.DataFrame(rows, columns=["fact_id", "measure", "strategy", "n", "value", "verbalization"])


def test_cross_validated_grid_picks_the_aligned_configuration(tmp_path):
    path = tmp_path / "human.tsv"
    path.write_text(HUMAN_TSV)
    human = read_human_scores(path)
    table = per_fact_table(human)
    template = table[table["verbalization"] == "template"]
    grid = configuration_grid(template)
    assert len(grid) == 3
    result = cross_validated_tau(template, human, grid, k=3)
    assert [f["config"] for f in result["folds"]] == [{"measure": "k_avg", "strategy": "sem", "n": 5}] * 3
    assert result["mean"] == pytest.approx(1.0) and result["std"] == pytest.approx(0.0)
    with pytest.raises(ValueError, match="only 9 facts"):
        cross_validated_tau(template, human, grid, k=5)


def test_robustness_between_verbalizations(tmp_path):
    path = tmp_path / "human.tsv"
    path.write_text(HUMAN_TSV)
    table = per_fact_table(read_human_scores(path))
    avg5 = [{"measure": "k_avg", "strategy": "sem", "n": 5}]
    assert verbalization_robustness(table, "template", "sentence", avg5) == pytest.approx(1.0)
    min1 = [{"measure": "k_min", "strategy": "sem", "n": 1}]
    # template values 1 - score are strictly decreasing in i; sentence values are the digits above.
    digits = [3, 1, 4, 1, 5, 9, 2, 6, 5]
    want = kendall_tau(list(range(9, 0, -1)), digits)
    assert verbalization_robustness(table, "template", "sentence", min1) == pytest.approx(want)
    both = robustness_tau(
        table[table["verbalization"] == "template"], table[table["verbalization"] == "sentence"], avg5 + min1
    )
    assert both == pytest.approx((1.0 + want) / 2)


def _human_case(tmp_path):
    """Six facts with human scores 0.1..0.6 in the KaRR JSON layout, plus one triple not in the suite."""
    triples = [[[f"Q{i}", "P17", f"Q{100 + i}"], round(0.1 * (i + 1), 2)] for i in range(6)]
    triples.append([["Q999", "P17", "Q1"], 0.5])
    path = tmp_path / "wikidata_triples_to_human_scores.json"
    path.write_text(json.dumps(triples))
    facts = pd.DataFrame(
        {
            "fact_id": [f"f{i}" for i in range(6)],
            "subject": [f"Q{i}" for i in range(6)],
            "property": "P17",
            "object": [f"Q{100 + i}" for i in range(6)],
        }
    )
    rows = []
    for i in range(6):
        up, down = i / 10, 1 - i / 10
        rows += [
            (f"f{i}", "k_avg", "random", 1, up),  # concordant with the humans: τ = 1
            (f"f{i}", "k_avg", "random", 2, down),  # discordant: τ = -1
            (f"f{i}", "k_min", "random", 1, down),
            (f"f{i}", "n_used", "random", 1, 1.0),  # bookkeeping, never a configuration
            (f"f{i}", "probability", "", 0, down),
        ]
    per_fact = pd.DataFrame(rows, columns=["fact_id", "measure", "strategy", "n", "value"])
    return path, facts, per_fact


def test_human_alignment_three_fold_grid_on_karr_json(tmp_path):
    """§4.2: mean Kendall τ over K = 3 folds, hyperparameters (aggregation, n) grid-searched on the
    other folds. Hand values: in every fold the training folds pick Avg@1 of
    dist:random (τ = 1 on any subset of facts), which is concordant on the held-out fold too ->
    mean 1, SD 0; Probability has one configuration, discordant everywhere -> mean -1."""
    path, facts, per_fact = _human_case(tmp_path)
    human = read_human(path)
    assert len(human) == 7 and human.loc[0, "score"] == pytest.approx(0.1)
    table = alignment_for_models(
        {"m1": per_fact, "m2": per_fact.assign(value=-per_fact["value"])}, human, facts
    )
    means = table[table["fold"] == -1].set_index(["model", "family"])
    assert means.loc[("m1", "dist:random"), "test_tau"] == pytest.approx(1.0)
    assert means.loc[("m1", "dist:random"), "std_tau"] == pytest.approx(0.0)
    assert means.loc[("m1", "probability"), "test_tau"] == pytest.approx(-1.0)
    assert means.loc[("m1", "dist:random"), "n_facts"] == 6  # Q999 is not a fact of the suite
    folds = table[(table["model"] == "m1") & (table["family"] == "dist:random") & (table["fold"] >= 0)]
    assert set(zip(folds["measure"], folds["n"], strict=True)) == {("k_avg", 1)}
    # m2 has every value negated: now Avg@2 and Min@1 are the concordant ones.
    assert means.loc[("m2", "dist:random"), "test_tau"] == pytest.approx(1.0)
    assert "n_used" not in set(table["family"])


def test_human_file_errors(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('[[["Q1", "P17"], 0.3]]')
    with pytest.raises(ValueError, match=r"bad.json: item 0"):
        read_human(bad)
    _, facts, per_fact = _human_case(tmp_path)
    other = tmp_path / "other.json"
    other.write_text('[[["Q5000", "P17", "Q1"], 0.3]]')
    with pytest.raises(ValueError, match="none of its 1 triples"):
        alignment_for_models({"m": per_fact}, read_human(other), facts, source=str(other))


def test_human_alignment_reaches_the_report(tmp_path):
    from factprobe.report.html import human_section

    path, facts, per_fact = _human_case(tmp_path)
    table = alignment_for_models({"m1": per_fact}, read_human(path), facts)
    body = human_section({"knowledge": table})
    assert "dist:random" in body and "probability" in body and "-1.000" in body
    assert "No human judgement file" in human_section(None)


def test_k_of_a_fact_over_cloze_sentences_with_unequal_lists():
    """§4.2 K(f) as the reference's grid computes it: the mean over all cloze sentences
    (undefined where one is short), walked back to the shortest list.

    One fact, Sem distractors d1 d2 d3; sentence a scores all three (object 0.5 vs 0.1, 0.2, 0.6:
    Min@1..3 = 1, 1, 0), sentence b scores d1 and d2 only (0.5 vs 0.1, 0.2: Min@1..2 = 1, 1).
    K(f) at 3 is undefined (b is short) and Min@3 in the grid is K(f) at 2 = mean(1, 1) = 1.0;
    averaging only the sentences long enough for 3 would give a's 0.0.
    """
    from contract_frames import full
    from factprobe.metrics.common import correct_entities, entity_scores, prompt_frame
    from factprobe.metrics.knowledge import knowledge_per_fact

    facts = full("facts", pd.DataFrame([("S|P|O", "S", "P", "O", ["O"])], columns=HUMAN_FACT_COLUMNS))
    prompts = prompt_frame(
        full("prompts", pd.DataFrame([("a", "S|P|O", "t1"), ("b", "S|P|O", "t2")], columns=PROMPT_COLUMNS))
    )
    cands = full(
        "candidates",
        pd.DataFrame(
            [("S|P|O", "O", "object", "object", 0)]
            + [("S|P|O", f"d{i}", "distractor", "sem", i) for i in (1, 2, 3)],
            columns=["fact_id", "entity", "role", "strategy", "rank"],
        ),
    )
    pl = {"a": {"O": 0.5, "d1": 0.1, "d2": 0.2, "d3": 0.6}, "b": {"O": 0.5, "d1": 0.1, "d2": 0.2}}
    rows = [
        (p, e, e, float(np.log(v)), 1, float(np.log(v)), 0.0) for p, ev in pl.items() for e, v in ev.items()
    ]
    scores = full(
        "scores",
        pd.DataFrame(
            rows,
            columns=["prompt_id", "entity", "form", "logprob", "n_tokens", "first_logprob", "end_logprob"],
        ),
    )
    per_fact = knowledge_per_fact(
        entity_scores(scores), prompts, cands, facts, correct_entities(facts), [1, 2, 3], [1]
    )
    kmin = per_fact[per_fact["measure"] == "k_min"].set_index("n")["value"]
    assert kmin.to_dict() == {1: 1.0, 2: 1.0}  # no value at n = 3
    assert values_for(per_fact, {"measure": "k_min", "strategy": "sem", "n": 3})["S|P|O"] == 1.0
    assert values_for(per_fact, {"measure": "k_min", "strategy": "sem", "n": 3}, "undefined").empty


HUMAN_FACT_COLUMNS = ["fact_id", "subject", "property", "object", "objects"]
PROMPT_COLUMNS = ["prompt_id", "fact_id", "template_id"]
