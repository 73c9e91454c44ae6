"""Benchmark of the semantic distractor index (distractors paper §3.3 Sem).

Bags come from the real demo claims (both dumps) replicated to ``--size`` entities: ids are made
dense, then copy c of the KB shifts every entity by c·U, except the hub objects (the top
``--hub-share`` of objects by in-degree: countries, classes) that all copies share, so the copies
are linked the way Wikidata regions are. Measured in one run: bag + TF-IDF build time, HNSW
build time (entities/s), peak RSS, queries/s of HNSW at several efSearch and of exact scipy
search, recall@k of HNSW against the exact cosine on queries drawn from the real (copy 0)
entities. Ratios are printed against the targets and against exact search in the same run.

    .venv/bin/python benchmarks/distractors.py --size 1000000 --threads 2
"""

from __future__ import annotations

import argparse
import logging
import resource
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "workflow" / "scripts"))

from factprobe.distractors.semantic.bags import feature_codes  # noqa: E402
from factprobe.distractors.semantic.index import build_hnsw, exact_topk, hnsw_topk, recall_at, sample_rows  # noqa: E402
from factprobe.distractors.semantic.weighting import weight_matrix  # noqa: E402


def rss_mb() -> float:
    """Peak resident set size of this process so far, MiB."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def demo_claims(root: Path) -> np.ndarray:
    """Non-deprecated ``(s, p, o)`` of every extracted demo dump, as an (n, 3) int64 array."""
    parts = []
    for path in sorted((root / "results" / "wikidata").glob("*/claims.parquet")):
        c = pq.read_table(path, columns=["subject", "property", "object", "rank"]).to_pandas()
        parts.append(c[c["rank"] >= 1][["subject", "property", "object"]].to_numpy(np.int64))
    if not parts:
        raise SystemExit(
            "no results/wikidata/*/claims.parquet: run snakemake results/wikidata/20190201/claims.parquet first"
        )
    return np.unique(np.concatenate(parts), axis=0)


def replicate(spo: np.ndarray, size: int, hub_share: float) -> tuple[np.ndarray, int, int]:
    """Claims of ``ceil(size / U)`` shifted copies of the KB; returns (claims, U, copies)."""
    ids, inv = np.unique(np.concatenate([spo[:, 0], spo[:, 2]]), return_inverse=True)
    s, o = inv[: len(spo)], inv[len(spo) :]
    u = len(ids)
    indeg = np.bincount(o, minlength=u)
    hubs = np.zeros(u, bool)
    top = np.argsort(-indeg)[: max(1, int(hub_share * u))]
    hubs[top] = True
    copies = int(np.ceil((size - hubs.sum()) / (u - hubs.sum())))
    shift = (np.arange(copies, dtype=np.int64) * u)[:, None]
    S = (s[None, :] + shift).ravel()
    objs = np.where(hubs[o][None, :], o[None, :], o[None, :] + shift).ravel()
    P = np.tile(spo[:, 1], copies)
    return np.stack([S, P, objs], 1), u, copies


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--size", type=int, default=1_000_000, help="entities after replication (>= 1M for the target)"
    )
    ap.add_argument("--queries", type=int, default=1000)
    ap.add_argument("--k", type=int, default=50)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--m", type=int, default=32)
    ap.add_argument("--ef-construction", type=int, default=200)
    ap.add_argument("--ef-search", type=int, nargs="+", default=[50, 100, 200, 400, 800])
    ap.add_argument("--hub-share", type=float, default=0.02)
    ap.add_argument("--weighting", default="tfidf", choices=["tfidf", "bm25"])
    args = ap.parse_args()
    logging.getLogger("nmslib").setLevel(logging.WARNING)

    spo = demo_claims(ROOT)
    t0 = time.perf_counter()
    claims, u, copies = replicate(spo, args.size, args.hub_share)
    rows, codes = feature_codes(claims[:, 0], claims[:, 1], claims[:, 2], reverse=True)
    entities, features, X, _ = weight_matrix(rows, codes, args.weighting)
    t_bags = time.perf_counter() - t0
    print(
        f"real demo KB: {len(spo)} claims, {u} entities; {copies} copies -> {X.shape[0]} entities, "
        f"{X.shape[1]} features, {X.nnz / X.shape[0]:.1f} nnz/entity"
    )
    print(
        f"bags + {args.weighting}: {t_bags:.1f}s ({X.shape[0] / t_bags:,.0f} entities/s); peak RSS {rss_mb():,.0f} MiB"
    )

    t0, c0 = time.perf_counter(), time.process_time()
    index = build_hnsw(X, args.m, args.ef_construction, 2, args.threads)
    t_build, c_build = time.perf_counter() - t0, time.process_time() - c0
    rate = X.shape[0] / t_build
    # The box is shared: CPU seconds / threads estimates the wall time on otherwise idle cores.
    idle_rate = X.shape[0] / (c_build / args.threads)
    print(
        f"HNSW build (M={args.m}, efC={args.ef_construction}, {args.threads} threads): {t_build:.1f}s wall, "
        f"{c_build:.1f} CPU-s; {rate:,.0f} entities/s wall = {rate / 2000:.2f}x the 2k/s target; "
        f"{idle_rate:,.0f} entities/s on {args.threads} idle cores (from CPU time) = {idle_rate / 2000:.2f}x; "
        f"peak RSS {rss_mb():,.0f} MiB"
    )

    # Queries from copy 0: the real demo entities (ids below U after densification).
    real = np.flatnonzero(entities < u)
    q = real[sample_rows(len(real), args.queries, "benchmark")]
    t0, c0 = time.perf_counter(), time.process_time()
    ex_ids, ex_sims = exact_topk(X, q, args.k)
    t_exact, c_exact = time.perf_counter() - t0, time.process_time() - c0
    exact_qps, exact_cpu = len(q) / t_exact, len(q) / c_exact
    print(f"exact scipy top-{args.k} (1 thread): {exact_qps:,.1f} queries/s wall, {exact_cpu:,.1f} per CPU-s")
    best = None
    for ef in args.ef_search:
        t0, c0 = time.perf_counter(), time.process_time()
        ids, _ = hnsw_topk(index, X, q, args.k, ef, args.threads)
        dt, dc = time.perf_counter() - t0, time.process_time() - c0
        rec = recall_at(X, ids, ex_ids, ex_sims, q)
        qps, cpu = len(q) / dt, len(q) / dc
        ok = rec >= 0.95 and qps >= 1000
        print(
            f"HNSW efSearch={ef:4d}: {qps:9,.0f} queries/s wall ({qps / exact_qps:6.1f}x exact), "
            f"{cpu:9,.0f} per CPU-s ({cpu / exact_cpu:6.1f}x exact), recall@{args.k} {rec:.4f}"
            f"{'  <- recall>=0.95 at >=1k q/s' if ok else ''}"
        )
        if ok and best is None:
            best = ef
    print(f"peak RSS {rss_mb():,.0f} MiB")
    if best is None:
        print(
            "no efSearch reached recall@50 >= 0.95 at >= 1k queries/s: prefer distractors.sem.search=exact "
            "where exact search is fast enough (see queries/s above)"
        )
    else:
        print(f"chosen efSearch: {best}")


if __name__ == "__main__":
    main()
