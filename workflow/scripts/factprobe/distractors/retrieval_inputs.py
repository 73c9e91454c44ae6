"""What a retrieval job reads besides its facts: the suite's Ω (:func:`load_suite_omega`: types,
forms and valid statements, scanned or memory-mapped), the co-occurrence statements and the Sem
index; and the preparation a sharded suite's jobs share (:func:`prepare_universe`, rule
prepare_retrieval), written once and memory-mapped by every shard.
"""

from __future__ import annotations

import ctypes
import logging
import time
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa

from factprobe import arrays, contracts, parallel, scan
from factprobe.contracts import id_ints
from factprobe.distractors.cooccur import Cooccurrence
from factprobe.distractors.omega import Omega, facts_valid, valid_arrays
from factprobe.distractors.semantic import slices
from factprobe.distractors.semantic.index import SemIndex, load_index
from factprobe.distractors.semantic.search import Prefixes, exact_prefixes
from factprobe.registries import needs_every_subject, strategy_setting, tables_of

log = logging.getLogger(__name__)


def load_suite_omega(
    inputs,
    settings: dict,
    threads: int = 1,
    memory_mb: int | None = None,
    only: Iterable[str] | None = None,
    prepared: str | Path | None = None,
) -> tuple[pd.DataFrame, pa.Table, pd.DataFrame, Omega]:
    """Facts, entity forms, statements and Ω(f) of a suite from a rule's inputs (facts,
    entity_forms, claims, types) and its settings (dump, valid_ranks, form_threshold, strategies).

    Out of core: DuckDB scans read only the rows Ω can ask about
    (:mod:`factprobe.scan`): types and forms of the facts' subjects and objects and of
    the entities sharing a declared type with them, statements of the suite's relations (of its
    subjects only, unless co-occurrence fills the subject slot or same-relation pools take every
    object of the relation). The returned ``entity_forms``
    (the Arrow table of :func:`scan.scan_forms_table`; :func:`scan.forms_frame` makes it the
    contract frame) and statements are those restrictions; Ω answers as :func:`suite_omega` on the whole tables.
    DuckDB stays within ``memory_mb`` (the job's share; it spills beyond). ``only``: the fact ids
    of a retrieval shard (:func:`shard_plan`, by subject). The facts returned are then those of
    the shard's relations (same-relation pools take them all), but the statements valid for
    (s, r) are read for the shard's subjects only (every (s, r) of a shard is whole): what Ω
    asks about the shard's facts, so its answers are those of one job.
    ``prepared``: the suite's :func:`prepare_universe` folder; its types and forms (the whole
    suite's, as one job reads them) are memory-mapped instead of scanned, so a shard neither
    scans nor sorts them and reads the pages of what it asks about only.
    """
    facts, mine = shard_facts(contracts.read("facts", inputs.facts), only)
    con = scan.connect(threads, memory_mb)
    # What the preparation holds (co-occurrence statements, the suite's valid statements) is
    # mapped instead of scanned.
    held = prepared_parts(prepared)
    statements, valid, dump_objects = _read_statements(inputs, settings, facts, mine, con, held)
    if VALID in held:
        valid = map_valid(prepared)
    types = entity_forms = None
    if prepared is None:
        types, entity_forms = _scan_universe(inputs, facts, mine, con)
    con.close()
    omega, entity_forms, typed, how = _omega_of(
        types, entity_forms, valid, prepared, settings["form_threshold"]
    )
    del types
    omega.dump_objects = dump_objects
    valid_rows = len(valid[0]) if isinstance(valid, tuple) else len(valid)
    del valid
    _trim_heap()
    log.info(
        "omega: %d facts, %d typed entities, %d forms, %d valid statements, %d co-occurrence statements "
        "(types and forms %s%s)",
        len(mine),
        typed,
        entity_forms.num_rows,
        valid_rows,
        len(statements),
        how,
        "".join(f"; {HELD_NAMES[part]} mapped" for part in sorted(held)),
    )
    return facts, entity_forms, statements, omega


def shard_facts(facts: pd.DataFrame, only: Iterable[str] | None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``(facts of the shard's relations, the shard's facts)``: same-relation pools take every fact
    of a relation; ``only=None`` is the whole suite, both ways."""
    if only is None:
        return facts, facts
    mine = facts[facts["fact_id"].isin(set(only))]
    return facts[facts["property"].isin(set(mine["property"]))].reset_index(drop=True), mine


def _omega_of(types, entity_forms, valid, prepared, threshold) -> tuple[Omega, pa.Table, int, str]:
    """Ω of the scanned types and forms, or of the preparation's mapped ones (``prepared``); with
    the forms, the number of typed entities and how they were read."""
    if prepared is None:
        omega = Omega.from_tables(types, entity_forms, valid, threshold)
        return omega, entity_forms, types["id"].nunique(), "scanned"
    layout, entity_forms = map_universe(prepared)
    omega = Omega.from_arrays(*_layout_args(layout), entity_forms, layout["form_ids"], valid, threshold)
    return omega, entity_forms, len(layout["id_ids"]), "mapped"


def _read_statements(
    inputs, settings: dict, facts: pd.DataFrame, mine: pd.DataFrame, con, held: frozenset = frozenset()
):
    """``(statements, valid, dump_objects)`` of :func:`load_suite_omega`: the relations'
    statements (co-occurrence), the statements valid for the facts' (s, r) (and, for the subject
    side, for their objects) and every valid (relation, object) of the dump (relation pools).
    What ``held`` names (:func:`prepared_parts`) is not read: no statements, valid None."""
    rel_ids = arrays.unique(id_ints(mine["property"]))
    strategies = list(settings.get("strategies", []))
    # The largest scans first: their DuckDB working memory then adds to little of Ω's state.
    statements = (
        scan.scan_statements(inputs.claims, rel_ids, con)
        if "cooccur" in tables_of(strategies) and COOCCUR not in held
        else pd.DataFrame(columns=["subject", "property", "object"])
    )
    valid = None if VALID in held else _scan_valid(inputs, settings, facts, mine, con)
    dump_objects = None
    if "pool" in strategies and strategy_setting(settings, "pool", "source") == "relation":
        dump, ranks = int(settings["dump"]), settings["valid_ranks"]
        dump_objects = scan.scan_valid_objects(inputs.claims, dump, ranks, rel_ids, con)
        listed = facts_valid(facts)[["property", "object"]]
        dump_objects = pd.concat([dump_objects, listed], ignore_index=True)
    return statements, valid, dump_objects


def _scan_valid(inputs, settings: dict, facts: pd.DataFrame, mine: pd.DataFrame, con) -> pd.DataFrame:
    """The statements Ω reads as valid for ``mine``'s facts (those of ``facts``' relations)."""
    # Ω asks valid_for(s, r) of the facts' own pairs; the subject side of co-occurrence also asks
    # whether (s*, r, o) is valid for a fact's object o, and same-relation pools take every
    # object of the relation in the dump, whoever its subject (fluent-mLAMA §3.1): read as
    # distinct (relation, object) pairs, not as the relation's statements.
    rel_ids = arrays.unique(id_ints(mine["property"]))
    dump, ranks = int(settings["dump"]), settings["valid_ranks"]
    objects = id_ints(mine["object"]) if needs_every_subject(settings) else None
    valid = scan.scan_valid(inputs.claims, dump, ranks, rel_ids, id_ints(mine["subject"]), con, objects)
    # Ω reads valid objects as sets per (s, r): a repeated row changes nothing, and de-duplicating
    # millions of rows in pandas cost more memory than the rows themselves.
    listed = facts_valid(facts) if objects is not None else facts_valid(mine)
    return pd.concat([valid, listed], ignore_index=True)


def _scan_universe(inputs, facts: pd.DataFrame, mine: pd.DataFrame, con) -> tuple[pd.DataFrame, pa.Table]:
    """Types of ``mine``'s subjects and objects and of the members of their types, and the
    forms of those entities and of every fact's subject and object (the pools of the shard's
    relations are made of them)."""
    anchor_ids = scan.anchors(mine)
    types = scan.scan_types(inputs.types, anchor_ids, con)
    labelled = arrays.union(types["id"].to_numpy(), arrays.union(anchor_ids, scan.anchors(facts)))
    return types, scan.scan_forms_table(inputs.entity_forms, labelled, con)


#: Files of a :func:`prepare_universe` folder: Ω's sorted arrays (:meth:`Omega.layout`) as
#: ``.npy`` and the forms as an uncompressed Arrow file, all memory-mappable.
UNIVERSE_ARRAYS = ("id_ids", "id_starts", "id_types", "type_types", "type_starts", "type_ids", "form_ids")


UNIVERSE_FORMS = "forms.arrow"


def suite_cooccurrence(
    statements: pd.DataFrame, facts: pd.DataFrame, prepared: str | Path | None
) -> Cooccurrence:
    """The co-occurrence counts of a retrieval job: mapped from its suite's preparation where that
    holds the statements (a shard, restricted to ``facts``' relations), else built from the
    ``statements`` :func:`load_suite_omega` scanned."""
    if COOCCUR in prepared_parts(prepared):
        return Cooccurrence.from_folder(
            Path(prepared) / COOCCUR, arrays.unique(id_ints(facts["property"])).tolist()
        )
    return Cooccurrence(statements)


def prepare_universe(
    inputs,
    folder: str | Path,
    settings: dict | None = None,
    threads: int = 1,
    memory_mb: int | None = None,
) -> dict:
    """Write once per suite what every retrieval shard would otherwise scan or build whole (rule
    prepare_retrieval): the types of all the suite's subjects and objects and
    of the members of their types, and the forms of those entities, in the sorted layout Ω
    searches (:meth:`Omega.layout`), for :func:`map_universe`. The same rows as one job's
    :func:`load_suite_omega` reads, so Ω's answers are one job's.

    ``settings`` (the suite's retrieve settings) add what the shards would each read whole:

    - Sem with ``search: exact`` and ``inputs.index``: the type slice of every declared type of
      the suite's objects (:func:`prepare_slices`) and every object's ranked prefix of
      ``SEM_LIST_FACTOR * n`` (:func:`~factprobe.distractors.semantic.search.exact_prefixes`);
    - co-occurrence (PROBELM Algorithm 1 counts over every subject of a relation): the
      relations' statements from ``inputs.claims``, sorted both ways (:meth:`Cooccurrence.save`);
    - where Ω holds every subject of a relation (the subject side, relation pools): the valid
      statements of one job (those of every fact's subject and object), sorted by (s, r) key,
      instead of each shard reading the (·, r, o) statements of hub objects again.

    Returns the row counts."""
    settings = settings or {}
    facts = contracts.read("facts", inputs.facts)
    con = scan.connect(threads, memory_mb)
    folder = Path(folder)
    counts = _prepare_statements(inputs, settings, facts, folder, con)
    types, entity_forms = _scan_universe(inputs, facts, facts, con)
    con.close()
    if counts:
        log.info("statements held for the shards: %s", counts)
    no_valid = pd.DataFrame({c: np.empty(0, np.int64) for c in ("subject", "property", "object")})
    layout = Omega.from_tables(types, entity_forms, no_valid).layout()
    table = entity_forms.combine_chunks()
    counts.update(_save_universe(folder, layout, table))
    if settings.get("search") == "exact" and _optional(inputs, "index") is not None:
        omega = Omega.from_arrays(*_layout_args(layout), table, layout["form_ids"], no_valid)
        counts.update(_prepare_exact_sem(inputs.index, omega, facts, settings.get("n"), folder, threads))
    return counts


def _prepare_statements(inputs, settings: dict, facts: pd.DataFrame, folder: Path, con) -> dict:
    """The statements the shards would each read whole (:func:`prepare_universe`): the
    relations' statements for co-occurrence, one job's valid statements where Ω holds every
    subject of a relation. Returns their row counts."""
    counts = {}
    if "cooccur" in tables_of(settings.get("strategies", [])):
        rel_ids = arrays.unique(id_ints(facts["property"]))
        counts["statements"] = Cooccurrence(scan.scan_statements(inputs.claims, rel_ids, con)).save(
            folder / COOCCUR
        )
    if needs_every_subject(settings):
        keys, objects = valid_arrays(_scan_valid(inputs, settings, facts, facts, con))
        (folder / VALID).mkdir(parents=True, exist_ok=True)
        np.save(folder / VALID / "keys.npy", keys)
        np.save(folder / VALID / "objects.npy", objects)
        counts["valid"] = len(keys)
    return counts


def _save_universe(folder: Path, layout: dict, table: pa.Table) -> dict:
    """Ω's sorted arrays and the forms' Arrow file (:func:`map_universe` maps them); their counts."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in UNIVERSE_ARRAYS:
        np.save(folder / f"{name}.npy", np.ascontiguousarray(layout[name], dtype=np.int64))
    with pa.OSFile(str(folder / UNIVERSE_FORMS), "wb") as sink, pa.ipc.new_file(sink, table.schema) as out:
        out.write_table(table)
    counts = {"typed": len(layout["id_ids"]), "types": len(layout["type_types"]), "forms": table.num_rows}
    log.info(
        "universe: %d typed entities of %d types, %d forms", counts["typed"], counts["types"], counts["forms"]
    )
    return counts


def _prepare_exact_sem(
    index_path, omega: Omega, facts: pd.DataFrame, n: int | None, folder: Path, threads: int
) -> dict:
    """Exact Sem's shared structures: the type slice of every declared type of the objects and,
    with ``n``, every object's ranked prefix of ``SEM_LIST_FACTOR * n``; their counts."""
    counts = {}
    index = load_index(index_path, "exact")
    counts["slices"] = prepare_slices(index, omega, facts, folder / SLICES, threads)
    if n is not None:
        index.slices = folder / SLICES
        started, cpu = time.perf_counter(), parallel.cpu_clock()
        objects = id_ints(facts["object"])
        held = exact_prefixes(index, omega, objects, SEM_LIST_FACTOR * n, workers=threads)
        held.save(folder / PREFIXES)
        counts["prefixes"] = len(held.objects)
        # benchmarks/scale.py reads the CPU figure (the workers' included).
        log.info(
            "exact Sem prefixes: %d objects in %.2f s, CPU %.2f s in %d process(es)",
            len(held.objects),
            time.perf_counter() - started,
            parallel.cpu_clock() - cpu,
            threads,
        )
    return counts


def _optional(inputs, name: str):
    """Input ``name`` of a rule's inputs (Snakemake's named list or a namespace), None if absent:
    asked by key where there are keys, since a named list is a list (``inputs.index`` would be
    its ``list.index`` method)."""
    if callable(getattr(inputs, "keys", None)):
        return inputs[name] if name in inputs.keys() else None
    return getattr(inputs, name, None)


#: Sub-folders of a preparation: one TypeSlice folder per declared type (SemIndex.slices), and
#: the objects' ranked prefixes (SemIndex.prefixes).
SLICES, PREFIXES = "slices", "prefixes"


#: Sub-folders of a preparation holding the relations' statements (:meth:`Cooccurrence.save`)
#: and one job's valid statements (``keys.npy``, ``objects.npy`` of Ω's (s, r)-sorted arrays).
COOCCUR, VALID = "cooccur", "valid"


HELD_NAMES = {COOCCUR: "co-occurrence statements", VALID: "valid statements"}


def prepared_parts(prepared: str | Path | None) -> frozenset:
    """Which of :data:`COOCCUR` and :data:`VALID` a preparation folder holds."""
    if prepared is None:
        return frozenset()
    return frozenset(part for part in (COOCCUR, VALID) if (Path(prepared) / part).is_dir())


def map_valid(prepared: str | Path) -> tuple[np.ndarray, np.ndarray]:
    """A preparation's valid statements as Ω's ``(keys, objects)`` arrays, memory-mapped."""
    folder = Path(prepared) / VALID
    missing = [n for n in ("keys.npy", "objects.npy") if not (folder / n).exists()]
    if missing:
        raise FileNotFoundError(f"{folder}: no {missing[0]} (an interrupted prepare_retrieval); rerun it")
    return np.load(folder / "keys.npy", mmap_mode="r"), np.load(folder / "objects.npy", mmap_mode="r")


#: Sem lists hold this many times n: Temp+Sem may drop Sem items already in the temporal list.
SEM_LIST_FACTOR = 2


def prepared_index(index: SemIndex, prepared: str | Path | None) -> SemIndex:
    """``index`` reading a suite preparation's type slices and ranked prefixes, where it holds them."""
    if prepared is not None and (Path(prepared) / SLICES).is_dir():
        index.slices = Path(prepared) / SLICES
    if prepared is not None and (Path(prepared) / PREFIXES).is_dir():
        index.prefixes = Prefixes.from_folder(Path(prepared) / PREFIXES)
    return index


def prepare_slices(index: SemIndex, omega: Omega, facts: pd.DataFrame, folder: Path, workers: int = 1) -> int:
    """Save the exact-search type slice (:class:`~factprobe.distractors.semantic.slices.TypeSlice`) of
    every declared type of the facts' objects into ``folder/<type>``, the slices each shard would
    otherwise build again from the index (Sem, distractors paper §3.3). Returns their number.

    Each slice is built and saved on its own, so ``workers`` forked processes share them
    (:func:`factprobe.parallel.ordered_map`), largest type first so that a giant class does not
    end the run alone; the files do not depend on ``workers`` (this job's loading is on
    the knowledge suite's critical path at full size)."""
    global _SLICING
    objects = arrays.unique(id_ints(facts["object"]))
    wanted = arrays.unique(
        np.concatenate([omega.types_of(o) for o in objects.tolist()] + [np.empty(0, np.int64)])
    )
    sizes = np.array([len(omega.members(np.array([t], np.int64))) for t in wanted.tolist()], np.int64)
    by_size = np.argsort(-sizes, kind="stable")
    # A type larger than a part is split here, once, and its parts built side by side: a
    # giant class's slice is ≈ 10⁹ non-zeros at full size.
    split, items = {}, []
    for t, size in zip(wanted[by_size].tolist(), sizes[by_size].tolist(), strict=True):
        if size > slices.SLICE_PART:
            split[t] = slices.part_rows(index, omega.members(np.array([t], np.int64)))
            items += [(t, i) for i in range(len(split[t]))]
        else:
            items.append((t, None))
    started, nnz, cpu = time.perf_counter(), 0, 0.0
    _SLICING = (index, omega, Path(folder), split)
    try:
        for done in parallel.ordered_map(_save_slice, items, workers):
            nnz += done.value
            cpu += done.cpu_s
    finally:
        _SLICING = None
    # benchmarks/scale.py reads the CPU figure (the workers' included).
    log.info(
        "type slices: %d types (%d split into %d parts), %d non-zeros in %.2f s, CPU %.2f s in %d process(es)",
        len(wanted),
        len(split),
        sum(len(p) for p in split.values()),
        nnz,
        time.perf_counter() - started,
        cpu,
        workers,
    )
    return len(wanted)


#: ``(index, Ω, folder, {type: part rows})`` of the running :func:`prepare_slices`, inherited by
#: its forked workers.
_SLICING: tuple | None = None


def _save_slice(item: tuple[int, int | None]) -> int:
    """Build and save type ``t``'s slice, or its part ``i`` (:func:`prepare_slices`); returns
    its non-zeros."""
    index, omega, folder, split = _SLICING
    t, i = item
    if i is None:
        parts = slices.type_parts(index, omega.members(np.array([t], np.int64)))
        slices.save_parts(parts, folder / str(t))
    else:
        parts = [slices.part_slice(index, split[t][i])]
        parts[0].save(folder / str(t) / str(i))
    return sum(0 if p.XT is None else int(p.XT.nnz) for p in parts)


def map_universe(folder: str | Path) -> tuple[dict[str, np.ndarray], pa.Table]:
    """The arrays and forms of a :func:`prepare_universe` folder, memory-mapped (read-only)."""
    folder = Path(folder)
    missing = [
        n for n in (*[f"{a}.npy" for a in UNIVERSE_ARRAYS], UNIVERSE_FORMS) if not (folder / n).exists()
    ]
    if missing:
        raise FileNotFoundError(f"{folder}: no {missing[0]} (an interrupted prepare_retrieval); rerun it")
    layout = {name: np.load(folder / f"{name}.npy", mmap_mode="r") for name in UNIVERSE_ARRAYS}
    forms = pa.ipc.open_file(pa.memory_map(str(folder / UNIVERSE_FORMS))).read_all()
    return layout, forms


def _layout_args(layout: dict[str, np.ndarray]) -> tuple[tuple, tuple]:
    return (
        (layout["id_ids"], layout["id_starts"], layout["id_types"]),
        (layout["type_types"], layout["type_starts"], layout["type_ids"]),
    )


def resident_split_mb() -> dict[str, float]:
    """The process's resident memory now by kind (MB; Linux ``RssAnon``, ``RssFile``): a shard's
    own memory apart from the clean pages of the files it maps (a preparation's tables, the
    index), which every shard on a node shares from the page cache. Empty elsewhere."""
    out = {}
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(("RssAnon:", "RssFile:")):
                    out[line.split(":")[0]] = int(line.split()[1]) / 1024
    except OSError:
        pass
    return out


def _trim_heap() -> None:
    """Hand the heap's freed pages back to the system (glibc ``malloc_trim``): the scans'
    temporaries are freed by then, but glibc keeps their pages, and a retrieval job's RSS would
    carry them through the per-fact loop (about 90 MB of 570 in a 1M-entity shard)."""
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass  # not glibc: nothing to trim
