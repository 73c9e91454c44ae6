"""One console line for a limit of the operating system a job ran into: a file-size limit
(``ulimit -f``), a permission, a full or read-only disk.

These are not bugs of the workflow, so a Python traceback (or pyarrow's ``OSError: [Errno 27]
Error writing bytes to file``) is the wrong answer: :func:`fault_line` names the path, the limit
and what to change, and the traceback goes to the job's log (factprobe.plumbing.rulelog). Writers that
get an error without a file name from a C++ library (pyarrow, DuckDB) name their output with
:func:`naming`. Standard library only.
"""

from __future__ import annotations

import errno
import getpass
import os
import resource
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

#: errno values of the system's limits, each with the remedy it gets.
FAULTS = {errno.EFBIG, errno.ENOSPC, errno.EDQUOT, errno.EACCES, errno.EPERM, errno.EROFS}
MB = 1_000_000


def is_os_fault(error: BaseException) -> bool:
    """Whether ``error`` is the system refusing a file operation on a limit (not a bug)."""
    return isinstance(error, OSError) and error.errno in FAULTS


@contextmanager
def naming(path: str | os.PathLike) -> Iterator[None]:
    """Give an ``OSError`` raised in the block without a file name ``path`` as its name."""
    try:
        yield
    except OSError as error:
        # An error without an errno (e.g. OSError("message")) would print as "[Errno None] None"
        # once it has a file name, losing its message.
        if error.filename is None and error.errno is not None:
            error.filename = str(path)
        raise


def _existing(path: Path) -> Path:
    """``path`` or its nearest existing parent (to measure its filesystem)."""
    for candidate in (path, *path.parents):
        if candidate.exists():
            return candidate
    return Path("/")


def _under_temp(path: Path) -> bool:
    temp = Path(tempfile.gettempdir()).resolve()
    try:
        return path.resolve().is_relative_to(temp)
    except OSError:
        return False


def file_size_limit() -> str:
    """This process's file-size limit (``ulimit -f``) in bytes, or ``unlimited``."""
    soft, _ = resource.getrlimit(resource.RLIMIT_FSIZE)
    return "unlimited" if soft == resource.RLIM_INFINITY else f"{soft} bytes"


def remedy(error: OSError, path: Path | None) -> str:
    """What to change for ``error`` (one of :data:`FAULTS`) on ``path``."""
    where = path if path is not None else Path.cwd()
    if error.errno == errno.EFBIG:
        return (
            f"the file-size limit of the job (ulimit -f: {file_size_limit()}) is below what this "
            "output needs: run with `ulimit -f unlimited` (or a larger file-size limit of your batch "
            "system) and rerun"
        )
    if error.errno in (errno.ENOSPC, errno.EDQUOT):
        free = shutil.disk_usage(_existing(where)).free // MB
        full = "quota" if error.errno == errno.EDQUOT else "filesystem"
        temp = (
            ", or point TMPDIR at a larger disk (Snakemake: --default-resources tmpdir=<folder>)"
            if _under_temp(where)
            else ""
        )
        return f"the {full} of {where} is full ({free} MB free): free space there{temp}, and rerun"
    if error.errno == errno.EROFS:
        return f"{where} is on a read-only filesystem: run with a writable --directory and rerun"
    folder = where if where.is_dir() else where.parent
    return (
        f"user {getpass.getuser()} may not write or read there: give it access to {folder} "
        "(or run in another --directory) and rerun"
    )


def fault_line(where: str, error: OSError, log_path: str | os.PathLike) -> str:
    """The one console line of a job that failed on a limit of the system."""
    path = error.filename if error.filename is not None else error.filename2
    path = Path(os.fsdecode(path)) if path is not None else None
    reason = os.strerror(error.errno)  # pyarrow's strerror is a sentence around this
    return (
        f"factprobe: {where} failed: {reason}: {path if path is not None else '(no path given)'}: "
        f"{remedy(error, path)} (traceback in {log_path})"
    )
