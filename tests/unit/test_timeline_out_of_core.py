"""The timeline slicing and sampler out of core (factprobe.probes.timeline, DuckDB over Parquet)
against the former in-memory computation, kept here as the independent reference: pandas
pivots every diff row, NumPy quantiles every candidate, pandas sorts them all. Same facts, ids,
columns, dtypes and order on random multi-dump series; and the slicing within a DuckDB memory
limit far below what the reference holds."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from factprobe import contracts, scan
from factprobe.hashing import stable_hashes
from factprobe.probes import timeline as tl
from factprobe.settings import Timeline

TRIPLE = ["subject", "property", "object"]
STATUSES = np.array(["new", "static", "obsolete", "unknown"], dtype=object)

# --- the former in-memory computation (the reference) ----------------------------------------


def ref_diff_slices(changes: dict) -> pd.DataFrame:
    intervals = sorted(changes)
    n = len(intervals)
    parts = [changes[key][[*TRIPLE, "status"]].assign(i=i) for i, key in enumerate(intervals)]
    long = pd.concat(parts, ignore_index=True)
    wide = long.pivot_table(index=TRIPLE, columns="i", values="status", aggfunc="first").reindex(
        columns=range(n)
    )
    status = wide.to_numpy(dtype=object)
    is_static, is_new = status == "static", status == "new"
    labels = np.full(len(wide), None, dtype=object)
    labels[is_static.all(axis=1)] = tl.STATIC
    known_before = np.zeros(len(wide), dtype=bool)
    for i, (_, t_new) in enumerate(intervals):
        later_static = is_static[:, i + 1 :].all(axis=1)
        labels[is_new[:, i] & later_static & ~known_before] = str(t_new)
        known_before |= is_new[:, i] | is_static[:, i]
    out = wide.index.to_frame(index=False)
    out["slice"] = labels
    return out[out["slice"].notna()].reset_index(drop=True)


def ref_date_slices(dates: pd.Series, edges) -> pd.Series:
    slices = tl.series_slices(edges)
    ends = np.array([s.end for s in slices[:-1]], dtype=np.int64)
    d = pd.to_numeric(dates, errors="coerce")
    undated = d.isna().to_numpy()
    values = d.fillna(0).to_numpy(dtype=np.int64)
    pos = np.searchsorted(ends, values, side="left")
    inside = (values > int(edges[0])) & (values <= int(edges[-1]))
    names = np.array([s.label for s in slices[:-1]], dtype=object)
    labels = np.where(inside, names[np.minimum(pos, len(ends) - 1)], None)
    return pd.Series(np.where(undated, tl.STATIC, labels), index=dates.index, dtype=object)


def ref_popularity_bins(popularity, bins: int) -> np.ndarray:
    x = np.log1p(np.asarray(popularity, dtype=np.float64))
    if x.size == 0 or bins <= 1:
        return np.zeros(x.size, dtype=np.int64)
    edges = np.unique(np.quantile(x, np.arange(1, bins) / bins))
    return np.searchsorted(edges, x, side="right").astype(np.int64)


def ref_matched_sample(candidates: pd.DataFrame, n: int, bins: int, seed) -> pd.DataFrame:
    c = candidates.reset_index(drop=True).copy()
    c["stratum"] = ref_popularity_bins(c["popularity"].to_numpy(), bins)
    c["_h"] = stable_hashes((seed, "timeline"), c["fact_id"])
    counts = pd.crosstab(c["slice"], c["stratum"]).reindex(
        columns=range(int(c["stratum"].max()) + 1 if len(c) else 0), fill_value=0
    )
    q = tl.quotas(counts.min(axis=0).to_numpy() if len(counts) else np.zeros(0, np.int64), n)
    quota = pd.Series(q, index=counts.columns)
    c = c.sort_values(["slice", "stratum", "_h", "fact_id"])
    c["_rank"] = c.groupby(["slice", "stratum"]).cumcount()
    keep = c["_rank"] < c["stratum"].map(quota).fillna(0).to_numpy()
    return c[keep].drop(columns=["_h", "_rank"]).reset_index(drop=True)


def ref_fixed_sample(candidates: pd.DataFrame, per_bin: int, edges, seed) -> pd.DataFrame:
    edges = np.asarray(edges, dtype=np.float64)
    c = candidates.reset_index(drop=True).copy()
    c["stratum"] = np.searchsorted(edges, c["popularity"].to_numpy(dtype=np.float64), side="right")
    c["_h"] = stable_hashes((seed, "timeline"), c["fact_id"])
    c = c.sort_values(["slice", "stratum", "_h", "fact_id"])
    keep = c.groupby(["slice", "stratum"]).cumcount() < per_bin
    return c[keep.to_numpy()].drop(columns=["_h"]).reset_index(drop=True)


def ref_sampler(parts, table: pd.DataFrame, n_facts, bins, seed, fixed) -> pd.DataFrame:
    cands = pd.concat(parts, ignore_index=True).merge(table, on="fact_id", how="inner")
    if fixed is not None:
        return ref_fixed_sample(cands, fixed[0], fixed[1], seed)
    return ref_matched_sample(cands, len(cands) if n_facts is None else n_facts, bins, seed)


def ref_slice_table(changes: dict) -> pd.DataFrame:
    dated = ref_diff_slices(changes)
    edges = [min(changes)[0], *sorted(new for _, new in changes)]
    bounds = {s.label: (s.start, s.end) for s in tl.series_slices(edges)}
    out = pd.DataFrame(
        {"fact_id": contracts.fact_ids_of(dated).to_numpy(), "slice": dated["slice"].to_numpy()}
    )
    out["slice_start"] = pd.array([bounds[s][0] for s in out["slice"]], dtype="Int32")
    out["slice_end"] = pd.array([bounds[s][1] for s in out["slice"]], dtype="Int32")
    return out


# --- random multi-dump series ------------------------------------------------------------------


def random_series(rng, dumps: list[int], n_triples: int) -> dict:
    """Changes of each consecutive pair of ``dumps``: every triple of a pool in some diffs with a
    random status, biased to ``static`` after a ``new`` so that every slice fills; one row per
    triple and diff, as the diff engine writes them."""
    pool = pd.DataFrame(
        {
            "subject": rng.integers(1, n_triples // 3, n_triples),
            "property": rng.choice(np.array([17, 36, 19], dtype=np.int32), n_triples),
            "object": rng.integers(1, 50, n_triples),
        }
    ).drop_duplicates(ignore_index=True)
    born = rng.integers(-1, len(dumps) - 1, len(pool))  # the diff where it appears (-1: before)
    changes = {}
    for i, key in enumerate(zip(dumps, dumps[1:], strict=False)):
        status = np.where(born < i, "static", np.where(born == i, "new", None)).astype(object)
        noise = rng.random(len(pool)) < 0.15
        status[noise] = rng.choice(STATUSES, int(noise.sum()))
        rows = pool.assign(status=status)[status != None]  # noqa: E711
        changes[key] = rows.reset_index(drop=True).astype({"status": "str"})
    return changes


def write_series(root: Path, changes: dict) -> list[str]:
    paths = []
    for (old, new), frame in changes.items():
        folder = root / f"{old}_{new}"
        folder.mkdir(parents=True)
        frame.to_parquet(folder / "changes.parquet", index=False)
        paths.append(str(folder / "changes.parquet"))
    return paths[::-1]  # the sampler must not rely on the order it is given


def candidate_parts(rng, table: pd.DataFrame, k: int) -> list[pd.DataFrame]:
    """Candidates of most of ``table``'s facts and a few of no slice, with extra columns of
    several types, cut into ``k`` parts; popularity with ties (sitelinks)."""
    ids = table["fact_id"].sample(frac=0.9, random_state=1).tolist() + [f"Q{i}|P17|Q0" for i in range(20)]
    n = len(ids)
    frame = pd.DataFrame(
        {
            "fact_id": ids,
            "subject": [f.split("|")[0] for f in ids],
            "label": [f"label {i}" for i in range(n)],
            "popularity": rng.choice(np.array([0, 0, 0, 1, 2, 3, 5, 8, 13, 40, 120, 300]), n),
            "weight": rng.random(n),
        }
    )
    cuts = np.linspace(0, n, k + 1).astype(int)
    return [frame.iloc[a:b].reset_index(drop=True) for a, b in zip(cuts, cuts[1:], strict=False)]


@pytest.mark.parametrize("seed", [0, 1])
def test_diff_slices_equal_the_in_memory_pivot(seed):
    rng = np.random.default_rng(seed)
    dumps = [20190101, 20190201, 20190301, 20190401, 20190501, 20190601]
    changes = random_series(rng, dumps, 2000)
    got, want = tl.diff_slices(changes), ref_diff_slices(changes)
    # every dated slice and the static one are filled: the comparison covers each rule
    assert set(want["slice"]) == {*map(str, dumps[1:]), tl.STATIC}
    pd.testing.assert_frame_equal(got[["subject", "property", "object"]], want[TRIPLE], check_dtype=False)
    assert got["slice"].tolist() == want["slice"].tolist()


def test_quantile_edges_equal_numpy_on_the_histogram():
    rng = np.random.default_rng(5)
    for _ in range(300):
        values = np.unique(rng.choice(np.arange(500), rng.integers(1, 12)))
        counts = rng.integers(1, 9, len(values))
        bins = int(rng.integers(1, 9))
        sample = np.repeat(values, counts)
        want = np.unique(np.quantile(np.log1p(sample.astype(float)), np.arange(1, bins) / bins))
        got = tl.quantile_edges(values, counts, bins)
        assert np.array_equal(got, want)  # bit for bit: the bins follow from the edges


def test_date_slices_equal_the_searchsorted_reference():
    rng = np.random.default_rng(2)
    edges = [19500101, 19700101, 20000101, 20200000]
    dates = pd.Series(
        rng.choice(np.array([19500101, 19700101, 19700000, 19991231, 20200000, 20200101, 0]), 500)
    )
    dates = dates.astype("Int64").mask(rng.random(500) < 0.2)
    assert tl.date_slices(dates, edges).tolist() == ref_date_slices(dates, edges).tolist()


@pytest.mark.parametrize(
    ("n_facts", "bins", "fixed"),
    [(40, 5, None), (None, 3, None), (1000, 1, None), (6, 7, (6, [2.0, 20.0]))],
)
def test_sampler_equals_the_in_memory_draw_on_a_dump_series(tmp_path, n_facts, bins, fixed):
    rng = np.random.default_rng(11)
    dumps = [20190101, 20190201, 20190301, 20190401, 20190501]
    changes = random_series(rng, dumps, 1500)
    paths = write_series(tmp_path / "diff", changes)
    block = Timeline(by="diff")
    query, slices = tl.slice_query(block, "20190501", ["P17", "P36"], "", paths, scan.connect())
    want_table = ref_slice_table({k: v[v["property"].isin([17, 36])] for k, v in changes.items()})
    got_table, _ = tl.slice_table(block, "20190501", ["P17", "P36"], "", paths, scan.connect())
    pd.testing.assert_frame_equal(got_table, want_table)
    parts = candidate_parts(rng, want_table, 4)
    sampler = tl.TimelineSampler(query, slices, n_facts, bins, 3, fixed, scan.connect())
    spill = sampler.spiller()
    for part in parts:  # as fact_candidates.take_parts: the spill may run in a worker
        path = sampler.reserve()
        sampler.register("P17", path, spill(part, None, path))
    (got,) = sampler.finish()
    want = ref_sampler(parts, want_table, n_facts, bins, 3, fixed)
    assert len(want) > 0 and set(want["slice"]) == {s.label for s in slices}
    pd.testing.assert_frame_equal(got, want)
    # the in-memory helpers draw the same rows from the merged candidates
    merged = pd.concat(parts, ignore_index=True).merge(want_table, on="fact_id")
    if fixed is None:
        n = len(merged) if n_facts is None else n_facts
        pd.testing.assert_frame_equal(
            tl.matched_sample(merged, n, bins, 3), ref_matched_sample(merged, n, bins, 3)
        )
    else:
        pd.testing.assert_frame_equal(
            tl.fixed_sample(merged, *fixed, seed=3), ref_fixed_sample(merged, *fixed, 3)
        )


def test_sampler_by_statement_date_equals_the_in_memory_draw(tmp_path):
    rng = np.random.default_rng(4)
    n = 3000
    claims = pd.DataFrame(
        {
            "subject": rng.integers(1, 900, n),
            "property": rng.choice(np.array([17, 36], dtype=np.int32), n),
            "object": rng.integers(1, 30, n),
            "rank": np.ones(n, dtype=np.int8),
            "start": pd.array(
                rng.choice([19400000, 19600505, 19700101, 19850000, 19990101], n), dtype="Int32"
            ),
            "end": pd.array([None] * n, dtype="Int32"),
            "point_in_time": pd.array([None] * n, dtype="Int32"),
        }
    )
    claims["start"] = claims["start"].mask(rng.random(n) < 0.3)
    path = tmp_path / "claims.parquet"
    claims.to_parquet(path)
    edges = [19500101, 19700101, 20000101]
    block = Timeline(by="statement_date", edges=edges)
    query, slices = tl.slice_query(block, "20200101", ["P17"], str(path), [], scan.connect())
    con = scan.connect()
    dated = con.sql(tl.statement_dates_sql(str(path), 20200101, [17])).to_df()
    dated["slice"] = ref_date_slices(dated["date"], edges).to_numpy()
    dated = dated[dated["slice"].notna()]
    bounds = {s.label: (s.start, s.end) for s in slices}
    table = pd.DataFrame(
        {"fact_id": contracts.fact_ids_of(dated).to_numpy(), "slice": dated["slice"].to_numpy()}
    )
    table["slice_start"] = pd.array([bounds[s][0] for s in table["slice"]], dtype="Int32")
    table["slice_end"] = pd.array([bounds[s][1] for s in table["slice"]], dtype="Int32")
    table["date"] = pd.array(dated["date"].to_numpy(), dtype="Int32")
    parts = candidate_parts(rng, table, 3)
    sampler = tl.TimelineSampler(query, slices, 30, 4, 9, None, scan.connect())
    for part in parts:
        sampler.add(part)
    (got,) = sampler.finish()
    pd.testing.assert_frame_equal(got, ref_sampler(parts, table, 30, 4, 9, None))


def test_timeline_sampler_names_an_empty_slice(tmp_path):
    table = pd.DataFrame({"fact_id": ["a", "b"], "slice": ["20200201", tl.STATIC]})
    slices = tl.series_slices([20200101, 20200201, 20200301])
    sampler = tl.TimelineSampler(table, slices, 2, 1, 0)
    sampler.add(pd.DataFrame({"fact_id": ["a", "b"], "popularity": [1, 2]}))
    with pytest.raises(ValueError, match=r"\['20200301'\]"):
        sampler.finish()


@pytest.mark.parametrize("n", [150_000, pytest.param(500_000, marks=pytest.mark.full)])
def test_slicing_and_drawing_spill_within_a_small_memory_limit(tmp_path, n):
    """``n`` triples over four diffs (2.8 n diff rows): under a 40 MB DuckDB limit the slicing
    and the draw spill to the temp folder and give the slices built into the series and the
    reference's sample of them. With 500,000 triples the diff rows alone, as the in-memory path
    read them before its pivot, take more than the limit (``make test-full``)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    limit_mb = 40
    dumps = [20190101, 20190201, 20190301, 20190401, 20190501]
    k = np.arange(n, dtype=np.int64)
    born = k % 5 - 1  # -1: static throughout; i: new in diff i, static after -> slice dumps[i + 1]
    frames, paths = [], []
    for i, (old, new) in enumerate(zip(dumps, dumps[1:], strict=False)):
        there = born <= i
        frame = pd.DataFrame(
            {
                "subject": k[there] * 7919 % 10**9,
                "property": np.full(int(there.sum()), 17, dtype=np.int32),
                "object": k[there] % 1000,
                "status": np.where(born[there] < i, "static", "new"),
            }
        )
        folder = tmp_path / f"{old}_{new}"
        folder.mkdir()
        pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), folder / "changes.parquet")
        frames.append(frame)
        paths.append(str(folder / "changes.parquet"))
    held = sum(int(f.memory_usage(deep=True).sum()) for f in frames)
    if n >= 500_000:
        assert held > limit_mb * 2**20  # what the in-memory path read before pivoting
    spill = tmp_path / "spill"
    con = scan.connect(memory_mb=limit_mb, temp_dir=spill)
    query, slices = tl.slice_query(Timeline(by="diff"), "20190501", ["P17"], "", paths, con)
    labels = np.array([tl.STATIC, *map(str, dumps[1:])], dtype=object)[born + 1]
    ids = "Q" + pd.Series(k * 7919 % 10**9).astype(str) + "|P17|Q" + pd.Series(k % 1000).astype(str)
    parts = [
        pd.DataFrame({"fact_id": ids[a : a + n // 5].to_numpy(), "popularity": (k[a : a + n // 5] * 13) % 97})
        for a in range(0, n, n // 5)
    ]
    sampler = tl.TimelineSampler(query, slices, 500, 4, 1, None, con)
    for part in parts:
        sampler.add(part)
    (got,) = sampler.finish()
    assert spill.exists()  # DuckDB made its temp folder: it spilled
    bounds = {s.label: (s.start, s.end) for s in slices}
    table = pd.DataFrame({"fact_id": ids.to_numpy(), "slice": labels})
    table["slice_start"] = pd.array([bounds[s][0] for s in labels], dtype="Int32")
    table["slice_end"] = pd.array([bounds[s][1] for s in labels], dtype="Int32")
    want = ref_sampler(parts, table, 500, 4, 1, None)
    assert table.groupby("slice").size().tolist() == [n // 5] * 5
    assert want.groupby("slice").size().tolist() == [500] * 5
    pd.testing.assert_frame_equal(got, want)
