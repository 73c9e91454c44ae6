"""Decompressed chunks of whole lines from a Wikidata dump file (one job: read the stream).

Inputs: ``.json``, ``.json.gz`` (python-isal, ~2 GB/s) and ``.json.bz2``; the official array
layout (``[``, one entity per line ending in ``,`` — also on the last entity in some dumps —
then ``]``), JSON lines, and single documents (a pretty-printed entity, a JSON array of
entities, a ``wbgetentities`` API response).

A ``.gz``/``.bz2`` stream cannot be entered in the middle, so one thread decompresses (the
decompressors release the GIL) and :class:`DumpSource` cuts the stream into chunks of whole
lines (``chunk_bytes``, default 8 MiB) for the parsers (:mod:`.workers`). A truncated or
corrupt archive (or an array dump without its closing ``]``) raises :class:`DumpError` naming
the file, the compressed and uncompressed byte offsets and the line.
"""

from __future__ import annotations

import bz2
import queue
import threading
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

#: A single-document file (pretty-printed entity or API response) is read whole; refuse
#: anything that large, which can only be a dump in the wrong layout.
MAX_DOCUMENT_BYTES = 1 << 30
#: GIL switch interval (seconds) while extracting. The decompression thread needs the GIL


class DumpError(RuntimeError):
    """A dump cannot be read; the message names the file, the offset and what to do."""


#: The first bytes of each compression format a dump may come in, and its file name ending.
MAGIC = {
    "gzip": (b"\x1f\x8b", ".gz"),
    "bzip2": (b"BZh", ".bz2"),
    "zstd": (b"\x28\xb5\x2f\xfd", ".zst"),
    "xz": (b"\xfd7zXZ\x00", ".xz"),
}


def sniff_compression(head: bytes) -> str | None:
    """The compression format whose magic bytes ``head`` starts with (None: not compressed)."""
    return next((name for name, (magic, _) in MAGIC.items() if head.startswith(magic)), None)


def expected_compression(path: Path) -> str | None:
    """The compression format a file name promises (``.gz`` gzip, ``.bz2`` bzip2, else none)."""
    return next((name for name, (_, ext) in MAGIC.items() if path.name.endswith(ext)), None)


def compression_mismatch(path: Path, head: bytes) -> str | None:
    """Why the first bytes ``head`` of ``path`` do not match its extension (None when they do): a
    renamed file would otherwise fail mid-stream as if it were damaged."""
    found, named = sniff_compression(head), expected_compression(path)
    if found == named or not head:  # an empty file is reported where it is read
        return None
    what = f"{found} data" if found else "not compressed data"
    ext = MAGIC[found][1] if found else "no compression extension"
    named_as = f"{named} ({MAGIC[named][1]})" if named else "uncompressed"
    return (
        f"{path}: the compression does not match the extension: the file holds {what} but its name "
        f"says {named_as}. Rename it to end in {ext}"
        + (" (only .json, .json.gz and .json.bz2 are read)" if found not in (None, "gzip", "bzip2") else "")
        + ", or download it again."
    )


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
    """Whole lines of the decompressed stream: ``head + block[:end]``.

    ``head`` is the (short) start of a line carried over from the previous block; keeping the
    block as it came from the decompressor avoids copying 8 MiB per chunk in one process.
    """

    head: bytes
    block: bytes
    end: int
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
        try:
            with open(self.path, "rb") as raw:
                head = raw.read(8)
        except OSError:
            head = None  # the reading thread reports it
        mismatch = compression_mismatch(self.path, head) if head is not None else None
        if mismatch:
            raise DumpError(mismatch)
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
            yield Chunk(pending, b"", 0)
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
        chunk = Chunk(head, block, end)
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
        return Chunk(data, b"", 0, document=True)
