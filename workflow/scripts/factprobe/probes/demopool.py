"""The demonstration pool of a suite with few-shot settings, kept on disk.

A draw (:meth:`factprobe.probes.fewshot.DemoPool.draw`) reads a pool only as its size and the
facts at the positions it probes, in ``fact_id`` order: up to :data:`~.fewshot.SORT_LIMIT` facts
it sorts the whole pool by hash, above it probes ``stable_hash(key, n) % size`` for n = 0, 1, ...
until it has its k demonstrations. So the candidates of every relation are written to Parquet as
they are selected (:class:`SpilledPool`), DuckDB numbers them (globally and per relation, in
``fact_id`` order, spilling if it must) and :func:`fill` loads, round by round, only the positions
the suite's draws reach, with the labels of their entities: the job holds what its prompts use,
not every candidate of its relations (P31 alone is 2.9 M facts at 4 M entities).
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterable
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from factprobe import contracts, scan

from .fewshot import FetchedPool, PoolRow, Unfetched
from .verbalize import forms_index

#: Probes loaded for a draw of k demonstrations in its first round (2k + FIRST_EXTRA); a draw that
#: needs more (skipped facts, repeated positions) gets 4× as many in the next round.
FIRST_EXTRA = 4


class SpilledPool:
    """Candidates of every relation, written to one Parquet file part by part."""

    def __init__(self, con):
        self.con = con
        self.tmp = tempfile.TemporaryDirectory(prefix="factprobe-pool-")
        self.path = Path(self.tmp.name) / "pool.parquet"
        self.writer: pq.ParquetWriter | None = None

    def __enter__(self) -> SpilledPool:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
        self.tmp.cleanup()

    def add(self, candidates: pd.DataFrame) -> None:
        """Append one part of a relation's candidates (``fact_id, subject, property, object``)."""
        table = pa.Table.from_pandas(candidates[list(PoolRow._fields)].astype(str), preserve_index=False)
        if self.writer is None:
            self.writer = pq.ParquetWriter(self.path, table.schema)
        self.writer.write_table(table)

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            self.writer = None

    def number(self) -> dict[str | None, int]:
        """Number the pool in DuckDB (table ``_pool``: ``g`` global, ``r`` within its relation,
        both from 0 in ``fact_id`` order) and return every pool's size (``None``: all)."""
        self.close()
        if not self.path.exists():
            return {None: 0}
        self.con.execute(
            "CREATE OR REPLACE TEMP TABLE _pool AS SELECT fact_id, subject, property, object, "
            "row_number() OVER (ORDER BY fact_id) - 1 AS g, "
            "row_number() OVER (PARTITION BY property ORDER BY fact_id) - 1 AS r "
            f"FROM read_parquet({scan.quote(self.path)})"
        )
        sizes: dict[str | None, int] = dict(
            self.con.execute("SELECT property, count(*) FROM _pool GROUP BY property").fetchall()
        )
        sizes[None] = sum(sizes.values())
        return sizes

    def rows_at(self, wanted: Iterable[tuple[str | None, int]]) -> dict[tuple[str | None, int], PoolRow]:
        """The facts at (pool, position) pairs: ``(None, g)`` global, ``(relation, r)`` per relation."""
        wanted = list(wanted)
        out: dict[tuple[str | None, int], PoolRow] = {}
        every = [pos for scope, pos in wanted if scope is None]
        if every:
            self.con.register("_wanted", pa.table({"pos": pa.array(every, pa.int64())}))
            got = self.con.execute(
                "SELECT p.g, p.fact_id, p.subject, p.property, p.object FROM _pool p JOIN _wanted w ON p.g = w.pos"
            ).fetchall()
            out.update({(None, g): PoolRow(*rest) for g, *rest in got})
        per = [(scope, pos) for scope, pos in wanted if scope is not None]
        if per:
            table = pa.table(
                {
                    "scope": pa.array([w[0] for w in per], pa.string()),
                    "pos": pa.array([w[1] for w in per], pa.int64()),
                }
            )
            self.con.register("_wanted", table)
            got = self.con.execute(
                "SELECT p.property, p.r, p.fact_id, p.subject, p.property, p.object FROM _pool p "
                "JOIN _wanted w ON p.property = w.scope AND p.r = w.pos"
            ).fetchall()
            out.update({(scope, r): PoolRow(*rest) for scope, r, *rest in got})
        self.con.unregister("_wanted")
        return out


def labels_of(forms_path: str, entities: set[str], con) -> dict[tuple[str, str], str]:
    """``(entity, lang) -> label`` of ``entities`` as prompts read it: an entity's first form,
    when it is a label (:func:`factprobe.probes.verbalize.forms_index`)."""
    index = forms_index(scan.scan_forms(forms_path, contracts.id_ints(sorted(entities)), con))
    return {key: forms[0][0] for key, forms in index.items() if forms[0][1] == "label"}


def fill(
    spilled: SpilledPool,
    requests: list[tuple],
    templates: dict,
    forms_path: str,
    con,
) -> FetchedPool:
    """A :class:`~.fewshot.FetchedPool` that holds every fact (and its entities' labels) that the
    draws ``requests`` (the arguments of :meth:`~.fewshot.DemoPool.draw`) reach.

    Round by round: load the positions each pending draw probes first, run the draws, and give
    the ones that reached an unloaded position 4× the probes; a draw's probes are finite
    (64 × SORT_LIMIT), so this ends, and every draw is the whole pool's.
    """
    pool = FetchedPool(spilled.number(), templates)
    probes = {i: 2 * req[1] + FIRST_EXTRA for i, req in enumerate(requests)}
    pending, seen = list(probes), set()
    while pending:
        wanted: set = set()
        for i in pending:
            setting, _k, _t, _s, relation, _lang, key = requests[i][:7]
            wanted |= pool.wanted(setting, relation, key, probes[i])
        rows = spilled.rows_at(wanted) if wanted else {}
        entities = {e for r in rows.values() for e in (r.subject, r.object)} - seen
        seen |= entities
        pool.add_rows(rows, labels_of(forms_path, entities, con) if entities else {})
        still = []
        for i in pending:
            try:
                pool.draw(*requests[i])
            except Unfetched:
                probes[i] *= 4
                still.append(i)
        pending = still
    return pool
