"""Stream a Wikidata dump file into the extraction tables with bounded memory (docs/contracts.md).

Inputs: ``.json``, ``.json.gz`` (python-isal, ~2 GB/s) and ``.json.bz2``; the official array
layout (``[``, one entity per line ending in ``,`` — also on the last entity in some dumps —
then ``]``), JSON lines, and single documents (a pretty-printed entity, a JSON array of
entities, a ``wbgetentities`` API response).

How work is split. A ``.gz``/``.bz2`` stream cannot be entered in the middle, so a scatter over
byte or line ranges would make every shard decompress the file from the start (N times the
decompression cost, and bz2 is the slowest part of the pipeline). Instead one thread
decompresses (the decompressors release the GIL), the main process cuts the stream into
chunks of whole lines (``chunk_bytes``, default 8 MiB) and hands them to ``workers``
processes, at most ``2 * workers`` chunks in flight; results come back in dump order so the
tables are identical for any worker count. Rows are flushed as Parquet row groups of
``flush_rows``: memory is bounded by chunks in flight plus one row group per table, never the
dump. Measured figures: benchmarks/extract.py.

Bad input. A truncated or corrupt archive (or an array dump without its closing ``]``) raises
:class:`DumpError` naming the file, the compressed and uncompressed byte offsets and the line,
and no table is written (all five appear together or not at all). Malformed entity lines are
counted, logged with their line numbers and skipped; more than ``max_bad_fraction`` of them
fails the job.
"""

from __future__ import annotations

import bz2
import gc
import logging
import mmap
import multiprocessing
import os
import queue
import signal
import sys
import tempfile
import threading
import time
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import BinaryIO

import msgspec
import pyarrow as pa
import pyarrow.parquet as pq

from factprobe.io import COMPRESSION
from factprobe.wikidata.parse import (
    COLUMNS,
    BadEntity,
    LineDecoder,
    extend_columns,
    new_columns,
    new_rows,
    rows_from_object,
)

log = logging.getLogger(__name__)

SCHEMAS: dict[str, pa.Schema] = {
    "entities": pa.schema(
        [
            ("id", pa.int64()),
            ("kind", pa.string()),
            ("sitelinks", pa.int32()),
            ("modified", pa.string()),
            ("created", pa.int32()),
        ]
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
TABLES = tuple(COLUMNS)
#: Bad lines remembered (with their error) for the log and the error message; all are counted.
KEEP_BAD = 1000
#: Below this compressed size worker processes cost more to start than they save.
MIN_PARALLEL_BYTES = 16 << 20
#: A single-document file (pretty-printed entity or API response) is read whole; refuse
#: anything that large, which can only be a dump in the wrong layout.
MAX_DOCUMENT_BYTES = 1 << 30
#: GIL switch interval (seconds) while extracting. The decompression thread needs the GIL
#: back after every 1 MiB read; with CPython's default 5 ms it waits behind the parsing
#: thread that long each time and the parser then starves for input. 1 ms keeps it fed.
SWITCH_INTERVAL = 0.001


class DumpError(RuntimeError):
    """A dump cannot be read; the message names the file, the offset and what to do."""


@dataclass
class ExtractStats:
    """Counts of one extraction, logged at the end and returned to the caller."""

    kinds: dict[str, int] = field(default_factory=dict)
    rows: dict[str, int] = field(default_factory=lambda: dict.fromkeys(TABLES, 0))
    lines: int = 0  # entity lines: every line but blanks and the array brackets
    bad: int = 0
    bad_lines: list[tuple[int, str]] = field(default_factory=list)
    generic: int = 0
    bytes: int = 0  # uncompressed bytes read

    @property
    def entities(self) -> int:
        """Items and properties written to the tables."""
        return self.kinds.get("item", 0) + self.kinds.get("property", 0)

    @property
    def skipped(self) -> dict[str, int]:
        """Entities of other kinds (lexeme, mediainfo, missing ...) that were only counted."""
        return {k: v for k, v in self.kinds.items() if k not in ("item", "property")}


# --- reading -----------------------------------------------------------------------------


def _open_decompressed(raw: BinaryIO, path: Path) -> BinaryIO:
    name = path.name
    if name.endswith(".bz2"):
        return bz2.BZ2File(raw, "rb")
    if name.endswith(".gz"):
        from isal import igzip  # ~2.5x zlib (research/performance.md §A.3)

        return igzip.IGzipFile(fileobj=raw, mode="rb")
    return raw


@dataclass
class Chunk:
    """Whole lines of the decompressed stream: ``head + block[:end]``, lines numbered from
    ``first_line`` (1-based).

    ``head`` is the (short) start of a line carried over from the previous block; keeping the
    block as it came from the decompressor avoids copying 8 MiB per chunk in one process.
    """

    head: bytes
    block: bytes
    end: int
    first_line: int
    document: bool = False  # the whole file is one JSON document (in ``head``)
    #: line breaks in the chunk, set by the parser when it runs in this process (it walks every
    #: line anyway), so that :class:`DumpSource` need not count them a second time.
    newlines: int | None = None

    @property
    def size(self) -> int:
        return len(self.head) + self.end


class DumpSource:
    """Decompressed chunks of a dump, with the offsets that error messages and progress need.

    A background thread decompresses (bz2, isal and file reads release the GIL) while the
    caller parses, so decompression overlaps with parsing even in one process.
    """

    def __init__(self, path: str | Path, chunk_bytes: int = 8 << 20):
        self.path = Path(path)
        self.chunk_bytes = chunk_bytes
        self.size = self.path.stat().st_size
        self.compressed_pos = 0  # compressed bytes consumed so far (approximate: read-ahead)
        self.pos = 0  # uncompressed bytes handed out
        self.line = 0  # lines handed out
        self._last_line = b""  # last non-blank line seen, to check an array's closing `]`
        self._pending = b""  # start of a line whose end is in the next block
        #: Worker mode: the workers walk every line anyway and report the count with their
        #: results (:meth:`lines_parsed`), so the chunks handed out are not counted here; one
        #: entry per such chunk in order: ``(block, end)`` to count on demand, or ``None``
        #: for a chunk already in :attr:`line`.
        self.defer_lines = False
        self._uncounted: deque = deque()

    def _error(
        self,
        exc: BaseException | None,
        what: str,
        file_pos: int | None = None,
        decompressed: int | None = None,
    ) -> DumpError:
        detail = f": {type(exc).__name__}: {exc}" if exc is not None else ""
        file_pos = self.compressed_pos if file_pos is None else file_pos
        decompressed = self.pos if decompressed is None else decompressed
        line = self.line + sum(e[0].count(b"\n", 0, e[1]) for e in self._uncounted if e is not None)
        return DumpError(
            f"{self.path}: {what} near file byte {file_pos} of {self.size} "
            f"(decompressed byte {decompressed}, after line {line}){detail}. The file is damaged "
            "or incomplete: delete it and download it again (for a registry `path`, replace the file)."
        )

    def _blocks(self) -> Iterator[bytes]:
        """Raw decompressed blocks, read ahead by a thread into a small bounded queue."""
        blocks: queue.Queue = queue.Queue(maxsize=4)
        stop = threading.Event()

        def produce() -> None:
            decompressed = 0
            try:
                with open(self.path, "rb") as raw:
                    try:
                        with _open_decompressed(raw, self.path) as fh:
                            while not stop.is_set():
                                # 1 MiB reads: a failure is located to within 1 MiB of output.
                                parts, size = [], 0
                                while size < self.chunk_bytes:
                                    part = fh.read(min(1 << 20, self.chunk_bytes - size))
                                    if not part:
                                        break
                                    parts.append(part)
                                    size += len(part)
                                    decompressed += len(part)
                                block = parts[0] if len(parts) == 1 else b"".join(parts)
                                blocks.put((block, raw.tell(), None))
                                if not block:
                                    return
                    except BaseException as exc:  # noqa: BLE001 - re-raised in the consumer thread
                        blocks.put((exc, raw.tell(), decompressed))
            except OSError as exc:  # the file itself cannot be opened
                blocks.put((exc, 0, 0))

        thread = threading.Thread(target=produce, name="decompress", daemon=True)
        thread.start()
        try:
            while True:
                block, pos, failed_at = blocks.get()
                if isinstance(block, BaseException):
                    raise self._error(
                        block, "the archive is truncated or corrupt: reading stopped", pos, failed_at
                    )
                self.compressed_pos = pos
                if not block:
                    return
                yield block
        finally:
            stop.set()
            while thread.is_alive():  # unblock a producer waiting on a full queue
                try:
                    blocks.get_nowait()
                except queue.Empty:
                    thread.join(0.05)

    def chunks(self) -> Iterator[Chunk]:
        """Chunks of whole lines; a single-document file comes as one ``document`` chunk."""
        blocks = self._blocks()
        first = b""
        for block in blocks:
            first += block
            if first.lstrip()[:1] and (b"\n" in first.lstrip() or len(first) > (1 << 20)):
                break
        head = first.lstrip()
        newline = head.find(b"\n")
        first_line = (head if newline < 0 else head[:newline]).strip()
        if head[:1] == b"{" and first_line == b"{" or head[:1] == b"[" and first_line != b"[":
            yield self._document(first, blocks)
            return
        array = first_line == b"["
        yield from self._emit(b"", first)
        pending = self._pending
        for block in blocks:
            yield from self._emit(pending, block)
            pending = self._pending
        if pending.strip():
            self._last_line = pending.strip()
            yield Chunk(pending, b"", 0, self.line + 1)
            self.line += 1
            if self.defer_lines:
                self._uncounted.append(None)
            self.pos += len(pending)
        # The closing bracket tells a complete array dump from one cut short (plain .json has
        # no end-of-stream check of its own).
        if array and self._last_line != b"]":
            raise self._error(None, "the array dump ends without its closing `]` (truncated)")

    def _emit(self, head: bytes, block: bytes) -> Iterator[Chunk]:
        """The whole lines of ``head + block``; the rest waits in ``self._pending``."""
        end = block.rfind(b"\n") + 1
        if not end:
            self._pending = head + block
            return
        self._pending = block[end:]
        chunk = Chunk(head, block, end, self.line + 1)
        self.pos += len(head) + end
        tail = block[max(0, end - 65536) : end].rstrip()
        if tail:
            self._last_line = tail[tail.rfind(b"\n") + 1 :].strip()
        elif head.strip():
            self._last_line = head.strip()
        yield chunk
        # Parsed in this process (one worker) before the generator resumes: the parser has
        # counted the lines already; otherwise (worker processes) count them here.
        newlines = chunk.newlines
        if newlines is not None:
            self.line += newlines
        elif self.defer_lines:
            self._uncounted.append((block, end))
        else:
            self.line += block.count(b"\n", 0, end)

    def lines_parsed(self, lines: int) -> None:
        """The next chunk handed out in :attr:`defer_lines` mode held ``lines`` lines."""
        if self._uncounted.popleft() is not None:
            self.line += lines

    def _document(self, first: bytes, blocks: Iterator[bytes]) -> Chunk:
        parts = [first]
        total = len(first)
        for block in blocks:
            parts.append(block)
            total += len(block)
            if total > MAX_DOCUMENT_BYTES:
                raise DumpError(
                    f"{self.path}: starts like a single JSON document but is over "
                    f"{MAX_DOCUMENT_BYTES} bytes; a dump must have one entity per line "
                    "(JSON lines or the `[` ... `]` array layout)."
                )
        data = b"".join(parts)
        self.pos = total
        self.line = data.count(b"\n") + 1
        return Chunk(data, b"", 0, 1, document=True)


# --- parsing (runs in worker processes) ------------------------------------------------------

_DECODER: LineDecoder | None = None
_LANGUAGES: list[str] | None = None
_RING: mmap.mmap | None = None  # set in the parent before the workers are forked


def _init_worker(languages: list[str] | None) -> None:
    global _DECODER, _LANGUAGES
    if multiprocessing.parent_process() is not None:
        # A forked worker must die quietly on the pool's SIGTERM, whatever its parent set up.
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
    _LANGUAGES = languages
    _DECODER = LineDecoder(languages)


@dataclass
class ChunkResult:
    tables: dict[str, pa.Table]
    kinds: dict[str, int]
    lines: int
    bad: list[tuple[int, str]]
    generic: int
    #: lines walked (as :class:`DumpSource` counts them); ``None`` for a document chunk
    newlines: int | None = None


def _to_table(name: str, cols: tuple[list, ...]) -> pa.Table:
    schema = SCHEMAS[name]
    return pa.Table.from_arrays(
        [pa.array(c, type=f.type) for c, f in zip(cols, schema, strict=True)], schema=schema
    )


def parse_chunk(chunk: Chunk) -> ChunkResult:
    """Rows of every entity line in ``chunk``; malformed lines are recorded, not raised."""
    if chunk.document:
        return _parse(_parse_document, chunk.head)
    return _parse(_parse_chunk_lines, chunk)


def parse_shared(offset: int, size: int, first_line: int) -> ChunkResult:
    """:func:`parse_chunk` for a chunk the parent wrote into the shared ring at ``offset``."""
    assert _RING is not None
    return _parse(_parse_ring, _RING, offset, offset + size, first_line)


def _parse(func, *args) -> ChunkResult:
    decoder = _DECODER
    assert decoder is not None, "call _init_worker first"
    decoder.kinds = {}
    decoder.generic = 0
    cols = new_columns()
    bad: list[tuple[int, str]] = []
    # Nothing parsed here forms reference cycles; the collector would only rescan the
    # growing column lists over and over.
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        lines, newlines = func(*args, decoder, cols, bad)
    finally:
        if gc_was_enabled:
            gc.enable()
    tables = {name: _to_table(name, c) for name, c in cols.items()}
    return ChunkResult(tables, decoder.kinds, lines, bad, decoder.generic, newlines)


def _parse_document(data: bytes, decoder: LineDecoder, cols, bad: list[tuple[int, str]]) -> tuple[int, None]:
    """A whole-file document: one entity, a JSON array of entities, or an API response."""
    try:
        obj = msgspec.json.decode(data)
    except msgspec.DecodeError as exc:
        bad.append((1, _reason(exc)))
        return 1, None
    items = obj if isinstance(obj, list) else [obj]
    for n, item in enumerate(items, 1):
        rows = new_rows()
        try:
            kinds = rows_from_object(item, _LANGUAGES, rows)
        except (BadEntity, TypeError, ValueError, AttributeError, KeyError) as exc:
            bad.append((1, f"entity {n} of the document: {_reason(exc)}"))
            continue
        for kind in kinds:
            decoder.kinds[kind] = decoder.kinds.get(kind, 0) + 1
        extend_columns(cols, rows)
    return len(items), None


def _parse_chunk_lines(
    chunk: Chunk, decoder: LineDecoder, cols, bad: list[tuple[int, str]]
) -> tuple[int, int]:
    """Entity lines of ``chunk`` and the lines walked (line breaks, or 1 for a last line without)."""
    block, end, start, lines = chunk.block, chunk.end, 0, 0
    first_line = chunk.first_line
    if chunk.head:
        # The line that began in the previous block: the only bytes copied in one process.
        first_nl = block.find(b"\n", 0, end)
        start = end if first_nl < 0 else first_nl + 1
        line = chunk.head + block[: start - 1 if first_nl >= 0 else end]
        lines = _parse_range(line, 0, len(line), first_line, decoder, cols, bad)
        if first_nl < 0:
            return lines, 1
        first_line += 1
    more, last = _parse_lines(block, start, end, first_line, decoder, cols, bad)
    walked = last - chunk.first_line + 1
    if end and block[end - 1] == 10:  # always so for the chunks of DumpSource._emit
        chunk.newlines = walked
    return lines + more, walked


def _parse_ring(
    data, start: int, size: int, first_line: int, decoder: LineDecoder, cols, bad
) -> tuple[int, int]:
    """:func:`_parse_range` that also returns the lines walked."""
    lines, last = _parse_lines(data, start, size, first_line, decoder, cols, bad)
    return lines, last - first_line + 1


def _parse_range(data, start: int, size: int, first_line: int, decoder: LineDecoder, cols, bad) -> int:
    """Entity lines in ``data[start:size]`` (bytes or the shared ring); returns their count."""
    return _parse_lines(data, start, size, first_line, decoder, cols, bad)[0]


def _parse_lines(
    data, start: int, size: int, first_line: int, decoder: LineDecoder, cols, bad
) -> tuple[int, int]:
    """:func:`_parse_range`, also returning the number of the last line walked."""
    lines = 0
    lineno = first_line - 1
    decode = decoder.decode
    view = memoryview(data)  # zero-copy line slices; msgspec decodes any buffer
    find = data.find
    try:
        while start < size:
            stop = find(b"\n", start, size)
            if stop < 0:
                stop = size
            lineno += 1
            end = stop
            # Trailing "," (the array layout's separator, also after the last entity), and
            # whitespace or "\r" of a file that went through other tools.
            while end > start and data[end - 1] in b", \t\r":
                end -= 1
            line_start = start
            start = stop + 1
            if end - line_start < 3 and bytes(view[line_start:end]).strip() in (b"", b"[", b"]"):
                continue
            lines += 1
            try:
                decode(view[line_start:end], cols)
            except (msgspec.DecodeError, BadEntity, TypeError, ValueError, AttributeError, KeyError) as exc:
                bad.append((lineno, _reason(exc)))
    finally:
        view.release()
    return lines, lineno


def _reason(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text[:200]}"


class _Workers:
    """Forked parse workers and a shared-memory ring through which chunks reach them.

    Fork, not spawn: spawn re-runs the ``__main__`` module in every worker, and under
    Snakemake's ``script:`` that is the rule script itself. The pool is forked before the
    decompression thread starts, so no thread is ever forked. Chunks travel through an
    anonymous shared mapping (one copy, no pickling of 8 MiB through a pipe); only the small
    Arrow tables of the results come back through the pool.
    """

    def __init__(self, workers: int, languages: list[str] | None, chunk_bytes: int):
        global _RING
        self.slots = 2 * workers
        self.slot_bytes = 2 * chunk_bytes
        self.ring = mmap.mmap(-1, self.slots * self.slot_bytes)
        _RING = self.ring
        self.pool = multiprocessing.get_context("fork").Pool(
            workers, initializer=_init_worker, initargs=(languages,)
        )

    def map(self, source: DumpSource) -> Iterator[ChunkResult]:
        """``parse_chunk`` over the chunks of ``source``, results in input order, ``slots`` in
        flight.

        The workers number lines from 1 in each chunk and report how many they walked; line
        numbers are made absolute here as results come back in order, so the parent never
        counts lines itself (:attr:`DumpSource.defer_lines`).
        """
        source.defer_lines = True
        done = 0  # lines before the chunk whose result comes next

        def finish(result: ChunkResult) -> ChunkResult:
            nonlocal done
            if result.newlines is not None:
                if done:
                    result.bad = [(done + n, reason) for n, reason in result.bad]
                done += result.newlines
                source.lines_parsed(result.newlines)
            return result

        free = deque(range(self.slots))
        pending: deque = deque()
        ring, slot_bytes = self.ring, self.slot_bytes
        for chunk in source.chunks():
            if chunk.document or chunk.size > slot_bytes:
                if not chunk.document:
                    chunk = replace(chunk, first_line=1)
                pending.append((None, self.pool.apply_async(parse_chunk, (chunk,))))
            else:
                slot = free.popleft()
                offset = slot * slot_bytes
                head = len(chunk.head)
                ring[offset : offset + head] = chunk.head
                ring[offset + head : offset + head + chunk.end] = memoryview(chunk.block)[: chunk.end]
                job = self.pool.apply_async(parse_shared, (offset, chunk.size, 1))
                pending.append((slot, job))
            if len(pending) >= self.slots:
                slot, job = pending.popleft()
                yield finish(job.get())
                if slot is not None:
                    free.append(slot)
        while pending:
            yield finish(pending.popleft()[1].get())

    def close(self) -> None:
        global _RING
        self.pool.terminate()
        self.pool.join()
        _RING = None


def _parse_inline(chunks: Iterator[Chunk], languages: list[str] | None) -> Iterator[ChunkResult]:
    _init_worker(languages)
    for chunk in chunks:
        yield parse_chunk(chunk)


# --- writing -----------------------------------------------------------------------------


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
            self.writers[name].write_table(table, row_group_size=max(self.flush_rows, table.num_rows))
        self.parts[name] = []
        self.buffered[name] = 0

    def commit(self) -> None:
        for name in TABLES:
            self._flush(name)
        for writer in self.writers.values():
            writer.close()
        mode = 0o666 & ~_umask()  # mkstemp makes 0600 files; outputs get the usual mode
        for name in TABLES:
            os.chmod(self.tmp[name], mode)
            os.replace(self.tmp[name], self.outdir / f"{name}.parquet")

    def discard(self) -> None:
        for writer in self.writers.values():
            try:
                writer.close()
            except Exception:  # noqa: BLE001 - the temp file is removed anyway
                pass
        for tmp in self.tmp.values():
            tmp.unlink(missing_ok=True)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def extract_dump(
    path: str | Path,
    outdir: str | Path,
    languages: Iterable[str] | None,
    max_bad_fraction: float = 0.01,
    workers: int = 1,
    chunk_bytes: int = 8 << 20,
    flush_rows: int = 500_000,
    progress: bool = True,
    min_parallel_bytes: int = MIN_PARALLEL_BYTES,
) -> ExtractStats:
    """Extract one dump into ``outdir/{entities,labels,claims,types,properties}.parquet``.

    ``languages=None`` keeps labels in every language. ``workers`` parse processes are used
    for files of at least ``min_parallel_bytes`` (one process below). All five files appear
    together or not at all; see the module docstring for errors.
    """
    from tqdm import tqdm

    # tqdm's monitor thread would outlive this call and be alive when a later call forks.
    tqdm.monitor_interval = 0
    path, outdir = Path(path), Path(outdir)
    if not path.is_file():
        raise DumpError(f"{path}: no such dump file; check `path` in config/dumps.tsv or download it")
    langs = None if languages is None else list(dict.fromkeys(languages))
    source = DumpSource(path, chunk_bytes)
    if source.size < min_parallel_bytes:
        workers = 1
    if workers > 1 and not sys.platform.startswith("linux"):
        log.warning("parse workers need fork (Linux); parsing in one process")
        workers = 1
    stats = ExtractStats()
    started = time.perf_counter()
    # Workers are forked first, while this process has no other thread.
    pool = _Workers(workers, langs, chunk_bytes) if workers > 1 else None
    try:
        tables = TableSet(outdir, flush_rows)
    except BaseException:
        if pool is not None:
            pool.close()
        raise
    switch_interval = sys.getswitchinterval()
    sys.setswitchinterval(min(switch_interval, SWITCH_INTERVAL))
    try:
        results = pool.map(source) if pool else _parse_inline(source.chunks(), langs)
        with tqdm(
            total=source.size, unit="B", unit_scale=True, desc=f"extract {path.name}", disable=not progress
        ) as bar:
            done = 0
            for result in results:
                tables.add(result.tables)
                _merge(stats, result, path)
                bar.update(source.compressed_pos - done)
                done = source.compressed_pos
                bar.set_postfix(entities=stats.entities, bad=stats.bad, refresh=False)
        stats.bytes = source.pos
        _check_bad(stats, path, max_bad_fraction)
        tables.commit()
    except BaseException:
        tables.discard()
        raise
    finally:
        sys.setswitchinterval(switch_interval)
        if pool is not None:
            pool.close()
    _log_summary(stats, path, time.perf_counter() - started, workers)
    return stats


def _merge(stats: ExtractStats, result: ChunkResult, path: Path) -> None:
    for kind, n in result.kinds.items():
        stats.kinds[kind] = stats.kinds.get(kind, 0) + n
    for name, table in result.tables.items():
        stats.rows[name] += table.num_rows
    stats.lines += result.lines
    stats.generic += result.generic
    for lineno, reason in result.bad:
        stats.bad += 1
        if len(stats.bad_lines) < KEEP_BAD:
            stats.bad_lines.append((lineno, reason))
            log.warning("%s line %d: malformed entity skipped (%s)", path, lineno, reason)


def _check_bad(stats: ExtractStats, path: Path, max_bad_fraction: float) -> None:
    if stats.bad and stats.bad > max_bad_fraction * stats.lines:
        first = ", ".join(str(n) for n, _ in stats.bad_lines[:10])
        raise DumpError(
            f"{path}: {stats.bad} of {stats.lines} entity lines are malformed "
            f"({stats.bad / max(stats.lines, 1):.2%} > extract.max_bad_fraction={max_bad_fraction}); "
            f"first at lines {first}: {stats.bad_lines[0][1]}. Is this a Wikidata JSON dump? "
            "Re-download it, or raise extract.max_bad_fraction in config/config.yaml to accept it."
        )
    if stats.entities == 0:
        raise DumpError(
            f"{path}: no items or properties found ({stats.lines} entity lines, kinds {stats.kinds})"
        )


def _log_summary(stats: ExtractStats, path: Path, seconds: float, workers: int) -> None:
    rate = stats.lines / seconds if seconds else 0.0
    log.info(
        "%s: %d entity lines in %.1f s (%.0f lines/s, %.0f MB/s uncompressed, %d worker(s))",
        path,
        stats.lines,
        seconds,
        rate,
        stats.bytes / 1e6 / seconds if seconds else 0.0,
        workers,
    )
    log.info("%s: entities by kind %s (skipped: %s)", path, stats.kinds, stats.skipped or "none")
    log.info("%s: rows per table %s", path, stats.rows)
    log.info(
        "%s: %d malformed lines skipped; %d lines took the generic decoder", path, stats.bad, stats.generic
    )
