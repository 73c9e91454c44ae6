"""True CPU of each Snakemake job, for ``benchmarks/scale.py`` (issue 31 item 2).

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

The hook runs last among the exit handlers (registered first), but before the interpreter frees
its modules and objects: that teardown (a few tenths of a second for a job holding hundreds of MB)
is not counted, so for short jobs, which Snakemake samples every 0.5 s during their first 30 s,
the two figures agree within that margin and either may be the larger.
"""

import atexit
import os

_DIR = os.environ.get("FACTPROBE_JOB_CPU_DIR")
_PID = os.getpid()


def _record() -> None:
    import json
    import resource
    import sys
    import time

    job = getattr(sys.modules.get("__main__"), "snakemake", None)
    if os.getpid() != _PID or job is None or not hasattr(job, "rule") or not hasattr(job, "log"):
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
        "end": time.time(),
    }
    path = os.path.join(_DIR, f"{job.rule}.{_PID}.json")
    with open(path + ".tmp", "w") as f:
        json.dump(record, f)
    os.replace(path + ".tmp", path)


if _DIR:
    atexit.register(_record)
