"""The semantic index built whole vs in parts on the same claims.

``python benchmarks/sem_index.py CLAIMS.parquet --parts 1 2 4 [--memory-mb 2000]`` times, each
step in a fresh child process (CPU = user + system of the process from ``wait4``, peak RSS =
its ``ru_maxrss``; DuckDB's spill = the largest size its temp folder reached, sampled every
50 ms):

* ``whole``: :func:`factprobe.distractors.semantic.index.build_index` (the unsharded build);
* for each P: the P ``sem_bags`` jobs (:func:`~factprobe.distractors.semantic.part_bags.count_part`) and the
  merge (:func:`~factprobe.distractors.semantic.index_parts.build_from_parts`), then checks that the merged
  index's files equal the whole one's, byte for byte.

Prints one JSON object: per step wall, CPU, peak RSS, spill; per P the largest part job's peak
and the sum of the CPU of all its jobs against the whole build's. Run it on a quiet machine
(the load average is printed with the numbers). No HNSW graph (``search: exact``, the default).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "workflow" / "scripts"))
from factprobe.distractors.semantic.index import INDEX_FILES  # noqa: E402 (the path above first)


def _size(folder: Path) -> int:
    total = 0
    for dirpath, _, names in os.walk(folder):
        for n in names:
            try:
                total += os.path.getsize(os.path.join(dirpath, n))
            except OSError:
                pass
    return total


def run_step(code: str, spill: Path) -> dict:
    """Run ``code`` in a child Python with ``TMPDIR=spill``; wall, CPU, peak RSS, peak spill."""
    spill.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, TMPDIR=str(spill), PYTHONPATH=str(ROOT / "workflow" / "scripts"))
    peak, done = [0], threading.Event()

    def poll() -> None:
        while not done.is_set():
            peak[0] = max(peak[0], _size(spill))
            time.sleep(0.05)

    t = threading.Thread(target=poll, daemon=True)
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-c", code], env=env, stdout=subprocess.DEVNULL
    )  # DuckDB progress bars
    t.start()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    done.set()
    t.join()
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode:
        raise SystemExit(f"step failed ({proc.returncode}): {code}")
    return {
        "wall_s": round(wall, 2),
        "cpu_s": round(usage.ru_utime + usage.ru_stime, 2),
        "peak_rss_mb": round(usage.ru_maxrss / 1024, 1),
        "spill_mb": round(peak[0] / 2**20, 1),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("claims", type=Path)
    ap.add_argument("--parts", type=int, nargs="+", default=[1, 2, 4])
    ap.add_argument("--memory-mb", type=int, default=2000, help="DuckDB memory limit of every job")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--work", type=Path, default=None)
    args = ap.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="sem-index-bench-"))
    claims, mem, thr = str(args.claims.resolve()), args.memory_mb, args.threads
    out: dict = {"claims": claims, "memory_mb": mem, "threads": thr, "load": os.getloadavg()}
    out["whole"] = run_step(
        "from factprobe.distractors.semantic.index import build_index\n"
        f"build_index({claims!r}, {str(work / 'whole')!r}, hnsw=False, threads={thr}, memory_mb={mem})",
        work / "spill" / "whole",
    )
    out["nnz"] = json.loads((work / "whole" / "meta.json").read_text())["nnz"]
    for p in args.parts:
        steps = []
        for i in range(p):
            steps.append(
                run_step(
                    "from factprobe.distractors.semantic.part_bags import count_part\n"
                    f"count_part({claims!r}, {str(work / f'P{p}' / str(i))!r}, {i}, {p}, threads={thr}, memory_mb={mem})",
                    work / "spill" / f"P{p}-{i}",
                )
            )
        folders = [str(work / f"P{p}" / str(i)) for i in range(p)]
        merge = run_step(
            "from factprobe.distractors.semantic.index_parts import build_from_parts\n"
            f"build_from_parts({folders!r}, {str(work / f'M{p}')!r}, hnsw=False)",
            work / "spill" / f"M{p}",
        )
        same = all(
            np.array_equal(np.load(work / "whole" / f), np.load(work / f"M{p}" / f)) for f in INDEX_FILES
        )
        out[f"P{p}"] = {
            "parts": steps,
            "merge": merge,
            "largest_part_rss_mb": max(s["peak_rss_mb"] for s in steps),
            "cpu_sum_s": round(sum(s["cpu_s"] for s in steps) + merge["cpu_s"], 2),
            "cpu_vs_whole": round(
                (sum(s["cpu_s"] for s in steps) + merge["cpu_s"]) / out["whole"]["cpu_s"], 3
            ),
            "identical_to_whole": bool(same),
        }
        shutil.rmtree(work / f"P{p}", ignore_errors=True)
        shutil.rmtree(work / f"M{p}", ignore_errors=True)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
