"""Ordered work in forked processes, bounded so that a stream never piles up in memory.

A job that streams its input in parts from DuckDB (``build_probes``: a suite's truthy statements)
hands each part's pure-Python work to ``workers`` forked processes and takes the results back
in input order, so its output does not depend on how many processes ran (the
knowledge suite's ``build_probes`` is on the four-node critical path at full size).
"""

from __future__ import annotations

import multiprocessing
import queue
import resource
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any


def cpu_clock() -> float:
    """CPU seconds of this process (all its threads) and of its ended children (forked
    workers): timings a log gives per fact stay CPU when the job shares its cores (the
    model fits them; wall times there were inflated by the jobs running beside it)."""
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


@dataclass
class Timed:
    """A task's result and the CPU seconds its process spent on it."""

    value: Any
    cpu_s: float


def _timed(fn: Callable, item: Any) -> Timed:
    start = time.process_time()
    value = fn(item)
    return Timed(value, time.process_time() - start)


def ordered_map(
    fn: Callable, items: Iterable, workers: int = 1, window: int | None = None
) -> Iterator[Timed]:
    """``fn(item)`` for every item, in order, each with its CPU seconds (:class:`Timed`).

    ``workers <= 1`` runs in this process. Else a fork pool runs them, with at most ``window``
    (default ``2 * workers``) items handed out and not yet yielded: ``items`` is read only as
    fast as results are taken, so a stream of parts is held a window at a time. ``fn`` and the
    items must pickle (a module-level function; the forked processes inherit everything else).
    Fork only while no other thread of this process holds a lock the children need: callers
    start it between DuckDB queries, not during one.
    """
    if workers <= 1:
        for item in items:
            yield _timed(fn, item)
        return
    window = window or 2 * workers
    with multiprocessing.get_context("fork").Pool(workers) as pool:
        pending: deque = deque()
        for item in items:
            pending.append(pool.apply_async(_timed, (fn, item)))
            if len(pending) >= window:
                yield pending.popleft().get()
        while pending:
            yield pending.popleft().get()


def prefetch(items: Iterable, depth: int = 2) -> Iterator:
    """The items of ``items``, produced by a background thread up to ``depth`` ahead.

    For a DuckDB stream (``scan.scan_truthy_tables``): DuckDB's work on the stream then runs
    beside this thread's Python instead of on it, and this thread's CPU is what does not divide
    over the job's threads (benchmarks/scale.py). The thread starts at the first item taken, so
    a fork pool started before that (:func:`ordered_map`) forks without it. An error in the
    producer is raised here.
    """
    done = object()
    box: queue.Queue = queue.Queue(maxsize=max(1, depth))
    stop = threading.Event()

    def produce() -> None:
        try:
            for item in items:
                while not stop.is_set():
                    try:
                        box.put((item, None), timeout=0.1)
                        break
                    except queue.Full:
                        continue
                if stop.is_set():
                    return
            box.put((done, None))
        except BaseException as err:  # handed to the consumer, which raises it
            box.put((done, err))

    thread = threading.Thread(target=produce, name="prefetch", daemon=True)
    thread.start()
    try:
        while True:
            item, err = box.get()
            if item is done:
                if err is not None:
                    raise err
                return
            yield item
    finally:
        stop.set()
        thread.join(timeout=5)
