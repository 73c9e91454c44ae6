"""Fact sampling as the distractors paper's reference does it (probes/sample.py).

Reference behaviour (DistFactAssessLM ``sample_balanced_facts`` / ``rep_sample``): popularity of a
triple = importance(s) + importance(o); ``pandas.cut(popularity, bins=10)`` over every candidate;
each triple drawn without replacement with weight 1 / (bin size × non-empty bins).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from factprobe import contracts
from factprobe.probes.sample import (
    PopularityBins,
    RelationStrata,
    bin_weights,
    equal_width_bins,
    importance,
    sampler_for,
    uniforms,
    weighted_sample,
)
from factprobe.settings import Suite

# A heavy-tailed population: bin k (width 1 on [0, 10]) holds 1000 · 2^(9-k) triples, from
# 512,000 in the least popular band to 1,000 in the most popular; N = 1000 · (2^10 - 1) = 1,023,000.
SIZES = [1000 * 2 ** (9 - k) for k in range(10)]


def heavy_tailed_population() -> np.ndarray:
    """Popularity values: bin k's values spread strictly inside (k, k + 1), plus the two ends 0
    and 10 (one of bin 0's and one of bin 9's), so the ten equal-width bins are exactly the unit
    intervals and every value is distinct."""
    parts = []
    for k, size in enumerate(SIZES):
        inner = size - (1 if k in (0, 9) else 0)
        parts.append(k + (np.arange(inner) + 0.5) / inner)
    return np.concatenate([[0.0], *parts, [10.0]])


def test_share_of_the_top_percent_matches_the_weights_by_hand():
    """Top 1 % = the 10,230 most popular triples: all of bins 9, 8, 7 (1,000 + 2,000 + 4,000) and
    the top 3,230 of bin 6 (8,000). Every bin has probability 1/10 and is uniform inside, so the
    expected share of sampled facts in the top 1 % is (1 + 1 + 1 + 3230/8000) / 10 = 0.340375
    (a uniform sample would give 0.01). 1,000 draws: SD ≈ 1.5 points; the largest n·w is 0.1, so
    drawing without replacement lowers the share by under one point."""
    pop = heavy_tailed_population()
    assert len(pop) == 1_023_000
    bins = equal_width_bins(pop, 10)
    assert np.bincount(bins).tolist() == SIZES
    assert np.array_equal(bins, pd.cut(pop, 10, labels=False))  # the reference's own binning
    w = bin_weights(bins)
    assert w[bins == 9][0] == pytest.approx(1 / 10_000) and w.sum() == pytest.approx(1.0)
    top = pop >= np.sort(pop)[-10_230]
    assert top.sum() == 10_230 and w[top].sum() == pytest.approx(0.340375)
    keys = [f"f{i}" for i in range(len(pop))]
    for seed in (0, "other"):
        chosen = weighted_sample(w, uniforms(seed, keys), 1000)
        assert len(np.unique(chosen)) == 1000
        assert abs(top[chosen].mean() - 0.340375) <= 0.03, (seed, top[chosen].mean())
        # Every band equally likely: 100 expected per bin.
        assert np.bincount(bins[chosen], minlength=10).min() > 60


def test_pandas_cut_edges_by_hand():
    """Equal-width right-closed bins over [min, max]: [0, 10] in 10 bins has edges 0, 1, ..., 10;
    1.0 is in (0, 1] (bin 0), 1.5 in bin 1, the minimum in bin 0, the maximum in bin 9."""
    pop = np.array([0.0, 1.0, 1.5, 5.0, 9.2, 10.0])
    assert equal_width_bins(pop).tolist() == [0, 0, 1, 4, 9, 9]
    assert equal_width_bins(pop).tolist() == pd.cut(pop, 10, labels=False).tolist()
    assert equal_width_bins(np.full(4, 3.0)).tolist() == [0, 0, 0, 0]
    # Empty bins do not count: two non-empty bins of sizes 1 and 3 -> 1/2 and 1/6.
    assert bin_weights(np.array([0, 9, 9, 9])).tolist() == pytest.approx([0.5, 1 / 6, 1 / 6, 1 / 6])
    assert importance(np.array([0, 1, 99])) == pytest.approx([0.0, np.log(2), np.log(100)])


def _candidates(prop: str, n: int, start: int) -> pd.DataFrame:
    subjects = [f"Q{start + i}" for i in range(n)]
    objects = [f"Q{9000 + (i % 7)}" for i in range(n)]
    return pd.DataFrame(
        {
            "fact_id": [f"{s}|{prop}|{o}" for s, o in zip(subjects, objects, strict=True)],
            "subject": subjects,
            "property": prop,
            "object": objects,
            "objects": [[o] for o in objects],
            "popularity": [(i * 37) % 500 for i in range(n)],
        }
    )


@pytest.fixture
def entities(tmp_path):
    """Sitelinks of the objects Q9000..Q9006: 0, 10, 100, ..., 10^6 (the subjects' are in
    the candidates' popularity column, as candidate_facts writes it)."""
    frame = pd.DataFrame(
        {
            "id": np.arange(9000, 9007),
            "kind": "item",
            "sitelinks": (10 ** np.arange(7) - (np.arange(7) == 0)).astype(np.int32),
            "modified": "",
            "created": 0,
        }
    )
    path = tmp_path / "entities.parquet"
    contracts.write("entities", frame, path)
    return str(path)


def _draw(entities, seed, order=("P17", "P36"), n=40):
    sampler = PopularityBins(n, 10, seed, entities)
    parts = {"P17": _candidates("P17", 300, 1), "P36": _candidates("P36", 100, 5000)}
    for prop in order:
        sampler.add(parts[prop])
    return pd.concat(sampler.finish(), ignore_index=True)


def test_popularity_bins_is_seeded_order_free_and_bins_every_relation_together(entities):
    a = _draw(entities, 0)
    assert len(a) == 40 and a["fact_id"].is_unique
    b = _draw(entities, 0, order=("P36", "P17"))
    assert sorted(a["fact_id"]) == sorted(b["fact_id"])  # order of the relations does not matter
    assert sorted(_draw(entities, 1)["fact_id"]) != sorted(a["fact_id"])
    # stratum = the popularity bin over both relations: ln(1 + subject) + ln(1 + object sitelinks).
    links = {f"Q{9000 + k}": 10**k - (k == 0) for k in range(7)}
    every = pd.concat([_candidates("P17", 300, 1), _candidates("P36", 100, 5000)], ignore_index=True)
    pop = importance(every["popularity"]) + importance(every["object"].map(links))
    want = dict(zip(every["fact_id"], equal_width_bins(pop), strict=True))
    assert a["stratum"].tolist() == [want[f] for f in a["fact_id"]]
    assert list(a.columns[:6]) == ["fact_id", "subject", "property", "object", "objects", "popularity"]


def test_sampler_setting_picks_the_sampler(entities):
    base = {"kind": "knowledge", "dump": "20210104", "relations": ["P17"], "n_facts": 5, "strata": 2}
    assert isinstance(sampler_for(Suite(**base), 0, entities), RelationStrata)
    paper = sampler_for(Suite(**base, sampler="popularity_bins"), 0, entities)
    assert isinstance(paper, PopularityBins) and paper.n_facts == 5
    paper.finish()
    with pytest.raises(ValueError, match="sampler"):
        sampler_for(Suite(**base, sampler="uniform"), 0, entities)
    # relation_strata: n_facts per relation, as select.sample_facts.
    strata = sampler_for(Suite(**base), 0, entities)
    strata.add(_candidates("P17", 30, 1))
    strata.add(_candidates("P36", 30, 500))
    got = pd.concat(strata.finish())
    assert got["property"].value_counts().to_dict() == {"P17": 5, "P36": 5}


def test_popularity_bins_on_the_real_demo_dump(demo_tables):
    """build_suite with ``sampler: popularity_bins`` on the real 2019 demo sample: n_facts in all
    (not per relation), drawn from the suite's candidates, each fact's stratum its bin of
    ln(1 + subject sitelinks) + ln(1 + object sitelinks) over every candidate (binned here with
    pandas.cut from the entities table, independently of probes/sample.py), and reproducible."""
    import pyarrow.parquet as pq
    from test_probes_build import build

    suite = {"kind": "knowledge", "dump": "20190201", "relations": ["P36", "P47", "P17"], "strata": 10}
    every, _, _ = build(demo_tables, suite)
    paper = {**suite, "n_facts": 20, "sampler": "popularity_bins"}
    facts, prompts, _ = build(demo_tables, paper)
    assert len(facts) == 20 and set(facts["fact_id"]) <= set(every["fact_id"])
    assert facts["property"].nunique() > 1 and set(prompts["fact_id"]) == set(facts["fact_id"])
    ents = pq.read_table(demo_tables["20190201"] / "entities.parquet").to_pandas()
    links = ents[ents["kind"] == "item"].drop_duplicates("id").set_index("id")["sitelinks"]
    obj = every["object"].str[1:].astype(int).map(links).fillna(0)
    pop = np.log1p(every["popularity"].astype(float)) + np.log1p(obj.astype(float))
    want = dict(zip(every["fact_id"], pd.cut(pop, 10, labels=False), strict=True))
    assert facts["stratum"].tolist() == [want[f] for f in facts["fact_id"]]
    again, _, _ = build(demo_tables, paper)
    assert again["fact_id"].tolist() == facts["fact_id"].tolist()


@pytest.mark.parametrize("n", [40, 0, 10_000])
def test_popularity_bins_in_parts_draws_the_whole_populations_sample(entities, n):
    """Fed in many parts (a part of a relation at a time), the sampler keeps
    no per-candidate array, yet draws what ``weighted_sample`` draws over the whole population
    (bins over the whole range, keys in position order)."""
    every = pd.concat([_candidates("P17", 300, 1), _candidates("P36", 100, 5000)], ignore_index=True)
    sampler = PopularityBins(n, 10, 7, entities)
    for cut in np.array_split(np.arange(len(every)), 9):
        sampler.add(every.iloc[cut].reset_index(drop=True))
    sampler.add(every.iloc[0:0])  # an empty part changes nothing
    got = sampler.finish()
    links = {f"Q{9000 + k}": 10**k - (k == 0) for k in range(7)}
    pop = importance(every["popularity"]) + importance(every["object"].map(links))
    bin_of = equal_width_bins(pop)
    chosen = weighted_sample(bin_weights(bin_of), uniforms(7, every["fact_id"]), n)
    got = pd.concat(got, ignore_index=True) if got else pd.DataFrame(columns=["fact_id", "stratum"])
    assert got["fact_id"].tolist() == every["fact_id"].iloc[chosen].tolist()
    assert got["stratum"].tolist() == bin_of[chosen].tolist()


def test_popularity_bins_gets_the_objects_sitelinks_with_each_part(demo_tables, tmp_path):
    """Build_suite's parts carry their objects' sitelinks, joined in the query
    that streams the relation, so ``popularity_bins`` never reads the entities file per part.
    Checked on the real demo dump, cut into parts of ~40 statements: each part's object
    sitelinks are the entities table's (read here with pandas), and the sampler fed those parts
    with no entities file to read draws what ``weighted_sample`` draws over the whole population
    with ln(1 + subject) + ln(1 + object sitelinks) computed here."""
    from factprobe import scan
    from factprobe.probes.fact_candidates import SelectionPaths, relation_candidate_parts

    dump = "20190201"
    paths = {t: str(demo_tables[dump] / f"{t}.parquet") for t in ("claims", "entities")}
    forms = tmp_path / "forms.parquet"
    scan.write_entity_forms(
        [str(demo_tables[d] / "labels.parquet") for d in sorted(demo_tables)], ["en"], forms
    )
    ents = contracts.read("entities", paths["entities"])
    links = ents[ents["kind"] == "item"].drop_duplicates("id").set_index("id")["sitelinks"]
    con = scan.connect()
    sampler = PopularityBins(30, 10, 3, str(tmp_path / "absent.parquet"), con)
    every, n_parts = [], 0
    for rel in ("P47", "P17", "P36"):
        args = (rel, dump, SelectionPaths(paths["claims"], paths["entities"], str(forms)), ["en"], 3, con)
        for part in relation_candidate_parts("t", *args, part_rows=40):
            objects = contracts.id_ints(part.candidates["object"])
            got = pd.Series(objects).map(part.object_sitelinks).fillna(0).astype(int).tolist()
            assert got == pd.Series(objects).map(links).fillna(0).astype(int).tolist()
            sampler.add(part.candidates, part.object_sitelinks)
            every.append(part.candidates)
            n_parts += 1
    every = pd.concat(every, ignore_index=True)
    assert n_parts > 10 and every["property"].nunique() == 3
    obj = every["object"].str[1:].astype(int).map(links).fillna(0)
    assert (obj > 0).mean() > 0.5 and obj.nunique() > 10 and len(every) > 50
    pop = np.log1p(every["popularity"].astype(float)) + np.log1p(obj.astype(float))
    bin_of = pd.cut(pop, 10, labels=False).to_numpy()
    chosen = weighted_sample(bin_weights(bin_of), uniforms(3, every["fact_id"]), 30)
    drawn = pd.concat(sampler.finish(), ignore_index=True)
    assert drawn["fact_id"].tolist() == every["fact_id"].iloc[chosen].tolist()
    assert drawn["stratum"].tolist() == bin_of[chosen].tolist()
