"""Temporal view of one dump: objects valid now and objects valid before but not now.

Spec: distractors-knowledge-measure §3.3 (temporal distractors are the (s, r, ?) objects that
are invalid at the dump date, judged by P580/P582/P585 with the dump date as "present") and
probelm-plausibility §3.1 (facts that changed over time). Validity at ``t`` is half-open,
``start <= t < end`` and ``point_in_time <= t``, as in :mod:`factprobe.diff.rules`.

Per (subject, property, object) of the dump:

* ``current`` / ``qualifier``: some non-deprecated statement is valid at the dump date;
* ``past`` / ``qualifier``: none is valid and one ended (``end <= t``);
* ``past`` / ``earlier_dump``: the triple is absent from this dump (no non-deprecated
  statement) but was in an earlier enabled dump, and the subject is still in this dump (an
  absent subject says nothing: it may lie outside a sampled dump);
* statements that only start after the dump date are left out.

``truthy`` marks current objects of the best rank of their (subject, property) (contracts.md).
"""

from __future__ import annotations

import logging
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from factprobe import contracts
from factprobe.diff.buckets import Range, copy_stream, query_reader, range_sql, subject_ranges
from factprobe.diff.engine import (
    PARQUET,
    decode_sql,
    n_partitions,
    statement_key_sql,
    valid_dates_sql,
)
from factprobe.scan import connect, parquet_columns, quote

log = logging.getLogger(__name__)


def temporal_sql(dump: str, earlier: dict[str, str], subjects: str = "TRUE") -> str:
    """Query over ``read_parquet`` of this dump's claims/entities (views ``cur_c``, ``cur_e``)
    and the earlier dumps' claims (``earlier``: dump date -> path), of which only the rows
    whose ``subject`` meets the SQL condition ``subjects`` are read (a bucket of subjects)."""
    t = int(dump)
    key = statement_key_sql("0", valid_dates_sql(t))
    current = f"""
        SELECT subject, property, object, max(rank) AS rank, max({key}) AS k, bool_or(e <= {t}) AS ended
        FROM (SELECT subject, property, object, rank, start AS s, "end" AS e, point_in_time AS p
              FROM cur_c WHERE rank > 0)
        GROUP BY subject, property, object
    """
    if earlier:
        parts = []
        for date, path in sorted(earlier.items()):
            dkey = statement_key_sql(str(int(date)), valid_dates_sql(date))
            parts.append(
                f"SELECT subject, property, object, {dkey} AS k FROM (SELECT subject, property, object, "
                f'start AS s, "end" AS e, point_in_time AS p FROM read_parquet({quote(path)}) '
                f"WHERE rank > 0 AND {subjects})"
            )
        before = f"""
        SELECT b.subject, b.property, b.object, max(b.k) AS k
        FROM ({" UNION ALL ".join(parts)}) b
        SEMI JOIN cur_e e ON e.id = b.subject
        ANTI JOIN cur t ON t.subject = b.subject AND t.property = b.property AND t.object = b.object
        GROUP BY b.subject, b.property, b.object
        """
        past_rows = f"""
        UNION ALL
        SELECT subject, property, object, 'past' AS status, {decode_sql("k", "s")} AS start,
            {decode_sql("k", "e")} AS "end", {decode_sql("k", "p")} AS point_in_time,
            'earlier_dump' AS source, NULL::BOOLEAN AS truthy, ((k >> 97)::INTEGER)::VARCHAR AS last_seen
        FROM ({before})
        """
    else:
        past_rows = ""
    return f"""
    WITH cur AS ({current}),
    best AS (SELECT subject, property, max(rank) AS best FROM cur WHERE ((k >> 96) & 1) = 1 GROUP BY ALL)
    SELECT c.subject, c.property, c.object,
        CASE WHEN ((k >> 96) & 1) = 1 THEN 'current' ELSE 'past' END AS status,
        {decode_sql("k", "s")} AS start, {decode_sql("k", "e")} AS "end", {decode_sql("k", "p")} AS point_in_time,
        'qualifier' AS source,
        CASE WHEN ((k >> 96) & 1) = 1 THEN c.rank = b.best END AS truthy,
        '{dump}' AS last_seen
    FROM cur c LEFT JOIN best b ON b.subject = c.subject AND b.property = c.property
    WHERE ((k >> 96) & 1) = 1 OR ended
    {past_rows}
    """


def temporal_view(
    dump: str,
    claims: str | Path,
    entities: str | Path,
    earlier: dict[str, str | Path],
    out_path: str | Path,
    *,
    memory_mb: int = 4000,
    threads: int = 2,
    temp_dir: str | Path | None = None,
    rows_per_partition: int = 60_000_000,
) -> dict[str, int]:
    """Write the temporal view of ``dump`` to ``out_path``; return row counts per status/source.

    Every row depends on one subject's statements only, so the claims are cut into subject
    ranges of about ``rows_per_partition`` rows (:mod:`factprobe.diff.buckets`; one range when
    the claims are not in subject order), whose rows stream into one Parquet writer.
    """
    earlier = {str(d): str(p) for d, p in earlier.items() if int(d) < int(dump)}
    work = Path(tempfile.mkdtemp(prefix="factprobe-temporal-", dir=temp_dir))
    try:
        writer_mb = max(128, memory_mb // 8)
        con = connect(threads, max(256, memory_mb - writer_mb), work / "spill", keep_order=False)
        for path in [claims, *earlier.values()]:
            contracts.check(parquet_columns(con, path), "claims", path)
        ranges = _ranges(claims, rows_per_partition)
        cols = ", ".join(f'"{c}"' for c in contracts.columns("temporal"))

        def readers() -> Iterator[pa.RecordBatchReader]:
            for k, bucket in enumerate(ranges):
                subj, ids = range_sql("subject", bucket, k == 0), range_sql("id", bucket, k == 0)
                con.execute(
                    f"CREATE OR REPLACE TEMP VIEW cur_c AS SELECT * FROM read_parquet({quote(claims)}) WHERE {subj}"
                )
                con.execute(
                    f"CREATE OR REPLACE TEMP VIEW cur_e AS SELECT id FROM read_parquet({quote(entities)}) "
                    f"WHERE kind = 'item' AND {ids}"
                )
                yield query_reader(con, f"SELECT {cols} FROM ({temporal_sql(dump, earlier, subj)})")
                log.info("temporal bucket %d/%d done", k + 1, len(ranges))

        copy_stream(readers(), out_path, PARQUET, writer_mb)
        counts = dict(
            (f"{s}/{src}", n)
            for s, src, n in con.execute(
                f"SELECT status, source, count(*) FROM read_parquet({quote(out_path)}) GROUP BY ALL ORDER BY ALL"
            ).fetchall()
        )
        con.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    log.info("temporal view %s (earlier dumps %s): %s", dump, sorted(earlier), counts)
    return counts


def _ranges(claims: str | Path, rows_per_partition: int) -> list[Range]:
    """Subject ranges of about ``rows_per_partition`` claims each; one when the claims are
    small or not clustered by subject (then DuckDB spills what does not fit)."""
    n = n_partitions(pq.ParquetFile(claims).metadata.num_rows, rows_per_partition)
    ranges = subject_ranges([claims], n)
    if ranges is None:
        log.info("%s: claims not clustered by subject; one pass over %d buckets' worth", claims, n)
        return [(None, None)]
    return ranges


def counted_past(temporal: pd.DataFrame, earlier_dump: bool = False) -> pd.DataFrame:
    """The ``past`` rows of a temporal view that count as temporal distractors (§3.3).

    Points (no end, or start == end) are left out, as in the reference implementation; rows
    known only from an earlier dump (``source == "earlier_dump"``) carry no date and count only
    with ``earlier_dump`` (distractors paper §3.3; :mod:`factprobe.distractors.temporal`).
    """
    past = temporal[temporal["status"] == "past"]
    if not earlier_dump:
        past = past[past["source"].astype(str) != "earlier_dump"]
    from_earlier = past["source"].astype(str).eq("earlier_dump").to_numpy()
    start = past["start"].astype("Float64").astype(float).to_numpy()
    end = past["end"].astype("Float64").astype(float).to_numpy()
    point = ~from_earlier & (np.isnan(end) | (start == end))
    return past[~point]


def with_temporal_distractors(
    candidates: pd.DataFrame, temporal: pd.DataFrame, earlier_dump: bool = False
) -> pd.DataFrame:
    """The paper's S′ (§4.1, Fig. 2): candidate facts whose (s, r) has a temporal distractor.

    ``candidates`` has string ids (``subject`` "Q..", ``property`` "P.."); sampling then proceeds
    as for S. A past object that is also the fact's current object cannot happen (it would not
    be ``past``), but Ω may still reject a past object later, so S′ is a superset of the facts
    whose Temp+Sem list really starts with a temporal distractor (``source`` says which do).
    """
    return with_pairs(candidates, temporal_distractor_pairs(temporal, earlier_dump))


def temporal_distractor_pairs(temporal: pd.DataFrame, earlier_dump: bool = False) -> set[tuple[int, int]]:
    """The integer (subject, property) pairs that have a temporal distractor (:func:`counted_past`):
    built once per relation, then :func:`with_pairs` filters each part of its candidates
    (redoing it per part would cost parts × the relation's temporal rows)."""
    past = counted_past(temporal, earlier_dump)
    return set(zip(past["subject"].astype("int64"), past["property"].astype("int64"), strict=True))


def with_pairs(candidates: pd.DataFrame, pairs: set[tuple[int, int]]) -> pd.DataFrame:
    """The candidates (string ids) whose integer (subject, property) is in ``pairs``."""
    subjects = contracts.id_ints(candidates["subject"]).tolist()
    properties = contracts.id_ints(candidates["property"]).tolist()
    keep = np.array([k in pairs for k in zip(subjects, properties, strict=True)], dtype=bool)
    # A boolean array selects rows even when empty (an empty list would select no columns).
    return candidates[keep].reset_index(drop=True)
