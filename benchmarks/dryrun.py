"""Dry-run benchmark: what planning costs, with and without code tracking, as the DAG grows.

Every ``snakemake`` call parses the Snakefile and plans the DAG (status, refresh, each cluster
job), so planning must stay in seconds. Three DAGs, each planned with ``snakemake -n`` in a fresh
working directory, with code tracking on (every rule's ``lib`` input, its script's stamp of the
modules it reaches, :mod:`factprobe.plumbing.code_inputs`) and off (``run_inputs.library_inputs`` patched
to no inputs, in this benchmark only), in one run:

* ``demo``: config/config.yaml as shipped (81 jobs);
* ``small`` and ``large``: the demo config at full-Wikidata shard counts, planned from stub inputs:
  its two dumps are sparse files of a full dump's size (:data:`FULL_DUMP_BYTES`, so the semantic
  index plans the parts it would at full size, ``semantic.part_count``), ``distractors.shards`` and
  ``scoring.shards`` as benchmarks/RESULTS.md's scale runs chose them, and hub-id models (never
  downloaded by a dry run) added until the DAG holds about 500 and 5,000 jobs.

Before the timed calls one dry run fills the scan's cache (``factprobe/__pycache__/
code_inputs.json``), as any earlier call does for a user; the cold figure (cache removed) is
printed apart. Each figure is the CPU time (user + system) of the Snakemake process, the least of
``--repeats`` calls: on a shared machine the wall time is mostly waiting for a core (the wall
figure is printed too). Printed: jobs, seconds, tracking's cost (on / off - 1; target <= 10 %)
and the growth (large / small CPU seconds, target <= 12x for about 10x the jobs: linear, not
quadratic). Not part of the test suite.

    PYTHONPATH=workflow/scripts .venv/bin/python benchmarks/dryrun.py --repeats 3
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = ROOT / "workflow" / "scripts"
sys.path.insert(0, str(SCRIPTS))

from factprobe.distractors.semantic.part_count import PART_DUMP_BYTES  # noqa: E402
from factprobe.plumbing.code_inputs import CACHE  # noqa: E402

#: A full Wikidata JSON dump, compressed (≈ 140 GB .json.gz, semantic.part_count's estimate): its
#: index is planned in 14 parts.
FULL_DUMP_BYTES = 14 * PART_DUMP_BYTES
#: Retrieval shards per suite and scoring shards per (suite, model) at full size: the scale
#: runs' choice for retrieval (benchmarks/RESULTS.md, "Retrieval shards") and one GPU job per
#: shard on an 8-GPU node.
RETRIEVAL_SHARDS = 8
SCORING_SHARDS = 8
#: Models besides the control model, for the two synthetic DAGs (≈ 500 and ≈ 5,000 jobs).
MODELS = {"small": 5, "large": 68}
TARGET_COST, TARGET_GROWTH = 0.10, 12.0

#: Runs Snakemake in this process; ``off`` patches code tracking out before the Snakefile is
#: parsed (common.smk imports the same ``factprobe.plumbing.run_inputs`` module from sys.modules).
RUNNER = """
import sys
sys.path.insert(0, {scripts!r})
if {off!r}:
    from factprobe.plumbing import run_inputs
    run_inputs.library_inputs = lambda script, scripts, cwd: []
from snakemake.cli import main
sys.argv = ["snakemake", *{args!r}]
main()
"""


def dry_run(work: Path, off: bool, env: dict[str, str]) -> tuple[float, float, int]:
    """CPU seconds (user + system) and wall seconds of one ``snakemake -n`` in ``work``, and the
    jobs it plans."""
    args = ["-n", "--cores", "1", "--directory", str(work), "--configfile", str(work / "config.yaml")]
    args += ["-s", str(ROOT / "workflow" / "Snakefile")]
    code = RUNNER.format(scripts=str(SCRIPTS), off=off, args=args)
    before, start = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True)
    wall, after = time.perf_counter() - start, resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if proc.returncode != 0:
        raise SystemExit(f"dry run in {work} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    total = re.search(r"^total\s+(\d+)", proc.stdout + proc.stderr, re.M)
    return cpu, wall, int(total.group(1)) if total else 0


def demo_dir(base: Path) -> Path:
    work = base / "demo"
    work.mkdir()
    (work / "config.yaml").write_text((ROOT / "config" / "config.yaml").read_text())
    return work


def synthetic_dir(base: Path, name: str, models: int) -> Path:
    """The demo config at full-size shard counts: sparse full-size dump files (no disk used),
    ``models`` hub-id models beside the control model."""
    work = base / name
    (work / "stubs").mkdir(parents=True)
    rows = []
    with open(ROOT / "config" / "dumps.tsv") as handle:
        for row in csv.DictReader(handle, delimiter="\t"):
            stub = work / "stubs" / Path(row["path"]).name
            with open(stub, "wb") as out:
                out.truncate(FULL_DUMP_BYTES)
            rows.append(f"{row['dump']}\ttrue\t{stub}\t\t\n")
    (work / "dumps.tsv").write_text("dump\tenabled\tpath\turl\tchecksum\n" + "".join(rows))
    header = "name\tsource\trevision\tdtype\tdevice\tcutoff\ttrust_remote_code\n"
    control = "control\tbuiltin:control\t\tfloat32\tauto\t2016-01-01\tfalse\n"
    hub = "".join(f"m{i:03d}\tsynthetic/model-{i:03d}\tmain\tfloat16\tauto\t\tfalse\n" for i in range(models))
    (work / "models.tsv").write_text(header + control + hub)
    config = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    config["dumps"], config["models"] = str(work / "dumps.tsv"), str(work / "models.tsv")
    config["distractors"]["shards"] = RETRIEVAL_SHARDS
    config["scoring"]["shards"] = SCORING_SHARDS
    (work / "config.yaml").write_text(yaml.safe_dump(config))
    return work


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeats", type=int, default=3, help="calls per figure; the fastest counts")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    env = {k: v for k, v in os.environ.items() if k != "FACTPROBE_PLUGINS"}
    out: dict = {"load_before": os.getloadavg()[0], "figures": {}}
    with tempfile.TemporaryDirectory(prefix="dryrun-") as tmp:
        base = Path(tmp)
        dirs = {"demo": demo_dir(base), **{n: synthetic_dir(base, n, m) for n, m in MODELS.items()}}
        cache = SCRIPTS / CACHE
        cache.unlink(missing_ok=True)
        out["demo_cold_cpu_s"] = dry_run(dirs["demo"], off=False, env=env)[0]
        for name, work in dirs.items():
            for mode in ("off", "on"):
                runs = [dry_run(work, off=mode == "off", env=env) for _ in range(args.repeats)]
                cpu, wall, jobs = min(runs)
                out["figures"][f"{name}/{mode}"] = {"jobs": jobs, "cpu_s": cpu, "wall_s": wall, "runs": runs}
                print(
                    f"{name:6s} tracking {mode:3s}: {jobs:5d} jobs, CPU {cpu:6.2f} s, wall {wall:6.2f} s",
                    flush=True,
                )
    out["load_after"] = os.getloadavg()[0]
    fig = out["figures"]
    print(f"demo, cold scan cache, tracking on: CPU {out['demo_cold_cpu_s']:.2f} s")
    failed = []
    for name in dirs:
        cost = fig[f"{name}/on"]["cpu_s"] / fig[f"{name}/off"]["cpu_s"] - 1
        out[f"{name}_tracking_cost"] = cost
        ok = cost <= TARGET_COST
        failed += [] if ok else [f"{name} tracking cost"]
        print(
            f"{name}: code tracking adds {cost:+.1%} CPU (target <= {TARGET_COST:.0%}: {'met' if ok else 'MISSED'})"
        )
    for mode in ("on", "off"):
        small, large = fig[f"small/{mode}"], fig[f"large/{mode}"]
        growth = large["cpu_s"] / small["cpu_s"]
        jobs = large["jobs"] / small["jobs"]
        out[f"growth_{mode}"] = growth
        ok = growth <= TARGET_GROWTH
        failed += [] if ok else [f"growth {mode}"]
        print(
            f"tracking {mode}: {large['jobs']} jobs / {small['jobs']} jobs = {jobs:.1f}x the jobs, "
            f"{growth:.2f}x the CPU seconds (target <= {TARGET_GROWTH:.0f}x: {'met' if ok else 'MISSED'})"
        )
    print(f"load average {out['load_before']:.2f} before, {out['load_after']:.2f} after")
    if args.json:
        args.json.write_text(json.dumps(out, indent=1))
    if failed:
        sys.exit(f"targets missed: {failed}")


if __name__ == "__main__":
    main()
