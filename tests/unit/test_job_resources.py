"""Job memory and runtime scale with the input size (profiles/slurm)."""

from __future__ import annotations

import pytest
from factprobe.plumbing.diskspace import input_scaled


def test_input_scaled_is_floor_plus_factor_times_input_mb_doubled_on_retry(tmp_path):
    a, b = tmp_path / "a.parquet", tmp_path / "idx"
    a.write_bytes(b"x" * 3_000_000)
    b.mkdir()
    (b / "matrix.npz").write_bytes(b"x" * 2_000_000)  # folders count with all their files
    mem = input_scaled("mem_mb", 40, 2000, "build_probes")
    assert mem.__name__ == "build_probes_mem_mb"
    # inputs as Snakemake hands them: plain paths and a named input holding a list
    assert mem(None, [str(a), [str(b)]]) == 2000 + 40 * 5
    assert mem(None, [str(a), [str(b)]], attempt=2) == 2 * (2000 + 40 * 5)
    capped = input_scaled("mem_mb", 40, 2000, "build_probes", 2100)
    assert (capped(None, [str(a)]), capped(None, [str(a)], attempt=2)) == (2100, 4200)
    runtime = input_scaled("runtime", 0.25, 30, "x")
    assert runtime(None, [str(a)]) == 31  # 30 + 0.75, rounded up
    with pytest.raises(FileNotFoundError):  # Snakemake re-evaluates once the input exists
        mem(None, [str(tmp_path / "missing.parquet")])
