"""How many parts a dump's semantic index is built in (:mod:`.index_parts`).

Standard library only: ``workflow/rules/functions/distractors.smk`` plans the ``sem_bags`` jobs while parsing,
before any table exists, so the number of parts comes from the dump file's size.
"""

from __future__ import annotations

import math
import os

#: Non-zeros a part holds at most, by the estimate below. Counting a part in memory, bucket by
#: bucket (:func:`.part_bags.count_part`), takes ≈ 70 bytes of peak RSS a kept non-zero above the
#: imports (the workflow's job with reverse features and candidate rows at 4 M entities: 4.18 GB
#: for 59 M non-zeros, 24.9 M statements; the DuckDB count before it: 3.39 GB and 2.2 GB spilled),
#: so ≈ 10.5 GB a part job: under the 16 GB a job may ask for.
PART_NNZ = 150_000_000
#: Non-zeros of the index per byte of compressed dump (the default features: sets, shared
#: namespace, no reverse). Measured: 0.0068 on the Wikidata-shaped synthetic dumps of
#: benchmarks/scale_dumps.py (250 k entities: 4.16 M non-zeros from 616 MB of .json.gz, 16.6 a
#: bag); whole Wikidata, ≈ 1.8 G non-zeros (110 M bags of that size) in a ≈ 140 GB .json.gz,
#: gives ≈ 0.013. Rounded up (reverse features or a denser dump give more): ≈ 14 parts at full size.
NNZ_PER_DUMP_BYTE = 0.015
#: Compressed dump bytes per part.
PART_DUMP_BYTES = int(PART_NNZ / NNZ_PER_DUMP_BYTE)


def parts_for(dump_bytes: int | None, part_bytes: int = PART_DUMP_BYTES) -> int:
    """Number of parts of a dump's index: one per ``part_bytes`` of dump file (1 when unknown)."""
    if not dump_bytes or dump_bytes <= 0:
        return 1
    return max(1, math.ceil(dump_bytes / part_bytes))


def dump_parts(path: str | os.PathLike | None) -> int:
    """:func:`parts_for` the dump file at ``path``; 1 while it is not there (not yet downloaded:
    run the workflow again after the download to plan the parts of a large dump)."""
    try:
        return parts_for(os.path.getsize(path)) if path else 1
    except OSError:
        return 1
