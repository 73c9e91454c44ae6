"""Atomic, zstd-compressed Parquet I/O shared by every stage."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

COMPRESSION = "zstd"


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
        yield tmp_path
        # mkstemp creates 0600 files; give outputs the permissions the umask grants.
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp_path, 0o666 & ~umask)
        os.replace(tmp_path, target)
    except BaseException:
        tmp_path.unlink(missing_ok=True)
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
