"""Atomic outputs (files and folders) and zstd-compressed Parquet I/O shared by every stage.

The one home of atomic writing: :func:`atomic_path` (a file) and :func:`atomic_dir` (a folder)
write beside the target and rename onto it only when the block succeeds, and both give the
output the permissions the umask grants (:func:`publish`), whoever wrote it.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from factprobe.plumbing.osfault import naming

COMPRESSION = "zstd"


def publish(tmp: Path, target: Path) -> None:
    """Give ``tmp`` the permissions the umask grants and rename it onto ``target``.

    ``mkstemp``/``mkdtemp`` create 0600 files and 0700 folders; an output readable only by its
    writer breaks shared result folders, so every atomic writer ends here. A folder replaces
    an existing one (``os.replace`` cannot overwrite a non-empty folder).
    """
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, (0o777 if tmp.is_dir() else 0o666) & ~umask)
    if tmp.is_dir() and target.exists():
        shutil.rmtree(target)
    os.replace(tmp, target)


@contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary sibling of ``path``; rename it onto ``path`` only if the block succeeds.

    An interrupted or failing job therefore never leaves a file that looks complete.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        with naming(target):
            yield tmp_path
        publish(tmp_path, target)
    except BaseException:
        tmp_path.unlink(missing_ok=True)
        raise


@contextmanager
def atomic_dir(path: str | os.PathLike, needed_mb: float | None = None) -> Iterator[Path]:
    """Yield an empty temporary sibling folder of ``path``; it replaces ``path`` only on success.

    On any failure the temporary folder is removed (no stale ``.<name>.*.tmp`` is left) and a
    full disk is re-raised as :class:`factprobe.plumbing.diskspace.OutOfSpaceError`; ``needed_mb`` (the
    rule's ``disk_mb``) goes into its message.
    """
    from factprobe.plumbing import diskspace

    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent))
    needed = int(needed_mb * diskspace.MB) if needed_mb else None
    try:
        with naming(target):
            yield tmp
    except BaseException as exc:
        # Measured before the partial output is removed: that is what the writer saw.
        free = shutil.disk_usage(tmp).free
        shutil.rmtree(tmp, ignore_errors=True)
        if diskspace.is_out_of_space(exc, free, needed):
            raise diskspace.out_of_space_error(target, exc, free, needed) from exc
        raise
    try:
        publish(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def write_table(table: pa.Table, path: str | os.PathLike, row_group_size: int = 1 << 20) -> None:
    """Write ``table`` to ``path`` atomically as zstd Parquet."""
    with atomic_path(path) as tmp:
        pq.write_table(table, tmp, compression=COMPRESSION, row_group_size=row_group_size)


def write_frame(frame, path: str | os.PathLike, schema: pa.Schema | None = None) -> None:
    """Write a pandas DataFrame atomically (no index), optionally cast to ``schema``."""
    table = pa.Table.from_pandas(frame, schema=schema, preserve_index=False)
    write_table(table.replace_schema_metadata(None), path)


def read_table(path: str | os.PathLike, columns: list[str] | None = None) -> pa.Table:
    """Read a Parquet file, with a clear error naming the file when it is missing or broken."""
    try:
        return pq.read_table(path, columns=columns)
    except (OSError, pa.ArrowInvalid) as exc:
        raise RuntimeError(f"{path}: cannot read Parquet ({exc}); re-run the rule that makes it") from exc
