"""Step 1 of the semantic index built in parts (:mod:`.index_parts`): the unweighted bags of
one part's entities (rule ``sem_bags``, :func:`count_part`), counted in memory one bucket of
entity ids at a time, with the part's document frequencies, number of bags and total length.
A part's entities are :func:`part_of`'s hash of the entity id.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import scipy.sparse as sp

from . import bags, index


def part_of(entities: np.ndarray, parts: int) -> np.ndarray:
    """Part (0 .. parts-1) of each entity id: the hash :func:`.bags.part_sql` computes in DuckDB."""
    e = np.asarray(entities, np.int64) % bags.PART_MODULUS
    return (e * bags.PART_MULTIPLIER) % bags.PART_MODULUS % int(parts)


#: An entity bucket is the entities of the part whose ids share all bits above the lowest
#: ``BUCKET_BITS``: each bucket is de-duplicated, grouped and sorted on its own
#: (:func:`_bucket_bags`), so the work per statement does not grow with the dump (one DuckDB
#: GROUP BY over the whole part grew as n^1.2: hash tables and sorts that outgrow the caches).
#: 2^14 ids: ≈ 16 k dense Wikidata ids, ≈ 0.5 M statements with reverse features in one part.
BUCKET_BITS = 14
#: Feature codes a range of codes holds, about: the part's vocabulary and document frequencies
#: are made one range at a time (:func:`_cuts`), each a bounded sort.
FEATURE_ROWS = 1 << 21


def _read_triples(con, claims_path, part: int, parts: int, reverse: bool) -> tuple[np.ndarray, ...]:
    """``(s, p, o)`` of the non-deprecated statements of the part (a subject of the part, or with
    reverse features an object), filtered by DuckDB while scanning: repeats kept."""
    from factprobe import scan

    scan.check_columns(con, "claims", claims_path, ["subject", "property", "object", "rank"])
    mine = f"{bags.part_sql('subject', parts)} = {int(part)}"
    if reverse:
        mine = f"({mine} OR {bags.part_sql('object', parts)} = {int(part)})"
    got = con.execute(
        f"SELECT subject::BIGINT AS s, property::BIGINT AS p, object::BIGINT AS o "
        f"FROM read_parquet({scan.quote(claims_path)}) WHERE rank >= 1 AND {mine}"
    ).fetchnumpy()
    s, p, o = (np.asarray(got[k], np.int64) for k in ("s", "p", "o"))
    if len(s) and (
        max(s.max(), o.max()) >= 1 << bags._ID_BITS or p.max() >= 1 << (bags._TAG_SHIFT - bags._ID_BITS)
    ):
        raise ValueError("entity id >= 2**32 or property id >= 2**24: widen the feature code layout")
    return s, p, o


def _radix_order(b: np.ndarray) -> np.ndarray:
    """A stable order of ``b`` (< 2^32) by two 16-bit radix passes: linear, unlike a comparison
    sort (numpy sorts 16-bit keys by radix)."""
    order = np.argsort((b & 0xFFFF).astype(np.uint16), kind="stable")
    return order[np.argsort((b[order] >> 16).astype(np.uint16), kind="stable")]


def _by_bucket(key: np.ndarray, bits: int, cols) -> tuple[list, dict]:
    """``cols`` grouped by entity bucket ``key >> bits`` (linear), as uint32, and the
    ``(start, stop)`` of every bucket that holds a row."""
    b = key >> bits
    order = _radix_order(b)
    b = b[order]
    at = np.flatnonzero(np.r_[True, b[1:] != b[:-1]]) if len(b) else np.empty(0, np.int64)
    ends = np.r_[at[1:], len(b)] if len(b) else at
    spans = dict(zip(b[at].tolist(), zip(at.tolist(), ends.tolist(), strict=True), strict=True))
    return [c[order] for c in cols], spans


def _entity_buckets(triples: list, part: int, parts: int, reverse: bool, bits: int):
    """Yield ``(lo, forward, reverse)`` for every bucket ``[lo, lo + 2^bits)`` of ids that holds an
    entity of the part, in id order: the statements whose subject (forward features) or object
    (reverse) is one of its entities, as int64 ``(s, p, o)``. Empties ``triples`` (int64, ids
    checked < 2^32): the statements are held once, as uint32, grouped by bucket."""
    s, p, o = (t.astype(np.uint32) for t in triples)
    triples.clear()
    fwd = part_of(s, parts) == part
    rev = part_of(o, parts) == part if reverse else np.zeros(len(s), bool)
    fcols, fb = _by_bucket(s[fwd], bits, (s[fwd], p[fwd], o[fwd]))
    rcols, rb = _by_bucket(o[rev], bits, (s[rev], p[rev], o[rev]))
    del fwd, rev, s, p, o
    for b in sorted(fb.keys() | rb.keys()):
        f0, f1 = fb.get(b, (0, 0))
        r0, r1 = rb.get(b, (0, 0))
        yield (
            b << bits,
            [c[f0:f1].astype(np.int64) for c in fcols],
            [c[r0:r1].astype(np.int64) for c in rcols],
        )


def _by_entity(e: np.ndarray, f: np.ndarray, bag: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(e, f, n)``: the distinct ``(e, f)`` pairs sorted by ``e`` then ``f``, and how often
    each occurs (1 with ``bag="sets"``). ``e`` is a bucket's local id (< 2^16): the sort by
    ``f`` is followed by a stable radix sort by ``e``, both over one bucket only."""
    order = np.argsort(f)
    order = order[np.argsort(e[order], kind="stable")]
    e, f = e[order], f[order]
    first = np.ones(len(e), bool)
    first[1:] = (e[1:] != e[:-1]) | (f[1:] != f[:-1])
    at = np.flatnonzero(first)
    n = np.diff(np.r_[at, len(e)]).astype(np.int32) if bag == "counts" else np.ones(len(at), np.int32)
    return e[at], f[at], n


def _bucket_bags(lo: int, forward, backward, reverse: bool, bag: str, namespace: str) -> dict:
    """``e``, ``f``, ``n`` of the bags of one entity bucket (ids ``lo`` .. ``lo`` + 2^bits), sorted
    by ``(e, f)``: the bags of :func:`.bags.tf_table` (distinct statements; each entity's
    own feature, its forward features and with ``reverse`` those of the statements naming it as
    object; a feature once per distinct statement), counted in numpy over the bucket only."""
    tag = bags.feature_tags(namespace)
    (s, p, o), (rs, rp, ro) = forward, backward
    if bag == "counts":  # distinct statements: a statement is (its entity, p << 32 | other end)
        el, pair, _ = _by_entity((s - lo).astype(np.uint16), (p << bags._ID_BITS) | o, "sets")
        s, p, o = el.astype(np.int64) + lo, pair >> bags._ID_BITS, pair & ((1 << bags._ID_BITS) - 1)
        el, pair, _ = _by_entity((ro - lo).astype(np.uint16), (rp << bags._ID_BITS) | rs, "sets")
        ro, rp, rs = (
            el.astype(np.int64) + lo,
            pair >> bags._ID_BITS,
            pair & ((1 << bags._ID_BITS) - 1),
        )
    seen = np.zeros(1 << 16, bool)
    seen[s - lo] = True
    rows, codes = (
        [s, s, s],
        [
            bags._code(tag[bags.TAG_REL], 0, p),
            bags._code(tag[bags.TAG_OBJ], 0, o),
            bags._code(tag[bags.TAG_REL_OBJ], p, o),
        ],
    )
    if reverse:
        seen[ro - lo] = True
        rows += [ro, ro, ro]
        codes += [
            bags._code(tag[bags.TAG_INV_REL], 0, rp),
            bags._code(tag[bags.TAG_INV_SUBJ], 0, rs),
            bags._code(tag[bags.TAG_INV_REL_SUBJ], rp, rs),
        ]
    selves = np.flatnonzero(seen).astype(np.int64) + lo
    rows.append(selves)
    codes.append(bags._code(tag[bags.TAG_SELF], 0, selves))
    el, f, n = _by_entity((np.concatenate(rows) - lo).astype(np.uint16), np.concatenate(codes), bag)
    return {"e": el.astype(np.int64) + lo, "f": f, "n": n}


def _cuts(pieces: list[np.ndarray], feature_rows: int) -> np.ndarray:
    """Codes that cut the part's feature codes into ranges of about ``feature_rows`` codes, from
    every 64th code of every bucket's sorted codes ``pieces`` (any cuts give the same files)."""
    total = sum(len(c) for c in pieces)
    ranges = int(min(4096, max(1, -(-total // feature_rows))))
    if ranges == 1:
        return np.empty(0, np.int64)
    sample = np.sort(np.concatenate([c[::64] for c in pieces]))
    return np.unique(sample[(np.arange(1, ranges) * len(sample)) // ranges])


def _frequencies(pieces: list[tuple], cuts: np.ndarray) -> tuple[np.ndarray, ...]:
    """``(f, df, features, columns)`` from the buckets' pieces ``(codes, bags, kept bags)``
    (sorted unique codes of a bucket, the number of its bags and of its kept bags holding each),
    one range of codes (``cuts``) at a time: every code with its document frequency, the codes of
    the kept bags (the vocabulary, sorted) and, per piece, the column of each of its codes (kept)."""
    at = [np.r_[0, np.searchsorted(c, cuts, side="right"), len(c)] for c, _, _ in pieces]
    columns = [np.zeros(len(c), np.int32) for c, _, _ in pieces]
    fs, dfs, vocab, offset = [np.empty(0, np.int64)], [np.empty(0, np.int64)], [np.empty(0, np.int64)], 0
    for r in range(len(cuts) + 1):
        spans = [(i[r], i[r + 1]) for i in at]
        if not sum(z - a for a, z in spans):
            continue
        u, inv = np.unique(
            np.concatenate([c[a:z] for (c, _, _), (a, z) in zip(pieces, spans, strict=True)]),
            return_inverse=True,
        )
        df = np.bincount(
            inv, np.concatenate([n[a:z] for (_, n, _), (a, z) in zip(pieces, spans, strict=True)]), len(u)
        )
        kept = (
            np.bincount(
                inv, np.concatenate([k[a:z] for (_, _, k), (a, z) in zip(pieces, spans, strict=True)]), len(u)
            )
            > 0
        )
        rank = (np.cumsum(kept) - 1 + offset).astype(np.int32)  # a kept code's column
        offset += int(kept.sum())
        lo = 0
        for col, (a, z) in zip(columns, spans, strict=True):
            col[a:z] = rank[inv[lo : lo + z - a]]
            lo += z - a
        fs.append(u)
        dfs.append(df.astype(np.int64))
        vocab.append(u[kept])
    return np.concatenate(fs), np.concatenate(dfs), np.concatenate(vocab), columns


def _count_buckets(triples, part, parts, reverse, bag, namespace, rows, bits) -> dict:
    """Every bucket's bags (:func:`_bucket_bags`): the statistics of all of them, the kept rows
    (``rows``: candidates, else all) as positions in the bucket's codes, and each bucket's piece
    for :func:`_frequencies`."""
    out: dict = {"bags": 0, "total": 0, "entities": [], "lengths": [], "f": [], "n": [], "pieces": []}
    for lo, fwd, rev in _entity_buckets(triples, part, parts, reverse, bits):
        got = _bucket_bags(lo, fwd, rev, reverse, bag, namespace)
        e, f, n = got["e"], got["f"], got["n"]
        starts = np.flatnonzero(np.r_[True, e[1:] != e[:-1]]) if len(e) else np.empty(0, np.int64)
        out["bags"] += len(starts)
        out["total"] += int(n.sum(dtype=np.int64))
        # The bucket's codes and where each row's code is in them: its columns come from here
        # once the vocabulary is known (no search of the whole vocabulary for each row).
        codes, inv, counts = np.unique(f, return_inverse=True, return_counts=True)
        ents, lengths = e[starts], np.diff(np.r_[starts, len(e)])
        if rows is not None:
            mine = rows[np.searchsorted(rows, lo) : np.searchsorted(rows, lo + (1 << bits))]
            keep_ent = np.isin(ents, mine, assume_unique=True)
            keep = np.repeat(keep_ent, lengths)
            ents, lengths, inv, n = ents[keep_ent], lengths[keep_ent], inv[keep], n[keep]
        out["pieces"].append((codes, counts, np.bincount(inv, minlength=len(codes))))
        out["entities"].append(ents)
        out["lengths"].append(lengths)
        out["f"].append(inv.astype(np.int32))
        out["n"].append(n.astype(np.float32))
    return out


def _cat(arrays: list[np.ndarray], dtype) -> np.ndarray:
    return np.concatenate(arrays).astype(dtype, copy=False) if arrays else np.empty(0, dtype)


def _check_part(part: int, parts: int, bag: str, sizes: tuple[int, int]) -> None:
    """Refuse a part outside 0..parts-1, an unknown bag or a bucket size outside 2^1..2^16 ids."""
    bags.check_bag(bag)
    if not 0 <= part < parts:
        raise ValueError(f"part {part} is not one of 0..{parts - 1}")
    if not 1 <= sizes[0] <= 16:
        raise ValueError(f"entity buckets of 2^{sizes[0]} ids: the bits must be 1..16")


def _part_matrix(got: dict, at: list, n_features: int) -> tuple[np.ndarray, sp.csr_matrix]:
    """The kept bags' entities and their counts as a CSR matrix over the part's vocabulary."""
    entities, lengths = _cat(got["entities"], np.int64), _cat(got["lengths"], np.int64)
    columns = _cat([col[i] for col, i in zip(at, got.pop("f"), strict=True)], np.int32)
    indptr = np.zeros(len(entities) + 1, np.int64)
    np.cumsum(lengths, out=indptr[1:])
    counts = sp.csr_matrix(
        (_cat(got.pop("n"), np.float32), columns, indptr), shape=(len(entities), n_features)
    )
    counts.has_canonical_format = True  # (e, f) unique and sorted in each bucket, buckets in id order
    return entities, counts


def count_part(
    claims_path: str | Path,
    folder: str | Path,
    part: int,
    parts: int,
    reverse: bool = False,
    bag: str = "sets",
    namespace: str = "shared",
    threads: int = 1,
    memory_mb: int | None = None,
    rows: np.ndarray | None = None,
    sizes: tuple[int, int] = (BUCKET_BITS, FEATURE_ROWS),
) -> dict:
    """Unweighted bags of the entities of part ``part`` of ``parts`` into ``folder``.

    Files: ``entities.npy`` (sorted ids of the kept bags), ``features.npy`` (sorted codes of their
    features), ``matrix.{data,indices,indptr}.npy`` (counts: 1 per feature with ``bag="sets"``;
    columns index ``features.npy``), ``df.parquet`` (``f``, ``df``: document frequency of every
    feature over *all* the part's bags) and ``meta.json`` (``bags``: the part's entities with a
    bag, ``total``: the sum of their lengths). ``rows``: keep only these entities' bags (the
    candidates); the statistics still count every bag of the part.

    Linear in the part's statements: the part is cut into buckets of 2^``sizes[0]`` entity ids
    (:data:`BUCKET_BITS`), each grouped on its own, and the vocabulary into ranges of about
    ``sizes[1]`` codes (:data:`FEATURE_ROWS`): no step sorts or hashes the whole part at once.
    Any sizes give the same files.
    """
    from factprobe import scan

    _check_part(part, parts, bag, sizes)
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    con = scan.connect(threads, memory_mb)
    triples = list(_read_triples(con, claims_path, part, parts, reverse))
    con.close()
    if rows is not None:
        rows = np.asarray(rows, np.int64)
        rows = np.unique(rows[part_of(rows, parts) == part])
    got = _count_buckets(triples, part, parts, reverse, bag, namespace, rows, sizes[0])
    del triples
    cuts = _cuts([c for c, _, _ in got["pieces"]], sizes[1])
    f_all, df, features, at = _frequencies(got.pop("pieces"), cuts)
    pq.write_table(pa.table({"f": f_all, "df": df}), folder / "df.parquet")
    del f_all, df
    entities, counts = _part_matrix(got, at, len(features))
    np.save(folder / "entities.npy", entities)
    np.save(folder / "features.npy", features)
    index.save_matrix(folder, counts)
    setting = {"part": int(part), "parts": int(parts), "reverse": reverse, "bag": bag, "namespace": namespace}
    meta = {
        **setting,
        "rows": "every entity" if rows is None else "candidates",
        **{key: int(got[key]) for key in ("bags", "total")},
        **{"entities": int(len(entities)), "features": int(len(features)), "nnz": int(counts.nnz)},
        "seconds": round(time.perf_counter() - t0, 3),
    }
    (folder / "meta.json").write_text(json.dumps(meta, indent=2))
    return meta
