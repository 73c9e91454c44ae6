"""Anchors of a timeline suite (factprobe.probes.timeline, module docstring "Anchors"): per subject
of a drawn dated fact, its ``anchors`` static facts of lowest draw hash, under the slice label
``anchor``; worked out by hand on a small dump series, a function of the subject's static facts
only, and read by the metrics for the known-subject curve and by no curve."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from factprobe import scan
from factprobe.hashing import stable_hashes
from factprobe.metrics.cutoff_profile import subject_known
from factprobe.metrics.timeline import model_timeline, series_edges
from factprobe.probes import timeline as tl
from factprobe.settings import Timeline

SEED = 5
S, N, X = "static", "new", "obsolete"

#: Triples (subject, object) of P17 and their status in the diffs (20200101, 20200201] and
#: (20200201, 20200301]. Q1: a fact new in the first slice, three static facts and one that the
#: second diff removes (true at the start, not throughout: never an anchor). Q2: a fact new in
#: the second slice, one static fact. Q3: static facts only, no dated fact (no anchor).
SERIES = {
    (1, 20): [N, S],
    (1, 10): [S, S],
    (1, 11): [S, S],
    (1, 12): [S, S],
    (1, 13): [S, X],
    (2, 21): [None, N],
    (2, 30): [S, S],
    (3, 40): [S, S],
    (3, 41): [S, S],
}
DUMPS = [20200101, 20200201, 20200301]


def fid(subject: int, obj: int) -> str:
    return f"Q{subject}|P17|Q{obj}"


def write_series(root: Path, series: dict, dumps: list[int]) -> list[str]:
    paths = []
    for i, (old, new) in enumerate(zip(dumps, dumps[1:], strict=False)):
        rows = [(s, 17, o, st[i]) for (s, o), st in series.items() if i < len(st) and st[i] is not None]
        folder = root / f"{old}_{new}"
        folder.mkdir(parents=True)
        frame = pd.DataFrame(rows, columns=["subject", "property", "object", "status"])
        frame.astype({"subject": "int64", "property": "int32", "object": "int64"}).to_parquet(
            folder / "changes.parquet", index=False
        )
        paths.append(str(folder / "changes.parquet"))
    return paths


def sample(root: Path, series: dict, dumps: list[int], anchors: int, fixed=None) -> pd.DataFrame:
    """The suite's facts by diff over ``series``: every triple a candidate of popularity 1."""
    con = scan.connect()
    paths = write_series(root, series, dumps)
    query, slices = tl.slice_query(Timeline(by="diff"), str(dumps[-1]), ["P17"], "", paths, con)
    sampler = tl.TimelineSampler(query, slices, 1, 1, SEED, fixed, con, anchors)
    ids = [fid(s, o) for s, o in series]
    sampler.add(pd.DataFrame({"fact_id": ids, "subject": [i.split("|")[0] for i in ids], "popularity": 1}))
    (got,) = sampler.finish()
    return got


def lowest(ids: list[str], k: int) -> list[str]:
    """The ``k`` of ``ids`` of lowest draw hash (then id): worked out apart from the sampler."""
    h = stable_hashes((SEED, "timeline"), pd.Series(ids))
    return [i for _, i in sorted(zip(h.tolist(), ids, strict=True))][:k]


def test_anchors_by_hand_on_a_small_dump_series(tmp_path):
    got = sample(tmp_path, SERIES, DUMPS, anchors=2)
    by_slice = got.groupby("slice")["fact_id"].apply(list).to_dict()
    assert by_slice["20200201"] == [fid(1, 20)] and by_slice["20200301"] == [fid(2, 21)]
    static_facts = [fid(s, o) for (s, o), st in SERIES.items() if st == [S, S]]
    assert by_slice["static"] == lowest(static_facts, 1)
    drawn_static = set(by_slice["static"])
    want = [f for f in lowest([fid(1, o) for o in (10, 11, 12)], 2) if f not in drawn_static]
    want += [f for f in [fid(2, 30)] if f not in drawn_static]
    anchors = got[got["slice"] == tl.ANCHOR]
    assert anchors["fact_id"].tolist() == want
    assert fid(1, 13) not in set(got["fact_id"])  # removed by the second diff: not true throughout
    assert not anchors["fact_id"].str.startswith("Q3|").any()  # no dated fact about Q3
    assert anchors["slice_start"].isna().all() and anchors["slice_end"].isna().all()
    assert (anchors["stratum"] == -1).all()
    assert got["fact_id"].is_unique
    # 0 turns them off: the rest of the sample is the same
    off = sample(tmp_path / "off", SERIES, DUMPS, anchors=0)
    pd.testing.assert_frame_equal(off, got[got["slice"] != tl.ANCHOR].reset_index(drop=True))


def test_anchors_are_a_function_of_the_subject_only(tmp_path):
    """A new dump, new subjects and more facts about other subjects leave the anchors of the
    older slices' subjects as they were (fixed quotas keep the older slices' facts too)."""
    fixed = (1, [])
    before = sample(tmp_path / "a", SERIES, DUMPS, anchors=2, fixed=fixed)
    grown = {key: [*st, S] if st[-1] in (S, N) else [*st, None] for key, st in SERIES.items()}
    grown |= {(4, 50): [None, None, N], (4, 51): [S, S, S], (5, 60): [S, S, S], (3, 42): [S, S, S]}
    after = sample(tmp_path / "b", grown, [*DUMPS, 20200401], anchors=2, fixed=fixed)
    old = before["fact_id"].str.split("|").str[0].isin(["Q1", "Q2"])
    kept = after[after["fact_id"].isin(before["fact_id"]) | (after["slice"] == tl.ANCHOR)]
    old_after = kept[kept["fact_id"].str.split("|").str[0].isin(["Q1", "Q2"])]
    cols = ["fact_id", "slice", "stratum"]
    pd.testing.assert_frame_equal(
        old_after[cols].reset_index(drop=True), before[old][cols].reset_index(drop=True)
    )
    new_anchors = after[(after["slice"] == tl.ANCHOR) & after["fact_id"].str.startswith("Q4|")]
    assert new_anchors["fact_id"].tolist() == [fid(4, 51)]


def test_metrics_read_anchors_for_known_subjects_and_curve_none():
    """Anchors alone make a subject known; no curve, edge or bootstrap holds them; a control
    teaches them like the static slice."""
    rows = [
        ("Q1|P1|Q9", "Q1", "static", None, None),
        ("Q2|P1|Q9", "Q2", "anchor", None, None),
        ("Q3|P1|Q9", "Q3", "anchor", None, None),
        ("Q2|P1|Q8", "Q2", "20200201", 20200101, 20200201),
        ("Q3|P1|Q8", "Q3", "20200301", 20200201, 20200301),
        ("Q4|P1|Q8", "Q4", "20200301", 20200201, 20200301),
    ]
    facts = pd.DataFrame(rows, columns=["fact_id", "subject", "slice", "slice_start", "slice_end"])
    facts = facts.astype({"slice_start": "Int32", "slice_end": "Int32"})
    values = pd.Series([1.0, 1.0, 0.0, 1.0, 0.0, 1.0], index=facts["fact_id"])
    known = subject_known(values, facts, 0.75)
    assert known.to_dict() == {"Q2|P1|Q8": True, "Q3|P1|Q8": False, "Q4|P1|Q8": False}
    assert series_edges(facts) == [20200101, 20200201, 20200301]
    per_fact = pd.DataFrame({"fact_id": facts["fact_id"], "measure": "k_avg", "value": values.to_numpy()})
    curve, _ = model_timeline(per_fact, facts, "k_avg", samples=20)
    assert curve["slice"].tolist() == ["20200201", "20200301", "static"]
    assert curve["n_facts"].tolist() == [1, 2, 1]
    assert np.allclose(curve["value"], [1.0, 0.5, 1.0])
    taught = tl.taught_until(facts, 20200201)["split"].tolist()
    assert taught == ["taught", "taught", "taught", "taught", "untaught", "untaught"]
    profile = tl.popularity_profile(facts.assign(popularity=1, stratum=0))
    assert tl.ANCHOR not in set(profile["slice"])
