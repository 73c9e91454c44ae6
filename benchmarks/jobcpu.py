"""True CPU of each Snakemake job, for ``benchmarks/scale.py``.

``scale.py`` copies this file to ``<work>/jobcpu-site/sitecustomize.py`` and puts that directory
first on the PYTHONPATH of its Snakemake run, so every Python process of the run runs it at
start-up (``site``). In a job's script process (its
``__main__`` holds Snakemake's ``snakemake`` object) it registers an exit hook that writes the
process tree's CPU to ``$FACTPROBE_JOB_CPU_DIR/<rule>.<pid>.json``: ``getrusage`` of the process
itself (all its threads: DuckDB's, numpy's) plus ``RUSAGE_CHILDREN`` (every child and grandchild
it waited for: extraction workers and the like). Snakemake's ``benchmark:`` figure instead samples
the tree with psutil every 30 s (after its first 30 s), so the CPU of processes that end between
samples and of the last interval is lost. Inert without the variable, in Snakemake itself and in
multiprocessing children (which leave through ``os._exit`` or carry a parent process).

Memory: a daemon thread samples the job's process tree every
``SAMPLE_S`` seconds, summing each process's proportional set size (``Pss`` of
``/proc/<pid>/smaps_rollup``: a page shared by n processes counts 1/n in each), so a parent and the
workers it forked count the pages they share once, as the node's memory does; Snakemake's
``max_rss`` sums their RSS and counts shared pages once per process, and ``ru_maxrss`` is the
largest single process. It records the tree's peak, and the largest worker's (a child of the job's
process) PSS and own memory (the private pages of its anonymous mappings: not the parent's pages it
still shares, nor the pages of files it maps, whose dirty pages are page cache) with the number of
workers then; ``scale.py`` scales the latter to a node's threads.

The hook runs last among the exit handlers (registered first), but before the interpreter frees
its modules and objects: that teardown (a few tenths of a second for a job holding hundreds of MB)
is not counted, so for short jobs, which Snakemake samples every 0.5 s during their first 30 s,
the two figures agree within that margin and either may be the larger.
"""

import atexit
import os
import threading
import time

_DIR = os.environ.get("FACTPROBE_JOB_CPU_DIR")
_PID = os.getpid()
SAMPLE_S = 0.5
# Peaks of the sampled process tree (MB): the whole tree's PSS, one worker's PSS and its own
# anonymous memory, and the workers running at that peak.
_PEAK = {"tree_pss_mb": 0.0, "worker_pss_mb": 0.0, "worker_own_mb": 0.0, "workers": 0}


def _job():
    import sys

    job = getattr(sys.modules.get("__main__"), "snakemake", None)
    return job if hasattr(job, "rule") and hasattr(job, "log") else None


def _children(pid: int) -> list[int]:
    """Every descendant of ``pid`` (Linux ``/proc/<pid>/task/<tid>/children``)."""
    out = []
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                kids = [int(k) for k in f.read().split()]
        except OSError:
            continue
        for kid in kids:
            out.append(kid)
            out += _children(kid)
    return out


def _pss_mb(pid: int) -> float:
    """A process's proportional share of every page it maps (MB)."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1]) / 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0.0


def _own_anon_mb(pid: int) -> float:
    """A worker's own memory (MB): the private pages of its anonymous mappings (heap, arenas,
    large arrays), not the pages it still shares with its parent nor those of files it maps
    (their dirty pages, just written, are the page cache's until written back)."""
    total, anon = 0, False
    try:
        with open(f"/proc/{pid}/smaps") as f:
            for line in f:
                if "-" in line.split(" ", 1)[0]:
                    fields = line.split()
                    anon = len(fields) < 6 or fields[5].startswith(("[heap", "[anon", "[stack"))
                elif anon and line.startswith(("Private_Dirty:", "Private_Clean:")):
                    total += int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return total / 1024


def _sample() -> None:
    while _job() is None:
        time.sleep(SAMPLE_S)
    while True:
        kids = _children(_PID)
        pss = [_pss_mb(k) for k in kids]
        own = [_own_anon_mb(k) for k in kids]
        _PEAK["tree_pss_mb"] = max(_PEAK["tree_pss_mb"], _pss_mb(_PID) + sum(pss))
        if kids:
            _PEAK["worker_pss_mb"] = max(_PEAK["worker_pss_mb"], max(pss))
            if max(own) > _PEAK["worker_own_mb"]:
                _PEAK["worker_own_mb"], _PEAK["workers"] = max(own), len(kids)
        time.sleep(SAMPLE_S)


def _record() -> None:
    import json
    import resource

    job = _job()
    if os.getpid() != _PID or job is None:
        return
    import multiprocessing

    if multiprocessing.parent_process() is not None:
        return
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    record = {
        "rule": job.rule,
        "log": [str(p) for p in job.log],
        "self_cpu_s": me.ru_utime + me.ru_stime,
        "children_cpu_s": kids.ru_utime + kids.ru_stime,
        "cpu_s": me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime,
        # ru_maxrss is KB on Linux: the largest of the process and of any one child.
        "max_rss_mb": max(me.ru_maxrss, kids.ru_maxrss) / 1024,
        **{k: round(v, 1) for k, v in _PEAK.items()},
        "end": time.time(),
    }
    path = os.path.join(_DIR, f"{job.rule}.{_PID}.json")
    with open(path + ".tmp", "w") as f:
        json.dump(record, f)
    os.replace(path + ".tmp", path)


if _DIR:
    atexit.register(_record)
    # Not in multiprocessing's children (started from a job, they are sampled as its workers).
    threading.Thread(target=_sample, name="jobcpu-memory", daemon=True).start()
