"""Semantic distractors, Sem (distractors paper §3.3, "Semantic Distractors"): the entities' bags
of features.

Every entity is a bag of features (§3.3): (i) the entity itself, (ii) each relation r with
(e, r, ·), (iii) each object o with (e, ·, o), (iv) each pair (r, o) with (e, r, o). The paper's
bag is a *set* in *one* namespace, as the reference implementation (DistFactAssessLM,
``SimilarityDistractorFinder``) builds it: a Python ``set`` of id strings per entity, so a relation
repeated 47 times (P150 subdivisions) counts once, and the entity "Q1" of its own bag (i) and the
object "Q1" in another entity's bag (iii) are the same feature. These are the defaults
(``bag="sets"``, ``namespace="shared"``, ``reverse=False``). Named variants, kept for earlier
results: ``bag="counts"`` keeps repeats as term frequencies; ``namespace="tagged"`` keeps (i),
(iii) and the reverse features in separate namespaces; ``reverse=True`` (the reference's optional
``use_reverse_features``, off in its experiments and not listed by the paper) gives an object also
(v) each r with (·, r, e), (vi) each subject s with (s, ·, e) and (vii) each (s, r): in the shared
namespace (v) is the relation feature of (ii) and (vi) the entity feature of (i)/(iii), as in the
reference's strings.

Features are int64 codes ``tag << 56 | a << 32 | b`` (tag = kind of feature), made unique with
``np.unique``: no Python dict of strings, so the vocabulary scales to hundreds of millions of
features.
A part's entities (rule ``sem_bags``) are those of :func:`part_sql`'s entity hash.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import scipy.sparse as sp

from factprobe import arrays

TAG_SELF, TAG_REL, TAG_OBJ, TAG_REL_OBJ, TAG_INV_REL, TAG_INV_SUBJ, TAG_INV_REL_SUBJ = range(7)


#: ``distractors.sem.bag``: sets (the paper's bag, tf 1) or counts (repeats as term frequency).
BAGS = ("sets", "counts")


#: ``distractors.sem.namespace``: shared (the reference's one namespace of id strings) or tagged.
NAMESPACES = ("shared", "tagged")


_ID_BITS = 32


_TAG_SHIFT = 56


# Part of an entity (the sharded index, :mod:`.index_parts`): a Lehmer hash modulo the prime
# 2**31 - 1, computed alike in numpy and DuckDB (products stay below 2**47: no overflow).
PART_MODULUS = (1 << 31) - 1


PART_MULTIPLIER = 48271


def _code(tag: int, a: np.ndarray | int, b: np.ndarray | int) -> np.ndarray:
    return (np.int64(tag) << _TAG_SHIFT) | (np.asarray(a, np.int64) << _ID_BITS) | np.asarray(b, np.int64)


def feature_tags(namespace: str = "shared") -> dict[int, int]:
    """The tag each kind of feature is coded with.

    ``shared`` (§3.3 as the reference codes it, one string per id): an entity is one feature
    whether it is the bag's own entity (i), an object (iii) or a reverse subject (vi), and a
    relation one feature whether forward (ii) or reverse (v); (r, o) and (s, r) pairs stay apart
    (the reference writes them ``r_o`` and ``s_r``). ``tagged``: every kind apart.
    """
    if namespace not in NAMESPACES:
        raise ValueError(f"distractors.sem.namespace must be one of {NAMESPACES}, not {namespace!r}")
    kinds = (TAG_SELF, TAG_REL, TAG_OBJ, TAG_REL_OBJ, TAG_INV_REL, TAG_INV_SUBJ, TAG_INV_REL_SUBJ)
    if namespace == "tagged":
        return {k: k for k in kinds}
    same = {TAG_SELF: TAG_OBJ, TAG_INV_SUBJ: TAG_OBJ, TAG_INV_REL: TAG_REL}
    return {k: same.get(k, k) for k in kinds}


def check_bag(bag: str) -> None:
    if bag not in BAGS:
        raise ValueError(f"distractors.sem.bag must be one of {BAGS}, not {bag!r}")


def feature_codes(
    subject: np.ndarray,
    prop: np.ndarray,
    obj: np.ndarray,
    reverse: bool = False,
    namespace: str = "shared",
) -> tuple[np.ndarray, np.ndarray]:
    """``(entity, feature code)`` pairs, one per feature occurrence (repeats are kept here;
    :func:`weight_matrix` makes each bag a set or counts them, ``bag``).

    Entity and object ids must be below 2**32, property ids below 2**24 (true of Wikidata).
    """
    s, p, o = (np.asarray(x, np.int64) for x in (subject, prop, obj))
    if len(s) and (max(s.max(), o.max()) >= 1 << _ID_BITS or p.max() >= 1 << (_TAG_SHIFT - _ID_BITS)):
        raise ValueError("entity id >= 2**32 or property id >= 2**24: widen the feature code layout")
    tag = feature_tags(namespace)
    ents = [arrays.unique(s)]
    rows = [s, s, s]
    codes = [_code(tag[TAG_REL], 0, p), _code(tag[TAG_OBJ], 0, o), _code(tag[TAG_REL_OBJ], p, o)]
    if reverse:
        ents.append(arrays.unique(o))
        rows += [o, o, o]
        codes += [
            _code(tag[TAG_INV_REL], 0, p),
            _code(tag[TAG_INV_SUBJ], 0, s),
            _code(tag[TAG_INV_REL_SUBJ], p, s),
        ]
    selves = arrays.unique(np.concatenate(ents))
    rows.append(selves)
    codes.append(_code(tag[TAG_SELF], 0, selves))
    return np.concatenate(rows), np.concatenate(codes)


def bags_from_parquet(
    claims_path: str | Path,
    reverse: bool = False,
    threads: int = 1,
    memory_mb: int | None = None,
    rows: np.ndarray | None = None,
    bag: str = "sets",
    namespace: str = "shared",
) -> tuple[np.ndarray, np.ndarray, sp.csr_matrix, tuple[int, np.ndarray, float]]:
    """``(entities, features, counts, corpus)`` of a claims Parquet file, counted in DuckDB.

    The same bags as :func:`feature_codes` + :func:`weight_matrix` on the non-deprecated distinct
    triples, but the feature occurrences are grouped (and counted, ``bag="counts"``) by DuckDB,
    which spills to disk, instead of being materialised as int64 arrays and sorted in memory:
    only the final CSR (4 + 4 bytes per non-zero) is held. ``counts`` is canonical float32
    (1 for every feature of a bag with ``bag="sets"``).

    ``rows``: keep only these entities' bags (the candidates, :func:`factprobe.scan.sem_candidates`);
    ``corpus`` = ``(N, df of each kept feature, mean bag length)`` is still counted over every
    entity of the dump, so a kept row is weighted as in the whole index (:func:`weigh`).
    """
    from factprobe import scan

    check_bag(bag)
    con = scan.connect(threads, memory_mb)
    tf_table(con, claims_path, reverse, bag, namespace)
    n_all = total = None
    if rows is not None:
        n_all, total = con.execute("SELECT count(DISTINCT e), coalesce(sum(n), 0) FROM tf").fetchone()
        con.execute("CREATE TEMP TABLE dfs AS SELECT f, count(*)::BIGINT AS df FROM tf GROUP BY f")
        con.register("keep_rows", pd.DataFrame({"e": np.asarray(rows, np.int64)}))
        con.execute("CREATE TEMP TABLE kept AS SELECT * FROM tf WHERE e IN (SELECT e FROM keep_rows)")
        con.execute("DROP TABLE tf")
        con.execute("ALTER TABLE kept RENAME TO tf")
    entities, features, df, counts = read_bags(con, rows is not None)
    con.close()
    if rows is None:
        # The matrix is the whole corpus: its statistics come from the arrays, no second scan.
        n_all, total = len(entities), float(counts.data.sum(dtype=np.float64))
        df = np.bincount(counts.indices, minlength=len(features)).astype(np.float64)
    return entities, features, counts, (int(n_all), df, float(total) / max(int(n_all), 1))


def part_sql(column: str, parts: int) -> str:
    """DuckDB expression of :func:`factprobe.distractors.semantic.part_bags.part_of` (the same integers)."""
    return f"((({column} % {PART_MODULUS}) * {PART_MULTIPLIER}) % {PART_MODULUS}) % {int(parts)}"


def tf_table(
    con,
    claims_path: str | Path,
    reverse: bool,
    bag: str,
    namespace: str,
    part: tuple[int, int] | None = None,
) -> None:
    """DuckDB temp table ``tf (e, f, n)``: the bags of the non-deprecated distinct triples.

    ``part = (p, P)``: only the bags of the entities of part ``p`` of ``P`` (:func:`part_sql`):
    the triples are filtered while scanned (a subject of the part, or with reverse features an
    object), so only the part's slice is made distinct and grouped.
    """
    from factprobe import scan

    scan.check_columns(con, "claims", claims_path, ["subject", "property", "object", "rank"])
    src = f"read_parquet('{str(claims_path).replace(chr(39), chr(39) * 2)}')"
    where = "rank >= 1"
    if part is not None:
        mine = f"{part_sql('subject', part[1])} = {int(part[0])}"
        if reverse:
            mine = f"({mine} OR {part_sql('object', part[1])} = {int(part[0])})"
        where += f" AND {mine}"
    con.execute(
        f"CREATE TEMP TABLE c AS SELECT DISTINCT subject::BIGINT AS s, property::BIGINT AS p, "
        f"object::BIGINT AS o FROM {src} WHERE {where}"
    )
    top_id, top_p = con.execute("SELECT max(greatest(s, o)), max(p) FROM c").fetchone()
    if top_id is not None and (top_id >= 1 << _ID_BITS or top_p >= 1 << (_TAG_SHIFT - _ID_BITS)):
        raise ValueError("entity id >= 2**32 or property id >= 2**24: widen the feature code layout")
    tf = "count(*)::INTEGER" if bag == "counts" else "1::INTEGER"
    keep = "" if part is None else f"WHERE {part_sql('e', part[1])} = {int(part[0])}"
    con.execute(
        f"CREATE TEMP TABLE tf AS SELECT e, f, {tf} AS n FROM ({_feature_sql(reverse, namespace)}) {keep} GROUP BY e, f"
    )
    con.execute("DROP TABLE c")


def _feature_sql(reverse: bool, namespace: str) -> str:
    """The ``(e, f)`` occurrences of :func:`feature_codes` as one DuckDB query over table ``c``."""
    tag = feature_tags(namespace)

    def code(kind: int, a: str, b: str) -> str:
        return f"(({tag[kind]}::BIGINT << {_TAG_SHIFT}) | ({a} << {_ID_BITS}) | {b})"

    parts = [
        f"SELECT s AS e, {code(TAG_REL, '0', 'p')} AS f FROM c",
        f"SELECT s, {code(TAG_OBJ, '0', 'o')} FROM c",
        f"SELECT s, {code(TAG_REL_OBJ, 'p', 'o')} FROM c",
    ]
    selves = "SELECT DISTINCT s AS e FROM c"
    if reverse:
        parts += [
            f"SELECT o, {code(TAG_INV_REL, '0', 'p')} FROM c",
            f"SELECT o, {code(TAG_INV_SUBJ, '0', 's')} FROM c",
            f"SELECT o, {code(TAG_INV_REL_SUBJ, 'p', 's')} FROM c",
        ]
        selves += " UNION SELECT o FROM c"
    parts.append(f"SELECT e, {code(TAG_SELF, '0', 'e')} FROM ({selves})")
    return " UNION ALL ".join(parts)


def read_bags(con, with_dfs: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, sp.csr_matrix]:
    """``(entities, features, df or None, counts)`` of DuckDB table ``tf`` (e, f, n), as a CSR."""
    per_row = con.execute("SELECT e, count(*) AS k FROM tf GROUP BY e ORDER BY e").fetchnumpy()
    entities = per_row["e"].astype(np.int64)
    df = None
    if not with_dfs:
        features = con.execute("SELECT DISTINCT f FROM tf ORDER BY f").fetchnumpy()["f"].astype(np.int64)
    else:
        got = con.execute(
            "SELECT f, df FROM (SELECT DISTINCT f FROM tf) JOIN dfs USING (f) ORDER BY f"
        ).fetchnumpy()
        features, df = got["f"].astype(np.int64), got["df"].astype(np.float64)
    indptr = np.zeros(len(entities) + 1, np.int64)
    np.cumsum(per_row["k"], out=indptr[1:])
    indices = np.empty(indptr[-1], np.int32)
    data = np.empty(indptr[-1], np.float32)
    lo = 0
    # Streamed in row order: only one batch of (e, f, n) besides the CSR arrays.
    for batch in con.sql("SELECT f, n FROM tf ORDER BY e, f").to_arrow_reader(1 << 20):
        f = batch.column(0).to_numpy()
        indices[lo : lo + len(f)] = np.searchsorted(features, f)
        data[lo : lo + len(f)] = batch.column(1).to_numpy()
        lo += len(f)
    counts = sp.csr_matrix((data, indices, indptr), shape=(len(entities), len(features)))
    counts.has_canonical_format = True  # (e, f) unique from GROUP BY, sorted by the ORDER BY
    return entities, features, df, counts
