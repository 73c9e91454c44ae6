"""The request cache reads only the keys a job asks for.

Hand-written shards: a lookup must return what a whole load of every shard into a dict returns
(the previous behaviour, written out here as the reference), keep only the asked keys in memory,
let the later shard win on a duplicate key, read old shards without ``end_logprob`` as NaN, and
skip an unreadable shard.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from factprobe.lm.cache import RequestCache


def whole_load(folder) -> dict:
    """Reference: every shard into one dict, in name order (the cache before it read only the keys asked for)."""
    known = {}
    for shard in sorted(folder.glob("part-*.parquet")):
        try:
            t = pq.read_table(shard).to_pydict()
        except (OSError, pa.ArrowInvalid):
            continue
        ends = t.get("end_logprob", [None] * len(t["key"]))
        for k, lp, nt, fl, el in zip(
            t["key"], t["logprob"], t["n_tokens"], t["first_logprob"], ends, strict=True
        ):
            known[k] = (lp, nt, fl, float("nan") if el is None else el)
    return known


def test_lookup_reads_only_asked_keys_and_matches_a_whole_load(tmp_path):
    rng = np.random.default_rng(3)
    n = 5000
    keys = [f"{i:032x}" for i in rng.permutation(10 * n)[:n]]
    for part, lo in enumerate(range(0, n, 1000)):
        sl = slice(lo, lo + 1000)
        table = {
            "key": keys[sl],
            "logprob": rng.normal(size=1000).tolist(),
            "n_tokens": rng.integers(1, 9, 1000).astype(np.int32).tolist(),
            "first_logprob": rng.normal(size=1000).tolist(),
        }
        if part:  # shard 0 predates end_logprob
            table["end_logprob"] = rng.normal(size=1000).tolist()
        pq.write_table(pa.table(table), tmp_path / f"part-{part}.parquet")
    # A later shard repeats keys[1500] with new values: it wins.
    pq.write_table(
        pa.table(
            {
                "key": [keys[1500]],
                "logprob": [-7.0],
                "n_tokens": pa.array([3], pa.int32()),
                "first_logprob": [-1.0],
                "end_logprob": [-0.5],
            }
        ),
        tmp_path / "part-zz.parquet",
    )
    (tmp_path / "part-broken.parquet").write_bytes(b"not parquet")
    ref = whole_load(tmp_path)
    cache = RequestCache(tmp_path, batch_rows=256)
    asked = keys[::37] + ["f" * 32]  # plus a key nobody wrote
    found, lp, nt, fl = cache.lookup(asked)
    end = cache.lookup_end(asked)
    assert len(cache._known) == len(asked) - 1  # only the asked keys were kept
    for i, k in enumerate(asked):
        if k not in ref:
            assert not found[i] and np.isnan(lp[i]) and np.isnan(end[i])
            continue
        a, b, c, d = ref[k]
        assert found[i] and lp[i] == a and nt[i] == b and fl[i] == c
        assert (np.isnan(end[i]) and np.isnan(d)) or end[i] == d
    found, lp, _, _ = cache.lookup([keys[1500], keys[0]])
    assert lp[0] == -7.0 and cache.lookup_end([keys[1500]])[0] == -0.5
    assert np.isnan(cache.lookup_end([keys[0]])[0])  # from the shard without end_logprob
    assert len(cache) == n
