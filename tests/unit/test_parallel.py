"""factprobe.parallel: ordered work in forked processes and a prefetching thread."""

import os
import time

import pytest
from factprobe import parallel


def _pid_square(x: int) -> tuple[int, int]:
    time.sleep(0.01 * (x % 3))  # later items may finish first
    return os.getpid(), x * x


def test_ordered_map_gives_results_in_input_order_from_several_processes():
    got = list(parallel.ordered_map(_pid_square, range(20), workers=3, window=4))
    assert [t.value[1] for t in got] == [x * x for x in range(20)]
    assert len({t.value[0] for t in got}) > 1 and os.getpid() not in {t.value[0] for t in got}
    assert all(t.cpu_s >= 0 for t in got)
    inline = list(parallel.ordered_map(_pid_square, range(5)))
    assert {t.value[0] for t in inline} == {os.getpid()}


def test_ordered_map_reads_the_stream_a_window_at_a_time():
    taken = []

    def stream():
        for x in range(30):
            taken.append(x)
            yield x

    results = parallel.ordered_map(_pid_square, stream(), workers=2, window=4)
    next(results)
    assert len(taken) <= 5  # the window, and the item that filled it
    assert [t.value[1] for t in results] == [x * x for x in range(1, 30)]


def test_prefetch_yields_every_item_and_raises_the_producers_error():
    assert list(parallel.prefetch(iter(range(100)), depth=3)) == list(range(100))

    def broken():
        yield 1
        raise ValueError("bad part at byte 42")

    got = parallel.prefetch(broken())
    assert next(got) == 1
    with pytest.raises(ValueError, match="bad part at byte 42"):
        next(got)
    # A consumer that stops early leaves no producer blocked behind it.
    early = parallel.prefetch(iter(range(10_000)), depth=2)
    assert next(early) == 0
    early.close()
