"""One suite's ``build_probes`` on 1 and more threads, on a run's extracted tables.

``python benchmarks/probes_threads.py WORKDIR SUITE --threads 1 2`` builds suite SUITE of the
run in WORKDIR (a folder made by ``benchmarks/scale.py``: ``config/config.yaml`` and the
extraction tables under ``results/``) with :func:`factprobe.probes.build.build_suite` once per
thread count, each in a fresh child process (CPU = user + system of the process and its forked
workers from ``wait4``, peak RSS = the largest ``ru_maxrss`` among them), then checks that every
setting wrote the same facts, prompts and entity forms, byte for byte. Baseline: the first
thread count, measured in the same run. Prints one JSON object with each setting's wall, CPU,
peak RSS and wall ratio to the baseline. Run it on a quiet machine (the load is printed).
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from pathlib import Path

from sem_index import ROOT, run_step

# The child: the suite's settings resolved as common.smk resolves them, its inputs at the paths
# the workflow gives (run_inputs.probe_inputs), the tables written as the rule writes them.
CHILD = """
import yaml
from pathlib import Path
from factprobe import config_rules
from factprobe import contracts, settings
from factprobe.plumbing import run_settings
from factprobe.probes.build import DumpTables, build_suite
from factprobe.config_check import load_run
root, suite, out, threads = {root!r}, {suite!r}, Path({out!r}), {threads}
cfg, dumps, models = load_run(yaml.safe_load(open("config/config.yaml")), root, root + "/workflow/schemas")
run = run_settings.resolve(cfg, {{r["dump"]: r for r in dumps}}, {{r["name"]: r for r in models}})
block = cfg.suites[suite]
tables = "results/wikidata/" + str(block.dump)
changes = temporal = None
if block.kind == "plausibility":
    changes = f"results/diff/{{block.diff_old}}_{{block.dump}}/changes.parquet"
if block.temporal_only:
    temporal = f"results/temporal/{{block.dump}}/temporal.parquet"
labels = [f"results/wikidata/{{d}}/labels.parquet" for d in config_rules.suite_dumps(block)]
out.mkdir(parents=True)
facts, prompts, _ = build_suite(
    suite, dict(run.suite_params[suite]), dict(run.template_sets[suite]),
    DumpTables(tables + "/claims.parquet", tables + "/entities.parquet", labels, changes, temporal),
    forms_path=str(out / "entity_forms.parquet"), memory_mb={memory_mb}, threads=threads,
)
contracts.write("facts", facts, out / "facts.parquet")
contracts.write("prompts", prompts, out / "prompts.parquet")
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("workdir", type=Path)
    ap.add_argument("suite")
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--memory-mb", type=int, default=2000, help="DuckDB's memory limit")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="probes-threads-"))
    os.chdir(args.workdir)
    out: dict = {"workdir": str(args.workdir), "suite": args.suite, "load": os.getloadavg(), "runs": {}}
    for threads in args.threads:
        folder = work / f"t{threads}"
        code = CHILD.format(
            root=str(ROOT), suite=args.suite, out=str(folder), threads=threads, memory_mb=args.memory_mb
        )
        out["runs"][threads] = run_step(code, work / "spill" / f"t{threads}")
    base = out["runs"][args.threads[0]]["wall_s"]
    for step in out["runs"].values():
        step["wall_ratio"] = round(base / step["wall_s"], 2)
    first = work / f"t{args.threads[0]}"
    out["same_tables"] = all(
        (work / f"t{t}" / name).read_bytes() == (first / name).read_bytes()
        for t in args.threads
        for name in ("facts.parquet", "prompts.parquet", "entity_forms.parquet")
    )
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
