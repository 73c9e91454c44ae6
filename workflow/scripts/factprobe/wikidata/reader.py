"""Stream a Wikidata dump file into the extraction tables with bounded memory (docs/contracts.md).

Orchestration only: :mod:`.stream` decompresses and cuts the file into chunks of whole lines,
:mod:`.workers` parses them (in ``workers`` forked processes for large files), :mod:`.tables`
writes the rows as Parquet row groups of ``flush_rows``: memory is bounded by chunks in
flight plus one row group per table, never the dump. Measured figures: benchmarks/extract.py.

Bad input. A damaged archive raises :class:`DumpError` (see :mod:`.stream`) and no table is
written (all five appear together or not at all). Malformed entity lines are counted, logged
with their line numbers and skipped; more than ``max_bad_fraction`` of them fails the job. An
entity id found twice fails it too, naming both lines (:mod:`.duplicates`).
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from factprobe.contracts import EXTRACT_TABLES
from factprobe.wikidata.duplicates import SeenIds, duplicate_message, entity_id, locate_lines
from factprobe.wikidata.exclude import Exclusion
from factprobe.wikidata.labels import LabelCounts, coverage, coverage_line, label_counts
from factprobe.wikidata.parse import Skips, add_skips, new_skips
from factprobe.wikidata.stream import DumpError, DumpSource
from factprobe.wikidata.tables import TableSet
from factprobe.wikidata.workers import ChunkResult, Workers, parse_inline

log = logging.getLogger(__name__)

__all__ = ["DumpError", "ExtractStats", "extract_dump"]

#: Bad lines remembered (with their error) for the log and the error message; all are counted.
KEEP_BAD = 1000
#: Below this compressed size worker processes cost more to start than they save.
MIN_PARALLEL_BYTES = 16 << 20
#: GIL switch interval (seconds) while extracting. The decompression thread needs the GIL
#: back after every 1 MiB read; with CPython's default 5 ms it waits behind the parsing
#: thread that long each time and the parser then starves for input. 1 ms keeps it fed.
SWITCH_INTERVAL = 0.001


@dataclass
class ExtractStats:
    """Counts of one extraction, logged at the end and returned to the caller."""

    kinds: dict[str, int] = field(default_factory=dict)
    rows: dict[str, int] = field(default_factory=lambda: dict.fromkeys(EXTRACT_TABLES, 0))
    lines: int = 0  # entity lines: every line but blanks and the array brackets
    bad: int = 0
    bad_lines: list[tuple[int, str]] = field(default_factory=list)
    generic: int = 0
    bytes: int = 0  # uncompressed bytes read
    #: item statements without a claims row, by datatype and by snak type
    skips: Skips = field(default_factory=new_skips)
    #: label counts of the items (:func:`factprobe.wikidata.labels.coverage`)
    labels: LabelCounts = field(default_factory=LabelCounts)
    #: the configured languages (``None``: all)
    languages: list[str] | None = None
    #: classes of items left out (``extract.exclude``, :mod:`factprobe.wikidata.exclude`)
    exclusions: list[Exclusion] = field(default_factory=list)

    @property
    def excluded_items(self) -> int:
        return sum(e.items for e in self.exclusions)

    @property
    def entities(self) -> int:
        """Items and properties written to the tables."""
        return self.kinds.get("item", 0) - self.excluded_items + self.kinds.get("property", 0)

    def label_coverage(self) -> dict[str, dict[str, int]]:
        """Per language: items kept with a label of their own, only through ``mul``, with none."""
        return coverage(self.labels, self.kinds.get("item", 0) - self.excluded_items, self.languages)

    def summary_record(self) -> dict:
        """What ``extract_stats.json`` keeps: lines read, entities written, malformed lines skipped
        and the first of them (the report's provenance shows them per dump), entities by kind,
        item statements skipped by datatype and by snak type, the label coverage of the items kept,
        and per class of ``extract.exclude`` what was left out (``{}`` when nothing is excluded)."""
        line, reason = self.bad_lines[0] if self.bad_lines else (None, None)
        return {
            "lines": self.lines,
            "entities": self.entities,
            "malformed": self.bad,
            "first_malformed_line": line,
            "first_malformed_reason": reason,
            "entities_by_kind": dict(sorted(self.kinds.items())),
            "statements_skipped": {axis: dict(sorted(c.items())) for axis, c in sorted(self.skips.items())},
            "default_labels": self.labels.own.get("mul", 0),
            "label_coverage": self.label_coverage(),
            "excluded": {e.name: e.record() for e in self.exclusions},
        }

    def shapes_summary(self, path: str | Path) -> str:
        """One console line: entities by kind, item statements skipped by datatype and by snak
        type, label coverage per language (what a new dump format changes shows here), and the
        items of ``extract.exclude`` left out."""

        def counts(c: dict[str, int]) -> str:
            return (
                ", ".join(f"{k} {v}" for k, v in sorted(c.items(), key=lambda kv: (-kv[1], kv[0]))) or "none"
            )

        return (
            f"factprobe: {path}: entities by kind: {counts(self.kinds)}; item statements skipped "
            f"by datatype: {counts(self.skips['datatype'])}; by snak type: {counts(self.skips['snaktype'])}; "
            f"labels: {coverage_line(self.label_coverage()) or 'no languages'}"
            + "".join(f"; excluded: {e.phrase()}" for e in self.exclusions)
        )

    def malformed_summary(self, path: str | Path, log_path: str | Path) -> str | None:
        """One console line for malformed lines skipped (count, first line number and reason),
        ``None`` when there were none: the job log alone was easy to miss."""
        if not self.bad:
            return None
        record = self.summary_record()
        return (
            f"factprobe: {path}: skipped {self.bad} malformed line(s) of {self.lines} "
            f"(under extract.max_bad_fraction), the first at line {record['first_malformed_line']}: "
            f"{record['first_malformed_reason']} (all in {log_path})"
        )

    @property
    def skipped(self) -> dict[str, int]:
        """Entities of other kinds (lexeme, mediainfo, missing ...) that were only counted."""
        return {k: v for k, v in self.kinds.items() if k not in ("item", "property")}


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
    exclude: Iterable[str] = (),
) -> ExtractStats:
    """Extract one dump into ``outdir/{entities,labels,claims,types,properties}.parquet``.

    ``languages=None`` keeps labels in every language. ``exclude``: classes of items left out as
    subjects and as objects (:mod:`factprobe.wikidata.exclude`). ``workers`` parse processes are used
    for files of at least ``min_parallel_bytes`` (one process below). All five files appear
    together or not at all; see the module docstring for errors.
    """
    path, outdir = Path(path), Path(outdir)
    if not path.is_file():
        raise DumpError(f"{path}: no such dump file; check `path` in config/dumps.tsv or download it")
    langs = None if languages is None else list(dict.fromkeys(languages))
    source = DumpSource(path, chunk_bytes)
    workers = _worker_count(workers, source.size, min_parallel_bytes)
    stats = ExtractStats(languages=langs, exclusions=[Exclusion(name) for name in dict.fromkeys(exclude)])
    started = time.perf_counter()
    # Workers are forked first, while this process has no other thread.
    pool = Workers(workers, langs, chunk_bytes) if workers > 1 else None
    try:
        tables = TableSet(outdir, flush_rows)
    except BaseException:
        if pool is not None:
            pool.close()
        raise
    switch_interval = sys.getswitchinterval()
    sys.setswitchinterval(min(switch_interval, SWITCH_INTERVAL))
    try:
        results = pool.map(source) if pool else parse_inline(source.chunks(), langs)
        _write_chunks(results, source, tables, stats, path, progress)
        stats.bytes = source.pos
        _check_bad(stats, path, max_bad_fraction)
        _commit(tables, stats)
    except BaseException:
        tables.discard()
        raise
    finally:
        sys.setswitchinterval(switch_interval)
        if pool is not None:
            pool.close()
    _log_summary(stats, path, time.perf_counter() - started, workers)
    return stats


def _worker_count(workers: int, size: int, min_parallel_bytes: int) -> int:
    """Parse processes for a file of ``size`` compressed bytes: one below ``min_parallel_bytes``
    or without fork (Linux only)."""
    if size < min_parallel_bytes:
        return 1
    if workers > 1 and not sys.platform.startswith("linux"):
        log.warning("parse workers need fork (Linux); parsing in one process")
        return 1
    return workers


def _write_chunks(
    results: Iterable[ChunkResult],
    source: DumpSource,
    tables: TableSet,
    stats: ExtractStats,
    path: Path,
    progress: bool,
) -> None:
    """Add each parsed chunk's rows to ``tables`` (subjects of excluded classes dropped) and its
    counts to ``stats``, in dump order; an entity seen twice raises :class:`DumpError`."""
    from tqdm import tqdm

    # tqdm's monitor thread would outlive this call and be alive when a later call forks.
    tqdm.monitor_interval = 0
    with tqdm(
        total=source.size, unit="B", unit_scale=True, desc=f"extract {path.name}", disable=not progress
    ) as bar:
        done = 0
        lines_before = 0  # chunks number their lines from 1; made absolute here, in dump order
        seen = SeenIds()  # an entity twice fails the job (factprobe.wikidata.duplicates)
        for result in results:
            repeat = seen.add(result.tables["entities"])
            if repeat is not None:
                kind, number = repeat
                lines = locate_lines(path, entity_id(kind, number))
                raise DumpError(duplicate_message(path, kind, number, lines))
            for exclusion in stats.exclusions:
                result.tables = exclusion.drop_subjects(result.tables)
            if stats.exclusions:
                result.labels = label_counts(result.tables["labels"])
            tables.add(result.tables)
            _merge(stats, result, path, lines_before)
            lines_before += result.newlines or 0
            bar.update(source.compressed_pos - done)
            done = source.compressed_pos
            bar.set_postfix(entities=stats.entities, bad=stats.bad, refresh=False)


def _commit(tables: TableSet, stats: ExtractStats) -> None:
    """Write the five tables; with exclusions, first drop the claims and types whose object is
    an excluded item (and count them out of ``stats.rows``)."""
    if not stats.exclusions:
        tables.commit()
        return
    tables.commit(_drop_objects(stats.exclusions), ("claims", "types"))
    for exclusion in stats.exclusions:
        stats.rows["claims"] -= exclusion.claims_as_object
        stats.rows["types"] -= exclusion.types_as_object


def _drop_objects(exclusions: list[Exclusion]):
    def refilter(name, table):
        for exclusion in exclusions:
            table = exclusion.drop_objects(name, table)
        return table

    return refilter


def _merge(stats: ExtractStats, result: ChunkResult, path: Path, lines_before: int) -> None:
    for kind, n in result.kinds.items():
        stats.kinds[kind] = stats.kinds.get(kind, 0) + n
    for name, table in result.tables.items():
        stats.rows[name] += table.num_rows
    stats.lines += result.lines
    stats.generic += result.generic
    if result.skips is not None:
        add_skips(stats.skips, result.skips)
    if result.labels is not None:
        stats.labels.add(result.labels)
    for rel, reason in result.bad:
        lineno = lines_before + rel
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
    log.info("%s", stats.shapes_summary(path))
    log.info(
        "%s: %d malformed lines skipped; %d lines took the generic decoder", path, stats.bad, stats.generic
    )
