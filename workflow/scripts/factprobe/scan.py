"""Out-of-core reads of the tables Ω(f) and retrieval need.

Every function is a DuckDB scan of Parquet files with the filters pushed down: only the
columns a stage reads, only the rows of the suite's relations, of its facts' subjects and
objects (the *anchors*) and of the entities that share a declared type with an anchor (the only
entities Ω can admit). Memory then grows with the probed facts and their candidates, not with
the dump. Each returns the same rows as the whole-table pandas function it replaces
(:func:`factprobe.distractors.omega.load_types`, :func:`~factprobe.distractors.omega.valid_objects`,
a whole ``entity_forms`` read), restricted to what Ω asks about: ``tests/unit/test_scan.py``
compares them on hand-made tables.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from factprobe import arrays, contracts, io
from factprobe.label_rule import forms_query
from factprobe.validity import valid_sql

#: Share of a job's ``mem_mb`` that its DuckDB connection may hold (the one setting for every
#: rule). DuckDB spills beyond it, so a smaller share costs only speed, while the rest must hold
#: the job's Python state: retrieval's Ω, co-occurrence and type arrays need three quarters
#: (benchmarks/scale.py fits each job's peak as that state plus DuckDB's limit), so every job
#: gets the share that is safe for the largest state.
DUCKDB_SHARE = 0.25


def duckdb_mb(mem_mb: int | float) -> int:
    """DuckDB's memory limit in MB for a job given ``mem_mb`` (:data:`DUCKDB_SHARE` of it)."""
    return int(int(mem_mb) * DUCKDB_SHARE)


def connect(
    threads: int = 1,
    memory_mb: int | None = None,
    temp_dir: str | Path | None = None,
    keep_order: bool = True,
) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB connection, the only one of the library.

    ``memory_mb`` bounds it (:func:`duckdb_mb` of the job's memory): beyond, it spills to
    ``temp_dir``, by default a folder under the system temp folder (``$TMPDIR``, which Snakemake
    sets to the job's ``tmpdir`` resource). ``keep_order=False`` lets DuckDB drop insertion
    order, which large COPYs need to stay within the limit (the diff and the temporal view sort
    or partition explicitly).
    """
    con = duckdb.connect()
    con.execute(f"SET threads = {max(1, int(threads))}")
    if memory_mb:
        con.execute(f"SET memory_limit = '{int(memory_mb)}MB'")
        spill = (
            Path(temp_dir)
            if temp_dir is not None
            else Path(tempfile.gettempdir()) / f"factprobe-duckdb-{os.getpid()}"
        )
        con.execute(f"SET temp_directory = {quote(spill)}")
    if not keep_order:
        con.execute("SET preserve_insertion_order = false")
    return con


def quote(path: str | Path) -> str:
    """``path`` as a DuckDB string literal."""
    return "'" + str(path).replace("'", "''") + "'"


def parquet_columns(con: duckdb.DuckDBPyConnection, path: str | Path) -> list[str]:
    """Column names of a Parquet file, read by DuckDB without scanning it."""
    return [row[0] for row in con.execute(f"DESCRIBE SELECT * FROM read_parquet({quote(path)})").fetchall()]


def check_columns(con: duckdb.DuckDBPyConnection, name: str, path: str | Path, cols: Sequence[str]) -> None:
    have = parquet_columns(con, path)
    contracts.check(have, name, path, list(cols))


def _ids_table(con: duckdb.DuckDBPyConnection, name: str, ids: Iterable[int]) -> None:
    arr = arrays.unique(np.asarray(list(ids) if not isinstance(ids, np.ndarray) else ids, dtype=np.int64))
    con.register(name, pd.DataFrame({"id": arr}))


def anchors(facts: pd.DataFrame) -> np.ndarray:
    """Sorted unique int ids of the facts' subjects and objects (the entities Ω asks types of)."""
    ids = np.concatenate([contracts.id_ints(facts["subject"]), contracts.id_ints(facts["object"])])
    return arrays.unique(ids.astype(np.int64))


def scan_types(
    type_files: Iterable[str | Path], anchor_ids: Iterable[int], con: duckdb.DuckDBPyConnection | None = None
) -> pd.DataFrame:
    """Declared types ``id, type`` (newest typing dump per entity, as :func:`omega.load_types`)
    of the anchors and of every entity declaring a type of an anchor; sorted by (id, type)."""
    con = con or connect()
    files = [str(p) for p in type_files]
    empty = pd.DataFrame({"id": pd.Series(dtype="int64"), "type": pd.Series(dtype="int64")})
    if not files:
        return empty
    for path in files:
        check_columns(con, "types", path, ["id", "type"])
    union = " UNION ALL ".join(
        f"SELECT id, type, {int(Path(p).parent.name)} AS dump FROM read_parquet({quote(p)})" for p in files
    )
    _ids_table(con, "_anchors", anchor_ids)
    # The newest dump is decided among the rows of the wanted entities only (an entity with an
    # anchor's type in an older dump only is still judged by all of its rows): hash tables the
    # size of the answer, not a window over every typed entity of the dump.
    sql = f"""
        WITH t AS ({union}),
        mine AS (SELECT id, type, dump FROM t WHERE id IN (SELECT id FROM _anchors)),
        anchor_types AS (
            SELECT DISTINCT type FROM mine QUALIFY dump = max(dump) OVER (PARTITION BY id)
        ),
        wanted AS (
            SELECT id, type, dump FROM t
            WHERE id IN (SELECT id FROM _anchors) OR type IN (SELECT type FROM anchor_types)
        ),
        newest AS (
            SELECT id, max(dump) AS dump FROM t WHERE id IN (SELECT DISTINCT id FROM wanted) GROUP BY id
        )
        SELECT DISTINCT w.id::BIGINT AS id, w.type::BIGINT AS type
        FROM wanted w JOIN newest n ON w.id = n.id AND w.dump = n.dump
        ORDER BY id, type
    """
    out = con.execute(sql).df()
    con.unregister("_anchors")
    return out.astype("int64").reset_index(drop=True) if len(out) else empty


def sem_candidates(
    claims_path: str | Path,
    type_files: Iterable[str | Path],
    relations: Iterable[int],
    con: duckdb.DuckDBPyConnection | None = None,
) -> np.ndarray:
    """Sorted ids of every entity that can be a Sem candidate of a fact of ``relations``:
    the entities declaring a type that some object of those relations
    declares in any of ``type_files``. A superset of what Ω admits for any fact sampled from the
    dump (Ω types an entity by its newest typing dump only), so an index over these rows ranks
    every candidate as an index over all entities does."""
    con = con or connect()
    files = [str(p) for p in type_files]
    if not files:
        return np.empty(0, np.int64)
    check_columns(con, "claims", claims_path, ["property", "object"])
    for path in files:
        check_columns(con, "types", path, ["id", "type"])
    union = " UNION ALL ".join(f"SELECT id, type FROM read_parquet({quote(p)})" for p in files)
    _ids_table(con, "_rels", relations)
    sql = f"""
        WITH t AS ({union}),
        objects AS (
            SELECT DISTINCT object AS id FROM read_parquet({quote(claims_path)})
            WHERE property IN (SELECT id FROM _rels)
        ),
        object_types AS (SELECT DISTINCT type FROM t WHERE id IN (SELECT id FROM objects))
        SELECT DISTINCT id::BIGINT AS id FROM t WHERE type IN (SELECT type FROM object_types) ORDER BY id
    """
    out = con.execute(sql).fetchnumpy()["id"]
    con.unregister("_rels")
    return np.asarray(out, np.int64)


def scan_valid(
    claims_path: str | Path,
    date: int,
    ranks: str,
    relations: Iterable[int],
    subjects: Iterable[int] | None = None,
    con: duckdb.DuckDBPyConnection | None = None,
    objects: Iterable[int] | None = None,
) -> pd.DataFrame:
    """``subject, property, object`` valid at ``date`` (:func:`omega.valid_objects`), only of
    ``relations`` and, when given, ``subjects``: Ω asks ``valid_for(s, r)`` for the facts'
    relations only, and for the facts' subjects only unless candidates fill the subject slot.
    ``objects`` (with ``subjects``): also the statements whose object is one of these (the
    subject-side test ``(s*, r, o)`` of a fact's object o); ranks are still decided over every
    statement of the (subject, property)."""
    con = con or connect()
    _valid_tables(con, claims_path, ranks, relations, subjects, objects)
    keep = "TRUE"
    if subjects is not None:
        keep = "subject IN (SELECT id FROM _subjects)"
        if objects is not None:
            keep += " OR object IN (SELECT id FROM _objects)"
    out = con.execute(
        "SELECT DISTINCT subject::BIGINT AS subject, property::BIGINT AS property, object::BIGINT AS object "
        f"FROM ({_valid_query(claims_path, date, ranks, subjects, objects)}) WHERE {keep}"
    ).df()
    _drop_valid_tables(con)
    return out.astype("int64").reset_index(drop=True)


def scan_valid_objects(
    claims_path: str | Path,
    date: int,
    ranks: str,
    relations: Iterable[int],
    con: duckdb.DuckDBPyConnection | None = None,
) -> pd.DataFrame:
    """Distinct ``property, object`` (int64) of the statements of ``relations`` valid at ``date``,
    whoever the subject: every object of a relation in the dump (same-relation pools,
    fluent-mLAMA §3.1), without the statements themselves."""
    con = con or connect()
    _valid_tables(con, claims_path, ranks, relations, None, None)
    out = con.execute(
        "SELECT DISTINCT property::BIGINT AS property, object::BIGINT AS object "
        f"FROM ({_valid_query(claims_path, date, ranks, None, None)}) ORDER BY property, object"
    ).df()
    _drop_valid_tables(con)
    return out.astype("int64").reset_index(drop=True)


def scan_truthy_parts(*args, **kwargs) -> Iterator[pd.DataFrame]:
    """:func:`scan_truthy_tables`' parts (same arguments) as frames."""
    for table in scan_truthy_tables(*args, **kwargs):
        yield table.to_pandas()


def scan_truthy_tables(
    claims_path: str | Path,
    date: int,
    relations: Iterable[int],
    forms_path: str | Path,
    languages: Sequence[str],
    entities_path: str | Path,
    con: duckdb.DuckDBPyConnection,
    part_rows: int,
) -> Iterator[pa.Table]:
    """:func:`scan_valid` (truthy) of ``relations`` in (property, subject, object) order, with
    what fact selection asks of each statement's entities: ``s_labelled`` and ``o_labelled``
    (:func:`labelled_ids`' rule in ``languages``), the subject's ``sitelinks`` and the object's
    ``o_sitelinks`` (:func:`sitelinks_of`; null without an item row), as Arrow tables in parts
    that never split a (property, subject) pair: a caller that hands them to other processes
    converts them there (``probes.fact_candidates.part_tasks``). The entities file is read once
    per call, for subjects and objects together: a sampler that needs the objects' popularity
    (``popularity_bins``) must not read it again per part.

    DuckDB joins and sorts once (spilling beyond its limit) and the rows stream in parts of about
    ``part_rows`` (each batch of that many is cut before its last (property, subject), which goes
    on in the next part), so a part never splits a pair: per-pair work goes part by part and the
    caller holds one part, not the relation. The stream runs on its own cursor
    of ``con``'s database, so the caller may query ``con`` between parts (from one thread: the
    stream may be read from another, ``parallel.prefetch``).
    """
    cur = con.cursor()
    check_columns(cur, "entity_forms", forms_path, ["entity", "lang", "source"])
    check_columns(cur, "entities", entities_path, ["id", "kind", "sitelinks"])
    _valid_tables(cur, claims_path, "truthy", relations, None, None)
    valid = _valid_query(claims_path, date, "truthy", None, None)
    # A relation (not a DB-API result, which DuckDB materialises whole before Arrow copies it).
    reader = cur.sql(
        f"""
        WITH t AS (
            SELECT DISTINCT subject::BIGINT AS subject, property::BIGINT AS property,
                object::BIGINT AS object FROM ({valid})
        ),
        lab AS ({_labelled_sql(forms_path, languages, "SELECT subject FROM t UNION SELECT object FROM t")}),
        links AS ({_sitelinks_sql(entities_path, "SELECT subject FROM t UNION SELECT object FROM t")})
        SELECT t.subject, t.property, t.object, ls.e IS NOT NULL AS s_labelled,
            lo.e IS NOT NULL AS o_labelled, sl.sitelinks, ol.sitelinks AS o_sitelinks
        FROM t LEFT JOIN lab ls ON ls.e = t.subject LEFT JOIN lab lo ON lo.e = t.object
        LEFT JOIN links sl ON sl.id = t.subject LEFT JOIN links ol ON ol.id = t.object
        ORDER BY t.property, t.subject, t.object
        """
    ).to_arrow_reader(max(1, int(part_rows)))
    buffered, rows = yield from _whole_pair_parts(reader, part_rows)
    _drop_valid_tables(cur)
    cur.close()
    if rows:
        yield pa.Table.from_batches(buffered)


def _whole_pair_parts(reader, part_rows: int):
    """Tables of about ``part_rows`` rows of a (property, subject)-ordered stream, each cut
    before its last (property, subject); returns what is left, ``(batches, rows)``."""
    buffered: list[pa.RecordBatch] = []
    rows = 0
    for batch in reader:
        buffered.append(batch)
        rows += batch.num_rows
        if rows < part_rows:
            continue
        table = pa.Table.from_batches(buffered)
        # Cut before the last (property, subject): its rows may go on in the next batch. Rows
        # are in (property, subject) order, so they are the table's last ones.
        prop, subj = (table.column(c).to_numpy() for c in ("property", "subject"))
        cut = len(prop) - int(((prop == prop[-1]) & (subj == subj[-1])).sum())
        if cut:
            yield table.slice(0, cut)
        rest = table.slice(cut)
        buffered, rows = rest.to_batches(), rest.num_rows
    return buffered, rows


def _valid_tables(con, claims_path, ranks, relations, subjects, objects) -> None:
    if ranks not in ("truthy", "non_deprecated"):
        raise ValueError(f"ranks must be 'truthy' or 'non_deprecated', not {ranks!r}")
    check_columns(
        con, "claims", claims_path, ["subject", "property", "object", "rank", "start", "end", "point_in_time"]
    )
    _ids_table(con, "_rels", relations)
    _ids_table(con, "_subjects", [] if subjects is None else subjects)
    _ids_table(con, "_objects", [] if objects is None else objects)


def _drop_valid_tables(con) -> None:
    for name in ("_rels", "_subjects", "_objects"):
        con.unregister(name)


def _valid_query(claims_path, date: int, ranks: str, subjects, objects) -> str:
    """Valid statements of ``_rels`` (of the pairs of ``_subjects``, and with ``objects`` of the
    subjects having a statement with an object in ``_objects``), ranks decided per pair."""
    src = f"read_parquet({quote(claims_path)})"
    where = [valid_sql(date), "property IN (SELECT id FROM _rels)"]
    if subjects is not None:
        mine = "subject IN (SELECT id FROM _subjects)"
        if objects is not None:
            mine = (
                f"({mine} OR subject IN (SELECT subject FROM {src} WHERE property IN (SELECT id FROM _rels) "
                "AND object IN (SELECT id FROM _objects)))"
            )
        where.append(mine)
    base = f"SELECT subject, property, object, rank FROM {src} WHERE {' AND '.join(where)}"
    if ranks == "truthy":
        base = f"SELECT * FROM ({base}) QUALIFY rank = max(rank) OVER (PARTITION BY subject, property)"
    return base


def scan_statements(
    claims_path: str | Path, relations: Iterable[int], con: duckdb.DuckDBPyConnection | None = None
) -> pd.DataFrame:
    """Distinct non-deprecated ``subject, property, object`` (int64) of ``relations``, sorted by
    (property, subject, object): the co-occurrence counts' input, de-duplicated and sorted by
    DuckDB so that :class:`~factprobe.distractors.cooccur.Cooccurrence` slices it without copies."""
    con = con or connect()
    check_columns(con, "claims", claims_path, ["subject", "property", "object", "rank"])
    _ids_table(con, "_rels", relations)
    got = con.execute(
        "SELECT DISTINCT subject::BIGINT AS subject, property::BIGINT AS property, object::BIGINT AS object "
        f"FROM read_parquet({quote(claims_path)}) WHERE rank >= 1 AND property IN (SELECT id FROM _rels) "
        "ORDER BY property, subject, object"
    ).fetchnumpy()
    con.unregister("_rels")
    return pd.DataFrame({c: np.asarray(got[c], dtype=np.int64) for c in ("subject", "property", "object")})


def scan_forms(
    entity_forms_path: str | Path, ids: Iterable[int], con: duckdb.DuckDBPyConnection | None = None
) -> pd.DataFrame:
    """Rows of an ``entity_forms`` table whose entity is in ``ids`` (ints), in file order."""
    con = con or connect()
    cols = contracts.columns("entity_forms")
    check_columns(con, "entity_forms", entity_forms_path, cols)
    _ids_table(con, "_ids", ids)
    select = ", ".join(cols)
    table = con.sql(
        f"SELECT {select} FROM read_parquet({quote(entity_forms_path)}, file_row_number = true) "
        "WHERE entity LIKE 'Q%' AND TRY_CAST(substr(entity, 2) AS BIGINT) IN (SELECT id FROM _ids) "
        "ORDER BY file_row_number"
    ).to_arrow_table()
    con.unregister("_ids")
    # Same dtypes as contracts.read (pandas from Arrow), so downstream code sees one frame type.
    return table.to_pandas()


def scan_forms_table(
    entity_forms_path: str | Path, ids: Iterable[int], con: duckdb.DuckDBPyConnection | None = None
) -> pa.Table:
    """:func:`scan_forms` kept in Arrow for retrieval's whole-run state: ``id`` (int64; the
    entity is ``Q{id}``), ``lang`` and ``source`` (dictionary-encoded), ``form``, sorted by
    ``id`` and, within an entity, in file order. About 35 bytes a form against ~100 for the
    pandas frame of Python strings (forms of every member of the anchors' types)."""
    con = con or connect()
    check_columns(con, "entity_forms", entity_forms_path, contracts.columns("entity_forms"))
    _ids_table(con, "_ids", ids)
    table = con.sql(
        "SELECT id, lang, form, source FROM (SELECT TRY_CAST(substr(entity, 2) AS BIGINT) AS id, "
        f"lang, form, source, file_row_number FROM read_parquet({quote(entity_forms_path)}, "
        "file_row_number = true) WHERE entity LIKE 'Q%') WHERE id IN (SELECT id FROM _ids) "
        "ORDER BY id, file_row_number"
    ).to_arrow_table()
    con.unregister("_ids")
    return pa.table(
        {
            "id": table["id"].cast(pa.int64()),
            "lang": table["lang"].cast(pa.string()).dictionary_encode(),
            "form": table["form"].cast(pa.string()),
            "source": table["source"].cast(pa.string()).dictionary_encode(),
        }
    )


def forms_frame(table: pa.Table) -> pd.DataFrame:
    """The ``entity_forms`` contract frame (string ids ``Q{id}``) of a :func:`scan_forms_table`,
    with the dtypes of :func:`contracts.read`."""
    entity = pc.binary_join_element_wise("Q", pc.cast(table["id"], pa.string()), "")
    return pa.table(
        {
            "entity": entity,
            "lang": table["lang"].cast(pa.string()),
            "form": table["form"],
            "source": table["source"].cast(pa.string()),
        }
    ).to_pandas()


def properties_in(claims_path: str | Path, con: duckdb.DuckDBPyConnection | None = None) -> set[int]:
    """Integer ids of the properties with at least one claim (one column scanned)."""
    con = con or connect()
    check_columns(con, "claims", claims_path, ["property"])
    return {
        int(r[0])
        for r in con.execute(f"SELECT DISTINCT property FROM read_parquet({quote(claims_path)})").fetchall()
    }


def write_entity_forms(
    label_files: Iterable[str | Path],
    languages: Sequence[str],
    path: str | Path,
    con: duckdb.DuckDBPyConnection | None = None,
    batch_rows: int = 1 << 20,
) -> int:
    """Write the ``entity_forms`` table of :func:`factprobe.wikidata.labels.label_table` to
    ``path`` (atomically) without holding it: DuckDB sorts (spilling past its memory limit) and
    the rows stream into Parquet a batch at a time. Same rows, same order: per (entity, lang) the
    newest dump that has a form, labels before aliases, then file order; one row per distinct
    form; the ``mul`` fallback of :func:`factprobe.wikidata.labels.forms_query`. Returns the
    number of rows."""
    con = con or connect()
    files = [str(p) for p in label_files]
    schema = contracts.SCHEMAS["entity_forms"]
    with io.atomic_path(path) as tmp, pq.ParquetWriter(tmp, schema, compression=io.COMPRESSION) as out:
        if not files:
            return 0
        for f in files:
            check_columns(con, "labels", f, ["id", "lang", "text", "is_alias"])
        reader = con.sql(forms_query(files, languages)).to_arrow_reader(batch_rows)

        # Row groups of exactly batch_rows rows, each one chunk (the writer's pages follow the
        # chunks), whatever batches DuckDB's threads hand out: the same bytes on any threads.
        def write(group: pa.Table) -> int:
            group = contracts.conform(group.combine_chunks(), "entity_forms", path)
            out.write_table(group.select(schema.names), row_group_size=batch_rows)
            return group.num_rows

        rows, pending, held = 0, [], 0
        for batch in reader:
            pending.append(batch)
            held += batch.num_rows
            while held >= batch_rows:
                table = pa.Table.from_batches(pending)
                rows += write(table.slice(0, batch_rows))
                rest = table.slice(batch_rows)
                pending, held = rest.to_batches(), rest.num_rows
        if held:
            rows += write(pa.Table.from_batches(pending))
    return rows


def _labelled_sql(forms_path: str | Path, languages: Sequence[str], ids_sql: str) -> str:
    """Query of ``e``: the ids among ``ids_sql``'s with a label in every one of ``languages``."""
    langs = ", ".join(quote(lang) for lang in dict.fromkeys(languages)) or "NULL"
    return f"""
        SELECT e FROM (
            SELECT TRY_CAST(substr(entity, 2) AS BIGINT) AS e, lang FROM read_parquet({quote(forms_path)})
            WHERE source = 'label' AND lang IN ({langs}) AND entity LIKE 'Q%'
        ) WHERE e IN ({ids_sql})
        GROUP BY e HAVING count(DISTINCT lang) = {len(set(languages))}
        """


def _sitelinks_sql(entities_path: str | Path, ids_sql: str) -> str:
    """Query of ``id, sitelinks`` of the items among ``ids_sql``'s ids (an id's first row)."""
    return f"""
        SELECT id, sitelinks FROM read_parquet({quote(entities_path)}, file_row_number = true)
        WHERE kind = 'item' AND id IN ({ids_sql})
        QUALIFY row_number() OVER (PARTITION BY id ORDER BY file_row_number) = 1
        """


def labelled_ids(
    forms_path: str | Path,
    languages: Sequence[str],
    ids: Iterable[int],
    con: duckdb.DuckDBPyConnection | None = None,
) -> np.ndarray:
    """Sorted int ids among ``ids`` with a label (not only an alias) in every language of
    ``languages`` in an ``entity_forms`` table (:func:`factprobe.probes.select.labelled_entities`)."""
    con = con or connect()
    check_columns(con, "entity_forms", forms_path, ["entity", "lang", "source"])
    _ids_table(con, "_ids", ids)
    got = con.execute(
        f"{_labelled_sql(forms_path, languages, 'SELECT id FROM _ids')} ORDER BY e"
    ).fetchnumpy()["e"]
    con.unregister("_ids")
    return np.asarray(got, dtype=np.int64)


def sitelinks_of(
    entities_path: str | Path, ids: Iterable[int], con: duckdb.DuckDBPyConnection | None = None
) -> pd.Series:
    """Sitelink count per integer item id among ``ids`` (:func:`factprobe.probes.select.item_sitelinks`
    restricted to them: the first row of an id)."""
    con = con or connect()
    check_columns(con, "entities", entities_path, ["id", "kind", "sitelinks"])
    _ids_table(con, "_ids", ids)
    got = con.sql(f"{_sitelinks_sql(entities_path, 'SELECT id FROM _ids')} ORDER BY id").to_arrow_table()
    con.unregister("_ids")
    frame = got.to_pandas()
    return frame.set_index("id")["sitelinks"]


def table_of_relations(
    name: str,
    path: str | Path,
    relations: Iterable[int],
    cols: Sequence[str],
    con: duckdb.DuckDBPyConnection | None = None,
    subjects: Iterable[int] | None = None,
    any_of: dict[str, Sequence[str]] | None = None,
) -> pd.DataFrame:
    """Columns ``cols`` of the rows of table ``name`` (changes, temporal) whose property is in
    ``relations`` (and, when given, subject in ``subjects`` and some column of ``any_of`` one of
    its values), in file order, typed as :func:`contracts.read` types them."""
    con = con or connect()
    check_columns(con, name, path, [*cols, *(any_of or {})])
    _ids_table(con, "_rels", relations)
    where = "property IN (SELECT id FROM _rels)"
    if subjects is not None:
        _ids_table(con, "_subjects", subjects)
        where += " AND subject IN (SELECT id FROM _subjects)"
    if any_of:
        tests = [
            f'"{col}" IN ({", ".join(quote(v) for v in values)})' for col, values in any_of.items() if values
        ]
        where += f" AND ({' OR '.join(tests) or 'FALSE'})"
    select = ", ".join(f'"{c}"' for c in cols)
    table = con.sql(
        f"SELECT {select} FROM read_parquet({quote(path)}, file_row_number = true) "
        f"WHERE {where} ORDER BY file_row_number"
    ).to_arrow_table()
    con.unregister("_rels")
    if subjects is not None:
        con.unregister("_subjects")
    # The file's own column types, as contracts.read gives them.
    file_schema = pq.read_schema(path)
    return table.cast(pa.schema([file_schema.field(c) for c in cols])).to_pandas()
