"""Benchmark of the dump diff (factprobe.diff.engine) on two synthetic 20 M-row claims tables.

Target: >= 5 M claims/s end to end (rows of both dumps / wall time, reading the
inputs and writing changes.parquet + stats.tsv) on 2 cores, peak RSS < 4 GB, with the known
number of changes of every rule found exactly. Baselines, measured in the same run on the same
files: the least any diff must do, a DuckDB full outer join of the two tables on
(subject, property, object) that only counts the matches; and DuckDB's bare
anti-join, the new facts = the new table's rows whose (subject, property, object) is not in the
old one (``new ANTI JOIN old USING (...)``), written to Parquet like the diff's changes, with the
same threads and memory limit. The ratio diff / anti-join is what the project's rules (dates,
ranks, single-value replacements, new subjects, both directions) cost over that bare minimum.

Usage: .venv/bin/python benchmarks/diff.py [--rows 20000000] [--threads 2] [--partitions-rows N]
The diff and the baseline each run in a child process so that peak RSS and CPU time are their own.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from factprobe.contracts import SCHEMAS

T_OLD, T_NEW = 20150101, 20190101
SV_PROPERTY = 6
PROPS = np.array([31, 17, SV_PROPERTY, 131, 150, 47, 361, 527, 530, 463], dtype=np.int32)
CLAIMS = SCHEMAS["claims"]  # the extraction contract


def _table(subject, prop, obj, rank, start, end, pit) -> pa.Table:
    def col(values, typ):
        values = np.asarray(values)
        if values.dtype == np.float64:  # NaN marks a null date
            mask = np.isnan(values)
            return pa.array(np.where(mask, 0, values).astype(np.int32), type=typ, mask=mask)
        return pa.array(values, type=typ)

    cols = [
        col(subject, pa.int64()),
        col(prop, pa.int32()),
        col(obj, pa.int64()),
        col(rank, pa.int8()),
        col(start, pa.int32()),
        col(end, pa.int32()),
        col(pit, pa.int32()),
    ]
    return pa.Table.from_arrays(cols, schema=CLAIMS)


def generate(folder: Path, rows: int) -> dict[str, int]:
    """Write old/new claims and entities under ``folder``; return the expected count of every rule."""
    per = len(PROPS)
    n_subj = rows // per
    rows = n_subj * per
    k = max(1, rows // 200)  # size of each change category (0.5 % of the rows)
    rng = np.random.default_rng(20250101)
    subject = np.repeat(np.arange(1, n_subj + 1, dtype=np.int64), per)
    prop = np.tile(PROPS, n_subj)
    obj = (subject * 7919 + np.tile(np.arange(per), n_subj) * 104729) % 50_000_000 + 1
    nan = np.full(rows, np.nan)

    is_sv = prop == SV_PROPERTY
    other = rng.permutation(np.flatnonzero(~is_sv))
    cat = {
        name: other[i * k : (i + 1) * k]
        for i, name in enumerate(["removed", "end_between", "ignored", "deprecated", "qualified", "dup"])
    }
    cat["replace"] = rng.permutation(np.flatnonzero(is_sv))[:k]

    # old dump
    o_start, o_end = nan.copy(), nan.copy()
    o_start[cat["end_between"]] = 20100101
    o_start[cat["ignored"]] = 20050101
    o_end[cat["ignored"]] = 20100101
    o_start[cat["qualified"]] = 20000101
    old = _table(subject, prop, obj, np.ones(rows, np.int8), o_start, o_end, nan)
    pq.write_table(old, folder / "old_claims.parquet", compression="zstd")

    # new dump: base rows changed in place, some dropped, some added
    n_start, n_end, n_rank, n_obj = o_start.copy(), o_end.copy(), np.ones(rows, np.int8), obj.copy()
    n_end[cat["end_between"]] = 20170101
    n_rank[cat["deprecated"]] = 0
    n_obj[cat["replace"]] = obj[cat["replace"]] + 60_000_000
    n_start[cat["replace"]] = 20170101
    keep = np.ones(rows, bool)
    keep[cat["removed"]] = False
    base = _table(subject[keep], prop[keep], n_obj[keep], n_rank[keep], n_start[keep], n_end[keep], nan[keep])

    subj_pool = rng.permutation(n_subj)[: 2 * k] + 1
    undated_s, between_s = subj_pool[:k], subj_pool[k:]
    new_subj = np.arange(n_subj + 1, n_subj + 1 + k // 2, dtype=np.int64)
    dup = cat["dup"]
    extra = [
        _table(
            undated_s,
            np.full(k, 9999),
            undated_s % 1000 + 1,
            np.ones(k, np.int8),
            np.full(k, np.nan),
            np.full(k, np.nan),
            np.full(k, np.nan),
        ),
        _table(
            between_s,
            np.full(k, 9998),
            between_s % 1000 + 1,
            np.ones(k, np.int8),
            np.full(k, 20170101.0),
            np.full(k, np.nan),
            np.full(k, np.nan),
        ),
        _table(
            np.repeat(new_subj, 2),
            np.tile([31, 17], len(new_subj)),
            np.tile([5, 30], len(new_subj)),
            np.ones(2 * len(new_subj), np.int8),
            np.full(2 * len(new_subj), np.nan),
            np.full(2 * len(new_subj), np.nan),
            np.full(2 * len(new_subj), np.nan),
        ),
        # a second, older statement of the same triple: the triple stays one static row
        _table(
            subject[dup],
            prop[dup],
            obj[dup],
            np.ones(k, np.int8),
            np.full(k, 19900101.0),
            np.full(k, 19950101.0),
            np.full(k, np.nan),
        ),
    ]
    with pq.ParquetWriter(folder / "new_claims.parquet", CLAIMS, compression="zstd") as w:
        for t in [base, *extra]:
            w.write_table(t)

    ent = pa.schema([("id", pa.int64()), ("kind", pa.string()), ("created", pa.int32())])
    ids_old = np.arange(1, n_subj + 1, dtype=np.int64)
    pq.write_table(
        pa.Table.from_arrays(
            [pa.array(ids_old), pa.array(np.full(n_subj, "item")), pa.nulls(n_subj, pa.int32())], schema=ent
        ),
        folder / "old_entities.parquet",
    )
    ids_new = np.concatenate([ids_old, new_subj])
    created = np.concatenate([np.full(n_subj, 19900101), np.full(len(new_subj), 20180101)]).astype(np.int32)
    pq.write_table(
        pa.Table.from_arrays(
            [pa.array(ids_new), pa.array(np.full(len(ids_new), "item")), pa.array(created)], schema=ent
        ),
        folder / "new_entities.parquet",
    )

    expected = {
        "removed": 2 * k,  # removed + deprecated in the new dump
        "end_between": k,
        "ended_before_old": k,
        "start_before_old_open": k,
        "sv_replaced": k,
        "sv_added_start_between": k,
        "added_undated": k,
        "start_between": k,
        "subject_new": 2 * len(new_subj),
    }
    expected["kept"] = rows - 6 * k  # every base row outside the six changed categories
    expected["_rows_in"] = old.num_rows + sum(t.num_rows for t in [base, *extra])
    expected["_replace"] = 2 * k
    return expected


def peak_rss_mb() -> float:
    """This process's peak RSS. VmHWM, not ru_maxrss: Linux carries ru_maxrss over exec, so a
    child started by the (large) generating parent would report the parent's peak."""
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def child(args: argparse.Namespace) -> None:
    """Run the diff (or the baseline) on the generated files and print JSON timings."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "workflow" / "scripts"))
    folder = Path(args.folder)
    t0 = time.perf_counter()
    if args.child == "baseline":
        import duckdb

        con = duckdb.connect()
        con.execute(f"SET threads = {args.threads}")
        n = con.execute(
            f"SELECT count(*) FROM read_parquet('{folder}/old_claims.parquet') o FULL OUTER JOIN "
            f"read_parquet('{folder}/new_claims.parquet') n USING (subject, property, object)"
        ).fetchone()[0]
        out = {"joined": n}
    elif args.child == "antijoin":
        import duckdb

        con = duckdb.connect()
        con.execute(f"SET threads = {args.threads}")
        con.execute(f"SET memory_limit = '{args.memory_mb}MB'")
        con.execute(f"SET temp_directory = '{folder}/antijoin.tmp'")
        con.execute(
            f"COPY (SELECT n.* FROM read_parquet('{folder}/new_claims.parquet') n ANTI JOIN "
            f"read_parquet('{folder}/old_claims.parquet') o USING (subject, property, object)) "
            f"TO '{folder}/new_facts.parquet' (FORMAT parquet, COMPRESSION zstd)"
        )
        n = con.execute(f"SELECT count(*) FROM read_parquet('{folder}/new_facts.parquet')").fetchone()[0]
        out = {"new_facts": n}
    else:
        import duckdb
        from factprobe.diff.engine import DiffInputs, diff_claims

        inputs = DiffInputs(
            folder / "old_claims.parquet",
            folder / "new_claims.parquet",
            folder / "old_entities.parquet",
            folder / "new_entities.parquet",
            T_OLD,
            T_NEW,
        )
        res = diff_claims(
            inputs,
            [SV_PROPERTY],
            folder / "changes.parquet",
            folder / "stats.tsv",
            memory_mb=args.memory_mb,
            threads=args.threads,
            rows_per_partition=args.partition_rows,
            temp_dir=folder,
        )
        con = duckdb.connect()
        rules = dict(
            con.execute(
                f"SELECT rule, count(*) FROM read_parquet('{folder}/changes.parquet') GROUP BY rule"
            ).fetchall()
        )
        rules["ended_before_old"] = res.counts["ignored"]
        rules["_replace"] = con.execute(
            f"SELECT count(*) FROM read_parquet('{folder}/changes.parquet') WHERE is_replace"
        ).fetchone()[0]
        out = {
            "rules": rules,
            "rows_in": res.rows_in,
            "partitions": res.partitions,
            "bucketing": res.bucketing,
        }
    out["seconds"] = time.perf_counter() - t0
    usage = resource.getrusage(resource.RUSAGE_SELF)
    out["cpu_seconds"] = usage.ru_utime + usage.ru_stime
    out["peak_rss_mb"] = peak_rss_mb()
    print(json.dumps(out))


def run_child(kind: str, folder: Path, args: argparse.Namespace) -> dict:
    """Run one measurement in a fresh process, so that its peak RSS and CPU time are its own."""
    cmd = [
        sys.executable,
        __file__,
        "--child",
        kind,
        "--folder",
        str(folder),
        "--threads",
        str(args.threads),
        "--memory-mb",
        str(args.memory_mb),
        "--partition-rows",
        str(args.partition_rows),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode:
        sys.exit(f"{kind} failed:\n{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=20_000_000)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--memory-mb", type=int, default=3000)
    ap.add_argument("--partition-rows", type=int, default=60_000_000)
    ap.add_argument("--child", choices=["diff", "baseline", "antijoin"])
    ap.add_argument("--folder")
    args = ap.parse_args()
    if args.child:
        child(args)
        return
    with tempfile.TemporaryDirectory(prefix="bench-diff-") as tmp:
        folder = Path(tmp)
        t0 = time.perf_counter()
        expected = generate(folder, args.rows)
        print(f"generated {expected['_rows_in']:,} claims in {time.perf_counter() - t0:.1f} s")
        diff = run_child("diff", folder, args)
        base = run_child("baseline", folder, args)
        anti = run_child("antijoin", folder, args)
    rows = diff["rows_in"]
    got = diff["rules"]
    # The machine may be shared: CPU seconds / cores is what the wall time would be on idle cores.
    runs = (
        ("baseline full outer join", base),
        (f"bare anti-join ({anti['new_facts']:,} new facts)", anti),
        (f"diff ({diff['partitions']} partition(s), {diff['bucketing']})", diff),
    )
    for name, r in runs:
        print(
            f"{name}: wall {r['seconds']:.2f} s = {rows / r['seconds'] / 1e6:.2f} M rows/s; "
            f"CPU {r['cpu_seconds']:.2f} s = {rows / (r['cpu_seconds'] / args.threads) / 1e6:.2f} M rows/s "
            f"on {args.threads} idle cores; peak RSS {r['peak_rss_mb']:.0f} MB"
        )
    print(
        f"ratio diff/baseline: wall {diff['seconds'] / base['seconds']:.2f}, "
        f"CPU {diff['cpu_seconds'] / base['cpu_seconds']:.2f}"
    )
    print(
        f"ratio diff/bare anti-join: wall {diff['seconds'] / anti['seconds']:.2f}, "
        f"CPU {diff['cpu_seconds'] / anti['cpu_seconds']:.2f}, peak RSS "
        f"{diff['peak_rss_mb'] / anti['peak_rss_mb']:.2f}"
    )
    mismatch = {
        r: (n, got.get(r, 0)) for r, n in expected.items() if not r.startswith("_rows") and got.get(r, 0) != n
    }
    extra = {r: n for r, n in got.items() if r not in expected}
    assert not mismatch and not extra, f"rule counts differ (expected, got): {mismatch}, unexpected {extra}"
    print(
        f"all {len(expected) - 1} known change counts found exactly; "
        f"target >= 5 M rows/s: wall {'met' if rows / diff['seconds'] >= 5e6 else 'NOT met'}, "
        f"CPU-bound estimate {'met' if rows / (diff['cpu_seconds'] / args.threads) >= 5e6 else 'NOT met'}; "
        f"RSS < 4 GB: {'met' if diff['peak_rss_mb'] < 4096 else 'NOT met'}"
    )


if __name__ == "__main__":
    main()
