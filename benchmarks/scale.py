"""Scale benchmark: the DAG up to (not including) scoring on synthetic dumps.

For each size in ``--sizes`` (items per dump), :mod:`scale_dumps` writes two Wikidata-shaped
synthetic dumps (composition calibrated to real Wikidata, ~3 % edits in the newer one), a
working directory gets a copy of ``config/config.yaml`` pointing at them (every suite's
``n_facts`` set to ``--facts``), and Snakemake runs every suite's ``candidates.parquet`` target:
extraction, diff, temporal views, probes, semantic index and distractor retrieval (ApprOpt and
translation load a model and are left out, like scoring). Snakemake's ``benchmark:`` files give
per job wall seconds, CPU seconds and peak RSS.

True CPU: Snakemake's ``cpu_time`` samples each job's process tree with psutil
every 30 s and loses what ends between samples (2-2.5x under ``/usr/bin/time`` at 1M entities).
The run puts ``benchmarks/jobcpu.py`` first on its PYTHONPATH as ``sitecustomize``, which makes every
job's script process write, on exit, ``getrusage`` of itself and of its waited-for children (the
whole tree) to ``<work>/jobcpu/``. Per rule the report gives both figures side by side, the DAG's
own total (``RUSAGE_CHILDREN`` of this process around Snakemake: jobs plus Snakemake), and every
CPU exponent and CPU-hour below is fitted from the true figure (Snakemake's where a saved run
has none).

Growth: per rule (the sum of CPU-s and wall over its jobs, the max of their peak RSS, the largest
state), the exponent ``b`` of what a job adds above the smallest run (increment_exponent; fixed
costs cancel), printed with its spread: the plain exponents ``k`` of every step between
consecutive sizes, min-max (spread). Facts-bound jobs (retrieval) are also scaled linearly from
``--facts`` to 100k probed facts per suite: an assumption, stated in the output, not a fit. The
claims ratio counts what the claims table holds (item-valued statements of items, FULL_CLAIMS),
not all of Wikidata's statements.

Full size, memory respected: every job of the DAG before scoring at full size,
list-scheduled (list_schedule: critical path first, a job starts once its node has both its
cores and its memory free, each job on one node) on one 16-core / 128 GB node and on 4 such
nodes. The DAG's shape is one table, STAGES (what a unit is, threads, what a stage waits for,
how it splits), with RULE_STAGE mapping measured rules onto it; the measurements are per job
(read_jobs: several parts per unit where a rule is sharded). Per unit (dump, pair or suite) the
model fits its CPU in entities and its memory: the part that every job holds (the interpreter
and libraries) and the part that divides over its parts (unit_memory: a sharded unit holds
parts x its largest part). A DuckDB job holds its state outside DuckDB (logged once its
connection is closed, rulelog.log_resident) plus DuckDB's limit, which it spills beyond: the
model gives DuckDB the workflow's limit at full size, lowered so the job stays within its cores'
share of a node and 32 GB (UnitModel.duckdb_share; more spilling, unpriced). A split stage's
parts at full size (parts_needed): the index's as the workflow plans them (semantic.part_count), retrieval's
one distractors.shards for every suite whose schedule ends first (choose_shards: each shard pays
its suite's loading again), more wherever a part would not fit 32 GB. The report prints node wall, CPU-hours, the
largest job and the targets (1 node <= 3 h, 4 nodes <= 1 h, every job <= 32 GB), met or not.

Not part of the test suite. On a shared machine keep the sizes small (the load average is
printed with every run; wall times are inflated by load, CPU-s much less).

    PYTHONPATH=workflow/scripts .venv/bin/python benchmarks/scale.py --sizes 2000 10000 20000

Timeline suites (``--timeline``): facts per monthly slice and the timeline build's peak memory
for a series of 24 monthly dumps at full size, from measured figures (``scale_timeline.py``; its
own options follow ``--timeline``).
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
from dataclasses import dataclass, replace
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
from scale_dumps import write_dumps  # noqa: E402

JOB_CPU_HOOK = Path(__file__).resolve().parent / "jobcpu.py"

# Today's Wikidata, each figure with its source and date (benchmarks/RESULTS.md, "Today's sizes"):
# entities ≈ 119 M entries of the JSON dump: a figure of late 2026, not verified
# online here.
FULL_ENTITIES = 119e6
# All statements (13.9 per entity): "1.65 billion item statements as of early 2025", Wikipedia's
# article on Wikidata as a mirror quotes it (wikiblah.com/wiki/wikidata, read 2026-11-29 with the
# search tool); not checked against Wikidata's own statistics. The claims table holds only the
# item-valued statements of items (docs/contracts.md: "items only, wikibase-item values"), 6.3 per
# item in the real sample tests/data/short_stream.json.bz2 (6.33; whole Wikidata: "6.3 per item"), which
# the synthetic dumps match (scale_dumps.py): FULL_CLAIMS is that table at full size.
FULL_STATEMENTS = 1.65e9
ITEM_CLAIMS_PER_ITEM = 6.3
FULL_CLAIMS = FULL_ENTITIES * ITEM_CLAIMS_PER_ITEM
FULL_FACTS = 100_000
# Rules whose work grows with the number of probed facts rather than with the dump.
FACTS_BOUND = ("retrieve_distractors",)
# Differences below these are load noise on a shared machine, not growth.
CPU_NOISE_S = 2.0
RSS_NOISE_MB = 30.0
# At 1M entities on 2 cores. Full size on one 16-core / 128 GB
# node within 3 h, on 4 such nodes (SLURM, each job on one node) within 1 h, every job <= 32 GB.
LOCAL_WALL_S, LOCAL_JOB_GB = 600, 4.0
NODE_CORES, NODE_MEM_GB, CLUSTER_NODES = 16, 128.0, 4
NODE_WALL_H, CLUSTER_WALL_H, JOB_GB = 3.0, 1.0, 32.0


@dataclass(frozen=True)
class Stage:
    """One stage of the DAG before scoring in the full-size model (workflow/rules/*.smk).

    ``per``: what one unit of work is ("dump", "pair" of dumps or "suite"); ``threads``: cores
    per job (the rule's threads; extraction: profiles/slurm's cpus_per_task); ``after``: stages
    whose jobs a job waits for (those of its own suite when both are per suite, else all of
    them); ``split``: how a unit divides into parts at full size ("" = one job per unit), their
    number planned or chosen (parts_needed, choose_shards)."""

    per: str
    threads: int
    after: tuple[str, ...] = ()
    split: str = ""


# The one table to update when rules change: measured rule -> stage (RULE_STAGE; a rule not
# listed is its own stage) and each stage's shape. The semantic index is sem_bags parts (entity
# hash, semantic.part_count) merged by build_sem_index; retrieval shards split a suite by subject hash. A
# measured rule missing here is modelled as one job per unit after extraction, with a warning.
STAGES = {
    "extract_dump": Stage("dump", 4),
    "diff_dumps": Stage("pair", 2, ("extract_dump",)),
    "temporal_view": Stage("dump", 2, ("extract_dump",)),
    "sem_bags": Stage("dump", 2, ("extract_dump",), split="entity hash"),
    "build_sem_index": Stage("dump", 1, ("sem_bags",)),
    # Each part's candidates run in the rule's threads as forked processes, DuckDB beside them
    # (profiles/slurm set-threads): what the job logs as its parts' CPU divides, the rest not.
    "build_probes": Stage("suite", 16, ("extract_dump", "diff_dumps", "temporal_view")),
    # distractors.shards > 1: one job per suite maps what every shard would read or rank again.
    # Its ranking of the suite's objects runs on the rule's threads (profiles/slurm set-threads).
    "prepare_retrieval": Stage("suite", 16, ("build_probes", "temporal_view", "build_sem_index")),
    "retrieve_distractors": Stage(
        "suite",
        1,
        ("build_probes", "temporal_view", "build_sem_index", "prepare_retrieval"),
        split="subject hash",
    ),
}
RULE_STAGE = {"retrieve_shard": "retrieve_distractors"}
# A split job's parts: the stage's shards (planned by the workflow, or the setting the model
# chooses, at most MAX_SHARDS), more where a part would not fit JOB_GB; at most MAX_PARTS.
MAX_SHARDS, MAX_PARTS = 512, 4096
# Whole Wikidata's latest-all.json.gz, the size semantic.part_count plans the index's parts from:
# ≈ 97 GB, a figure of late 2026, not verified online here (the NNZ_PER_DUMP_BYTE note of the
# index planner assumed ≈ 140 GB before). The .json.bz2 is not stated: no verified figure was at hand.
FULL_DUMP_BYTES = 97e9
# A DuckDB job at full size asks DuckDB for the limit it would get from the workflow, less where
# that would take the job over JOB_GB (it then spills more; the model does not price the spill),
# but never below DUCKDB_MIN_MB.
DUCKDB_MIN_MB = 1024
# Jobs whose DuckDB part takes a share of the job's mem_mb as memory_limit and spills beyond it
# (the diff also splits its buckets by mem_mb). DuckDB fills whatever limit it gets, so a request
# that grows with the input (workflow/rules/*.smk) shows up as growth in peak RSS; --mem-mb gives them all
# one request at every size, and the RSS fit then sees only what grows with the data. Not the
# semantic index's parts (sem_bags): their peak is the part's CSR beside DuckDB, fitted as measured.
DUCKDB_RULES = ("diff_dumps", "temporal_view", "build_probes", "retrieve_distractors", "retrieve_shard")
# The per-fact loop's CPU seconds (older logs gave its wall time).
RETRIEVAL_LINE = re.compile(r"candidates: (\d+) facts in ([0-9.]+) s")
SEARCH_LINE = re.compile(r"([0-9.]+) s in exact semantic search")
# prepare_retrieval: the exact Sem ranking of the suite's objects, once for all shards.
PREFIX_LINE = re.compile(r"exact Sem prefixes: (\d+) objects in ([0-9.]+) s(?:, CPU ([0-9.]+) s)?")
# prepare_retrieval's type slices, built in forked processes (the workers' CPU included).
SLICES_LINE = re.compile(
    r"type slices: \d+ types(?: \(\d+ split into \d+ parts\))?, \d+ non-zeros in ([0-9.]+) s(?:, CPU ([0-9.]+) s)?"
)
# build_probes: the CPU of its parts' candidate selection, in forked processes where threads > 1.
PARTS_LINE = re.compile(r"candidate parts: \d+ in ([0-9.]+) s, CPU ([0-9.]+) s")
# build_probes: the CPU of the job's main thread, which does not divide over its threads.
MAIN_LINE = re.compile(r"built in ([0-9.]+) s, CPU ([0-9.]+) s on the main thread")
# rulelog.log_resident: a DuckDB job's resident memory once its connection is closed, its DuckDB
# limit and its request; the retrieval's Ω line gives the rows of state it holds.
STATE_LINE = re.compile(r"resident after [^:]+: (\d+) MB \(DuckDB limit (\d+) MB of mem_mb (\d+)\)")
OMEGA_LINE = re.compile(
    r"omega: \d+ facts, (\d+) typed entities, (\d+) forms, (\d+) valid statements, (\d+) co-occurrence"
)
# The rules cap the requests that grow with the input at 64 GB, build_probes' at 8 GB.
MEM_CAP_MB, RULE_MEM_CAP_MB = 64000, {"build_probes": 8000}


def make_workdir(
    work: Path,
    items: int,
    facts: int,
    shards: int = 1,
    exclude: tuple[str, ...] = (),
    dumps: Path | None = None,
) -> dict:
    """Dumps, config and registry of one size under ``work`` (the dumps under ``dumps``, default
    ``work/dumps``: runs with and without ``extract.exclude`` share them); returns the dump counts."""
    dumps = dumps or work / "dumps"
    stats_file = dumps / "stats.json"
    if stats_file.exists():
        stats = json.loads(stats_file.read_text())
    else:
        stats = write_dumps(items, dumps)
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
    # Suites from a listed source (triples, released files) probe real facts that synthetic dumps
    # do not hold: out, with the settings that name them.
    listed = [name for name, block in config["suites"].items() if "source" in block]
    for name in listed:
        del config["suites"][name]
    alignment = config.get("metrics", {}).get("human_alignment")
    if alignment:
        alignment["suites"] = [s for s in alignment.get("suites", []) if s not in listed]
    for block in config["suites"].values():
        block["n_facts"] = facts
    config.setdefault("distractors", {})["shards"] = shards
    config["extract"]["exclude"] = list(exclude)
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
    # As on a cluster (profiles/slurm): build_probes on several threads, so that its log splits
    # the main thread's CPU from what divides (probes_full); the rule asks for 1 locally.
    cmd += ["--set-threads", f"build_probes={cores}"]
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
    ``work``: the rules name it after their log (``logs/R/W.log`` -> ``benchmarks/R/W.tsv``). A job
    run again (``--keep`` after a code change, a retry) has a record per run: the latest counts,
    as its benchmark file is the latest run's."""
    out = {}
    for path in sorted((work / "jobcpu").glob("*.json")):
        record = json.loads(path.read_text())
        if record["log"]:
            key = str(Path("benchmarks", *Path(record["log"][0]).parts[1:]).with_suffix(".tsv"))
            if key not in out or record.get("end", 0) >= out[key].get("end", 0):
                out[key] = record
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
        rule = stage_of(path.relative_to(work / "benchmarks").parts[0])
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


def stage_of(rule: str) -> str:
    """The model's stage of a measured rule (RULE_STAGE; retrieval shards and their gather are
    one stage)."""
    return RULE_STAGE.get(rule, rule)


def job_key(rel: Path) -> tuple[str, str, str]:
    """``(stage, unit, part)`` of a job from its log or benchmark path relative to ``logs/`` or
    ``benchmarks/``: ``R/U.ext`` is unit U of rule R, ``R/U/P.ext`` part P of unit U."""
    parts = rel.parts
    if len(parts) > 2:
        return stage_of(parts[0]), parts[1], Path(parts[-1]).stem
    return stage_of(parts[0]), Path(parts[-1]).stem, ""


def read_jobs(work: Path) -> list[dict]:
    """Every job's own figures: ``stage``, ``unit`` (dump, pair or suite), ``part`` (a shard or
    index part, "" for a whole unit), wall s, CPU s (true where recorded, read_job_cpu) and peak
    RSS (MB) from its benchmark file. The model's per-unit fits and per-part peaks read these."""
    true = read_job_cpu(work)
    out = []
    for path in sorted((work / "benchmarks").rglob("*.tsv")):
        stage, unit, part = job_key(path.relative_to(work / "benchmarks"))
        record = true.get(str(path.relative_to(work)))
        with open(path) as f:
            row = next(csv.DictReader(f, delimiter="\t"))

        cpu = record["cpu_s"] if record else _num(row, "cpu_time")
        record = record or {}
        out.append(
            {
                "stage": stage,
                "unit": unit,
                "part": part,
                "wall_s": _num(row, "s"),
                "cpu_s": cpu,
                "rss_mb": _num(row, "max_rss"),
                # The process tree's sampled PSS peak, the largest process's ru_maxrss, and the
                # largest forked worker's PSS with the workers then (benchmarks/jobcpu.py).
                "pss_mb": record.get("tree_pss_mb", 0.0),
                "proc_mb": record.get("max_rss_mb", 0.0),
                "worker_pss_mb": record.get("worker_pss_mb", 0.0),
                "worker_mb": record.get("worker_own_mb", 0.0),
                "workers": record.get("workers", 0),
            }
        )
    return out


def _num(row: dict, key: str) -> float:
    """A benchmark file's figure; 0.0 where Snakemake wrote none."""
    return float(row[key]) if row[key] not in ("", "NA", "-") else 0.0


def read_retrieval(work: Path) -> dict[str, dict]:
    """Per suite: probed facts and CPU seconds of the per-fact loop (the rule's log line; its
    building of pools, slices and co-occurrence levels apart, also in CPU), apart from the job's
    loading of Ω tables, index and temporal view; summed over the suite's shards
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
    for suite, r in out.items():
        prep = logs / "prepare_retrieval" / f"{suite}.log"
        found = PREFIX_LINE.findall(prep.read_text()) if prep.exists() else []
        # The ranking's CPU (its forked workers' included) where logged, else its wall (one process).
        r["prep_search_s"] = float(found[-1][2] or found[-1][1]) if found else 0.0
        found = SLICES_LINE.findall(prep.read_text()) if prep.exists() else []
        r["prep_slices_s"] = float(found[-1][1] or found[-1][0]) if found else 0.0
    return out


def read_probes(work: Path) -> dict[str, dict]:
    """Per suite: ``parts_s``, the CPU of build_probes' candidate selection part by part (its
    forked processes' included), the share of the job that divides over its threads."""
    out = {}
    for path in sorted((work / "logs" / "build_probes").glob("*.log")):
        text = path.read_text()
        found, main = PARTS_LINE.findall(text), MAIN_LINE.findall(text)
        if found:
            out[path.stem] = {"parts_s": float(found[-1][1])}
            if main:
                out[path.stem]["main_s"] = float(main[-1][1])
    return out


def read_states(work: Path) -> dict[str, list[dict]]:
    """Per DuckDB rule, one entry per job that logged its state (rulelog.log_resident): ``state_mb``
    (resident once DuckDB is closed), ``limit_mb`` (DuckDB's memory_limit), ``mem_mb`` (the job's
    request), ``suite`` (the job's unit: suite, dump or pair) and ``rows`` (retrieval: typed entities + forms +
    valid + co-occurrence statements of its Ω line)."""
    out: dict[str, list[dict]] = defaultdict(list)
    for path in sorted((work / "logs").rglob("*.log")):
        text = path.read_text()
        state = STATE_LINE.findall(text)
        if not state:
            continue
        rule, unit, _ = job_key(path.relative_to(work / "logs"))
        omega = OMEGA_LINE.findall(text)
        out[rule].append(
            {
                "state_mb": float(state[-1][0]),
                "limit_mb": float(state[-1][1]),
                "mem_mb": float(state[-1][2]),
                "suite": unit,
                "rows": sum(int(x) for x in omega[-1]) if omega else 0,
            }
        )
    return dict(out)


def limit_full_mb(runs: list[dict], rule: str) -> float:
    """DuckDB's limit of the rule's jobs at full size: the same share of the request, which is the
    measured one when it stayed fixed over the sizes and the rule's cap when it grew with them."""
    jobs = [run["states"][rule] for run in runs]
    mem = [max(j["mem_mb"] for j in js) for js in jobs]
    share = max(j["limit_mb"] / j["mem_mb"] for j in jobs[-1])
    grown = mem[-1] > mem[0]
    cap = RULE_MEM_CAP_MB.get(rule, MEM_CAP_MB)
    return share * (min(cap, mem[-1] * FULL_ENTITIES / runs[-1]["items"]) if grown else mem[-1])


def kept_entities(work: Path) -> dict[str, dict]:
    """Per dump: entities written and what ``extract.exclude`` left out (extract_stats.json)."""
    out = {}
    for path in sorted((work / "results" / "wikidata").glob("*/extract_stats.json")):
        record = json.loads(path.read_text())
        out[path.parent.name] = {"entities": record["entities"], "excluded": record.get("excluded", {})}
    return out


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
    lines += memory_table(runs)
    lines += [
        "",
        "| size | extract.exclude | entities kept (newer dump) | claims rows | DAG wall s | DAG CPU s | load avg before / after |",
        "|---|---|---|---|---|---|---|",
    ]
    for run in runs:
        kept = run.get("kept", {}).get("20190201", {})
        lines.append(
            f"| {run['items']:,} | {', '.join(run.get('exclude', [])) or '-'} | {format(kept['entities'], ',') if kept else '-'} | "
            f"{run['claims']:,} | {run['wall_s']:.0f} | {run['dag_cpu_s']:.0f} | "
            f"{run['load_before']:.2f} / {run['load_after']:.2f} |"
        )
    big = runs[-1]
    n = [run["items"] for run in runs]
    lines += [
        "",
        f"## Growth (y - y0 ~ (n - n0)^b over {len(runs)} sizes) and extrapolation",
        f"to {FULL_ENTITIES:.3g} entities ({FULL_ENTITIES / big['items']:.0f}x the largest run). Claims rows "
        f"(item-valued statements of items, the extraction's claims table) per item here "
        f"{big['claims'] / big['items']:.1f}, full Wikidata {ITEM_CLAIMS_PER_ITEM} ({FULL_CLAIMS:.3g} rows, "
        f"{FULL_CLAIMS / big['claims']:.0f}x the largest run's; of {FULL_STATEMENTS:.3g} statements in all).",
        "",
        "Each exponent as b [k min-max]: b the increment exponent the extrapolation uses, k the plain "
        "exponents log(y2/y1)/log(n2/n1) of each step between consecutive sizes (their spread). State = "
        "a DuckDB job's largest resident memory once DuckDB is closed.",
        "",
        "| rule | CPU | peak RSS | state | CPU-h at full size (this fit) |",
        "|---|---|---|---|---|",
    ]
    for rule in rules:
        if not all(rule in run["rules"] for run in runs):
            continue
        cpu = [run["rules"][rule]["cpu_s"] for run in runs]
        rss = [run["rules"][rule]["rss_mb"] for run in runs]
        states = [run.get("states", {}).get(rule) for run in runs]
        state = [max(j["state_mb"] for j in js) for js in states] if all(states) else None
        bc = increment_exponent(n, cpu, CPU_NOISE_S)
        cpu_full = extrapolate(n, cpu, FULL_ENTITIES, bc) / 3600
        facts_note = ""
        if rule in FACTS_BOUND:
            facts_note = (
                f" (x{FULL_FACTS / facts:.0f} for {FULL_FACTS:,} facts: {cpu_full * FULL_FACTS / facts:,.0f})"
            )
        lines.append(
            f"| {rule} | {spread(n, cpu, CPU_NOISE_S)} | {spread(n, rss, RSS_NOISE_MB)} | "
            f"{spread(n, state, RSS_NOISE_MB) if state else '-'} | {cpu_full:,.2f}{facts_note} |"
        )
    walls = [run["wall_s"] for run in runs]
    lines.append(f"| DAG wall | {spread(n, walls, CPU_NOISE_S)} | | | |")
    lines += targets(runs, floor)
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


def prepare_full(runs: list[dict], suite: str, cpu_n: list[float]) -> tuple[float, float, str]:
    """``(serial CPU-s, dividing CPU-s, how)`` of a suite's prepare_retrieval job at full size:
    its scans fitted in entities (exponent at least 1), modelled on one core; its type slices
    (built in forked processes, retrieval_inputs.prepare_slices) fitted in entities as well, and its exact
    ranking of the suite's objects per probed fact, scaled linearly in entities as the shards'
    search is (retrieval_full) and to FULL_FACTS facts: both divide over its threads."""
    n = [run["items"] for run in runs]
    search = [run["retrieval"][suite].get("prep_search_s", 0.0) for run in runs]
    slices = [run["retrieval"][suite].get("prep_slices_s", 0.0) for run in runs]
    facts = max(runs[-1]["retrieval"][suite]["facts"], 1)
    rest = [max(c - s - t, 0.0) for c, s, t in zip(cpu_n, search, slices, strict=True)]
    b = increment_exponent(n, rest, CPU_NOISE_S)
    loading = extrapolate(n, rest, FULL_ENTITIES, max(b or 1.0, 1.0))
    b_slices = increment_exponent(n, slices, CPU_NOISE_S)
    sliced = extrapolate(n, slices, FULL_ENTITIES, max(b_slices or 1.0, 1.0)) if slices[-1] else 0.0
    ranking = search[-1] / facts * FULL_FACTS * FULL_ENTITIES / n[-1]
    how = (
        f"CPU {rest[0]:.1f} -> {rest[-1]:.1f} s loading, b = {'-' if b is None else f'{b:.2f}'} (used: >= 1), "
        f"+ slices {slices[0]:.1f} -> {slices[-1]:.1f} s, b = {'-' if b_slices is None else f'{b_slices:.2f}'}, "
        f"+ ranking {search[-1] / facts * 1000:.2f} ms per fact at {n[-1]:,} (x entities); slices and ranking divide"
    )
    return loading, sliced + ranking, how


def probes_full(runs: list[dict], suite: str, cpu_n: list[float]) -> tuple[float, float, str]:
    """``(serial CPU-s, dividing CPU-s, how)`` of a suite's build_probes job at full size, each
    fitted in entities (exponent at least 1). Serial: the CPU of the job's main thread where
    logged (read_probes: its Python, and DuckDB's share of the queries it runs), else all but
    the parts. Dividing over its threads: the parts' candidate selection (forked processes) and
    the rest of the job's CPU (DuckDB's other threads), as every DuckDB job's CPU is here."""
    n = [run["items"] for run in runs]
    probes = [run.get("probes", {}).get(suite, {}) for run in runs]
    parts = [p.get("parts_s", 0.0) for p in probes]
    logged = all("main_s" in p for p in probes)
    serial_n = [
        p["main_s"] if logged else c - p.get("parts_s", 0.0) for p, c in zip(probes, cpu_n, strict=True)
    ]
    serial_n = [max(min(s, c), 0.0) for s, c in zip(serial_n, cpu_n, strict=True)]
    rest = [max(c - s, 0.0) for c, s in zip(cpu_n, serial_n, strict=True)]
    b_serial, b_rest = increment_exponent(n, serial_n, CPU_NOISE_S), increment_exponent(n, rest, CPU_NOISE_S)
    serial = extrapolate(n, serial_n, FULL_ENTITIES, max(b_serial or 1.0, 1.0))
    dividing = extrapolate(n, rest, FULL_ENTITIES, max(b_rest or 1.0, 1.0)) if rest[-1] else 0.0
    what = "main thread" if logged else "all but the parts"
    how = (
        f"CPU {serial_n[0]:.1f} -> {serial_n[-1]:.1f} s on one core ({what}), "
        f"b = {'-' if b_serial is None else f'{b_serial:.2f}'}, + {rest[0]:.1f} -> {rest[-1]:.1f} s dividing "
        f"(parts {parts[0]:.1f} -> {parts[-1]:.1f} s), b = {'-' if b_rest is None else f'{b_rest:.2f}'} (used: >= 1)"
    )
    return serial, dividing, how


def targets(runs: list[dict], floor: float) -> list[str]:
    """The largest run against the 2-core targets, and the node model at full size."""
    big = runs[-1]
    worst = max(big["rules"].items(), key=lambda kv: kv[1]["rss_mb"])
    ok = {True: "met", False: "NOT met"}
    lines = [
        "",
        f"## Targets at {big['items']:,} items on {big.get('cores', 2)} cores",
        "",
        f"- DAG before scoring: {big['wall_s']:.0f} s (target <= {LOCAL_WALL_S} s): "
        f"{ok[big['wall_s'] <= LOCAL_WALL_S]}",
        f"- largest job peak RSS: {worst[1]['rss_mb'] / 1024:.2f} GB ({worst[0]}; target <= {LOCAL_JOB_GB} GB): "
        f"{ok[worst[1]['rss_mb'] / 1024 <= LOCAL_JOB_GB]}",
    ]
    return lines + node_model(runs, floor)


# --- the memory-aware model at full size -------------------------------------


@dataclass(frozen=True)
class Job:
    """One job of the full-size schedule: wall hours, cores, memory (GB) and the jobs it waits for."""

    name: str
    hours: float
    cores: int
    mem_gb: float
    deps: tuple[str, ...] = ()


def list_schedule(jobs: list[Job], nodes: int, cores: int, mem_gb: float) -> tuple[float, dict[str, float]]:
    """Makespan (hours) and start times of ``jobs`` on ``nodes`` nodes of ``cores`` cores and
    ``mem_gb`` memory, each job on one node (SLURM without multi-node jobs).

    List scheduling: whenever a job ends, the ready jobs (all their deps done) are tried in order
    of their longest path to the end of the DAG (critical path first, then the longer job), each
    started on the first node whose free cores and free memory both hold it; a job that does not
    fit waits while a later one that fits may start (backfilling, no reservation). A job asking
    for more than a node has is clamped to the node (report it: it cannot run as asked)."""
    by_name = {j.name: j for j in jobs}
    rank: dict[str, float] = {}
    children: dict[str, list[str]] = defaultdict(list)
    for j in jobs:
        for d in j.deps:
            children[d].append(j.name)

    def upward(name: str) -> float:
        if name not in rank:
            rank[name] = by_name[name].hours + max((upward(c) for c in children[name]), default=0.0)
        return rank[name]

    order = sorted(by_name, key=lambda n: (-upward(n), -by_name[n].hours, n))
    free_cores, free_mem = [cores] * nodes, [mem_gb] * nodes
    pending, done, start = list(order), set(), {}
    running: list[tuple[float, str, int]] = []  # (end, job, node)
    now = 0.0
    while pending:
        for name in [n for n in pending if all(d in done for d in by_name[n].deps)]:
            job = by_name[name]
            need_c, need_m = min(job.cores, cores), min(job.mem_gb, mem_gb)
            node = next(
                (i for i in range(nodes) if free_cores[i] >= need_c and free_mem[i] >= need_m - 1e-9), None
            )
            if node is None:
                continue
            free_cores[node] -= need_c
            free_mem[node] -= need_m
            start[name] = now
            pending.remove(name)
            running.append((now + job.hours, name, node))
        if not running:
            raise ValueError(f"no job can start at {now:.2f} h: {pending[:3]} wait for jobs not in the list")
        running.sort()
        now = running[0][0]
        while running and running[0][0] <= now + 1e-12:
            _, name, node = running.pop(0)
            job = by_name[name]
            free_cores[node] += min(job.cores, cores)
            free_mem[node] += min(job.mem_gb, mem_gb)
            done.add(name)
    return max((start[n] + by_name[n].hours for n in start), default=0.0), start


def local_exponents(xs: list[float], ys: list[float]) -> list[float]:
    """The plain growth exponent of each step between consecutive sizes, log(y2/y1) / log(x2/x1)
    (the plain k: no fixed cost taken off, so it is below the increment exponent at small sizes
    where start-up dominates); a step with a zero or negative value is left out."""
    return [
        math.log(y2 / y1) / math.log(x2 / x1)
        for (x1, y1), (x2, y2) in zip(
            zip(xs, ys, strict=True), zip(xs[1:], ys[1:], strict=True), strict=False
        )
        if y1 > 0 and y2 > 0 and x2 > x1
    ]


def spread(xs: list[float], ys: list[float], noise: float) -> str:
    """``b [k min-max]``: the increment exponent the extrapolation uses (increment_exponent) and
    the min and max of the plain exponents between consecutive sizes (local_exponents)."""
    b = increment_exponent(xs, ys, noise)
    ks = local_exponents(xs, ys)
    head = "-" if b is None else f"{b:.2f}"
    return head + (f" [k {min(ks):.2f}-{max(ks):.2f}]" if ks else "")


@dataclass
class UnitModel:
    """One unit (dump, pair or suite) of a stage at full size: ``cpu_s`` the CPU that divides over
    its parts, ``fixed_cpu_s`` what each part pays again (loading); memory per part is
    ``mem_fixed_mb + mem_var_mb / parts`` plus, for a DuckDB job, DuckDB's limit (duckdb_share)."""

    stage: str
    unit: str
    cpu_s: float
    fixed_cpu_s: float
    mem_fixed_mb: float
    mem_var_mb: float
    duckdb_mb: float
    how: str
    threads: int = 1
    fit_duckdb: bool = True  # False: DuckDB keeps the workflow's limit (the sensitivity line)
    serial_cpu_s: float = 0.0  # of cpu_s, what runs on one core whatever the job's threads

    def state_mb(self, parts: int) -> float:
        return self.mem_fixed_mb + self.mem_var_mb / parts

    def duckdb_share(self, parts: int) -> float:
        """DuckDB's limit per part: the workflow's at full size (workflow/rules/*.smk), lowered to what
        leaves the job within its cores' share of a node (NODE_MEM_GB / NODE_CORES per core) and
        within JOB_GB, so that memory never idles the node's cores; never below DUCKDB_MIN_MB.
        A lower limit means more spilling, whose time the model does not price."""
        if not self.duckdb_mb or not self.fit_duckdb:
            return self.duckdb_mb
        cap = min(JOB_GB, NODE_MEM_GB * self.threads / NODE_CORES) * 1024
        return min(self.duckdb_mb, max(DUCKDB_MIN_MB, cap - self.state_mb(parts)))

    def job_mb(self, parts: int) -> float:
        return self.state_mb(parts) + self.duckdb_share(parts)


def run_jobs(run: dict) -> list[dict]:
    """A run's per-job records (read_jobs); for runs saved before they were recorded, one record
    per unit from the rule's sums (CPU split evenly, retrieval per suite from its logs; peak =
    the rule's largest job), units named after the run's dumps and suites where they match."""
    if "jobs" in run:
        return run["jobs"]
    dumps = sorted(k for k, v in run.get("dumps", {}).items() if isinstance(v, dict) and "items" in v)
    names = {
        "dump": dumps,
        "pair": ["_".join(dumps[i : i + 2]) for i in range(len(dumps) - 1)],
        "suite": sorted(run.get("retrieval", {})),
    }
    out = []
    for stage, r in run["rules"].items():
        per = STAGES.get(stage, Stage("dump", 1)).per
        units = names.get(per, [])
        units = units if len(units) == r["jobs"] else [f"#{i}" for i in range(r["jobs"])]
        for unit in units:
            cpu = r["cpu_s"] / len(units)
            if stage == "retrieve_distractors" and unit in run.get("retrieval", {}):
                cpu = run["retrieval"][unit].get("cpu_s", cpu)
            out.append(
                {
                    "stage": stage,
                    "unit": unit,
                    "part": "",
                    "wall_s": r["wall_s"] / len(units),
                    "cpu_s": cpu,
                    "rss_mb": r["rss_mb"],
                }
            )
    return out


def unit_series(runs: list[dict], stage: str) -> dict[str, list[dict]]:
    """Per unit of ``stage`` measured at every size: per size its CPU (summed over its jobs),
    parts (jobs) and largest part's peak RSS."""
    series: dict[str, list[dict]] = {}
    per_run = []
    for run in runs:
        units: dict[str, dict] = {}
        for j in run_jobs(run):
            if j["stage"] != stage:
                continue
            u = units.setdefault(j["unit"], {"cpu_s": 0.0, "parts": 0, "rss_mb": 0.0, "worker_mb": 0.0})
            u["cpu_s"] += j["cpu_s"]
            # A sharded unit's parts; its gather job (no part) adds CPU, not a part.
            u["parts"] += bool(j["part"])
            u["rss_mb"] = max(u["rss_mb"], j["rss_mb"])
            u["worker_mb"] = max(u["worker_mb"], j.get("worker_mb", 0.0))
        for u in units.values():
            u["parts"] = max(u["parts"], 1)
        per_run.append(units)
    for unit in per_run[-1]:
        if all(unit in units for units in per_run):
            series[unit] = [units[unit] for units in per_run]
    return series


def unit_memory(
    runs: list[dict], stage: str, unit: str, series: list[dict], floor: float
) -> tuple[float, float, str]:
    """``(fixed MB, dividing MB, how)`` of a unit's memory per job at full size, its parts aside.

    A DuckDB job (it logged its state, read_states) holds its state outside DuckDB plus DuckDB's
    limit; its state is modelled here. Retrieval: a line of state on the job's Ω rows over every
    job and size (state_line), the rows of the suite growing as their total over the sizes and
    divided over the parts with the measured imbalance (largest part's rows x parts / total:
    1 unsharded). Other jobs: ``floor`` (the interpreter and libraries) stays in every part; the
    rest, parts x (largest part's peak or state - floor), is fitted in entities and divides."""
    n = [run["items"] for run in runs]
    states = [[j for j in run.get("states", {}).get(stage, []) if j["suite"] == unit] for run in runs]
    if all(states) and stage == "retrieve_distractors":
        a, beta, npts = state_line([j for js in states for j in js])
        totals = [sum(j["rows"] for j in js) for js in states]
        b_rows = increment_exponent(n, totals, 0.0)
        rows_full = extrapolate(n, totals, FULL_ENTITIES, b_rows)
        imbalance = max(j["rows"] for j in states[-1]) * len(states[-1]) / max(totals[-1], 1)
        how = (
            f"state = {a:.0f} MB + {beta * 2**20:.1f} B x rows over {npts} jobs; {rows_full / 1e6:,.0f}M rows "
            f"(b = {1.0 if b_rows is None else b_rows:.2f}), largest part x{imbalance:.2f} the mean"
        )
        return a, beta * rows_full * imbalance, how
    if all(states):
        peak = [len(js) * max(max(j["state_mb"] for j in js) - floor, 0.0) for js in states]
        what = "state"
    else:
        peak = [s["parts"] * max(s["rss_mb"] - floor, 0.0) for s in series]
        what = "peak RSS"
    b = increment_exponent(n, peak, RSS_NOISE_MB)
    var = extrapolate(n, peak, FULL_ENTITIES, b)
    how = (
        f"{what} {floor:.0f} MB + {peak[0]:.0f} -> {peak[-1]:.0f} MB, b = {'-' if b is None else f'{b:.2f}'}"
    )
    return floor, var, how


def workers_memory(n: list[int], series: list[dict], threads: int) -> tuple[float, str]:
    """``(MB per worker, how)`` of the processes a job of the unit forks (build_probes' parts,
    prepare_retrieval's type slices and ranking): the largest worker's own anonymous memory
    (sampled by benchmarks/jobcpu.py; the pages it shares with the parent are the parent's state,
    and the pages of mapped files are the node's page cache) at each size, fitted in entities. stage_models adds one per thread to the job's memory, as if every
    worker held that peak at once and beside the state and DuckDB's limit (an upper bound), and
    gives the job no more threads than fit JOB_GB. 0 where no run sampled a worker."""
    worker = [s.get("worker_mb", 0.0) for s in series]
    if threads <= 1 or not all(worker):
        return 0.0, ""
    b = increment_exponent(n, worker, RSS_NOISE_MB)
    full = extrapolate(n, worker, FULL_ENTITIES, b)
    how = (
        f"; + workers x {full:.0f} MB (a worker's own {worker[0]:.0f} -> {worker[-1]:.0f} MB, "
        f"b = {'-' if b is None else f'{b:.2f}'})"
    )
    return full, how


def workers_that_fit(threads: int, worker_mb: float, state_mb: float) -> int:
    """Memory respected: as many forked workers (at most ``threads``, at least one) as fit JOB_GB
    beside the job's state and the smallest DuckDB limit; the job asks for that many cores."""
    room = JOB_GB * 1024 - state_mb - DUCKDB_MIN_MB
    return max(1, min(threads, int(room // worker_mb)))


def memory_table(runs: list[dict]) -> list[str]:
    """Per rule at the largest size: the peak as Snakemake samples it (the tree's RSS summed: a
    page shared by a parent and its forked workers counts once per process), the largest
    process's ``ru_maxrss``, the tree's sampled PSS (shared pages counted once) and the largest
    forked worker's PSS and own anonymous memory."""
    run = runs[-1]
    jobs = run_jobs(run)
    if not any(j.get("pss_mb") for j in jobs):
        return []
    lines = [
        "",
        f"## Memory at {run['items']:,} entities: largest job per rule (MB; benchmarks/jobcpu.py samples PSS)",
        "",
        "| rule | Snakemake max_rss | largest process (ru_maxrss) | process tree PSS | largest worker PSS / own (workers) |",
        "|---|---|---|---|---|",
    ]
    for stage in sorted({j["stage"] for j in jobs}):
        mine = [j for j in jobs if j["stage"] == stage]
        top = max(mine, key=lambda j: j.get("pss_mb", 0.0))
        worker = max(mine, key=lambda j: j.get("worker_mb", 0.0))
        lines.append(
            f"| {stage} | {max(j['rss_mb'] for j in mine):.0f} | {max(j.get('proc_mb', 0.0) for j in mine):.0f} | "
            f"{top.get('pss_mb', 0.0):.0f} ({top['unit']}) | "
            + (
                f"{worker.get('worker_pss_mb', 0.0):.0f} / {worker['worker_mb']:.0f} ({worker['workers']})"
                if worker.get("worker_mb")
                else "-"
            )
            + " |"
        )
    return lines


def state_line(jobs: list[dict]) -> tuple[float, float, int]:
    """Least-squares ``state_mb = a + beta x rows`` over retrieval jobs (beta >= 0)."""
    pts = [(j["rows"], j["state_mb"]) for j in jobs]
    mx, my = sum(p[0] for p in pts) / len(pts), sum(p[1] for p in pts) / len(pts)
    sxx = sum((p[0] - mx) ** 2 for p in pts)
    beta = max(sum((p[0] - mx) * (p[1] - my) for p in pts) / sxx, 0.0) if sxx else 0.0
    return my - beta * mx, beta, len(pts)


def stage_models(runs: list[dict], floor: float) -> tuple[dict[str, list[UnitModel]], list[str]]:
    """Every measured stage's units at full size (UnitModel), in STAGES order (stages measured
    but not in STAGES last), and warnings. CPU: per unit, fitted in entities with an exponent
    of at least 1 (every job reads the whole dump or its suite's share of it); retrieval: its
    per-job loading and its per-fact loop for FULL_FACTS facts (retrieval_full)."""
    n = [run["items"] for run in runs]
    measured = sorted({j["stage"] for run in runs for j in run_jobs(run)})
    warnings = [
        f"rule {s} is not in STAGES: modelled as one job per unit after extract_dump"
        for s in measured
        if s not in STAGES
    ]
    retrieval = retrieval_full(runs) if all(run.get("retrieval") for run in runs) else {}
    out: dict[str, list[UnitModel]] = {}
    for stage in [s for s in STAGES if s in measured] + [s for s in measured if s not in STAGES]:
        models = []
        has_states = all(run.get("states", {}).get(stage) for run in runs)
        duckdb = limit_full_mb(runs, stage) if has_states else 0.0
        for unit, series in unit_series(runs, stage).items():
            serial = 0.0
            if stage == "retrieve_distractors" and unit in retrieval:
                fixed_cpu, per_fact = retrieval[unit]
                cpu = per_fact * FULL_FACTS
                cpu_how = f"CPU {fixed_cpu:.0f} s per job + {per_fact * 1000:.1f} ms per fact"
            elif stage == "prepare_retrieval" and all(unit in run.get("retrieval", {}) for run in runs):
                fixed_cpu, (serial, dividing, cpu_how) = (
                    0.0,
                    prepare_full(runs, unit, [s["cpu_s"] for s in series]),
                )
                cpu = serial + dividing
            elif stage == "build_probes":
                fixed_cpu, (serial, dividing, cpu_how) = (
                    0.0,
                    probes_full(runs, unit, [s["cpu_s"] for s in series]),
                )
                cpu = serial + dividing
            else:
                cpu_n = [s["cpu_s"] for s in series]
                b = increment_exponent(n, cpu_n, CPU_NOISE_S)
                fixed_cpu, cpu = 0.0, extrapolate(n, cpu_n, FULL_ENTITIES, max(b or 1.0, 1.0))
                cpu_how = f"CPU {cpu_n[0]:.1f} -> {cpu_n[-1]:.1f} s, b = {'-' if b is None else f'{b:.2f}'} (used: >= 1)"
            mem_fixed, mem_var, how = unit_memory(runs, stage, unit, series, floor)
            threads = STAGES[stage].threads if stage in STAGES else 1
            worker_mb, workers_how = workers_memory(n, series, threads)
            if worker_mb:
                fit = workers_that_fit(threads, worker_mb, mem_fixed + mem_var)
                if fit < threads:
                    workers_how += f"; {fit} of {threads} workers fit {JOB_GB:.0f} GB"
                threads = fit
                mem_fixed += threads * worker_mb
            how = f"{cpu_how}; {how}{workers_how}"
            models.append(
                UnitModel(
                    stage, unit, cpu, fixed_cpu, mem_fixed, mem_var, duckdb, how, threads, serial_cpu_s=serial
                )
            )
        out[stage] = models
    return out, warnings


def parts_needed(model: UnitModel, shards: int = 1) -> int:
    """Parts of a unit of a split stage at full size: the stage's planned ``shards`` (the
    workflow's setting: semantic.part_count's parts of the index, distractors.shards of retrieval), more
    where a part would not fit JOB_GB (with DuckDB at DUCKDB_MIN_MB); 1 where the stage does not
    split."""
    stage = STAGES.get(model.stage, Stage("dump", 1))
    if not stage.split:
        return 1
    duck = min(model.duckdb_mb, DUCKDB_MIN_MB) if model.fit_duckdb else model.duckdb_mb
    room = JOB_GB * 1024 - model.mem_fixed_mb - duck
    by_mem = math.ceil(model.mem_var_mb / room) if room > 0 else MAX_PARTS
    return int(min(MAX_PARTS, max(1, by_mem, shards)))


def planned_shards(stage: str) -> int | None:
    """A split stage's parts as the workflow plans them at full size, ``None`` where they are a
    setting the model chooses (choose_shards): the index's parts come from the dump's size
    (semantic.part_count.parts_for, one per 10 GB of .json.gz, for FULL_DUMP_BYTES)."""
    if stage == "sem_bags":
        from factprobe.distractors.semantic import part_count

        return part_count.parts_for(int(FULL_DUMP_BYTES))
    return None


def choose_shards(
    models: dict[str, list[UnitModel]], nodes: int
) -> tuple[dict[str, int], float, list[tuple[int, float, float]]]:
    """``({stage: shards}, makespan h, tried)``: planned stages at their plan; the others (one
    ``distractors.shards`` for every suite, as the config has it) at the power of two up to
    MAX_SHARDS whose list schedule on ``nodes`` nodes ends first (ties: fewer CPU-hours), since
    every shard pays its suite's loading again. ``tried``: (shards, makespan h, CPU-h) each."""
    fixed = {s: k for s in models if (k := planned_shards(s)) is not None}
    free = [s for s in models if STAGES.get(s, Stage("dump", 1)).split and s not in fixed]
    tried: list[tuple[int, float, float]] = []
    best: tuple[float, float, dict[str, int]] | None = None
    for k in (2**i for i in range(int(math.log2(MAX_SHARDS)) + 1)):
        plan = {**fixed, **dict.fromkeys(free, k)}
        jobs, _ = full_jobs(models, plan)
        wall, _ = list_schedule(jobs, nodes, NODE_CORES, NODE_MEM_GB)
        cpu_h = sum(j.hours * j.cores for j in jobs)
        tried.append((k, wall, cpu_h))
        if best is None or (round(wall, 3), cpu_h) < (round(best[0], 3), best[1]):
            best = (wall, cpu_h, plan)
        if not free:
            break
    return best[2], best[0], tried


def full_jobs(
    models: dict[str, list[UnitModel]], shards: dict[str, int] | None = None
) -> tuple[list[Job], dict[tuple[str, str], int]]:
    """The full-size DAG's jobs with ``shards`` per split stage (parts_needed) and each unit's parts:
    a part runs its share of the unit's CPU plus the per-part loading on its stage's threads
    (wall = CPU / threads), with its state and DuckDB share (UnitModel.job_mb); it waits for
    the jobs of the stages in its ``after`` that were measured (same suite where both stages
    are per suite)."""
    jobs: list[Job] = []
    names: dict[tuple[str, str], list[str]] = defaultdict(list)
    parts: dict[tuple[str, str], int] = {}
    for stage, units in models.items():
        spec = STAGES.get(stage, Stage("dump", 1, ("extract_dump",)))
        for m in units:
            k = parts[(stage, m.unit)] = parts_needed(m, (shards or {}).get(stage, 1))
            deps: list[str] = []
            for before in spec.after:
                if before not in models:
                    continue
                same = spec.per == "suite" and STAGES.get(before, spec).per == "suite"
                for u in models[before]:
                    if not same or u.unit == m.unit:
                        deps += names[(before, u.unit)]
            for i in range(k):
                name = f"{stage}/{m.unit}/{i}"
                serial = m.serial_cpu_s / k
                # The unit's threads: the stage's, or fewer where its forked workers' memory
                # would not fit (stage_models).
                hours = ((m.cpu_s / k + m.fixed_cpu_s - serial) / m.threads + serial) / 3600
                jobs.append(Job(name, hours, m.threads, m.job_mb(k) / 1024, tuple(deps)))
                names[(stage, m.unit)].append(name)
    return jobs, parts


def node_model(runs: list[dict], floor: float) -> list[str]:
    """The full-size DAG before scoring, memory respected, on one node and on
    CLUSTER_NODES nodes: per stage and unit its parts, CPU-hours and memory per job, then node
    wall, CPU-hours and largest job of each schedule against the targets."""
    models, warnings = stage_models(runs, floor)
    ok = {True: "met", False: "NOT met"}
    lines = [
        "",
        f"## Full size, memory respected ({FULL_ENTITIES:.3g} entities, {FULL_FACTS:,} probed facts per suite)",
        "",
        f"Every job with its fitted memory, list-scheduled (critical path first; a job starts when its "
        f"node has both its cores and its memory free; each job on one node) on 1 and {CLUSTER_NODES} "
        f"nodes of {NODE_CORES} cores / {NODE_MEM_GB:.0f} GB. A DuckDB job's memory = its state outside "
        f"DuckDB + DuckDB's limit, which the model lowers from the workflow's (capped) to what "
        f"keeps the job within its cores' share of the node ({NODE_MEM_GB / NODE_CORES:.0f} GB per core) and "
        f"{JOB_GB:.0f} GB, at least {DUCKDB_MIN_MB} MB (it then spills more: spill time is not modelled). Split stages (STAGES.split) get their shards: the index's parts "
        f"as semantic.part_count plans them for a {FULL_DUMP_BYTES / 1e9:.0f} GB dump, and one distractors.shards for every "
        f"suite, the power of two up to {MAX_SHARDS} whose schedule ends first; more parts where a part would "
        f"not fit {JOB_GB:.0f} GB. Each part pays its unit's per-job loading again and its share of the rest. Wall of a job = "
        "CPU / threads.",
        *(f"- WARNING: {w}" for w in warnings),
        "",
        f"| stage | unit | split | parts (1 / {CLUSTER_NODES} nodes) | CPU-h | GB per job (state + DuckDB) | CPU and memory model |",
        "|---|---|---|---|---|---|---|",
    ]
    plans, chosen = {}, []
    for nodes in (1, CLUSTER_NODES):
        shards, wall, tried = choose_shards(models, nodes)
        jobs, parts = full_jobs(models, shards)
        plans[nodes] = (jobs, parts, wall)
        if len(tried) > 1:
            chosen.append(
                f"- {nodes} node(s): shards tried (shards: node wall h / CPU-h): "
                + ", ".join(f"{k}: {w:.2f} / {c:.1f}" for k, w, c in tried)
                + f"; chosen {shards}"
            )
    for stage, units in models.items():
        split = STAGES[stage].split if stage in STAGES else "?"
        for m in units:
            p1, pk = plans[1][1][(stage, m.unit)], plans[CLUSTER_NODES][1][(stage, m.unit)]
            cpu_h = (m.cpu_s + p1 * m.fixed_cpu_s) / 3600
            lines.append(
                f"| {stage} | {m.unit} | {split or '-'} | {p1} / {pk} | {cpu_h:,.2f} | "
                f"{m.job_mb(p1) / 1024:.1f} ({m.state_mb(p1) / 1024:.1f} + {m.duckdb_share(p1) / 1024:.1f}) | {m.how} |"
            )
    lines += ["", *chosen]
    big_run = runs[-1]
    for stage, states in sorted(big_run.get("states", {}).items()):
        # The bound's check where it was measured: the peak of the largest run within state + limit.
        peak = big_run["rules"].get(stage, {}).get("rss_mb", 0.0)
        bound = max(j["state_mb"] + j["limit_mb"] for j in states)
        lines.append(
            f"- {stage} at {big_run['items']:,} items: peak {peak:.0f} MB "
            f"{'within' if peak <= bound else 'ABOVE'} state + DuckDB limit {bound:.0f} MB"
        )
    for nodes, (jobs, _, wall) in plans.items():
        cpu_h = sum(j.hours * j.cores for j in jobs)
        big = max(jobs, key=lambda j: j.mem_gb)
        target = NODE_WALL_H if nodes == 1 else CLUSTER_WALL_H
        too_big = [j.name for j in jobs if j.mem_gb > NODE_MEM_GB]
        lines += [
            f"- {nodes} node(s), {len(jobs)} jobs: node wall {wall:.2f} h (target <= {target} h): "
            f"{ok[wall <= target]}; {cpu_h:,.1f} CPU-h; largest job {big.mem_gb:.1f} GB ({big.name}; "
            f"target <= {JOB_GB:.0f} GB): {ok[big.mem_gb <= JOB_GB]}"
            + (
                f"; {len(too_big)} job(s) above a node's memory, run clamped to it: {too_big[:3]}"
                if too_big
                else ""
            )
        ]
    # The same DAG with DuckDB at the workflow's limit everywhere: what lowering it buys.
    fixed = {st: [replace(m, fit_duckdb=False) for m in ms] for st, ms in models.items()}
    walls = []
    for nodes in (1, CLUSTER_NODES):
        shards, wall, _ = choose_shards(fixed, nodes)
        jobs, _ = full_jobs(fixed, shards)
        walls.append(f"{wall:.2f} h on {nodes}")
    top = max(jobs, key=lambda j: j.mem_gb)
    lines.append(
        f"- with DuckDB at the workflow's limit instead (not lowered): node wall {', '.join(walls)} "
        f"node(s); largest job {top.mem_gb:.1f} GB ({top.name})"
    )
    return lines


def main() -> None:
    if sys.argv[1:2] == ["--timeline"]:
        import scale_timeline

        scale_timeline.main(sys.argv[2:])
        return
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
    ap.add_argument(
        "--exclude",
        nargs="*",
        default=[],
        choices=["scholarly"],
        help="extract.exclude of every run (the dumps are shared with runs without it)",
    )
    ap.add_argument("--json", type=Path, help="also write the measurements here")
    ap.add_argument("--from-json", type=Path, help="only print the report of measurements saved with --json")
    args = ap.parse_args()
    if args.from_json:
        print(report(json.loads(args.from_json.read_text()), args.facts, import_floor_mb()))
        return
    runs = []
    for items in sorted(args.sizes):
        work = args.work / (f"n{items}" + "".join(f"-{c}" for c in args.exclude))
        stats = make_workdir(
            work, items, args.facts, args.retrieval_shards, tuple(args.exclude), args.work / f"dumps{items}"
        )
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
            "exclude": args.exclude,
            "kept": kept_entities(work),
            "rules": read_benchmarks(work),
            "retrieval": read_retrieval(work),
            "probes": read_probes(work),
            "states": read_states(work),
            "jobs": read_jobs(work),
        }
        runs.append(run)
        print(
            f"{items} items: DAG {wall:.0f} s (load {load_before:.2f} -> {run['load_after']:.2f})", flush=True
        )
        if args.json:  # saved after every size: a report that fails loses nothing
            args.json.write_text(json.dumps(runs, indent=1))
    print(report(runs, args.facts, import_floor_mb()))


if __name__ == "__main__":
    main()
