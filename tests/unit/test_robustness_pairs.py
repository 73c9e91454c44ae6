"""§4.3 robustness (Table 4) on the released verbalization pairs (conformance: reads
../shared/data/distfactassess/scripts/taxonomy/taxonomy_hichem.csv in place; skipped only when
../shared is absent). A tiny random GPT-2 is enough for the plumbing: the τ asserted is
recomputed here by counting concordant and discordant pairs (τ-b), not with scipy."""

import csv
import math
from itertools import combinations
from pathlib import Path

import pandas as pd
import pytest
from factprobe.probes.build import DumpTables, build_suite
from factprobe.probes.importers import import_verbalization_pairs

ROOT = Path(__file__).resolve().parents[2]


def released_pairs() -> Path | None:
    for base in (ROOT.parent, ROOT.parent.parent):
        path = base / "shared" / "data" / "distfactassess" / "scripts" / "taxonomy" / "taxonomy_hichem.csv"
        if path.is_file():
            return path
    return None


@pytest.fixture(scope="module")
def release():
    path = released_pairs()
    if path is None:
        pytest.skip(
            "the DistFactAssessLM release is not beside the repository (../shared/data/distfactassess)"
        )
    return path


def test_importer_reads_every_row(release):
    """Every one of the file's rows gets an outcome; the flawed present-context rows (counted
    here with the csv module) are exactly the kept plus the non-object-final ones."""
    with open(release, newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    flawed_present = sum(
        1
        for i, r in enumerate(rows)
        if i < 152 and r["errors"].strip() not in ("", "ignore", "-") and r["context"].strip() == "present"
    )
    pairs, counts = import_verbalization_pairs(release)
    assert sum(counts.values()) == len(rows) == 152
    assert counts["perfect"] == sum(1 for r in rows if r["errors"].strip() == "-")
    assert counts["kept"] + counts["reversed"] + counts["not_object_final"] == flawed_present == 35
    # §4.3 "we kept the 32 flawed verbalizations": 23 object-final + 9 subject-final, reversed
    assert len(pairs) == counts["kept"] + counts["reversed"] == 32 and counts["reversed"] == 9
    assert pairs["reversed"].sum() == 9
    # row 24 worked out by hand: "United Kingdom is the home country of Matchbox" ends with the
    # subject Matchbox (Q1050690, P17, Q145): the fact is (Q145, P17, Q1050690), answer Matchbox
    row = pairs[pairs["row"] == 24].iloc[0]
    assert (row.subject, row.property, row.object, row.object_label) == (
        "Q145",
        "P17",
        "Q1050690",
        "Matchbox",
    )
    assert row.flawed == "United Kingdom is the home country of"
    assert row.corrected == "The United Kingdom is the home country of"
    # row 62: the label's own final period is the sentence's ("... won by Liverpool F.C.")
    assert pairs[pairs["row"] == 62].iloc[0].flawed == "The 1983–84 European Cup is won by"
    # both verbalizations built for every kept row, each a prefix of its released sentence
    by_row = {i: r for i, r in enumerate(rows)}
    for pair in pairs.itertuples():
        assert by_row[pair.row]["verbalization"].startswith(pair.flawed)
        assert pair.corrected and not pair.corrected.endswith(pair.object_label)
        assert by_row[pair.row]["verbalization"].rstrip(".").endswith(pair.object_label)
    # row 0 worked out by hand from the file: "1951 Neutral Bay state by-election is a by-election"
    first = pairs.iloc[0]
    assert (first.subject, first.property, first.object) == ("Q100366552", "P31", "Q1057954")
    assert first.flawed == "1951 Neutral Bay state by-election is a"
    assert first.corrected == "The 1951 Neutral Bay state by-election is a"


def tau_b(x, y):
    """Kendall τ-b by counting pairs: (C - D) / sqrt((n0 - n1)(n0 - n2))."""
    c = d = tx = ty = 0
    for i, j in combinations(range(len(x)), 2):
        dx, dy = x[i] - x[j], y[i] - y[j]
        if dx == 0 and dy == 0:
            continue
        if dx == 0:
            tx += 1
        elif dy == 0:
            ty += 1
        elif dx * dy > 0:
            c += 1
        else:
            d += 1
    return (c - d) / math.sqrt((c + d + tx) * (c + d + ty))


@pytest.fixture(scope="module")
def robustness(release, demo_tables):
    """Suite tables from build_suite, 8 facts scored by a tiny random GPT-2, then compute_metrics."""
    import torch
    from contract_frames import full, full_inputs
    from factprobe.lm import HFCausalLM
    from factprobe.metrics.pipeline import SuiteInputs, compute_suite_metrics
    from factprobe.scoring.control import build_gpt2, train_bpe_tokenizer
    from factprobe.scoring.suite import build_pairs, score_pairs
    from factprobe.settings import Metrics

    torch.set_num_threads(1)
    suite = {
        "kind": "knowledge",
        "dump": "20190201",
        "source": {"format": "verbalization-pairs", "path": str(release)},
    }
    facts, prompts, forms = build_suite(
        "pairs",
        suite,
        {},
        DumpTables(
            str(demo_tables["20190201"] / "claims.parquet"),
            str(demo_tables["20190201"] / "entities.parquet"),
            [str(demo_tables[d] / "labels.parquet") for d in sorted(demo_tables)],
        ),
    )
    facts = facts.head(8)
    prompts = prompts[prompts["fact_id"].isin(facts["fact_id"])]
    objects = facts["object"].tolist()
    cands = []
    for i, fact in enumerate(facts.itertuples()):
        cands.append((fact.fact_id, fact.object, "object", "object", 0))
        others = [o for o in objects[i + 1 :] + objects[:i] if o not in fact.objects][:3]
        cands += [(fact.fact_id, o, "distractor", "random", r) for r, o in enumerate(others, start=1)]
    cands = full("candidates", pd.DataFrame(cands, columns=["fact_id", "entity", "role", "strategy", "rank"]))
    tok = train_bpe_tokenizer(list(prompts["text"]) + list(forms["form"]), vocab_size=300)
    lm = HFCausalLM(build_gpt2(len(tok), n_embd=32, n_layer=1).eval(), tok)
    scores = score_pairs(lm, build_pairs(prompts, cands, forms), progress=False)
    inputs = full_inputs(
        SuiteInputs(scores=scores, prompts=prompts, candidates=cands, facts=facts, forms=forms)
    )
    per_fact, table = compute_suite_metrics(inputs, Metrics(families={}, ns=[1, 3]), ["knowledge"])
    return facts, prompts, per_fact, table


def test_robustness_table_end_to_end(robustness):
    facts, prompts, per_fact, table = robustness
    assert len(facts) == 8 and len(prompts) == 16
    assert prompts.groupby("fact_id")["verbalization"].apply(sorted).map(tuple).unique().tolist() == [
        ("corrected", "flawed")
    ]
    k = per_fact[(per_fact["measure"] == "k_avg") & (per_fact["n"] == 3) & (per_fact["strategy"] == "random")]
    assert len(k) == 16  # 8 facts x 2 verbalizations
    wide = k.pivot(index="fact_id", columns="verbalization", values="value")
    row = table[
        (table["measure"] == "robustness_tau:k_avg") & (table["n"] == 3) & (table["strategy"] == "random")
    ]
    assert len(row) == 1
    assert row["value"].iloc[0] == pytest.approx(tau_b(wide["flawed"].tolist(), wide["corrected"].tolist()))
    prob = per_fact[per_fact["measure"] == "probability"].pivot(
        index="fact_id", columns="verbalization", values="value"
    )
    got = table.loc[table["measure"] == "robustness_tau:probability", "value"]
    assert len(prob) == 8 and len(got) == 1
    assert got.iloc[0] == pytest.approx(tau_b(prob["flawed"].tolist(), prob["corrected"].tolist()))
    # the template-vs-MT-sentence τ keeps its own name and has no rows here
    assert not table["measure"].str.startswith("verbalization_tau:").any()


def test_pairs_suite_relations_filter(release, demo_tables):
    """`relations` keeps those relations' pairs (the release's kept P31 rows: 0, 16, 94, 145)."""
    suite = {
        "kind": "knowledge",
        "dump": "20190201",
        "relations": ["P31"],
        "source": {"format": "verbalization-pairs", "path": str(release)},
    }
    facts, prompts, _ = build_suite(
        "pairs",
        suite,
        {},
        DumpTables(
            str(demo_tables["20190201"] / "claims.parquet"),
            str(demo_tables["20190201"] / "entities.parquet"),
            [str(demo_tables[d] / "labels.parquet") for d in sorted(demo_tables)],
        ),
    )
    pairs, _ = import_verbalization_pairs(release)
    assert sorted(pairs.loc[pairs["property"] == "P31", "row"]) == [0, 16, 94, 145]
    assert set(facts["property"]) == {"P31"} and len(facts) == 4 and len(prompts) == 8
