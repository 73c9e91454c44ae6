"""Scale model of a timeline suite ``by: diff`` on 24 monthly dumps at full Wikidata size:
facts per monthly slice on the common relations, and the peak memory of the timeline build.

``benchmarks/scale.py --timeline`` prints it (or ``python benchmarks/scale_timeline.py``).

Facts per monthly slice (:func:`monthly_facts`): new item-valued statements a month x the share
of them that is a probe-able fact of the common relations. Every input is a measured or published
figure, named where it is defined below; the rate of new items is given as an interval (two
sources eight times apart), and the share that would just give the target at the low rate is
printed, so the reader sees the margin (:func:`break_even_share`).

Peak memory (:func:`measure`): the timeline part of ``build_probes`` (slicing every diff of the
series, drawing the sample, ``factprobe.probes.timeline``) run in a child process on synthetic
series of 24 diffs at growing size, under a fixed DuckDB limit, its ``ru_maxrss`` read; beside
it, in the same run, the former in-memory path (pandas reads every diff row of the relations and
pivots them, :func:`pivot_baseline`) as the baseline. Each peak is extrapolated to the full
series' diff rows with ``scale.py``'s rule (``increment_exponent``/``extrapolate``: the growth
above the smallest run, fixed costs cancel). The other jobs of the timeline path (extraction,
diff and temporal view per dump or pair, the suite's candidate parts) are the jobs of the
full-size node model of ``scale.py`` (benchmarks/RESULTS.md), the same per dump or pair whatever
the series' length; the series only multiplies their number (25 extractions and temporal
views, 24 diffs).

    PYTHONPATH=workflow/scripts .venv/bin/python benchmarks/scale_timeline.py --sizes 50000 100000 200000
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

#: Monthly dumps of the series and the diffs between them.
DUMPS, TARGET_FACTS, JOB_GB = 24, 5_000, 32.0
#: The common relations: the relations of config/config.yaml's suites.
COMMON = (
    "P17",
    "P19",
    "P20",
    "P27",
    "P30",
    "P31",
    "P36",
    "P47",
    "P131",
    "P138",
    "P150",
    "P190",
    "P361",
    "P530",
    "P1376",
)
#: New items a month, low: entities in the dump, 95,980,335 lines in 2022-01 (../shared/research/
#: performance.md A.1, neelguha/simple-wikidata-db README) and 119 M in late 2026 (scale.py
#: FULL_ENTITIES, not verified online): 23.0 M in 58 months.
ITEMS_PER_MONTH_LOW = (119e6 - 95_980_335) / 58
#: New items a month, high: the Wikidata edit stream of 2019-04-02 (tests/data/short_stream.json.bz2,
#: 635 items): items Q62666068 (modified 21:08:56) to Q62666148 (21:10:01) were created in the
#: window, 80 new ids in 65 s; a month of 30.44 days at that rate.
ITEMS_PER_MONTH_HIGH = 80 / 65 * 86_400 * 30.44
#: Item-valued statements per item (the claims table): 6.32 in short_stream.json.bz2 (scale.py: 6.3).
CLAIMS_PER_ITEM = 6.3
#: Probe-able facts of the common relations per item-valued statement, measured on the 635
#: items of short_stream.json.bz2: distinct (subject, common relation) pairs with an item value
#: (a suite keeps one fact per pair) 965 of 4,015 statements; without P31 (instance of, mostly
#: "scholarly article") 394.
COMMON_SHARE, COMMON_SHARE_NO_P31 = 965 / 4015, 394 / 4015
#: Items with an English label (the subject must have one in an English suite): 81 % of
#: short_stream.json.bz2 (515 of 635).
LABELLED = 0.81
#: Diff rows of the suite's relations per diff at full size: the claims table (scale.py
#: FULL_CLAIMS, 119 M x 6.3) times the share of statements on the common relations in the sample
#: (1,052 of 4,015 item-valued statements of short_stream.json.bz2 are on them).
FULL_ROWS_PER_DIFF = 119e6 * 6.3 * 1052 / 4015


def monthly_facts(items_per_month: float, claims_per_item: float, share: float, labelled: float) -> float:
    """Facts a monthly slice can offer: new item-valued statements a month (new items x their
    statements) x the share that are probe-able facts of the common relations x the share whose
    subject has a label in the suite's language."""
    return items_per_month * claims_per_item * share * labelled


def break_even_share(items_per_month: float, claims_per_item: float, labelled: float, target: float) -> float:
    """The share of new statements on the common relations that gives exactly ``target`` facts
    a slice at this rate of new items."""
    return target / (items_per_month * claims_per_item * labelled)


def series(root: Path, n: int, dumps: int = DUMPS, seed: int = 7) -> list[str]:
    """A synthetic diff series under ``root/{old}_{new}/changes.parquet``: ``n`` triples of P17,
    each born in a diff (or before the series: static throughout), ``new`` there and ``static``
    in every later diff; ``dumps`` diffs (so ``dumps + 1`` dumps). Rows: about n x dumps / 2."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(seed)
    born = rng.integers(-1, dumps, n)
    subject = rng.permutation(n).astype(np.int64) + 1
    dates = [int(f"{2020 + m // 12}{m % 12 + 1:02d}01") for m in range(dumps + 1)]
    paths = []
    for i in range(dumps):
        there = born <= i
        folder = root / f"{dates[i]}_{dates[i + 1]}"
        folder.mkdir(parents=True)
        table = pa.table(
            {
                "subject": subject[there],
                "property": np.full(int(there.sum()), 17, dtype=np.int32),
                "object": subject[there] % 200 + 1,
                "status": np.where(born[there] < i, "static", "new"),
            }
        )
        pq.write_table(table, folder / "changes.parquet")
        paths.append(str(folder / "changes.parquet"))
    return paths


def out_of_core(paths: list[str], memory_mb: int, spill: str) -> int:
    """The timeline build's slicing and draw (factprobe.probes.timeline): every sliced fact a
    candidate (popularity from the subject), 1,000 facts a slice; returns the facts drawn."""
    import pandas as pd
    from factprobe import scan
    from factprobe.probes import timeline as tl
    from factprobe.settings import Timeline

    con = scan.connect(memory_mb=memory_mb, temp_dir=spill)
    query, slices = tl.slice_query(Timeline(by="diff"), "0", ["P17"], "", paths, con)
    sampler = tl.TimelineSampler(query, slices, 1000, 5, 0, None, con)
    for path in paths[-1:]:  # the newest diff holds every triple: its rows are the candidates
        reader = con.execute(f"SELECT subject, object FROM read_parquet({scan.quote(path)})")
        while (batch := reader.fetch_df_chunk(50)) is not None and len(batch):
            ids = "Q" + batch["subject"].astype(str) + "|P17|Q" + batch["object"].astype(str)
            sampler.add(pd.DataFrame({"fact_id": ids, "popularity": batch["subject"] % 97}))
    (sample,) = sampler.finish()
    return len(sample)


def pivot_baseline(paths: list[str]) -> int:
    """The former in-memory path's slicing: every diff row of the relation read into pandas and
    pivoted (triple x diff), the labels computed on the pivot; returns the sliced triples."""
    import pandas as pd

    parts = []
    for i, path in enumerate(sorted(paths)):
        parts.append(pd.read_parquet(path, filters=[("property", "in", [17])]).assign(i=i))
    long = pd.concat(parts, ignore_index=True)
    wide = long.pivot_table(
        index=["subject", "property", "object"], columns="i", values="status", aggfunc="first"
    ).reindex(columns=range(len(paths)))
    status = wide.to_numpy(dtype=object)
    is_static, is_new = status == "static", status == "new"
    labelled = is_static.all(axis=1)
    known = np.zeros(len(wide), dtype=bool)
    for i in range(len(paths)):
        labelled |= is_new[:, i] & is_static[:, i + 1 :].all(axis=1) & ~known
        known |= is_new[:, i] | is_static[:, i]
    return int(labelled.sum())


def child(kind: str, n: int, memory_mb: int) -> dict:
    """One measurement in this (child) process: its peak RSS in MB and its wall seconds."""
    import pyarrow.parquet as pq

    with tempfile.TemporaryDirectory(prefix="factprobe-tlscale-") as tmp:
        paths = series(Path(tmp) / "diff", n)
        rows = sum(pq.ParquetFile(p).metadata.num_rows for p in paths)
        start = time.perf_counter()
        got = (
            out_of_core(paths, memory_mb, str(Path(tmp) / "spill"))
            if kind == "duckdb"
            else pivot_baseline(paths)
        )
        wall = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    limit = memory_mb if kind == "duckdb" else 0
    return {
        "kind": kind,
        "n": n,
        "rows": rows,
        "memory_mb": limit,
        "peak_mb": peak,
        "wall_s": wall,
        "result": got,
    }


def measure(sizes: list[int], memory_mb: int, pivot_max: int | None = None) -> list[dict]:
    """Each (kind, size) in a fresh interpreter (python -c ... child), so each peak is its own;
    the in-memory baseline only up to ``pivot_max`` triples (it holds every row)."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT / "workflow" / "scripts"), str(ROOT / "benchmarks")]),
    }
    out = []
    for n in sizes:
        for kind in ("duckdb", "pivot") if pivot_max is None or n <= pivot_max else ("duckdb",):
            code = f"import json, scale_timeline as s; print(json.dumps(s.child({kind!r}, {n}, {memory_mb})))"
            run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
            if run.returncode:
                raise RuntimeError(f"{kind} at {n}: {run.stderr[-2000:]}")
            out.append(json.loads(run.stdout.strip().splitlines()[-1]))
            print(f"  {kind} {n} triples: {out[-1]}", flush=True)
    return out


def full_peak_mb(
    runs: list[dict], kind: str, full_rows: float, limit_mb: float = 0.0
) -> tuple[float, float | None]:
    """Peak RSS of ``kind`` at ``full_rows`` diff rows, by scale.py's rule: the growth above the
    smallest run, exponent fitted (``increment_exponent``, 30 MB noise), then extrapolated. With
    ``limit_mb`` (the DuckDB path) the rule applies to what the job holds beside DuckDB (its peak
    less the measured runs' limit ``memory_mb``), and DuckDB gets ``limit_mb`` at full size, the
    model of scale.py for every DuckDB job."""
    import scale

    pts = sorted(
        (r["rows"], r["peak_mb"] - r.get("memory_mb", 0) * bool(limit_mb)) for r in runs if r["kind"] == kind
    )
    xs, ys = [float(p[0]) for p in pts], [float(p[1]) for p in pts]
    b = scale.increment_exponent(xs, ys, scale.RSS_NOISE_MB)
    return scale.extrapolate(xs, ys, full_rows, b) + limit_mb, b


def probes_limit_mb() -> float:
    """DuckDB's limit of ``build_probes`` at full size: its share of the rule's capped request
    (workflow/rules/functions/probes.smk, ``scale.RULE_MEM_CAP_MB``)."""
    import scale
    from factprobe.scan import duckdb_mb

    return float(duckdb_mb(scale.RULE_MEM_CAP_MB["build_probes"]))


def report(runs: list[dict], memory_mb: int) -> str:
    """The figures: facts per monthly slice (interval) and the timeline build's peak memory."""
    lines = [f"Timeline suite by diff, {DUMPS} monthly dumps at full size (benchmarks/scale_timeline.py)"]
    for name, share in (
        ("common relations", COMMON_SHARE),
        ("common relations without P31", COMMON_SHARE_NO_P31),
    ):
        low = monthly_facts(ITEMS_PER_MONTH_LOW, CLAIMS_PER_ITEM, share, LABELLED)
        high = monthly_facts(ITEMS_PER_MONTH_HIGH, CLAIMS_PER_ITEM, share, LABELLED)
        met = "met" if low >= TARGET_FACTS else "not met"
        lines.append(
            f"  facts per monthly slice, {name}: {low:,.0f} to {high:,.0f} (target {TARGET_FACTS:,}: {met})"
        )
    even = break_even_share(ITEMS_PER_MONTH_LOW, CLAIMS_PER_ITEM, LABELLED, TARGET_FACTS)
    lines.append(
        f"  the target holds at the low rate while >= {even:.3%} of new item-valued statements are "
        f"probe-able facts of the common relations (measured: {COMMON_SHARE_NO_P31:.1%} without P31)"
    )
    full_rows = FULL_ROWS_PER_DIFF * DUMPS
    lines.append(
        f"  diff rows of the relations over the series at full size: {full_rows:.3g} "
        f"({FULL_ROWS_PER_DIFF:.3g} a diff: a diff holds every statement true at either dump, static ones too)"
    )
    limit = probes_limit_mb()
    for kind, name in (
        ("duckdb", f"out of core (DuckDB limit {memory_mb} MB)"),
        ("pivot", "in memory (former)"),
    ):
        if not any(r["kind"] == kind for r in runs):
            continue
        peak, b = full_peak_mb(runs, kind, full_rows, limit if kind == "duckdb" else 0.0)
        measured = ", ".join(
            f"{r['rows']:,} rows {r['peak_mb']:.0f} MB {r['wall_s']:.1f} s" for r in runs if r["kind"] == kind
        )
        grow = "flat" if b == 0.0 else ("linear (assumed)" if b is None else f"b = {b:.2f}")
        verdict = "met" if peak / 1024 <= JOB_GB else "not met"
        lines.append(
            f"  timeline slicing + draw, {name}: measured {measured}; growth {grow}{' beside DuckDB' if kind == 'duckdb' else ''}"
        )
        given = f" (DuckDB at build_probes' full-size limit, {limit:,.0f} MB)" if kind == "duckdb" else ""
        lines.append(
            f"    at full size: {peak / 1024:.1f} GB{given} (every job <= {JOB_GB:.0f} GB: {verdict})"
        )
    lines.append(
        "  other jobs of the path: extraction, diff, temporal view per dump/pair and the suite's "
        "candidate parts are the full-size node model's jobs (scale.py --sizes ...; RESULTS.md), "
        f"{DUMPS + 1} extractions and temporal views, {DUMPS} diffs"
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--sizes", type=int, nargs="+", default=[50_000, 100_000, 200_000], help="triples of the series"
    )
    ap.add_argument("--memory-mb", type=int, default=256, help="DuckDB limit of the out-of-core path")
    ap.add_argument(
        "--pivot-max", type=int, help="largest size the in-memory baseline runs at (default: all)"
    )
    ap.add_argument("--json", type=Path, help="also write the measurements here")
    ap.add_argument("--from-json", type=Path, help="only print the report of saved measurements")
    args = ap.parse_args(argv)
    if args.from_json:
        runs = json.loads(args.from_json.read_text())
    else:
        runs = measure(sorted(args.sizes), args.memory_mb, args.pivot_max)
        if args.json:
            args.json.write_text(json.dumps(runs, indent=1))
    print(report(runs, args.memory_mb))


if __name__ == "__main__":
    main()
