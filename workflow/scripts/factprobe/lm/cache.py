"""Request cache: scores keyed by hash(model, revision, dtype, context, continuation), in Parquet shards,
and :class:`CachingLM`, the model wrapper that reads and fills it.

Every finished request is appended to an in-memory buffer that is flushed as a new, atomically
written shard (``part-<hash>.parquet``) every ``flush_every`` entries and at the end. A killed job
therefore loses at most one buffer; a re-run, a new shard layout or a new dump whose prompts are
unchanged reads the shards and computes only the missing requests. Parallel jobs write distinct
shard names, so they never clash. (lm-evaluation-harness's CachingLM does the same with SQLite,
anchors.md §3.7; Parquet keeps the project to one storage format.)
"""

from __future__ import annotations

import hashlib
import logging
import os
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from factprobe.io import write_table
from factprobe.lm.api import (
    LM,
    BeamRequest,
    GenerateRequest,
    GenerateResult,
    LoglikRequest,
    LoglikResult,
    OnDone,
    TopkRequest,
    TopkResult,
)

log = logging.getLogger(__name__)

# Bump when the tokenization or scoring procedure changes meaning: old entries stop matching.
ENGINE_VERSION = "loglik-2"
SCHEMA = pa.schema(
    [
        ("key", pa.string()),
        ("logprob", pa.float64()),
        ("n_tokens", pa.int32()),
        ("first_logprob", pa.float64()),
        ("end_logprob", pa.float64()),
    ]
)


def request_key(model: str, revision: str, dtype: str, context: str, continuation: str) -> str:
    """Stable 128-bit hex key of one scoring request (continuation includes the end-marker tag)."""
    digest = hashlib.blake2b(digest_size=16)
    for part in (ENGINE_VERSION, model, revision, dtype, context, continuation):
        raw = part.encode("utf-8")
        digest.update(len(raw).to_bytes(8, "little"))
        digest.update(raw)
    return digest.hexdigest()


class RequestCache:
    """Folder of Parquet shards mapping request keys to (logprob, n_tokens, first_logprob, end_logprob).

    Shards are not loaded whole: :meth:`lookup` scans them batch by batch, keeping only the rows
    whose key is asked for (``pyarrow.compute.is_in`` on the key column, the other columns read
    for the matching rows only). A scoring shard therefore holds the entries of its own requests,
    not the model's whole cache of every suite and earlier run. On key collisions
    across shards the later shard (sorted by name) wins, as when all were loaded in order.
    """

    def __init__(self, folder: str | os.PathLike | None, flush_every: int = 50_000, batch_rows: int = 65_536):
        self.folder = Path(folder) if folder else None
        self.flush_every = flush_every
        self.batch_rows = batch_rows
        # Entries of keys looked up (found on disk) or added by this process only.
        self._known: dict[str, tuple[float, int, float, float]] = {}
        self._searched: set[str] = set()
        self._buffer: list[tuple[str, float, int, float, float]] = []
        self._shards = (
            sorted(self.folder.glob("part-*.parquet")) if self.folder and self.folder.is_dir() else []
        )
        if self._shards:
            log.info("request cache %s: %d shards, read per lookup", self.folder, len(self._shards))

    def _batches(self, shard: Path, columns: list[str]):
        """Record batches of ``columns`` (those present) of one shard; unreadable shards are dropped."""
        try:
            pf = pq.ParquetFile(shard)
            have = [c for c in columns if c in pf.schema_arrow.names]
            yield from pf.iter_batches(columns=have, batch_size=self.batch_rows)
        except (OSError, pa.ArrowInvalid) as exc:
            log.warning("%s: unreadable cache shard skipped (%s); delete it", shard, exc)
            self._shards = [s for s in self._shards if s != shard]

    def _fetch(self, keys: Sequence[str]) -> None:
        """Read the on-disk entries of ``keys`` not searched yet (streaming, predicate on key)."""
        want = [k for k in dict.fromkeys(keys) if k not in self._searched]
        if not want:
            return
        wanted = pa.array(want, pa.string())
        cols = ["key", "logprob", "n_tokens", "first_logprob", "end_logprob"]
        for shard in list(self._shards):
            for batch in self._batches(shard, cols):
                mask = pc.is_in(batch.column("key"), value_set=wanted)
                if not pc.any(mask).as_py():
                    continue
                hit = batch.filter(mask).to_pydict()
                # Shards written before end_logprob existed: NaN, so score_texts recomputes them.
                ends = hit.get("end_logprob", [None] * len(hit["key"]))
                for key, lp, nt, fl, el in zip(
                    hit["key"], hit["logprob"], hit["n_tokens"], hit["first_logprob"], ends, strict=True
                ):
                    self._known[key] = (lp, nt, fl, float("nan") if el is None else el)
        self._searched.update(want)

    def __len__(self) -> int:
        """Distinct keys on disk and in memory (scans the shards' key column)."""
        keys = set(self._known)
        for shard in list(self._shards):
            for batch in self._batches(shard, ["key"]):
                keys.update(batch.column("key").to_pylist())
        return len(keys)

    def lookup(self, keys: Iterable[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(found mask, logprob, n_tokens, first_logprob) for ``keys``; missing entries are NaN/0."""
        keys = list(keys)
        self._fetch(keys)
        found = np.zeros(len(keys), dtype=bool)
        lp = np.full(len(keys), np.nan)
        nt = np.zeros(len(keys), dtype=np.int32)
        fl = np.full(len(keys), np.nan)
        for i, key in enumerate(keys):
            hit = self._known.get(key)
            if hit is not None:
                found[i] = True
                lp[i], nt[i], fl[i] = hit[:3]
        return found, lp, nt, fl

    def lookup_end(self, keys: Iterable[str]) -> np.ndarray:
        """end_logprob of ``keys`` (log-probability of the end marker); NaN where unknown."""
        keys = list(keys)
        self._fetch(keys)
        return np.array([self._known.get(key, (0, 0, 0, np.nan))[3] for key in keys], dtype=float)

    def add(self, keys: Iterable[str], logprob, n_tokens, first_logprob, end_logprob=None) -> None:
        """Record finished requests; flush a shard once the buffer is full."""
        keys = list(keys)
        self._fetch(keys)
        if end_logprob is None:
            end_logprob = [float("nan")] * len(keys)
        for key, lp, nt, fl, el in zip(keys, logprob, n_tokens, first_logprob, end_logprob, strict=True):
            if key in self._known and np.isfinite(self._known[key][3]):
                continue
            entry = (float(lp), int(nt), float(fl), float(el))
            self._known[key] = entry
            self._buffer.append((key, *entry))
        if len(self._buffer) >= self.flush_every:
            self.flush()

    def flush(self) -> None:
        """Write the buffer as one new shard (atomic), named by the hash of its keys."""
        if not self._buffer or self.folder is None:
            self._buffer.clear()
            return
        keys, lp, nt, fl, el = zip(*self._buffer, strict=True)
        name = hashlib.blake2b("".join(keys).encode(), digest_size=10).hexdigest()
        table = pa.table(
            {"key": keys, "logprob": lp, "n_tokens": nt, "first_logprob": fl, "end_logprob": el},
            schema=SCHEMA,
        )
        write_table(table, self.folder / f"part-{name}.parquet")
        log.info("request cache: wrote %d entries to %s", len(keys), self.folder)
        self._buffer.clear()


class CachingLM(LM):
    """``lm`` with its log-likelihoods read from and written to a :class:`RequestCache`.

    Cached requests are read; the rest go to ``lm`` and each is written to the cache as soon as it
    is final, so a killed run resumes. Top-k and generation pass through uncached.
    """

    def __init__(self, lm: LM, cache: RequestCache):
        self.lm = lm
        self.cache = cache
        self.end_marker = lm.end_marker

    @property
    def identity(self) -> tuple[str, str, str]:
        return self.lm.identity

    def keys(self, requests: Sequence[LoglikRequest]) -> list[str]:
        """Cache keys of ``requests`` (the end marker is part of the continuation's key)."""
        model, revision, dtype = self.identity
        tag = f"\x00end={self.end_marker}"
        if getattr(self.lm, "encoding_tag", ""):  # the end token / prompt format when not the default
            tag += f"\x00{self.lm.encoding_tag}"
        return [request_key(model, revision, dtype, r.context, r.continuation + tag) for r in requests]

    def loglikelihood(
        self, requests: Sequence[LoglikRequest], progress: bool = False, on_done: OnDone | None = None
    ) -> list[LoglikResult]:
        keys = self.keys(requests)
        found, lp, nt, fl = self.cache.lookup(keys)
        el = self.cache.lookup_end(keys)
        found &= np.isfinite(el)  # entries from before end_logprob existed are recomputed
        todo = np.flatnonzero(~found).tolist()
        log.info("%d requests: %d cached, %d to compute", len(keys), int(found.sum()), len(todo))
        out = [
            LoglikResult(float(a), int(b), float(c), float(d)) if hit else None
            for hit, a, b, c, d in zip(found, lp, nt, fl, el, strict=True)
        ]
        if on_done is not None and found.any():
            hits = np.flatnonzero(found).tolist()
            on_done(hits, [out[i] for i in hits])

        def finished(done: Sequence[int], results: Sequence[LoglikResult]) -> None:
            if not done:
                return
            index = [todo[j] for j in done]
            self.cache.add(
                [keys[i] for i in index],
                *zip(
                    *((r.logprob, r.n_tokens, r.first_logprob, r.end_logprob) for r in results), strict=True
                ),
            )
            if on_done is not None:
                on_done(index, results)

        if todo:
            computed = self.lm.loglikelihood([requests[i] for i in todo], progress=progress, on_done=finished)
            self.cache.flush()
            for i, result in zip(todo, computed, strict=True):
                out[i] = result
        return out

    def topk(self, requests: Sequence[TopkRequest]) -> list[TopkResult]:
        return self.lm.topk(requests)

    def generate(
        self, requests: Sequence[GenerateRequest], progress: bool = False
    ) -> list[list[GenerateResult]]:
        return self.lm.generate(requests, progress=progress)

    def beams(self, requests: Sequence[BeamRequest], progress: bool = False) -> list[list[GenerateResult]]:
        return self.lm.beams(requests, progress=progress)
