"""Fact selection: truthy statements, labels, N-M objects, strata, sampling, split."""

import math

import pandas as pd
import pytest
from factprobe.hashing import hash_fraction
from factprobe.probes.select import (
    assign_split,
    candidate_facts,
    item_sitelinks,
    labelled_entities,
    sample_facts,
    stratify,
    truthy_claims,
)
from factprobe.wikidata.labels import label_table

NaN = float("nan")


def claims(rows):
    return pd.DataFrame(
        rows, columns=["subject", "property", "object", "rank", "start", "end", "point_in_time"]
    )


def test_truthy_rules_on_synthetic_claims():
    table = claims(
        [
            (1, 36, 10, 1, NaN, NaN, NaN),  # normal, loses to the preferred one
            (1, 36, 11, 2, NaN, NaN, NaN),  # preferred
            (2, 36, 20, 1, NaN, 20100101, NaN),  # ended before the dump
            (2, 36, 21, 1, 20100102, NaN, NaN),  # the current one
            (3, 47, 30, 1, NaN, NaN, NaN),  # N-M: both normal
            (3, 47, 31, 1, NaN, NaN, NaN),
            (3, 47, 32, 0, NaN, NaN, NaN),  # deprecated
            (4, 36, 40, 2, NaN, 20120000, NaN),  # preferred but ended (year precision) -> normal wins
            (4, 36, 41, 1, NaN, NaN, NaN),
            (5, 36, 50, 1, 20200101, NaN, NaN),  # starts after the dump
            (6, 36, 60, 1, NaN, 20150101, NaN),  # ends after the dump: still true at the dump
        ]
    )
    out = truthy_claims(table, 20141201)
    got = sorted(map(tuple, out[["subject", "property", "object"]].to_numpy().tolist()))
    assert got == [(1, 36, 11), (2, 36, 21), (3, 47, 30), (3, 47, 31), (4, 36, 41), (6, 36, 60)]


def independent_objects(raw: pd.DataFrame, date: int) -> dict:
    """Truthy objects per (subject, property), computed row by row without pandas grouping."""
    valid = {}
    for r in raw.itertuples(index=False):
        if r.rank == 0:
            continue
        if not math.isnan(r.end) and r.end <= date:
            continue
        if not math.isnan(r.start) and r.start > date:
            continue
        valid.setdefault((r.subject, r.property), []).append((r.rank, r.object))
    out = {}
    for key, items in valid.items():
        best = max(rank for rank, _ in items)
        out[key] = [f"Q{o}" for o in sorted({o for rank, o in items if rank == best})]
    return out


def test_demo_truthy_examples_and_nm_objects(demo_tables):
    raw = pd.read_parquet(demo_tables["20190201"] / "claims.parquet")
    truthy = truthy_claims(raw, 20190201)

    def objs(s, p):
        return sorted(truthy[(truthy.subject == s) & (truthy.property == p)]["object"].tolist())

    assert objs(183, 36) == [64]  # Germany: Bonn ended 1990-10-02, Berlin preferred
    assert objs(155, 36) == [2844]  # Brazil: Rio ended 1960, Brasília preferred
    assert objs(45, 36) == [597]  # Portugal: Lisbon

    labels = label_table([demo_tables[d] / "labels.parquet" for d in demo_tables], ["en"])
    labelled = labelled_entities(labels, ["en"])
    sitelinks = item_sitelinks(pd.read_parquet(demo_tables["20190201"] / "entities.parquet"))
    facts = candidate_facts(truthy, ["P36", "P47", "P530", "P17"], labelled, sitelinks)
    expected = independent_objects(raw, 20190201)
    assert len(facts) > 30
    for row in facts.itertuples():
        key = (int(row.subject[1:]), int(row.property[1:]))
        assert list(row.objects) == expected[key], row.fact_id
        assert row.object in row.objects and row.subject in labelled and row.object in labelled
        assert row.subject != row.object
    # one fact per (subject, relation); Q45 P36 is the labelled Portugal -> Lisbon
    assert not facts.duplicated(["subject", "property"]).any()
    portugal = facts[(facts.subject == "Q45") & (facts.property == "P36")].iloc[0]
    assert portugal.fact_id == "Q45|P36|Q597" and portugal.popularity == 311
    # Germany's capital Berlin (Q64) has no label in the demo dumps, so no P36 fact for Q183.
    assert facts[(facts.subject == "Q183") & (facts.property == "P36")].empty
    # N-M: Portugal has many P530 partners; every one is in `objects`, the fact object among them.
    p530 = facts[(facts.subject == "Q45") & (facts.property == "P530")]
    assert len(p530) == 1 and len(p530.iloc[0].objects) == len(expected[(45, 530)]) > 1


def test_labelled_entities_needs_label_in_every_language():
    labels = pd.DataFrame(
        {
            "entity": ["Q1", "Q1", "Q2", "Q2", "Q3"],
            "lang": ["en", "de", "en", "de", "en"],
            "form": ["a", "b", "c", "d", "e"],
            "source": ["label", "label", "label", "alias", "label"],
        }
    )
    assert labelled_entities(labels, ["en", "de"]) == {"Q1"}
    assert labelled_entities(labels, ["en"]) == {"Q1", "Q2", "Q3"}


def toy_facts(n=10, relations=("P1",)):
    rows = []
    for p in relations:
        for i in range(n):
            rows.append(
                {
                    "fact_id": f"Q{i}|{p}|Q99",
                    "subject": f"Q{i}",
                    "property": p,
                    "object": "Q99",
                    "objects": ["Q99"],
                    "popularity": 100 - i,
                }
            )
    return pd.DataFrame(rows)


def test_strata_equal_counts_by_popularity():
    facts = toy_facts(10)
    strata = stratify(facts, 3)
    # popularity 100..91 for Q0..Q9: least popular (Q9..) first -> bins of sizes 4, 3, 3 ((i*3)//10)
    by_subject = dict(zip(facts["subject"], strata, strict=True))
    assert [by_subject[f"Q{i}"] for i in range(9, -1, -1)] == [0, 0, 0, 0, 1, 1, 1, 2, 2, 2]


def test_sample_quota_and_determinism():
    facts = toy_facts(30, ("P1", "P2"))
    a = sample_facts(facts, 7, 3, seed=1)
    b = sample_facts(facts.sample(frac=1, random_state=3), 7, 3, seed=1)  # input order does not matter
    assert sorted(a["fact_id"]) == sorted(b["fact_id"])
    for _, group in a.groupby("property"):
        assert sorted(group["stratum"].value_counts().to_dict().items()) == [(0, 2), (1, 2), (2, 3)]
    assert sorted(sample_facts(facts, 7, 3, seed=2)["fact_id"]) != sorted(a["fact_id"])
    assert len(sample_facts(facts, None, 2)) == 60


def test_split_is_hash_half():
    ids = pd.Series([f"Q{i}|P1|Q2" for i in range(400)])
    split = assign_split(ids, seed=0)
    for fid, s in zip(ids, split, strict=True):
        assert s == ("taught" if hash_fraction(0, "split", fid) < 0.5 else "untaught")
    assert 150 < (split == "taught").sum() < 250


@pytest.mark.parametrize("date,expected", [(20100101, [10]), (20200101, [11])])
def test_truthy_depends_on_dump_date(date, expected):
    table = claims([(1, 36, 10, 1, NaN, 20150000, NaN), (1, 36, 11, 1, 20150000, NaN, NaN)])
    assert truthy_claims(table, date)["object"].tolist() == expected
