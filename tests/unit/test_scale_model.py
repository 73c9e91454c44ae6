"""benchmarks/scale.py's memory model of DuckDB jobs (issue 15): the log lines it reads and the
bound it extrapolates, on hand-made logs and figures."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import scale  # noqa: E402


def _log(path: Path, *lines: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"2026-11-24 00:00:00,000 INFO x {line}\n" for line in lines))


def test_read_states_parses_the_rule_scripts_lines(tmp_path):
    _log(
        tmp_path / "logs" / "retrieve_shard" / "plausibility" / "0.log",
        "omega: 100 facts, 10 typed entities, 20 forms, 30 valid statements, 40 co-occurrence statements",
        "resident after retrieval: 596 MB (DuckDB limit 543 MB of mem_mb 2172)",
    )
    _log(tmp_path / "logs" / "retrieve_distractors" / "plausibility.log", "gathered 4 shards: 10 rows")
    _log(
        tmp_path / "logs" / "build_probes" / "knowledge.log",
        "resident after building the suite: 300 MB (DuckDB limit 1500 MB of mem_mb 2000)",
    )
    got = scale.read_states(tmp_path)
    assert got == {
        "retrieve_distractors": [
            {"state_mb": 596.0, "limit_mb": 543.0, "mem_mb": 2172.0, "suite": "plausibility", "rows": 100}
        ],
        "build_probes": [
            {"state_mb": 300.0, "limit_mb": 1500.0, "mem_mb": 2000.0, "suite": "knowledge", "rows": 0}
        ],
    }


def _runs(items, jobs):
    return [
        {"items": n, "states": {"r": js, "retrieve_distractors": js}}
        for n, js in zip(items, jobs, strict=True)
    ]


def test_limit_at_full_size_is_the_capped_or_the_fixed_request():
    grown = _runs([1000, 2000], [[{"limit_mb": 500, "mem_mb": 2000}], [{"limit_mb": 1000, "mem_mb": 4000}]])
    # A request that grew with the input reaches common.smk's cap; DuckDB keeps its 1/4 share.
    assert scale.limit_full_mb(grown, "r") == pytest.approx(64000 / 4)
    fixed = _runs([1000, 2000], [[{"limit_mb": 4500, "mem_mb": 6000}]] * 2)
    assert scale.limit_full_mb(fixed, "r") == pytest.approx(4500)


def test_retrieval_state_is_a_line_in_rows_scaled_by_the_suites_rows():
    # state = 100 MB + 1e-4 MB per row exactly; the suite's rows double from 1,000 to 2,000 items.
    def job(rows):
        return {"suite": "s", "rows": rows, "state_mb": 100 + 1e-4 * rows, "limit_mb": 1, "mem_mb": 4}

    runs = _runs([1000, 2000], [[job(100_000), job(200_000)], [job(200_000), job(400_000)]])
    full, how = scale.state_full_mb(runs, "retrieve_distractors")
    # One increment of the suite's rows (300k -> 600k over 1,000 items): linear growth to full size.
    rows_full = 400_000 * (300_000 + 300_000 * (scale.FULL_ENTITIES - 1000) / 1000) / 600_000
    assert full == pytest.approx(100 + 1e-4 * rows_full)
    assert how.startswith("s: state = 100 MB + 104.9 B x rows over 4 jobs")


def test_other_rules_fit_their_largest_state_in_entities():
    runs = _runs([1000, 2000, 4000], [[{"state_mb": 200}], [{"state_mb": 300}], [{"state_mb": 500}]])
    full, _ = scale.state_full_mb(runs, "r")
    # Increments 100 and 300 MB over 1,000 and 3,000 more items: b = 1, 0.1 MB per item.
    assert full == pytest.approx(200 + 0.1 * (scale.FULL_ENTITIES - 1000))


def test_longest_first_schedule_by_hand():
    # 3 cores: 5 -> A, 4 -> B, 3 -> C, 3 -> C (6), 2 -> B (6), 1 -> A (6): wall 6 of 18 s.
    assert scale.lpt_makespan([3, 1, 4, 2, 5, 3], 3) == 6
    # One core sums the jobs; more cores than jobs leaves the longest job.
    assert scale.lpt_makespan([3, 1, 4], 1) == 8 and scale.lpt_makespan([3, 1, 4], 16) == 4
