"""The five extraction tables written as Parquet row groups into temp files, renamed together."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from factprobe.contracts import EXTRACT_TABLES as TABLES
from factprobe.contracts import SCHEMAS
from factprobe.io import COMPRESSION, publish
from factprobe.plumbing.osfault import naming


class TableSet:
    """Parquet writers for every table in temp files; :meth:`commit` renames them all at once.

    Rows arrive as small per-chunk tables and are written as row groups of ``flush_rows``.
    """

    def __init__(self, outdir: Path, flush_rows: int = 500_000):
        self.outdir = outdir
        self.flush_rows = flush_rows
        self.tmp: dict[str, Path] = {}
        self.writers: dict[str, pq.ParquetWriter] = {}
        self.parts: dict[str, list[pa.Table]] = {name: [] for name in TABLES}
        self.buffered = dict.fromkeys(TABLES, 0)
        outdir.mkdir(parents=True, exist_ok=True)
        for name in TABLES:
            fd, tmp = tempfile.mkstemp(prefix=f".{name}.parquet.", suffix=".tmp", dir=outdir)
            os.close(fd)
            self.tmp[name] = Path(tmp)
            self.writers[name] = pq.ParquetWriter(tmp, SCHEMAS[name], compression=COMPRESSION)

    def add(self, tables: dict[str, pa.Table]) -> None:
        for name, table in tables.items():
            if table.num_rows:
                self.parts[name].append(table)
                self.buffered[name] += table.num_rows
                if self.buffered[name] >= self.flush_rows:
                    self._flush(name)

    def _flush(self, name: str) -> None:
        if self.parts[name]:
            table = pa.concat_tables(self.parts[name]).combine_chunks()
            # pyarrow's write errors name no file (a file-size limit: "[Errno 27] ... File too large")
            with naming(self.outdir / f"{name}.parquet"):
                self.writers[name].write_table(table, row_group_size=max(self.flush_rows, table.num_rows))
        self.parts[name] = []
        self.buffered[name] = 0

    def commit(
        self, refilter: Callable[[str, pa.Table], pa.Table] | None = None, names: tuple[str, ...] = ()
    ) -> None:
        """Publish every table; ``refilter(name, row_group)`` first rewrites the tables in ``names``
        row group by row group (rows that could only be judged once the whole dump was read)."""
        for name in TABLES:
            self._flush(name)
        for name, writer in self.writers.items():
            with naming(self.outdir / f"{name}.parquet"):
                writer.close()
        if refilter is not None:
            for name in names:
                self._rewrite(name, refilter)
        for name in TABLES:
            publish(self.tmp[name], self.outdir / f"{name}.parquet")

    def _rewrite(self, name: str, refilter: Callable[[str, pa.Table], pa.Table]) -> None:
        fd, tmp = tempfile.mkstemp(prefix=f".{name}.parquet.", suffix=".tmp", dir=self.outdir)
        os.close(fd)
        try:
            source = pq.ParquetFile(self.tmp[name])
            with (
                naming(self.outdir / f"{name}.parquet"),
                pq.ParquetWriter(tmp, SCHEMAS[name], compression=COMPRESSION) as writer,
            ):
                for i in range(source.num_row_groups):
                    table = refilter(name, source.read_row_group(i))
                    if table.num_rows:
                        writer.write_table(table, row_group_size=max(self.flush_rows, table.num_rows))
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        self.tmp[name].unlink()
        self.tmp[name] = Path(tmp)

    def discard(self) -> None:
        for writer in self.writers.values():
            try:
                writer.close()
            except Exception:  # noqa: BLE001 - the temp file is removed anyway
                pass
        for tmp in self.tmp.values():
            tmp.unlink(missing_ok=True)
