"""Partitioned, out-of-core diff of two claims tables with DuckDB (WikiFactDiff, anchors.md §3.1).

Why DuckDB and not pyarrow: the diff is a full outer match of two ~1 B-row tables followed by
per-(subject, property) window logic. DuckDB runs hash aggregates, joins and windows in parallel
and spills them to disk under a hard ``memory_limit``; pyarrow has joins but no spilling and no
windows, so it would need hand-written external sorting. To bound the state of each query we
still split the work into subject buckets (every rule only looks at one subject's statements,
plus the object's "physically new" flag, which comes from a small global table): subject ranges
read through Parquet row-group pruning when the claims are in subject order, as extracted;
otherwise ``subject % n``, each input written once with ``COPY ... PARTITION_BY``
(:mod:`factprobe.diff.buckets`). The buckets' rows stream into one Parquet writer.
"""

from __future__ import annotations

import logging
import math
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import duckdb
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
from tqdm import tqdm

from factprobe import contracts
from factprobe.diff.buckets import Range, copy_stream, query_reader, range_sql, subject_ranges
from factprobe.diff.rules import (
    CHANGED,
    RULE_NAMES,
    RULE_STATUSES,
    STATUSES,
    added_ok_sql,
    decision_sql,
    ignored_sql,
    sql_list,
)
from factprobe.scan import connect, parquet_columns, quote
from factprobe.validity import valid_sql

log = logging.getLogger(__name__)

INT32_MAX = 2147483647
INT32_MIN = -2147483648
OFFSET = 2147483648
MASK32 = 4294967295
# zstd as every stage (contracts.md); level 1 writes ~10 % faster than the default 3.
PARQUET = "(FORMAT parquet, COMPRESSION zstd, COMPRESSION_LEVEL 1)"


@dataclass
class DiffInputs:
    """Parquet paths of the two dumps' ``claims`` and ``entities`` tables and their dates."""

    old_claims: str | Path
    new_claims: str | Path
    old_entities: str | Path
    new_entities: str | Path
    t_old: int
    t_new: int


@dataclass
class DiffResult:
    """Counts of one diff run: rows in, rows out per status, partitions used."""

    rows_in: int = 0
    partitions: int = 1
    #: how the subjects were cut: "one" bucket, subject "range"s, or a "hash" repartition
    bucketing: str = "one"
    counts: dict[str, int] = field(default_factory=dict)
    rules: dict[str, int] = field(default_factory=dict)


def _check_inputs(con: duckdb.DuckDBPyConnection, inputs: DiffInputs) -> bool:
    """Fail early, naming the file, when a table lacks a contract column; True if ``created`` exists."""
    created = True
    for kind, path in (
        ("claims", inputs.old_claims),
        ("claims", inputs.new_claims),
        ("entities", inputs.old_entities),
        ("entities", inputs.new_entities),
    ):
        if not Path(path).exists():
            raise FileNotFoundError(f"{path}: missing {kind} table; run the extract_dump rule for this dump")
        cols = set(parquet_columns(con, path))
        contracts.check(cols, kind, path, None if kind == "claims" else ["id", "kind"])
        if kind == "entities":
            created &= "created" in cols
    return created


def valid_dates_sql(t: int) -> str:
    """A statement with dates ``s``, ``e``, ``p`` (deprecated ones dropped) is valid at ``t``
    (:mod:`factprobe.validity`: ``s <= t < e`` and ``p <= t``)."""
    return valid_sql(t, "s", "e", "p", rank=None)


def statement_key_sql(top: str, valid: str) -> str:
    """A HUGEINT that orders statements and carries their dates.

    Order: ``top`` (a small non-negative int, bits 97+), valid at the dump date, latest end,
    latest start, latest point in time. ``max()`` of it picks the statement that speaks for a
    triple and :func:`decode_sql` gets its dates back: one primitive aggregate instead of a
    struct ``arg_max`` (several times slower in DuckDB). Dates become unsigned 32-bit fields.
    """
    return (
        f"(({top}::HUGEINT << 97) | ({valid}::HUGEINT << 96)"
        f" | ((coalesce(e, {INT32_MAX})::HUGEINT + {OFFSET}) << 64)"
        f" | ((coalesce(s, {INT32_MIN})::HUGEINT + {OFFSET}) << 32)"
        f" | (coalesce(p, {INT32_MIN})::HUGEINT + {OFFSET}))"
    )


def decode_sql(key: str, name: str) -> str:
    """Date ``name`` (``s``, ``e`` or ``p``) of a :func:`statement_key_sql` value, NULL restored."""
    shift, null = {"s": (32, INT32_MIN), "e": (64, INT32_MAX), "p": (0, INT32_MIN)}[name]
    return f"nullif(((({key} >> {shift}) & {MASK32}) - {OFFSET})::INTEGER, {null})"


def triples_sql(
    t_old: int, t_new: int, single_value: Iterable[int] = (), best_rank: tuple[bool, bool] = (True, True)
) -> str:
    """One row per (subject, property, object) of either dump, from views ``old_c``, ``new_c``.

    Deprecated statements are dropped; for single-value properties (``single_value``) only the
    best rank of each (subject, property) is kept. ``flag`` says in which dump the triple is; ``s``,
    ``e``, ``p`` are the dates of the statement that speaks for it: the new dump's when there is
    one, and among several, the one valid at its dump date, then the latest end, then start.
    ``best_rank`` (old, new) False skips the best-rank filter of a dump known to hold a single
    non-deprecated rank (see :func:`_single_rank`), where it keeps every statement anyway.

    Over 60 lines: one SQL statement, built in the order DuckDB runs it.
    """
    sv = sorted({int(x) for x in single_value})
    # A literal IN list is far cheaper than a semi-join on every claim.
    is_sv = f"(property IN ({', '.join(map(str, sv))}))" if sv else "FALSE"
    statements = f"""
        SELECT subject, property, object, rank, start AS s, "end" AS e, point_in_time AS p
        FROM {{src}} WHERE rank > 0 AND NOT {is_sv}
        UNION ALL
        SELECT subject, property, object, rank, start AS s, "end" AS e, point_in_time AS p
        FROM {{src}} WHERE rank > 0 AND {is_sv}
        {{qualify}}
    """
    qualify = "QUALIFY rank = max(rank) OVER (PARTITION BY subject, property)"
    # Without the best-rank filter both branches are one scan (rows whose sv test is NULL, i.e.
    # a NULL property with single-value properties given, are dropped by both branches above).
    plain = f"""
        SELECT subject, property, object, rank, start AS s, "end" AS e, point_in_time AS p
        FROM {{src}} WHERE rank > 0 AND ({is_sv}) IS NOT NULL
    """

    def side(src: str, best: bool) -> str:
        return statements.format(src=src, qualify=qualify) if best else plain.format(src=src)

    key = statement_key_sql("side", valid_dates_sql(t_old))
    key_new = statement_key_sql("side", valid_dates_sql(t_new))
    field = decode_sql
    return f"""
    WITH
    sides AS (
        SELECT 0::TINYINT AS side, subject, property, object, {key} AS k
        FROM ({side("old_c", best_rank[0])})
        UNION ALL
        SELECT 1::TINYINT AS side, subject, property, object, {key_new} AS k
        FROM ({side("new_c", best_rank[1])})
    ),
    triples AS (
        SELECT subject, property, object, min(side) AS first_side, max(k) AS k,
            -- bit 96 of an old-side key: that statement was valid at the old dump's date
            coalesce(bool_or(side = 0 AND ((k >> 96) & 1) = 1), FALSE) AS old_valid
        FROM sides GROUP BY subject, property, object
    )
    SELECT subject, property, object, flag, s, e, p, sv, old_valid,
        -- Kept triples of multi-valued relations (nearly all rows) are decided here, in one
        -- pass: their subject is in both dumps and not new, and they have no group logic.
        -- Undated ones can only be `kept` (every earlier rule needs a date, a change or a group).
        CASE WHEN flag <> 'kept' OR sv THEN NULL
             WHEN s IS NULL AND e IS NULL AND p IS NULL THEN {RULE_NAMES.index("kept")}
             ELSE ({decision_sql(t_old, t_new)}) END::TINYINT AS rule_id
    FROM (
        SELECT subject, property, object,
            (CASE WHEN first_side = 1 THEN 'added' WHEN (k >> 97) = 0 THEN 'removed' ELSE 'kept' END)::{FLAG_TYPE} AS flag,
            {field("k", "s")} AS s, {field("k", "e")} AS e, {field("k", "p")} AS p,
            {is_sv} AS sv, old_valid, TRUE AS subj_in_old, TRUE AS subj_in_new, FALSE AS subj_ph_new, FALSE AS obj_ph_new,
            NULL::BIGINT AS n_rem, NULL::BIGINT AS n_add, NULL::BIGINT AS n_kept, FALSE AS add_ok
        FROM triples
    )
    """


def others_sql(t_old: int, t_new: int, obj_ph_new: bool) -> str:
    """Rule index of the triples of table ``triples`` not decided there (see :func:`triples_sql`):
    added or removed ones, which need the subject's and object's entity flags, and single-value
    groups, which need the window counts of the replacement pattern."""
    case = decision_sql(t_old, t_new)
    ign = ignored_sql(t_old, t_new)
    obj_join = "LEFT JOIN ph_new po ON po.id = t.object" if obj_ph_new else ""
    obj_col = "po.id IS NOT NULL" if obj_ph_new else "FALSE"
    entity = f"""
        SELECT t.subject, t.property, t.object, t.flag, t.s, t.e, t.p, t.sv, t.old_valid,
            coalesce(su.in_old, FALSE) AS subj_in_old, coalesce(su.in_new, FALSE) AS subj_in_new,
            coalesce(su.ph_new, FALSE) AS subj_ph_new, {obj_col} AS obj_ph_new
        FROM triples t LEFT JOIN subjects su ON su.id = t.subject {obj_join}
        WHERE t.rule_id IS NULL
    """
    no_group = "NULL::BIGINT AS n_rem, NULL::BIGINT AS n_add, NULL::BIGINT AS n_kept, FALSE AS add_ok"
    # The group counts only matter in single-value groups with an added triple: every rule that
    # reads them needs n_add >= 1, so elsewhere NULL counts decide the same (no window there).
    added = "(SELECT DISTINCT subject, property FROM triples WHERE sv AND rule_id IS NULL AND flag = 'added')"
    on = "g.subject IS NOT DISTINCT FROM x.subject AND g.property IS NOT DISTINCT FROM x.property"
    return f"""
    SELECT subject, property, object, flag, s, e, p, sv, ({case})::TINYINT AS rule_id FROM (
        SELECT *, {no_group} FROM ({entity}) WHERE NOT sv
        UNION ALL BY NAME
        SELECT x.*, {no_group} FROM ({entity}) x ANTI JOIN {added} g ON {on} WHERE x.sv
        UNION ALL BY NAME
        SELECT * EXCLUDE (ign),
            count(*) FILTER (WHERE flag = 'removed' AND NOT ign) OVER w AS n_rem,
            count(*) FILTER (WHERE flag = 'added' AND NOT ign) OVER w AS n_add,
            count(*) FILTER (WHERE flag = 'kept' AND NOT ign) OVER w AS n_kept,
            coalesce(bool_or({added_ok_sql(t_old, t_new)} AND NOT ign) OVER w, FALSE) AS add_ok
        FROM (SELECT x.*, {ign} AS ign FROM ({entity}) x SEMI JOIN {added} g ON {on} WHERE x.sv)
        WINDOW w AS (PARTITION BY subject, property)
    )
    """


DECIDED_VIEW = """
    SELECT subject, property, object, flag, s, e, p, sv, rule_id FROM triples WHERE rule_id IS NOT NULL
    UNION ALL
    SELECT subject, property, object, flag, s, e, p, sv, rule_id FROM others
"""


def replaced_sql() -> str:
    """(subject, property) groups of view ``decided`` that are replacements (WikiFactDiff
    ``is_replace``): exactly one new and one obsolete object and nothing unknown. Static rows
    never take part, so only the (few) changed rows are grouped."""
    changed = ", ".join(str(i) for i, s in enumerate(RULE_STATUSES) if s in CHANGED)
    new = ", ".join(str(i) for i, s in enumerate(RULE_STATUSES) if s == "new")
    obsolete = ", ".join(str(i) for i, s in enumerate(RULE_STATUSES) if s == "obsolete")
    return f"""
    SELECT subject, property FROM decided WHERE rule_id IN ({changed}) GROUP BY subject, property
    HAVING count(*) FILTER (WHERE rule_id IN ({new})) = 1 AND count(*) FILTER (WHERE rule_id IN ({obsolete})) = 1
       AND count(*) = 2
    """


def _enum(values: tuple[str, ...]) -> str:
    """A DuckDB ENUM type of ``values`` (distinct, in order)."""
    return "ENUM(" + ", ".join(f"'{v}'" for v in dict.fromkeys(values)) + ")"


# Flags, statuses and rule names are ENUMs inside the engine: one byte per row instead of a
# string, and the Parquet writer takes their dictionary as is (written as plain strings).
FLAG_TYPE = _enum(("added", "removed", "kept"))


def output_sql() -> str:
    """Rows of view ``decided`` as written to changes.parquet (``ignored`` ones left out)."""
    kept = ", ".join(str(i) for i, s in enumerate(RULE_STATUSES) if s != "ignored")
    changing = ", ".join(str(i) for i, s in enumerate(RULE_STATUSES) if s in ("new", "obsolete"))
    return f"""
    SELECT d.subject::BIGINT AS subject, d.property::INTEGER AS property, d.object::BIGINT AS object,
        ({sql_list(RULE_STATUSES)}::{_enum(RULE_STATUSES)}[])[rule_id + 1] AS status,
        ({sql_list(RULE_NAMES)}::{_enum(RULE_NAMES)}[])[rule_id + 1] AS rule,
        (rule_id IN ({changing}) AND r.subject IS NOT NULL) AS is_replace,
        s::INTEGER AS start, e::INTEGER AS "end", p::INTEGER AS point_in_time, flag, sv AS single_value
    FROM decided d LEFT JOIN replaced r ON r.subject = d.subject AND r.property = d.property
    WHERE rule_id IN ({kept})
    """


def _entity_sql(path: str | Path, created: bool) -> str:
    col = "created" if created else "NULL::INTEGER AS created"
    # Items and properties share the integer id space; claims have item subjects only.
    return f"SELECT id, {col} FROM read_parquet({quote(path)}) WHERE kind = 'item'"


def _subjects_sql(old_e: str, new_e: str, t_old: int) -> str:
    """Entity presence per dump and physically-new flag (absent from old, created after it)."""
    return f"""
        SELECT coalesce(o.id, n.id) AS id, o.id IS NOT NULL AS in_old, n.id IS NOT NULL AS in_new,
            (o.id IS NULL AND coalesce(n.created > {int(t_old)}, FALSE)) AS ph_new
        FROM ({old_e}) o FULL OUTER JOIN ({new_e}) n ON o.id = n.id
    """


def n_partitions(rows: int, rows_per_partition: int) -> int:
    """Buckets needed so that one bucket holds about ``rows_per_partition`` claims of both dumps."""
    return max(1, math.ceil(rows / max(1, rows_per_partition)))


def _require_tables(inputs: DiffInputs) -> None:
    """Fail naming the first extraction table of either dump that does not exist."""
    for path in (inputs.old_claims, inputs.new_claims, inputs.old_entities, inputs.new_entities):
        if not Path(path).exists():
            raise FileNotFoundError(
                f"{path}: missing extraction table; run the extract_dump rule for this dump"
            )


def _create_work_tables(con, inputs: DiffInputs, created: bool) -> None:
    """The diff's temporary tables: the subjects that are placeholders new in the new dump, and
    the per-bucket counts of rules and replacements."""
    old_e = _entity_sql(inputs.old_entities, created)
    new_e = _entity_sql(inputs.new_entities, created)
    con.execute(
        f"CREATE TEMP TABLE ph_new AS SELECT id FROM ({_subjects_sql(old_e, new_e, inputs.t_old)}) WHERE ph_new"
    )
    con.execute("CREATE TEMP TABLE stats (property INTEGER, rule_id TINYINT, n BIGINT)")
    con.execute("CREATE TEMP TABLE replace_n (property INTEGER, n BIGINT)")


def _read_stats(con) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``(rows per property, status and rule; replacements per property)`` summed over the buckets."""
    stats = con.execute(
        f"SELECT property, {sql_list(RULE_STATUSES)}[rule_id + 1] AS status, "
        f"{sql_list(RULE_NAMES)}[rule_id + 1] AS rule, sum(n)::BIGINT AS n FROM stats GROUP BY ALL"
    ).df()
    replace = con.execute("SELECT property, sum(n)::BIGINT AS n FROM replace_n GROUP BY ALL").df()
    return stats, replace


def diff_claims(
    inputs: DiffInputs,
    single_value: Iterable[int],
    changes_path: str | Path,
    stats_path: str | Path | None = None,
    *,
    memory_mb: int = 4000,
    threads: int = 2,
    rows_per_partition: int = 60_000_000,
    temp_dir: str | Path | None = None,
) -> DiffResult:
    """Diff two dumps' claims into ``changes_path`` (Parquet) and ``stats_path`` (TSV).

    Rows decided ``ignored`` (true at neither date) are counted in the stats but not written,
    as in WikiFactDiff. Row order in the output is unspecified (parallel execution).
    """
    result = DiffResult()
    _require_tables(inputs)
    result.rows_in = sum(pq.ParquetFile(p).metadata.num_rows for p in (inputs.old_claims, inputs.new_claims))
    result.partitions = n_partitions(result.rows_in, rows_per_partition)
    work = Path(tempfile.mkdtemp(prefix="factprobe-diff-", dir=temp_dir))
    try:
        # The writer of the output (buckets.copy_stream) holds one row group: a small share.
        writer_mb = max(128, memory_mb // 8)
        con = connect(threads, max(256, memory_mb - writer_mb), work / "spill", keep_order=False)
        created = _check_inputs(con, inputs)
        _create_work_tables(con, inputs, created)
        best_rank = (not _single_rank(inputs.old_claims), not _single_rank(inputs.new_claims))
        triples = triples_sql(inputs.t_old, inputs.t_new, single_value, best_rank)
        others = others_sql(inputs.t_old, inputs.t_new, obj_ph_new=created)
        buckets, result.bucketing = _buckets(con, inputs, created, result.partitions, work)
        result.partitions = len(buckets)
        cols = ", ".join(f'"{c}"' for c in contracts.columns("changes"))

        def readers() -> Iterator[pa.RecordBatchReader]:
            for k, bucket in enumerate(tqdm(buckets, desc="diff buckets", disable=len(buckets) == 1)):
                _prepare_bucket(con, bucket, (triples, others), inputs.t_old)
                yield query_reader(con, f"SELECT {cols} FROM ({output_sql()})")
                log.info("diff bucket %d/%d done", k + 1, len(buckets))

        copy_stream(readers(), changes_path, PARQUET, writer_mb)
        stats, replace = _read_stats(con)
        con.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    table = stats_table(stats, replace)
    result.rules = stats.groupby("rule")["n"].sum().astype(int).to_dict()
    result.counts = {s: int(table[s].sum()) for s in STATUSES}
    if stats_path is not None:
        contracts.write_text("diff_stats", table, stats_path)
    log.info(
        "diff %s -> %s: %d claims in, %s, %d partition(s) (%s)",
        inputs.t_old,
        inputs.t_new,
        result.rows_in,
        result.counts,
        result.partitions,
        result.bucketing,
    )
    return result


def _prepare_bucket(con: duckdb.DuckDBPyConnection, bucket: tuple, sql: tuple[str, str], t_old: int) -> None:
    """Decide one bucket's triples into the temp tables that :func:`output_sql` reads; their
    counts go to the ``stats`` and ``replace_n`` tables. ``bucket``: old and new claims and
    entities SQL; ``sql``: the triples and others queries."""
    old_c, new_c, oe, ne = bucket
    triples, others = sql
    con.execute(f"CREATE OR REPLACE TEMP VIEW old_c AS {old_c}")
    con.execute(f"CREATE OR REPLACE TEMP VIEW new_c AS {new_c}")
    con.execute(f"CREATE OR REPLACE TEMP TABLE subjects AS {_subjects_sql(oe, ne, t_old)}")
    con.execute(f"CREATE OR REPLACE TEMP TABLE triples AS {triples}")
    con.execute(f"CREATE OR REPLACE TEMP TABLE others AS {others}")
    # A view: two scans of `triples` cost less than materializing every row again.
    con.execute(f"CREATE OR REPLACE TEMP VIEW decided AS {DECIDED_VIEW}")
    con.execute(f"CREATE OR REPLACE TEMP TABLE replaced AS {replaced_sql()}")
    con.execute("INSERT INTO stats SELECT property, rule_id, count(*) FROM decided GROUP BY ALL")
    # Each replacement group writes exactly two is_replace rows (its new and obsolete one).
    con.execute("INSERT INTO replace_n SELECT property, 2 * count(*) FROM replaced GROUP BY ALL")


def _single_rank(path: str | Path) -> bool:
    """True if the Parquet statistics show that every non-deprecated statement (``rank > 0``)
    of the claims table has the same rank (max rank <= 1), so best-rank filtering is a no-op.
    False when in doubt (missing statistics)."""
    meta = pq.ParquetFile(path).metadata
    # The claims contract has ``rank`` (checked by :func:`_check_inputs` before this runs).
    col = [meta.schema.column(i).name for i in range(meta.num_columns)].index("rank")
    for i in range(meta.num_row_groups):
        chunk = meta.row_group(i).column(col)
        stats = chunk.statistics
        if chunk.num_values == 0 or (stats is not None and stats.null_count == chunk.num_values):
            continue
        if stats is None or not stats.has_min_max or stats.max > 1:
            return False
    return True


def _read(path: str | Path) -> str:
    return f"SELECT * FROM read_parquet({quote(path)})"


def _buckets(
    con: duckdb.DuckDBPyConnection, inputs: DiffInputs, created: bool, n: int, work: Path
) -> tuple[list[tuple[str, str, str, str]], str]:
    """The old and new claims and entities SQL of each of about ``n`` subject buckets: subject
    ranges when the claims are clustered by subject (no extra pass), else a hash repartition;
    and which of "one", "range", "hash" it is."""
    if n == 1:
        return [
            (
                _read(inputs.old_claims),
                _read(inputs.new_claims),
                _entity_sql(inputs.old_entities, created),
                _entity_sql(inputs.new_entities, created),
            )
        ], "one"
    ranges = subject_ranges([inputs.old_claims, inputs.new_claims], n)
    if ranges is None:
        log.info("claims not clustered by subject: hash repartition into %d buckets", n)
        return _repartition(con, inputs, created, n, work), "hash"
    return _range_buckets(inputs, created, ranges), "range"


def _range_buckets(inputs: DiffInputs, created: bool, ranges: list[Range]) -> list[tuple[str, str, str, str]]:
    """Per subject range (:func:`factprobe.diff.buckets.subject_ranges`), the SQL of its old and
    new claims and entities: filters that DuckDB pushes into the Parquet scans, which then skip
    the row groups outside the range."""
    buckets = []
    for k, bucket in enumerate(ranges):
        subj, ids = range_sql("subject", bucket, k == 0), range_sql("id", bucket, k == 0)
        buckets.append(
            (
                f"{_read(inputs.old_claims)} WHERE {subj}",
                f"{_read(inputs.new_claims)} WHERE {subj}",
                f"SELECT * FROM ({_entity_sql(inputs.old_entities, created)}) WHERE {ids}",
                f"SELECT * FROM ({_entity_sql(inputs.new_entities, created)}) WHERE {ids}",
            )
        )
    return buckets


def _repartition(
    con: duckdb.DuckDBPyConnection, inputs: DiffInputs, created: bool, n: int, work: Path
) -> list[tuple[str, str, str, str]]:
    """Write every input once, bucketed by ``subject % n`` (``id % n`` for entities)."""
    sources = {
        "old_c": (_read(inputs.old_claims), "subject"),
        "new_c": (_read(inputs.new_claims), "subject"),
        "old_e": (_entity_sql(inputs.old_entities, created), "id"),
        "new_e": (_entity_sql(inputs.new_entities, created), "id"),
    }
    empty = {}
    for name, (sql, key) in sources.items():
        folder = work / name
        con.execute(
            f"COPY (SELECT *, ({key} % {n})::INTEGER AS bucket FROM ({sql})) TO {quote(folder)} "
            "(FORMAT parquet, PARTITION_BY (bucket))"
        )
        empty[name] = f"SELECT * FROM ({sql}) LIMIT 0"
    buckets = []
    for k in range(n):
        row = []
        for name in sources:
            folder = work / name / f"bucket={k}"
            if folder.exists():
                # hive_partitioning off: the bucket column is not needed downstream.
                row.append(
                    f"SELECT * FROM read_parquet({quote(folder / '*.parquet')}, hive_partitioning = false)"
                )
            else:
                row.append(empty[name])
        buckets.append(tuple(row))
    return buckets


def stats_table(stats: pd.DataFrame, replace: pd.DataFrame) -> pd.DataFrame:
    """Long ``(property, status, n)`` counts -> one row per property, one column per status.

    ``replace`` counts the rows with ``is_replace`` per property.
    """
    if stats.empty:
        return pd.DataFrame(columns=["property", *STATUSES, "replace", "total"])
    wide = stats.pivot_table(index="property", columns="status", values="n", aggfunc="sum", fill_value=0)
    for s in STATUSES:
        if s not in wide:
            wide[s] = 0
    wide = wide[list(STATUSES)].astype("int64")
    wide["replace"] = replace.set_index("property")["n"].reindex(wide.index).fillna(0).astype("int64")
    wide["total"] = wide[list(STATUSES)].sum(axis=1)
    wide = wide.sort_values("total", ascending=False, kind="stable").reset_index()
    wide["property"] = contracts.pid_series(wide["property"])
    wide.columns.name = None
    return wide
