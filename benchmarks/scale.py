"""Scale benchmark: the DAG up to (not including) scoring on synthetic dumps (issue 15 item 1).

For each size in ``--sizes`` (items per dump), :mod:`scale_dumps` writes two Wikidata-shaped
synthetic dumps (composition calibrated to real Wikidata, ~3 % edits in the newer one), a
working directory gets a copy of ``config/config.yaml`` pointing at them (every suite's
``n_facts`` set to ``--facts``), and Snakemake runs every suite's ``candidates.parquet`` target:
extraction, diff, temporal views, probes, semantic index and distractor retrieval (ApprOpt and
translation load a model and are left out, like scoring). Snakemake's ``benchmark:`` files give
per job wall seconds, CPU seconds and peak RSS.

True CPU (issue 31 item 2): Snakemake's ``cpu_time`` samples each job's process tree with psutil
every 30 s and loses what ends between samples (2-2.5x under ``/usr/bin/time`` at 1M entities).
The run puts ``benchmarks/jobcpu.py`` first on its PYTHONPATH as ``sitecustomize``, which makes every
job's script process write, on exit, ``getrusage`` of itself and of its waited-for children (the
whole tree) to ``<work>/jobcpu/``. Per rule the report gives both figures side by side, the DAG's
own total (``RUSAGE_CHILDREN`` of this process around Snakemake: jobs plus Snakemake), and every
CPU exponent and CPU-hour below is fitted from the true figure (Snakemake's where a saved run
has none).

Growth: per rule (the sum of CPU-s and wall over its jobs, the max of their peak RSS), a
least-squares fit of ``log y = a + b log n`` over the sizes gives the exponent ``b`` in entities
``n``; the printed extrapolation multiplies the largest measurement by ``(110M / n)**b`` (and
by the claims ratio to 1.5B). Facts-bound jobs (retrieval) are also scaled linearly from
``--facts`` to 100k probed facts per suite: an assumption, stated in the output, not a fit.
A DuckDB job's peak at full size is bounded instead by its state outside DuckDB (logged once its
connection is closed, rulelog.log_resident; fitted over the sizes) plus DuckDB's memory limit at
full size, which it spills beyond: a fit of its peak extrapolates DuckDB filling a limit that
grows with the request. The report checks that bound against the peak of the largest run.

Not part of the test suite. On a shared machine keep the sizes small (the load average is
printed with every run; wall times are inflated by load, CPU-s much less).

    PYTHONPATH=workflow/scripts .venv/bin/python benchmarks/scale.py --sizes 2000 10000 20000
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import re
import shutil
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
from scale_dumps import write_dumps  # noqa: E402

JOB_CPU_HOOK = Path(__file__).resolve().parent / "jobcpu.py"

FULL_ENTITIES = 110e6
FULL_CLAIMS = 1.5e9
FULL_FACTS = 100_000
# Rules whose work grows with the number of probed facts rather than with the dump.
FACTS_BOUND = ("retrieve_distractors",)
# Differences below these are load noise on a shared machine, not growth.
CPU_NOISE_S = 2.0
RSS_NOISE_MB = 30.0
# Issue 15 item 6: at 1M entities on 2 cores, and on a 16-core / 128 GB node at full size.
LOCAL_WALL_S, LOCAL_JOB_GB = 600, 4.0
NODE_CORES, NODE_WALL_H, NODE_JOB_GB = 16, 3.0, 64.0
# Cores a rule's jobs keep busy side by side on the node: jobs x threads (profiles/slurm:
# extract_dump 4 per dump; DuckDB's diff and temporal views threads: 2 per job (diff.smk); the
# semantic index's DuckDB pass 2 per dump; one job per suite for probes; retrieval split into
# NODE_CORES shards per suite with distractors.shards, scheduled longest first).
NODE_PARALLEL = {
    "extract_dump": 8,
    "diff_dumps": 2,
    "temporal_view": 4,
    "build_probes": 4,
    "build_sem_index": 4,
    "retrieve_distractors": NODE_CORES,
}
# What each rule waits for (workflow/rules/*.smk): the node runs independent rules side by side,
# so its wall is the longest chain, not the sum (their cores add up to at most 10 of 16).
NODE_DEPS = {
    "extract_dump": (),
    "diff_dumps": ("extract_dump",),
    "temporal_view": ("extract_dump",),
    "build_sem_index": ("extract_dump",),
    "build_probes": ("diff_dumps",),
    "retrieve_distractors": ("build_probes", "temporal_view", "build_sem_index"),
}
# Jobs whose DuckDB part takes a share of the job's mem_mb as memory_limit and spills beyond it
# (the diff also splits its buckets by mem_mb). DuckDB fills whatever limit it gets, so a request
# that grows with the input (common.smk) shows up as growth in peak RSS; --mem-mb gives them all
# one request at every size, and the RSS fit then sees only what grows with the data. Not the
# semantic index: its bag aggregation does not spill (1M items with 1 GB: DuckDB out of memory).
DUCKDB_RULES = ("diff_dumps", "temporal_view", "build_probes", "retrieve_distractors", "retrieve_shard")
RETRIEVAL_LINE = re.compile(r"candidates: (\d+) facts in ([0-9.]+) s")
SEARCH_LINE = re.compile(r"([0-9.]+) s in exact semantic search")
# rulelog.log_resident: a DuckDB job's resident memory once its connection is closed, its DuckDB
# limit and its request; the retrieval's Ω line gives the rows of state it holds.
STATE_LINE = re.compile(r"resident after [^:]+: (\d+) MB \(DuckDB limit (\d+) MB of mem_mb (\d+)\)")
OMEGA_LINE = re.compile(
    r"omega: \d+ facts, (\d+) typed entities, (\d+) forms, (\d+) valid statements, (\d+) co-occurrence"
)
# common.smk caps the requests that grow with the input at 64 GB.
MEM_CAP_MB = 64000


def make_workdir(work: Path, items: int, facts: int, shards: int = 1) -> dict:
    """Dumps, config and registry of one size under ``work``; returns the dump counts."""
    stats_file = work / "dumps" / "stats.json"
    if stats_file.exists():
        stats = json.loads(stats_file.read_text())
    else:
        stats = write_dumps(items, work / "dumps")
        stats_file.write_text(json.dumps(stats, indent=1))
    (work / "config").mkdir(parents=True, exist_ok=True)
    with open(work / "config" / "dumps.tsv", "w") as f:
        f.write("dump\tenabled\tpath\turl\tchecksum\n")
        for dump in ("20141201", "20190201"):
            f.write(f"{dump}\ttrue\t{stats[dump]['path']}\t\t\n")
    shutil.copy(ROOT / "config" / "models.tsv", work / "config" / "models.tsv")
    config = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    config["dumps"] = "config/dumps.tsv"
    config["models"] = "config/models.tsv"
    for block in config["suites"].values():
        block["n_facts"] = facts
    config.setdefault("distractors", {})["shards"] = shards
    (work / "config" / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    return stats


def run_dag(work: Path, cores: int, mem_mb: int | None = None) -> tuple[float, str, float]:
    """Snakemake up to every suite's candidates table; returns (wall seconds, log tail, CPU
    seconds of Snakemake and all its jobs by rusage). Every job's true CPU lands in
    ``work/jobcpu`` (benchmarks/jobcpu.py, installed by job_cpu_env).
    ``mem_mb``: the memory request of every DuckDB job (DUCKDB_RULES) at every size."""
    config = yaml.safe_load((work / "config" / "config.yaml").read_text())
    targets = [f"results/probes/{s}/candidates.parquet" for s in config["suites"]]
    env = job_cpu_env(work, str(ROOT / "workflow" / "scripts"))
    cmd = [
        sys.executable,
        "-m",
        "snakemake",
        "-s",
        str(ROOT / "workflow" / "Snakefile"),
        "-d",
        str(work),
        "--configfile",
        str(work / "config" / "config.yaml"),
        "--cores",
        str(cores),
        *targets,
    ]
    if mem_mb:
        cmd += ["--set-resources", *(f"{rule}:mem_mb={mem_mb}" for rule in DUCKDB_RULES)]
    t0, cpu0 = time.perf_counter(), _children_cpu()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    wall, cpu = time.perf_counter() - t0, _children_cpu() - cpu0
    if proc.returncode:
        raise SystemExit(f"snakemake failed in {work}:\n{proc.stdout[-3000:]}\n{proc.stderr[-6000:]}")
    return wall, proc.stderr[-500:], cpu


def job_cpu_env(work: Path, pythonpath: str) -> dict[str, str]:
    """The environment of a run whose jobs record their true CPU in ``work/jobcpu``: the hook
    (benchmarks/jobcpu.py) as ``sitecustomize`` of a directory first on PYTHONPATH."""
    site = work / "jobcpu-site"
    site.mkdir(parents=True, exist_ok=True)
    shutil.copy(JOB_CPU_HOOK, site / "sitecustomize.py")
    (work / "jobcpu").mkdir(exist_ok=True)
    path = os.pathsep.join(p for p in (str(site), pythonpath) if p)
    return dict(os.environ, PYTHONPATH=path, FACTPROBE_JOB_CPU_DIR=str(work / "jobcpu"))


def _children_cpu() -> float:
    """User + system seconds of this process's waited-for children (and theirs)."""
    import resource

    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def read_job_cpu(work: Path) -> dict[str, dict]:
    """The jobs' true CPU records (benchmarks/jobcpu.py), keyed by their benchmark file relative to
    ``work``: the rules name it after their log (``logs/R/W.log`` -> ``benchmarks/R/W.tsv``)."""
    out = {}
    for path in sorted((work / "jobcpu").glob("*.json")):
        record = json.loads(path.read_text())
        if record["log"]:
            log = Path(record["log"][0])
            out[str(Path("benchmarks", *log.parts[1:]).with_suffix(".tsv"))] = record
    return out


def read_benchmarks(work: Path) -> dict[str, dict]:
    """Per rule: jobs, summed wall seconds, max peak RSS (MB) from the benchmark files, and CPU
    seconds: ``cpu_s`` the true one (the job's process tree by rusage, read_job_cpu), ``sm_cpu_s``
    Snakemake's ``cpu_time``; ``true_jobs`` counts the jobs with a true figure (the others count
    Snakemake's in ``cpu_s`` too)."""
    true = read_job_cpu(work)
    blank = {"jobs": 0, "true_jobs": 0, "wall_s": 0.0, "cpu_s": 0.0, "sm_cpu_s": 0.0, "rss_mb": 0.0}
    out: dict[str, dict] = defaultdict(lambda: dict(blank))
    for path in sorted((work / "benchmarks").rglob("*.tsv")):
        rule = path.relative_to(work / "benchmarks").parts[0]
        # Retrieval shards and their gather are one stage (retrieve_distractors) in the model.
        rule = "retrieve_distractors" if rule == "retrieve_shard" else rule
        record = true.get(str(path.relative_to(work)))
        with open(path) as f:
            for row in csv.DictReader(f, delimiter="\t"):
                r = out[rule]
                r["jobs"] += 1
                r["wall_s"] += float(row["s"])
                sm = float(row["cpu_time"]) if row["cpu_time"] not in ("", "NA", "-") else 0.0
                r["sm_cpu_s"] += sm
                r["cpu_s"] += record["cpu_s"] if record else sm
                r["true_jobs"] += record is not None
                rss = row["max_rss"]
                r["rss_mb"] = max(r["rss_mb"], float(rss) if rss not in ("", "NA", "-") else 0.0)
    return dict(out)


def read_retrieval(work: Path) -> dict[str, dict]:
    """Per suite: probed facts and seconds of the per-fact loop (the rule's log line), apart
    from the job's loading of Ω tables, index and temporal view; summed over the suite's shards
    (``distractors.shards`` > 1: rule retrieve_shard), with ``fixed_s`` the largest loading and
    building time of one of its jobs (CPU minus loop; true CPU where recorded) and ``shards`` the
    jobs that retrieved."""
    out: dict[str, dict] = {}
    true = read_job_cpu(work)
    logs = work / "logs"
    found_logs = [
        (p.stem, p, work / "benchmarks" / "retrieve_distractors" / f"{p.stem}.tsv")
        for p in sorted((logs / "retrieve_distractors").glob("*.log"))
    ]
    found_logs += [
        (p.parent.name, p, work / "benchmarks" / "retrieve_shard" / p.parent.name / f"{p.stem}.tsv")
        for p in sorted((logs / "retrieve_shard").glob("*/*.log"))
    ]
    for suite, path, bench in found_logs:
        text = path.read_text()
        found = RETRIEVAL_LINE.findall(text)
        if not found:
            continue  # the gather job of a sharded suite
        r = out.setdefault(
            suite, {"facts": 0, "loop_s": 0.0, "cpu_s": 0.0, "fixed_s": 0.0, "shards": 0, "search_s": 0.0}
        )
        search = SEARCH_LINE.findall(text)
        r["search_s"] += float(search[-1]) if search else 0.0
        facts, loop = int(found[-1][0]), float(found[-1][1])
        cpu = loop
        record = true.get(str(bench.relative_to(work)))
        if record:
            cpu = record["cpu_s"]
        elif bench.exists():
            with open(bench) as f:
                cpu = float(next(csv.DictReader(f, delimiter="\t"))["cpu_time"])
        r["facts"] += facts
        r["loop_s"] += loop
        r["cpu_s"] += cpu
        r["fixed_s"] = max(r["fixed_s"], cpu - loop)
        r["shards"] += 1
    return out


def read_states(work: Path) -> dict[str, list[dict]]:
    """Per DuckDB rule, one entry per job that logged its state (rulelog.log_resident): ``state_mb``
    (resident once DuckDB is closed), ``limit_mb`` (DuckDB's memory_limit), ``mem_mb`` (the job's
    request), ``suite`` (retrieval: the suite) and ``rows`` (retrieval: typed entities + forms +
    valid + co-occurrence statements of its Ω line)."""
    out: dict[str, list[dict]] = defaultdict(list)
    for path in sorted((work / "logs").rglob("*.log")):
        parts = path.relative_to(work / "logs").parts
        text = path.read_text()
        state = STATE_LINE.findall(text)
        if not state:
            continue
        rule = "retrieve_distractors" if parts[0] == "retrieve_shard" else parts[0]
        omega = OMEGA_LINE.findall(text)
        out[rule].append(
            {
                "state_mb": float(state[-1][0]),
                "limit_mb": float(state[-1][1]),
                "mem_mb": float(state[-1][2]),
                "suite": parts[1] if parts[0] == "retrieve_shard" else path.stem,
                "rows": sum(int(x) for x in omega[-1]) if omega else 0,
            }
        )
    return dict(out)


def limit_full_mb(runs: list[dict], rule: str) -> float:
    """DuckDB's limit of the rule's jobs at full size: the same share of the request, which is the
    measured one when it stayed fixed over the sizes and common.smk's cap when it grew with them."""
    jobs = [run["states"][rule] for run in runs]
    mem = [max(j["mem_mb"] for j in js) for js in jobs]
    share = max(j["limit_mb"] / j["mem_mb"] for j in jobs[-1])
    grown = mem[-1] > mem[0]
    return share * (min(MEM_CAP_MB, mem[-1] * FULL_ENTITIES / runs[-1]["items"]) if grown else mem[-1])


def state_full_mb(runs: list[dict], rule: str) -> tuple[float, str]:
    """The largest job's state outside DuckDB at full size (MB) and how it was fitted.

    Retrieval: per suite, a least-squares line of state on the job's Ω rows over every job and
    size (a shard's rows depend on which relations it holds, so the largest shard of one size is
    not the same relations as at the next, and a fit in entities of the largest state mixes them);
    the largest job's rows at the largest size grow as the suite's total rows over the sizes.
    Other rules: the largest job's state per size, fitted in entities."""
    n = [run["items"] for run in runs]
    if rule != "retrieve_distractors":
        state = [max(j["state_mb"] for j in run["states"][rule]) for run in runs]
        b = increment_exponent(n, state, RSS_NOISE_MB)
        full = extrapolate(n, state, FULL_ENTITIES, b)
        return full, f"{state[0]:.0f} -> {state[-1]:.0f} MB, b = {1.0 if b is None else b:.2f}"
    best, how = 0.0, ""
    for suite in sorted({j["suite"] for j in runs[-1]["states"][rule]}):
        pts = [(j["rows"], j["state_mb"]) for run in runs for j in run["states"][rule] if j["suite"] == suite]
        mx, my = sum(p[0] for p in pts) / len(pts), sum(p[1] for p in pts) / len(pts)
        sxx = sum((p[0] - mx) ** 2 for p in pts)
        beta = max(sum((p[0] - mx) * (p[1] - my) for p in pts) / sxx, 0.0) if sxx else 0.0
        a = my - beta * mx
        totals = [sum(j["rows"] for j in run["states"][rule] if j["suite"] == suite) for run in runs]
        b_rows = increment_exponent(n, totals, 0.0)
        grow = extrapolate(n, totals, FULL_ENTITIES, b_rows) / max(totals[-1], 1)
        rows = max(j["rows"] for j in runs[-1]["states"][rule] if j["suite"] == suite) * grow
        full = a + beta * rows
        if full > best:
            best = full
            how = (
                f"{suite}: state = {a:.0f} MB + {beta * 2**20:.1f} B x rows over {len(pts)} jobs; "
                f"its largest job's {rows / grow / 1e6:.1f}M rows x {grow:.0f} "
                f"(the suite's rows, b = {1.0 if b_rows is None else b_rows:.2f})"
            )
    return best, how


def claims_rows(work: Path) -> int:
    """Claims rows of the newer dump's extraction (for the 1.5B-claims extrapolation)."""
    import pyarrow.parquet as pq

    return pq.ParquetFile(work / "results" / "wikidata" / "20190201" / "claims.parquet").metadata.num_rows


def increment_exponent(xs: list[float], ys: list[float], noise: float) -> float | None:
    """Growth exponent of what a job adds above its smallest run: the least-squares slope of
    log(y - y0) on log(x - x0) over the larger sizes (fixed costs - imports, start-up - cancel).
    Increments below ``noise`` are left out; 0.0 when none is above it (flat), None (= linear
    assumed) when only one is."""
    pts = [
        (math.log(x - xs[0]), math.log(y - ys[0]))
        for x, y in zip(xs[1:], ys[1:], strict=True)
        if x > xs[0] and y - ys[0] > noise
    ]
    if not pts:
        return 0.0
    if len(pts) < 2:
        return None
    mx = sum(p[0] for p in pts) / len(pts)
    my = sum(p[1] for p in pts) / len(pts)
    sxx = sum((p[0] - mx) ** 2 for p in pts)
    return sum((p[0] - mx) * (p[1] - my) for p in pts) / sxx if sxx else None


def extrapolate(xs: list[float], ys: list[float], full: float, b: float | None) -> float:
    """``y0 + (y_last - y0) * ((full - x0) / (x_last - x0)) ** b`` (b = 1 when unknown)."""
    if len(xs) < 2 or xs[-1] <= xs[0]:
        return ys[-1] * full / xs[-1]
    grow = max(ys[-1] - ys[0], 0.0)
    return ys[0] + grow * ((full - xs[0]) / (xs[-1] - xs[0])) ** (1.0 if b is None else b)


def import_floor_mb() -> float:
    """Peak RSS (MB) of a Python process that only imports the science stack: every job's floor."""
    code = (
        "import resource, pandas, pyarrow.parquet, scipy.sparse, duckdb, numpy;"
        "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)"
    )
    return float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout)


def report(runs: list[dict], facts: int, floor: float) -> str:
    """The per-size table, the fitted exponents and the extrapolation (plain text)."""
    lines = ["", "## Per job (sum over a rule's jobs; CPU = true CPU, below; RSS = max job)", ""]
    rules = sorted({r for run in runs for r in run["rules"]})
    head = "| rule | " + " | ".join(f"{run['items']:,} items: wall s / CPU s / MB" for run in runs) + " |"
    lines += [head, "|---" * (len(runs) + 1) + "|"]
    for rule in rules:
        cells = []
        for run in runs:
            r = run["rules"].get(rule)
            cells.append(f"{r['wall_s']:.1f} / {r['cpu_s']:.1f} / {r['rss_mb']:.0f}" if r else "-")
        lines.append(f"| {rule} | " + " | ".join(cells) + " |")
    lines += cpu_table(runs)
    lines += ["", "| size | claims rows | DAG wall s | load avg before / after |", "|---|---|---|---|"]
    for run in runs:
        lines.append(
            f"| {run['items']:,} | {run['claims']:,} | {run['wall_s']:.0f} | "
            f"{run['load_before']:.2f} / {run['load_after']:.2f} |"
        )
    big = runs[-1]
    n = [run["items"] for run in runs]
    lines += [
        "",
        f"## Growth (y - y0 ~ (n - n0)^b over {len(runs)} sizes) and extrapolation",
        f"to {FULL_ENTITIES:.3g} entities ({FULL_ENTITIES / big['items']:.0f}x the largest run; claims per"
        f" entity here {big['claims'] / big['items']:.1f}, full Wikidata {FULL_CLAIMS / FULL_ENTITIES:.1f}:"
        f" {FULL_CLAIMS:.3g} claims is {FULL_CLAIMS / big['claims']:.0f}x the largest run's claims)",
        "",
        "| rule | b(CPU) | b(RSS) | CPU-h at full size | peak GB at full size |",
        "|---|---|---|---|---|",
    ]
    for rule in rules:
        if not all(rule in run["rules"] for run in runs):
            continue
        cpu = [run["rules"][rule]["cpu_s"] for run in runs]
        rss = [run["rules"][rule]["rss_mb"] for run in runs]
        bc, br = increment_exponent(n, cpu, CPU_NOISE_S), increment_exponent(n, rss, RSS_NOISE_MB)
        cpu_full = extrapolate(n, cpu, FULL_ENTITIES, bc) / 3600
        rss_full = extrapolate(n, rss, FULL_ENTITIES, br) / 1024
        facts_note = ""
        if rule in FACTS_BOUND:
            facts_note = (
                f" (x{FULL_FACTS / facts:.0f} for {FULL_FACTS:,} facts: {cpu_full * FULL_FACTS / facts:,.0f})"
            )
        lines.append(
            f"| {rule} | {'-' if bc is None else round(bc, 2)} | {'-' if br is None else round(br, 2)} | "
            f"{cpu_full:,.2f}{facts_note} | {rss_full:,.1f} |"
        )
    lines += targets(runs)
    lines.append("")
    lines.append(
        "Exponents are those of the increment above the smallest run (fixed costs cancel); increments "
        f"below {CPU_NOISE_S} CPU-s / {RSS_NOISE_MB} MB are noise (b = 0 when all are); '-' = one usable "
        f"increment, linear assumed. Peak RSS includes the interpreter and libraries (import floor {floor:.0f} MB). "
        f"Facts-bound rules ({', '.join(FACTS_BOUND)}) ran with --facts per suite; the 100k-facts figure "
        "multiplies the whole job, fixed costs included: an upper bound."
    )
    return "\n".join(lines)


def cpu_table(runs: list[dict]) -> list[str]:
    """Per rule and size: Snakemake's ``cpu_time`` beside the true CPU of the jobs' process trees,
    and their ratio; the totals against the DAG's own rusage (jobs plus Snakemake itself)."""
    if not any("sm_cpu_s" in r for run in runs for r in run["rules"].values()):
        return ["", "CPU: Snakemake's benchmark cpu_time (these saved runs carry no true CPU)."]
    lines = [
        "",
        "## CPU: Snakemake's benchmark vs the jobs' process trees (rusage, benchmarks/jobcpu.py)",
        "",
        "| rule | " + " | ".join(f"{run['items']:,}: Snakemake s / true s / ratio" for run in runs) + " |",
        "|---" * (len(runs) + 1) + "|",
    ]
    rules = sorted({r for run in runs for r in run["rules"]})

    def cell(sm: float, true: float) -> str:
        return f"{sm:.1f} / {true:.1f} / {true / sm:.2f}" if sm > 0 else f"{sm:.1f} / {true:.1f} / -"

    for rule in rules:
        cells = []
        for run in runs:
            r = run["rules"].get(rule)
            missing = r and r.get("true_jobs", 0) < r["jobs"]
            cells.append(
                cell(r.get("sm_cpu_s", r["cpu_s"]), r["cpu_s"]) + (" (*)" if missing else "") if r else "-"
            )
        lines.append(f"| {rule} | " + " | ".join(cells) + " |")
    totals = []
    for run in runs:
        sm = sum(r.get("sm_cpu_s", r["cpu_s"]) for r in run["rules"].values())
        totals.append(cell(sm, sum(r["cpu_s"] for r in run["rules"].values())))
    lines.append("| all jobs | " + " | ".join(totals) + " |")
    lines.append(
        "| DAG by rusage (jobs + Snakemake) | "
        + " | ".join(f"{run['dag_cpu_s']:.1f}" if "dag_cpu_s" in run else "-" for run in runs)
        + " |"
    )
    lines += [
        "",
        "(*) a job without a true figure: Snakemake's counted for it. The DAG row is this invocation's"
        " Snakemake: with --keep, jobs done by an earlier run are not in it.",
    ]
    return lines


def retrieval_full(runs: list[dict]) -> dict[str, tuple[float, float]]:
    """Per suite, ``(fixed CPU-s, CPU-s per fact)`` of its retrieval job at full size: the job's
    loading and building (its CPU minus the per-fact loop) and the per-fact loop time, each
    fitted in entities, except the exact semantic search's share of the loop, which is scaled
    linearly in entities: each query's product reads the candidates of its type sharing a
    feature with it, a number that grows with the type. Runs saved without per-suite CPU split
    the rule's CPU evenly."""
    n = [run["items"] for run in runs]
    out = {}
    for suite in runs[-1]["retrieval"]:
        per_fact, fixed, search = [], [], []
        for run in runs:
            r = run["retrieval"][suite]
            cpu = r.get("cpu_s", run["rules"]["retrieve_distractors"]["cpu_s"] / len(run["retrieval"]))
            search.append(r.get("search_s", 0.0) / max(r["facts"], 1))
            per_fact.append((r["loop_s"] - r.get("search_s", 0.0)) / max(r["facts"], 1))
            # One job's loading and building: a shard's (its own relations) when sharded.
            fixed.append(max(r.get("fixed_s", cpu - r["loop_s"]), 0.0))
        b_fact = increment_exponent(n, per_fact, 1e-4)
        b_fixed = increment_exponent(n, fixed, CPU_NOISE_S / len(runs[-1]["retrieval"]))
        out[suite] = (
            extrapolate(n, fixed, FULL_ENTITIES, b_fixed),
            extrapolate(n, per_fact, FULL_ENTITIES, b_fact) + search[-1] * FULL_ENTITIES / n[-1],
        )
    return out


def targets(runs: list[dict]) -> list[str]:
    """Issue 15 item 6: the largest run against the 2-core targets, and the node model at full size."""
    big = runs[-1]
    worst = max(big["rules"].items(), key=lambda kv: kv[1]["rss_mb"])
    ok = {True: "met", False: "NOT met"}
    lines = [
        "",
        f"## Targets (issue 15 item 6) at {big['items']:,} items on {big.get('cores', 2)} cores",
        "",
        f"- DAG before scoring: {big['wall_s']:.0f} s (target <= {LOCAL_WALL_S} s): "
        f"{ok[big['wall_s'] <= LOCAL_WALL_S]}",
        f"- largest job peak RSS: {worst[1]['rss_mb'] / 1024:.2f} GB ({worst[0]}; target <= {LOCAL_JOB_GB} GB): "
        f"{ok[worst[1]['rss_mb'] / 1024 <= LOCAL_JOB_GB]}",
    ]
    if "retrieval" not in big or not big["retrieval"]:
        return lines
    n = [run["items"] for run in runs]
    per_suite = retrieval_full(runs)
    suites = len(per_suite)
    # distractors.shards = the node's cores: every suite's shards are queued together and the
    # node runs whichever is next as a core frees (a suite with a slow search then spreads over
    # the cores the others leave). Each job pays its suite's fixed cost (measured per job, with
    # the relations of a --retrieval-shards job: at least those of a job here).
    shards = NODE_CORES
    jobs = [f + FULL_FACTS * p / shards for f, p in per_suite.values() for _ in range(shards)]
    lines += [
        "",
        f"Full Wikidata ({FULL_ENTITIES:.3g} entities) and {FULL_FACTS:,} probed facts in each of the "
        f"{suites} suites on a {NODE_CORES}-core node: each rule's extrapolated CPU over the cores its jobs "
        "keep busy (NODE_PARALLEL); the wall is the longest chain of rules (NODE_DEPS: independent rules "
        "run side by side), the sum of every rule's wall an upper bound. "
        f"Retrieval: {shards} shards per suite ({len(jobs)} jobs, longest first onto the next free core), "
        "each loading "
        + (
            f"the tables of its own relations (measured with {big['retrieval_shards']} shards per suite)"
            if big.get("retrieval_shards", 1) > 1
            else "its suite's tables (measured unsharded)"
        )
        + " and building its pools, type slices and co-occurrence levels (fixed, per job: "
        + ", ".join(f"{k} {f / 3600:.2f} h" for k, (f, _) in per_suite.items())
        + ") and then its share of the facts (ms per fact: "
        + ", ".join(f"{k} {p * 1000:.1f}" for k, (_, p) in per_suite.items())
        + "; the per-fact loop time of the logs fitted in entities, its exact semantic search scaled linearly). "
        "The schedule does not model the node's memory: jobs whose states add up beyond it wait.",
        "",
        "| rule | CPU-h | cores | wall h | peak GB per job |",
        "|---|---|---|---|---|",
    ]
    total_h, top_gb, walls, lines_after = 0.0, 0.0, {}, []
    for rule, cores in NODE_PARALLEL.items():
        if not all(rule in run["rules"] for run in runs):
            continue
        cpu = [run["rules"][rule]["cpu_s"] for run in runs]
        rss = [run["rules"][rule]["rss_mb"] for run in runs]
        bc, br = increment_exponent(n, cpu, CPU_NOISE_S), increment_exponent(n, rss, RSS_NOISE_MB)
        # A job that reads the whole dump is at least linear in it, whatever a noisy fit says.
        bc = max(1.0 if bc is None else bc, 1.0)
        gb = extrapolate(n, rss, FULL_ENTITIES, br) / 1024
        if rule in DUCKDB_RULES and all(run.get("states", {}).get(rule) for run in runs):
            # A DuckDB job's peak fit extrapolates DuckDB filling whatever limit it had (it grows
            # with the request); at full size the job holds its own state plus at most DuckDB's
            # limit, which it spills beyond. The check: that bound at the largest size measured.
            state_mb, how = state_full_mb(runs, rule)
            limit = limit_full_mb(runs, rule)
            bound_now = max(j["state_mb"] + j["limit_mb"] for j in big["states"][rule])
            peak_now = big["rules"][rule]["rss_mb"]
            lines_after.append(
                f"- {rule}: state outside DuckDB at full size {state_mb / 1024:.1f} GB ({how}) + DuckDB's "
                f"limit there {limit / 1024:.1f} GB = {(state_mb + limit) / 1024:.1f} GB per job (the fit of "
                f"the peak: {gb:.1f} GB); at {big['items']:,} items the peak {peak_now:.0f} MB is "
                f"{'within' if peak_now <= bound_now else 'ABOVE'} state + limit {bound_now:.0f} MB"
            )
            gb = (state_mb + limit) / 1024
        if rule == "retrieve_distractors":
            cpu_h = sum(jobs) / 3600
            wall_h = lpt_makespan(jobs, NODE_CORES) / 3600
        else:
            cpu_h = extrapolate(n, cpu, FULL_ENTITIES, bc) / 3600
            wall_h = cpu_h / min(cores, NODE_CORES)
        total_h += wall_h
        walls[rule] = wall_h
        top_gb = max(top_gb, gb)
        lines.append(f"| {rule} | {cpu_h:,.2f} | {min(cores, NODE_CORES)} | {wall_h:,.2f} | {gb:,.1f} |")
    chain = critical_path(walls)
    lines += [
        "",
        f"- DuckDB jobs ({', '.join(DUCKDB_RULES)}) ran with mem_mb "
        + (f"{big['mem_mb']} at every size" if big.get("mem_mb") else "scaled with their input (common.smk)"),
        f"- node wall, rules one after another (upper bound): {total_h:.2f} h",
        f"- node wall before scoring, longest chain of the DAG ({' -> '.join(chain[1])}): {chain[0]:.2f} h "
        f"(target <= {NODE_WALL_H} h): {ok[chain[0] <= NODE_WALL_H]}",
        f"- largest job: {top_gb:.1f} GB (target <= {NODE_JOB_GB} GB): {ok[top_gb <= NODE_JOB_GB]}",
        *lines_after,
    ]
    return lines


def lpt_makespan(jobs: list[float], cores: int) -> float:
    """Wall of ``jobs`` (seconds) on ``cores``, longest first, each onto the core that frees first."""
    import heapq

    free = [0.0] * max(cores, 1)
    for job in sorted(jobs, reverse=True):
        heapq.heappush(free, heapq.heappop(free) + job)
    return max(free)


def critical_path(walls: dict[str, float]) -> tuple[float, list[str]]:
    """``(hours, rules)`` of the longest chain of ``NODE_DEPS`` through the rules in ``walls``."""
    best: dict[str, tuple[float, list[str]]] = {}
    for rule in NODE_DEPS:  # listed in dependency order
        before = max((best[d] for d in NODE_DEPS[rule] if d in best), key=lambda hp: hp[0], default=(0.0, []))
        if rule in walls:
            best[rule] = (before[0] + walls[rule], [*before[1], rule])
        else:
            best[rule] = before
    return max(best.values(), key=lambda hp: hp[0], default=(0.0, []))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[2000, 10000, 20000], help="items per dump")
    ap.add_argument("--facts", type=int, default=50, help="n_facts of every suite")
    ap.add_argument("--cores", type=int, default=2)
    ap.add_argument(
        "--mem-mb",
        type=int,
        help="memory request of every DuckDB job at every size (DUCKDB_RULES; default: the workflow's)",
    )
    ap.add_argument("--work", type=Path, default=Path("/tmp/factprobe-scale"))
    ap.add_argument(
        "--keep",
        action="store_true",
        help="keep results of earlier runs (default: rerun all jobs); per-job figures then come from "
        "the earlier run, the DAG wall from this one",
    )
    ap.add_argument(
        "--retrieval-shards",
        type=int,
        default=1,
        help="distractors.shards of every run: retrieval jobs per suite, each loading its own relations "
        f"(the node model assumes {NODE_CORES} cores over the suites' shards)",
    )
    ap.add_argument("--json", type=Path, help="also write the measurements here")
    ap.add_argument("--from-json", type=Path, help="only print the report of measurements saved with --json")
    args = ap.parse_args()
    if args.from_json:
        print(report(json.loads(args.from_json.read_text()), args.facts, import_floor_mb()))
        return
    runs = []
    for items in sorted(args.sizes):
        work = args.work / f"n{items}"
        stats = make_workdir(work, items, args.facts, args.retrieval_shards)
        if not args.keep:
            for sub in ("results", "benchmarks", "logs", ".snakemake"):
                shutil.rmtree(work / sub, ignore_errors=True)
        load_before = os.getloadavg()[0]
        if not args.keep:
            shutil.rmtree(work / "jobcpu", ignore_errors=True)
        wall, _, dag_cpu = run_dag(work, args.cores, args.mem_mb)
        run = {
            "items": stats["20190201"]["items"] + stats["20190201"]["properties"],
            "dumps": stats,
            "wall_s": wall,
            "dag_cpu_s": dag_cpu,
            "cores": args.cores,
            "mem_mb": args.mem_mb,
            "retrieval_shards": args.retrieval_shards,
            "load_before": load_before,
            "load_after": os.getloadavg()[0],
            "claims": claims_rows(work),
            "rules": read_benchmarks(work),
            "retrieval": read_retrieval(work),
            "states": read_states(work),
        }
        runs.append(run)
        print(
            f"{items} items: DAG {wall:.0f} s (load {load_before:.2f} -> {run['load_after']:.2f})", flush=True
        )
    print(report(runs, args.facts, import_floor_mb()))
    if args.json:
        args.json.write_text(json.dumps(runs, indent=1))


if __name__ == "__main__":
    main()
