"""Disk space: ``disk_mb`` of the rules from their input size, and out-of-space errors that say so.

Rules that write large outputs declare ``disk_mb=input_size_mb(factor)`` (``workflow/rules/*.smk``), so a
scheduler (SLURM ``--tmp``, ``--resources disk_mb=...``) sees the need before the job starts.
When a disk still fills up, the writers fail with ``OSError(ENOSPC)`` (Python, pyarrow) or, from
C++ streams (nmslib's ``saveIndex``), with a bare ``basic_ios::clear: iostream error``;
:func:`factprobe.io.atomic_dir` turns both into an :class:`OutOfSpaceError` naming the output, the bytes the
rule expected to need and the bytes free, and removes its temporary folder.
"""

from __future__ import annotations

import errno
import math
import os
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

#: errno values that mean "the disk (or the quota) is full".
FULL = {errno.ENOSPC, errno.EDQUOT}
#: What a C++ ofstream reports when a write fails (no errno reaches Python).
IOSTREAM = ("basic_ios::clear", "iostream error")
MB = 1_000_000


class OutOfSpaceError(OSError):
    """A write failed because the disk is full; the message names the output and the sizes."""


def path_size(path: str | os.PathLike) -> int:
    """Bytes of a file, or of every file under a directory. Raises FileNotFoundError if absent."""
    path = Path(path)
    if path.is_dir():
        return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
    return path.stat().st_size


def input_size_mb(factor: float, floor: int = 100) -> Callable:
    """A Snakemake resource function: ``disk_mb = max(floor, factor x size of all inputs in MB)``.

    Before the inputs exist the size is unknown: the FileNotFoundError raised then makes
    Snakemake evaluate the function again when the job is ready (resources show ``<TBD>``).
    """

    def disk_mb(wildcards, input) -> int:
        return max(floor, math.ceil(factor * sum(path_size(f) for f in _files(input)) / MB))

    disk_mb.__name__ = f"input_size_mb_x{factor:g}"
    return disk_mb


def _files(input: Iterable) -> Iterator[str]:
    for item in input:
        if isinstance(item, str):
            yield item
        else:  # a named input holding a list
            yield from item


def is_out_of_space(exc: BaseException, free_bytes: int, needed_bytes: int | None) -> bool:
    """Whether ``exc`` is a full disk: ENOSPC/EDQUOT, or a C++ stream error with less free than needed."""
    if isinstance(exc, OSError) and exc.errno in FULL:
        return True
    if any(s in str(exc) for s in IOSTREAM):
        return free_bytes < (needed_bytes if needed_bytes else 64 * MB)
    return False


def out_of_space_error(
    target: str | os.PathLike, exc: BaseException, free_bytes: int, needed_bytes: int | None
) -> OutOfSpaceError:
    """The error raised for a full disk: output, file being written, bytes needed and free."""
    written = getattr(exc, "filename", None) or target
    need = (
        f"about {needed_bytes:,} bytes ({needed_bytes / MB:,.0f} MB, the rule's disk_mb)"
        if needed_bytes
        else "an unknown amount"
    )
    return OutOfSpaceError(
        errno.ENOSPC,
        f"no space left on the device while writing {written} (output {target}): it needs {need}, "
        f"{free_bytes:,} bytes ({free_bytes / MB:,.0f} MB) are free there. The partial output was removed; "
        f"free space or put results/ on a bigger disk, then re-run. (Original error: {exc})",
    )


def input_scaled(
    unit: str,
    per_input_mb: float,
    floor: int,
    name: str,
    cap: int | None = None,
    share: Callable | None = None,
) -> Callable:
    """A Snakemake resource function ``min(cap, floor + per_input_mb x (MB of all inputs))``, times the attempt.

    ``cap``: the most a first attempt asks for. The DuckDB jobs bound their memory by what they
    are given (they spill beyond), and Parquet of the full dump is tens of GB: without a cap a
    factor fitted on small dumps asks for terabytes.

    For ``mem_mb`` and ``runtime`` (``unit`` is only for the function's name, which Snakemake
    prints): a job whose work grows with its inputs asks for what its size needs (the factors
    come from ``benchmarks/scale.py``, docs/profiles.md), and a retry after an
    out-of-memory or time-limit kill (``retries`` in profiles/slurm) asks for twice as much.
    Like :func:`input_size_mb`, a missing input defers the evaluation until the job is ready.
    ``share(wildcards)``: the number of jobs the input's work is divided among (the parts of the
    semantic index each count 1/P of the claims): the factor applies to that share of the input.
    """

    def scaled(wildcards, input, attempt: int = 1) -> int:
        size = sum(path_size(f) for f in _files(input)) / MB / (share(wildcards) if share else 1)
        first = floor + per_input_mb * size
        if cap is not None:
            first = min(first, cap)
        return int(math.ceil(first * max(1, attempt)))

    scaled.__name__ = f"{name}_{unit}"
    return scaled
