"""Parsing of dump chunks into per-chunk Arrow tables, in this process or in forked workers.

Results come back in dump order, so the tables are identical for any worker count; at most
``2 * workers`` chunks are in flight. Lines are numbered from 1 within each chunk: the
consumer (:func:`factprobe.wikidata.reader.extract_dump`) makes them absolute.
"""

from __future__ import annotations

import gc
import mmap
import multiprocessing
import signal
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass

import msgspec
import pyarrow as pa

from factprobe.contracts import SCHEMAS
from factprobe.wikidata.labels import LabelCounts, label_counts
from factprobe.wikidata.parse import (
    BadEntity,
    Skips,
    extend_columns,
    new_columns,
    new_rows,
    new_skips,
    rows_from_object,
)
from factprobe.wikidata.parse_typed import LineDecoder
from factprobe.wikidata.stream import Chunk, DumpSource

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
    #: item statements without a claims row (:data:`factprobe.wikidata.parse.Skips`)
    skips: Skips | None = None
    #: label coverage of the chunk's items (:func:`factprobe.wikidata.labels.label_counts`)
    labels: LabelCounts | None = None


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


def parse_shared(offset: int, size: int) -> ChunkResult:
    """:func:`parse_chunk` for a chunk the parent wrote into the shared ring at ``offset``."""
    assert _RING is not None
    return _parse(_parse_ring, _RING, offset, offset + size, 1)


def _parse(func, *args) -> ChunkResult:
    decoder = _DECODER
    assert decoder is not None, "call _init_worker first"
    decoder.kinds = {}
    decoder.generic = 0
    decoder.skips = new_skips()
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
    return ChunkResult(
        tables,
        decoder.kinds,
        lines,
        bad,
        decoder.generic,
        newlines,
        decoder.skips,
        label_counts(tables["labels"]),
    )


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
            kinds = rows_from_object(item, _LANGUAGES, rows, decoder.skips)
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
    first_line = 1
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
    walked = last
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


class Workers:
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

        The workers report how many lines they walked, so the parent never counts lines
        itself (:attr:`DumpSource.defer_lines`).
        """
        source.defer_lines = True

        def finish(result: ChunkResult) -> ChunkResult:
            if result.newlines is not None:
                source.lines_parsed(result.newlines)
            return result

        free = deque(range(self.slots))
        pending: deque = deque()
        ring, slot_bytes = self.ring, self.slot_bytes
        for chunk in source.chunks():
            if chunk.document or chunk.size > slot_bytes:
                pending.append((None, self.pool.apply_async(parse_chunk, (chunk,))))
            else:
                slot = free.popleft()
                offset = slot * slot_bytes
                head = len(chunk.head)
                ring[offset : offset + head] = chunk.head
                ring[offset + head : offset + head + chunk.end] = memoryview(chunk.block)[: chunk.end]
                job = self.pool.apply_async(parse_shared, (offset, chunk.size))
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


def parse_inline(chunks: Iterator[Chunk], languages: list[str] | None) -> Iterator[ChunkResult]:
    """``parse_chunk`` over ``chunks`` in this process."""
    _init_worker(languages)
    for chunk in chunks:
        yield parse_chunk(chunk)
