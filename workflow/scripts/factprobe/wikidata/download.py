"""Resumable, verified download of a Wikidata dump.

A dump is 100+ GB and Wikimedia serves it at a few MB/s (WikiFactDiff README: "~4MB/s"), so a
transfer will be cut at some point. Bytes go to ``<dest>.part``; after a dropped connection or
a timeout the next attempt asks for the rest with an HTTP ``Range`` header (also across
processes: a re-run of the rule picks the ``.part`` file up). The checksum from
``config/dumps.tsv`` (``sha1:<hex>``, ``md5:<hex>`` or ``sha256:<hex>``) is computed while
writing, and only a verified file is renamed onto ``dest``: a failure never leaves a file that
looks complete. (The Snakemake HTTP storage plugin sets no timeout and cannot resume:
research/snakemake-style.md §0.6.)
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import requests

log = logging.getLogger(__name__)

ALGORITHMS = ("sha1", "md5", "sha256")
#: HTTP statuses worth another try; any other error status fails at once.
TRANSIENT = {408, 425, 429, 500, 502, 503, 504}


class DownloadError(RuntimeError):
    """A download failed for good; the message names the URL and what to do."""


class ChecksumError(DownloadError):
    """The downloaded bytes do not match the registry checksum."""


@dataclass(frozen=True)
class Checksum:
    algorithm: str
    hexdigest: str

    @classmethod
    def parse(cls, text: str | None) -> Checksum | None:
        """``"sha1:abc..."`` -> Checksum; empty -> None (no verification)."""
        if not text:
            return None
        algo, sep, digest = text.partition(":")
        algo, digest = algo.strip().lower(), digest.strip().lower()
        if (
            not sep
            or algo not in ALGORITHMS
            or not digest
            or any(c not in "0123456789abcdef" for c in digest)
        ):
            raise ValueError(f"checksum {text!r} is not <algorithm>:<hex> with algorithm one of {ALGORITHMS}")
        if len(digest) != hashlib.new(algo).digest_size * 2:
            raise ValueError(
                f"checksum {text!r}: a {algo} digest has {hashlib.new(algo).digest_size * 2} hex digits"
            )
        return cls(algo, digest)


def file_digest(path: str | Path, algorithm: str, upto: int | None = None) -> hashlib._Hash:
    """A hash object fed with the first ``upto`` bytes of ``path`` (all if None)."""
    h = hashlib.new(algorithm)
    remaining = upto
    with open(path, "rb") as fh:
        while remaining is None or remaining > 0:
            block = fh.read(1 << 20 if remaining is None else min(1 << 20, remaining))
            if not block:
                break
            h.update(block)
            if remaining is not None:
                remaining -= len(block)
    return h


def _total_from_content_range(value: str | None) -> tuple[int | None, int | None]:
    """``"bytes 100-199/1000"`` -> (100, 1000)."""
    if not value or not value.startswith("bytes "):
        return None, None
    span, _, total = value[6:].partition("/")
    start = span.split("-", 1)[0]
    return (int(start) if start.isdigit() else None), (int(total) if total.isdigit() else None)


@dataclass
class _PartDigest:
    """The running digest of the bytes in ``<dest>.part`` (inert when no checksum is known).

    Kept across attempts so a resumed transfer hashes only its new bytes; ``hashed`` counts
    the bytes of the part file already fed to the digest.
    """

    expected: Checksum | None
    hasher: Any = None
    hashed: int = 0

    def sync(self, part: Path, offset: int) -> None:
        """Bring the digest to the first ``offset`` bytes of ``part`` before an attempt."""
        if self.expected is not None and (self.hasher is None or self.hashed != offset):
            # Bytes left by an earlier process (or a mismatch after a restart) are hashed once.
            algorithm = self.expected.algorithm
            self.hasher = file_digest(part, algorithm, offset) if offset else hashlib.new(algorithm)
            self.hashed = offset

    def restart(self) -> None:
        """The server sends the whole resource again: start an empty digest."""
        if self.expected is not None:
            self.hasher, self.hashed = hashlib.new(self.expected.algorithm), 0

    def update(self, block: bytes) -> None:
        if self.hasher is not None:
            self.hasher.update(block)
            self.hashed += len(block)

    def verify(self, part: Path, url: str, checksum_from: str) -> None:
        """Raise :class:`ChecksumError` (deleting ``part``) unless its bytes match ``expected``."""
        if self.expected is None:
            return
        if self.hasher is None or self.hashed != part.stat().st_size:
            self.hasher = file_digest(part, self.expected.algorithm)
        got = self.hasher.hexdigest()
        if got != self.expected.hexdigest:
            part.unlink(missing_ok=True)
            raise ChecksumError(
                f"{url}: {self.expected.algorithm} of the downloaded file is {got}, but {checksum_from} "
                f"says {self.expected.hexdigest}. The partial file was deleted; re-run to download again, "
                "or fix the checksum in config/dumps.tsv (Wikimedia publishes them in "
                "*-sha1sums.txt / *-md5sums.txt next to the dump, the Internet Archive in its item's "
                "metadata)."
            )
        log.info("%s: %s verified (%s)", url, self.expected.algorithm, got)


@dataclass(frozen=True)
class Retry:
    """How a download waits out a bad network: ``retries`` more attempts after a connection error,
    a timeout, a cut transfer or a transient HTTP status, each waiting ``backoff * 2**n`` seconds
    (at most ``max_backoff``); it gives up once ``max_unreachable + 1`` attempts in a row cannot
    connect at all. ``timeout`` is (connect, read) in seconds; ``chunk_size`` the bytes read and
    hashed at a time."""

    retries: int = 8
    backoff: float = 2.0
    max_backoff: float = 120.0
    timeout: tuple[float, float] = (15.0, 120.0)
    max_unreachable: int = 2
    chunk_size: int = 1 << 18


@dataclass(frozen=True)
class _Transfer:
    """The fixed settings of one download: where the bytes go and how each request is made."""

    url: str
    dest: Path
    part: Path
    timeout: tuple[float, float]
    chunk_size: int
    progress: bool


def _response_span(resp: requests.Response, t: _Transfer, offset: int, digest: _PartDigest):
    """``(offset, total)`` to write ``resp`` at; a transient error status to retry after; or raise."""
    if resp.status_code in TRANSIENT:
        return DownloadError(f"HTTP {resp.status_code} {resp.reason}")
    if resp.status_code >= 400:
        raise DownloadError(
            f"{t.url}: HTTP {resp.status_code} {resp.reason}. Check the `url` of this dump in "
            "config/dumps.tsv (Wikimedia keeps dumps for a few months only; older ones are "
            "on the Internet Archive: name the dump by date with `source` archive or auto)."
        )
    if offset and resp.status_code == 206:
        start, total = _total_from_content_range(resp.headers.get("Content-Range"))
        if start != offset:
            raise DownloadError(
                f"{t.url}: asked for bytes {offset}- but got {resp.headers.get('Content-Range')}"
            )
        return offset, total
    if offset:
        log.warning("%s: server ignored the Range request; starting again from byte 0", t.url)
    digest.restart()
    length = resp.headers.get("Content-Length")
    return 0, (int(length) if length and length.isdigit() else None)


def _write_body(
    resp: requests.Response, t: _Transfer, offset: int, total: int | None, digest: _PartDigest, got: list[int]
) -> None:
    """Append (or, from byte 0, write) the response body to the part file; ``got[0]`` counts bytes."""
    from tqdm import tqdm

    with (
        open(t.part, "ab" if offset else "wb") as out,
        tqdm(
            total=total,
            initial=offset,
            unit="B",
            unit_scale=True,
            desc=f"download {t.dest.name}",
            disable=not t.progress,
        ) as bar,
    ):
        for block in resp.iter_content(t.chunk_size):
            out.write(block)
            digest.update(block)
            bar.update(len(block))
            got[0] += len(block)


def _attempt(
    http: requests.Session, t: _Transfer, digest: _PartDigest, got: list[int]
) -> BaseException | None:
    """One request for the bytes not yet in the part file: None when complete, else the error to retry after.

    Permanent errors raise :class:`DownloadError`; network errors propagate to the caller,
    which tells an unreachable host (``got[0] == 0``) from a cut transfer.
    """
    offset = t.part.stat().st_size if t.part.exists() else 0
    digest.sync(t.part, offset)
    headers = {"Accept-Encoding": "identity"}
    if offset:
        headers["Range"] = f"bytes={offset}-"
    with http.get(t.url, stream=True, timeout=t.timeout, headers=headers, allow_redirects=True) as resp:
        if offset and resp.status_code == 416:
            # Nothing left to send: the part file already holds the whole resource.
            log.info("%s: server has no bytes after %d; the transfer was complete", t.url, offset)
            return None
        span = _response_span(resp, t, offset, digest)
        if isinstance(span, DownloadError):
            return span
        offset, total = span
        _write_body(resp, t, offset, total, digest, got)
    size = t.part.stat().st_size
    if total is not None and size < total:
        return DownloadError(f"connection closed after {size} of {total} bytes")
    if total is not None and size > total:
        raise DownloadError(f"{t.url}: got {size} bytes but the server announced {total}")
    return None


def _fetch_part(http: requests.Session, t: _Transfer, digest: _PartDigest, retry: Retry) -> None:
    """Fill the part file, retrying with exponential back-off; raise when every attempt fails."""
    retries, backoff, max_backoff = retry.retries, retry.backoff, retry.max_backoff
    last_error: BaseException | None = None
    unreachable = 0  # attempts in a row that got no byte because no connection was made
    for attempt in range(retries + 1):
        if attempt:
            wait = min(max_backoff, backoff * 2 ** (attempt - 1))
            log.warning(
                "%s: attempt %d of %d in %.0f s after: %s", t.url, attempt + 1, retries + 1, wait, last_error
            )
            time.sleep(wait)
        got = [0]
        try:
            last_error = _attempt(http, t, digest, got)
        except (requests.ConnectionError, requests.Timeout, requests.exceptions.ChunkedEncodingError) as exc:
            last_error = exc
            connect_failed = isinstance(exc, requests.ConnectionError) and not got[0]
            unreachable = unreachable + 1 if connect_failed else 0
            if unreachable > retry.max_unreachable:
                # A wrong host name or a closed port will not heal by waiting minutes.
                raise DownloadError(
                    f"{t.url}: cannot connect ({unreachable} attempts): {exc}. Check the URL in "
                    "config/dumps.tsv and the network (is the host reachable from this machine?)."
                ) from exc
            continue
        if last_error is None:
            return
    size = t.part.stat().st_size if t.part.exists() else 0
    raise DownloadError(
        f"{t.url}: download failed after {retries + 1} attempts: {last_error}. "
        f"{size} bytes are kept in {t.part} and a re-run resumes "
        "from there; check the URL in config/dumps.tsv and the network (is the host reachable?)."
    ) from last_error


def download(
    url: str,
    dest: str | Path,
    checksum: str | None = None,
    *,
    retry: Retry = Retry(),
    progress: bool = True,
    session: requests.Session | None = None,
    checksum_from: str = "config/dumps.tsv",
) -> Path:
    """Download ``url`` to ``dest``, resuming and verifying; returns ``dest``.

    Attempts follow :class:`Retry` (``retry``), each resuming from the bytes already in
    ``<dest>.part``. Raises :class:`DownloadError` (naming the URL) when all attempts fail, when
    ``retry.max_unreachable + 1`` attempts in a row cannot connect at all, or when the server answers
    with a permanent error, and :class:`ChecksumError` (deleting the partial
    file) when the finished bytes do not match ``checksum``.
    """
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    part = dest.with_name(dest.name + ".part")
    transfer = _Transfer(url, dest, part, retry.timeout, retry.chunk_size, progress)
    digest = _PartDigest(Checksum.parse(checksum))
    if digest.expected is None:
        log.warning("%s: no checksum in the registry; the download is not verified", url)
    _fetch_part(session or requests.Session(), transfer, digest, retry)
    digest.verify(transfer.part, url, checksum_from)
    os.replace(transfer.part, dest)
    log.info("%s: %d bytes from %s", dest, dest.stat().st_size, url)
    return dest


def verify_local(
    path: str | Path, checksum: str | None, stamp: str | Path, where: str = "config/dumps.tsv"
) -> bool:
    """Verify a local dump against its registry ``checksum`` once; True when it was hashed now.

    A 100 GB file takes minutes to hash, so a verified file is remembered in the JSON ``stamp``
    (checksum, size, mtime): while those match, the file is not read again. A changed file (new
    size or mtime) or a changed checksum is hashed again. An empty checksum verifies nothing.
    Raises :class:`ChecksumError` naming the file, both digests and ``where`` on a mismatch
    (and removes a stale stamp).
    """
    expected = Checksum.parse(checksum)
    if expected is None:
        return False
    path, stamp = Path(path), Path(stamp)
    st = path.stat()
    record = {"path": str(path), "checksum": f"{expected.algorithm}:{expected.hexdigest}"}
    record.update(size=st.st_size, mtime_ns=st.st_mtime_ns)
    try:
        if json.loads(stamp.read_text()) == record:
            return False
    except (OSError, ValueError):
        pass
    got = file_digest(path, expected.algorithm).hexdigest()
    if got != expected.hexdigest:
        stamp.unlink(missing_ok=True)
        raise ChecksumError(
            f"{where}: {path}: {expected.algorithm} is {got}, but the registry says {expected.hexdigest}. "
            "The file is damaged or not the dump the row names: fetch it again, or fix (or empty) the "
            "row's checksum."
        )
    tmp = stamp.with_name(f".{stamp.name}.{os.getpid()}.tmp")
    try:
        stamp.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(json.dumps(record))
        os.replace(tmp, stamp)
    except OSError as exc:  # a read-only checkout still runs; it just hashes again next time
        tmp.unlink(missing_ok=True)
        log.warning("%s: verified, but cannot remember it in %s: %s", path, stamp, exc)
    log.info("%s: %s verified (%s)", path, expected.algorithm, got)
    return True


def verify_local_dumps(rows: list[dict], where: str, stamp_dir: str | Path) -> list[str]:
    """:func:`verify_local` on every enabled ``path`` row with a checksum; the dumps hashed now."""
    hashed = []
    for row in rows:
        if row.get("enabled") and "path" in row and row.get("checksum"):
            stamp = Path(stamp_dir) / f"{row['dump']}.json"
            if verify_local(
                row["path"], row["checksum"], stamp, f"{where}: line {row['_line']} (dump {row['dump']})"
            ):
                hashed.append(row["dump"])
    return hashed
