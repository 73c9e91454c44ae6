"""Stream a Wikidata dump file into Parquet tables with bounded memory.

Handles ``.json``, ``.json.gz`` and ``.json.bz2``; the official array layout (``[``, one
entity per line ending in ``,``, ``]``) and JSON lines; single-entity and API-response files.
"""

from __future__ import annotations

import bz2
import gzip
import json
import logging
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, Iterable, Iterator

import pyarrow as pa
import pyarrow.parquet as pq

from factprobe.io import COMPRESSION, atomic_path
from factprobe.wikidata.parse import COLUMNS, entity_rows

log = logging.getLogger(__name__)

SCHEMAS: dict[str, pa.Schema] = {
    "entities": pa.schema(
        [("id", pa.int64()), ("kind", pa.string()), ("sitelinks", pa.int32()), ("modified", pa.string())]
    ),
    "labels": pa.schema(
        [("id", pa.int64()), ("lang", pa.string()), ("text", pa.string()), ("is_alias", pa.bool_())]
    ),
    "claims": pa.schema(
        [
            ("subject", pa.int64()),
            ("property", pa.int32()),
            ("object", pa.int64()),
            ("rank", pa.int8()),
            ("start", pa.int32()),
            ("end", pa.int32()),
            ("point_in_time", pa.int32()),
        ]
    ),
    "types": pa.schema([("id", pa.int64()), ("type", pa.int64()), ("via", pa.string())]),
    "properties": pa.schema(
        [("id", pa.int64()), ("datatype", pa.string()), ("single_value", pa.bool_()), ("label", pa.string())]
    ),
}


class DumpError(RuntimeError):
    """A dump cannot be read; the message names the file, the offset and what to do."""


@dataclass
class ExtractStats:
    entities: int = 0
    skipped: dict[str, int] = field(default_factory=dict)
    bad_lines: list[int] = field(default_factory=list)
    lines: int = 0


def open_dump(path: str | Path) -> BinaryIO:
    """Open a possibly compressed dump for binary streaming, chosen by suffix."""
    path = Path(path)
    if path.suffix == ".bz2":
        return bz2.open(path, "rb")
    if path.suffix == ".gz":
        try:
            from isal import igzip  # isal decompresses gzip ~3x faster than zlib

            return igzip.open(path, "rb")
        except ImportError:  # pragma: no cover - isal is a declared dependency
            return gzip.open(path, "rb")
    return open(path, "rb")


def iter_entities(
    path: str | Path, stats: ExtractStats, max_bad_fraction: float = 0.01
) -> Iterator[dict]:
    """Yield decoded entities of a dump, counting and skipping malformed lines.

    A corrupt or truncated archive raises :class:`DumpError` naming the file and the byte
    offset of the uncompressed stream where reading stopped.
    """
    path = Path(path)
    offset = 0
    with open_dump(path) as fh:
        first = fh.read(1)
        fh_iter = _lines(fh, first)
        try:
            for lineno, line in fh_iter:
                stats.lines = lineno
                offset += len(line)
                text = line.strip()
                if not text or text in (b"[", b"]"):
                    continue
                if text.endswith(b","):
                    text = text[:-1]
                try:
                    obj = json.loads(text)
                except ValueError:
                    stats.bad_lines.append(lineno)
                    continue
                yield from _entities_of(obj, stats)
        except (EOFError, OSError, ValueError) as exc:
            raise DumpError(
                f"{path}: archive is corrupt or truncated near uncompressed byte offset {offset} "
                f"(line {stats.lines}): {exc}. Download the dump again (delete the file and re-run)."
            ) from exc
    if stats.lines and len(stats.bad_lines) > max_bad_fraction * max(stats.lines, 1):
        raise DumpError(
            f"{path}: {len(stats.bad_lines)} malformed entity lines of {stats.lines} "
            f"(first at lines {stats.bad_lines[:10]}) exceed max_bad_fraction={max_bad_fraction}; "
            "the file is probably not a Wikidata JSON dump."
        )


def _lines(fh: BinaryIO, first: bytes) -> Iterator[tuple[int, bytes]]:
    """Lines of the stream, numbered from 1; a whole-file JSON object is one 'line'."""
    rest = fh.read() if first == b"{" and not _looks_like_lines(fh) else None
    if rest is not None:
        yield 1, first + rest
        return
    lineno = 0
    pending = first
    for line in fh:
        lineno += 1
        yield lineno, pending + line
        pending = b""
    if pending:
        yield lineno + 1, pending


def _looks_like_lines(fh: BinaryIO) -> bool:
    """JSON-lines files have a complete object on the first line; pretty-printed ones do not."""
    peek = getattr(fh, "peek", None)
    if peek is None:
        return True
    chunk = peek(1 << 16)
    nl = chunk.find(b"\n")
    if nl < 0:
        return False
    try:
        json.loads(b"{" + chunk[:nl])
        return True
    except ValueError:
        return False


def _entities_of(obj: object, stats: ExtractStats) -> Iterator[dict]:
    if isinstance(obj, dict) and "entities" in obj and "id" not in obj:
        for ent in obj["entities"].values():
            yield from _entities_of(ent, stats)
        return
    if not isinstance(obj, dict) or "id" not in obj:
        return
    etype = obj.get("type")
    if "missing" in obj or etype not in ("item", "property"):
        key = "missing" if "missing" in obj else str(etype)
        stats.skipped[key] = stats.skipped.get(key, 0) + 1
        return
    stats.entities += 1
    yield obj


class TableWriter:
    """Buffer rows per table and flush them as Parquet row groups (never the whole dump in RAM)."""

    def __init__(self, outdir: Path, stack: ExitStack, flush_rows: int = 200_000):
        self.flush_rows = flush_rows
        self.buffers: dict[str, list[tuple]] = {name: [] for name in COLUMNS}
        self.writers: dict[str, pq.ParquetWriter] = {}
        for name in COLUMNS:
            tmp = stack.enter_context(atomic_path(outdir / f"{name}.parquet"))
            self.writers[name] = stack.enter_context(
                pq.ParquetWriter(tmp, SCHEMAS[name], compression=COMPRESSION)
            )

    def add(self, rows: dict[str, list[tuple]]) -> None:
        for name, new in rows.items():
            buf = self.buffers[name]
            buf.extend(new)
            if len(buf) >= self.flush_rows:
                self._flush(name)

    def _flush(self, name: str) -> None:
        buf = self.buffers[name]
        cols = list(zip(*buf)) if buf else [[] for _ in COLUMNS[name]]
        table = pa.Table.from_arrays(
            [pa.array(c, type=f.type) for c, f in zip(cols, SCHEMAS[name])], schema=SCHEMAS[name]
        )
        self.writers[name].write_table(table)
        buf.clear()

    def close(self) -> None:
        for name in COLUMNS:
            self._flush(name)


def extract_dump(
    path: str | Path,
    outdir: str | Path,
    languages: Iterable[str] | None,
    max_bad_fraction: float = 0.01,
) -> ExtractStats:
    """Extract one dump into ``outdir/{entities,labels,claims,types,properties}.parquet``.

    All five files appear together or not at all.
    """
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    langs = None if languages is None else list(languages)
    stats = ExtractStats()
    with ExitStack() as stack:
        writer = TableWriter(outdir, stack)
        for ent in iter_entities(path, stats, max_bad_fraction):
            writer.add(entity_rows(ent, langs))
        writer.close()
    log.info(
        "%s: %d entities, %d bad lines, skipped %s", path, stats.entities, len(stats.bad_lines), stats.skipped
    )
    return stats
