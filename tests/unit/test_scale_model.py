"""benchmarks/scale.py's memory model of DuckDB jobs: the log lines it reads and the
bound it extrapolates, on hand-made logs and figures."""

from __future__ import annotations

import json
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
    # A request that grew with the input reaches the rule's cap; DuckDB keeps its 1/4 share.
    assert scale.limit_full_mb(grown, "r") == pytest.approx(64000 / 4)
    fixed = _runs([1000, 2000], [[{"limit_mb": 4500, "mem_mb": 6000}]] * 2)
    assert scale.limit_full_mb(fixed, "r") == pytest.approx(4500)


def test_retrieval_state_is_a_line_in_rows_divided_over_parts_with_the_measured_imbalance():
    # state = 100 MB + 1e-4 MB per row exactly; two shards per size, the suite's rows double
    # from 1,000 to 2,000 items, its largest shard holds 2/3 of them (imbalance 4/3).
    def job(rows):
        return {"suite": "s", "rows": rows, "state_mb": 100 + 1e-4 * rows, "limit_mb": 1, "mem_mb": 4}

    runs = _runs([1000, 2000], [[job(100_000), job(200_000)], [job(200_000), job(400_000)]])
    fixed, var, how = scale.unit_memory(runs, "retrieve_distractors", "s", [], 130.0)
    # One increment of the suite's rows (300k -> 600k over 1,000 items): linear to full size.
    rows_full = 300_000 + 300_000 * (scale.FULL_ENTITIES - 1000) / 1000
    assert fixed == pytest.approx(100)
    assert var == pytest.approx(1e-4 * rows_full * 4 / 3)
    # In two parts the largest holds 2/3 of the rows, as measured; in 8, a sixth.
    model = scale.UnitModel("retrieve_distractors", "s", 0, 0, fixed, var, 0, how)
    assert model.state_mb(2) == pytest.approx(100 + 1e-4 * rows_full * 2 / 3)
    assert model.state_mb(8) == pytest.approx(100 + 1e-4 * rows_full / 6)
    assert how.startswith("state = 100 MB + 104.9 B x rows over 4 jobs")


def test_other_rules_fit_what_their_parts_hold_above_the_floor_in_entities():
    # Two parts per size; the largest holds 200, 300, 500 MB, 100 of them the floor: the unit
    # holds 2 x (100, 200, 400) MB above it, increments 200 and 600 MB over 1,000 and 3,000 more
    # items: b = 1, 0.2 MB per item, to divide over the parts at full size.
    runs = _runs(
        [1000, 2000, 4000],
        [
            [{"state_mb": 200, "suite": "u"}] * 2,
            [{"state_mb": 300, "suite": "u"}] * 2,
            [{"state_mb": 500, "suite": "u"}] * 2,
        ],
    )
    fixed, var, _ = scale.unit_memory(runs, "r", "u", [], 100.0)
    assert fixed == 100.0
    assert var == pytest.approx(200 + 0.2 * (scale.FULL_ENTITIES - 1000))
    # Without state lines: the parts' peak RSS from the benchmark files, the same way.
    series = [{"parts": 2, "rss_mb": m} for m in (200, 300, 500)]
    runs = [{"items": n} for n in (1000, 2000, 4000)]
    assert scale.unit_memory(runs, "r", "u", series, 100.0)[1] == pytest.approx(var)


def test_duckdb_share_fills_the_cores_share_of_the_node_and_no_more():
    # 1 thread: 128 GB / 16 cores = 8 GB per job; state 2 GB leaves DuckDB 6 GB of its 16 GB limit.
    m = scale.UnitModel("retrieve_distractors", "s", 0, 0, 2048, 0, 16 * 1024, "", threads=1)
    assert m.duckdb_share(1) == pytest.approx(6 * 1024) and m.job_mb(1) == pytest.approx(8 * 1024)
    # A limit below that share stays; a state above it leaves DuckDB its minimum.
    assert scale.UnitModel("r", "s", 0, 0, 2048, 0, 3000, "").duckdb_share(1) == 3000
    big = scale.UnitModel("r", "s", 0, 0, 40 * 1024, 0, 16 * 1024, "")
    assert big.duckdb_share(1) == scale.DUCKDB_MIN_MB and big.job_mb(1) == 40 * 1024 + scale.DUCKDB_MIN_MB
    # The sensitivity line's jobs keep the workflow's limit.
    assert scale.UnitModel("r", "s", 0, 0, 2048, 0, 16 * 1024, "", fit_duckdb=False).job_mb(1) == 18 * 1024
    # Not a DuckDB job: no share.
    assert scale.UnitModel("r", "s", 0, 0, 500, 0, 0, "").job_mb(1) == 500


def test_parts_are_the_shards_or_more_to_fit_the_job_cap():
    # 100 GB that divide, 1 GB that does not, DuckDB at its 1 GB minimum: 30 GB per part -> 4 parts.
    m = scale.UnitModel("retrieve_distractors", "s", 10.0, 0, 1024, 100 * 1024, 16 * 1024, "")
    assert scale.parts_needed(m, shards=1) == 4
    # More shards than memory needs: the shards.
    assert scale.parts_needed(m, shards=16) == 16
    # A stage that does not split runs whole, whatever its memory.
    assert scale.parts_needed(scale.UnitModel("build_probes", "s", 10.0, 0, 1024, 100 * 1024, 0, ""), 8) == 1
    # The index's parts: semantic.part_count's for a 97 GB dump (one per 10 GB, rounded up).
    assert scale.planned_shards("sem_bags") == 10 and scale.planned_shards("retrieve_distractors") is None


def test_shards_chosen_where_the_schedule_ends_first(monkeypatch):
    monkeypatch.setattr(scale, "MAX_SHARDS", 8)
    unit = scale.UnitModel
    # One suite: 16 core-hours that divide and 0.25 h of loading per shard, on one 16-core node.
    # By hand: S shards run side by side (S <= 16), wall = 16 / S + 0.25 h: 16.25, 8.25, 4.25,
    # 2.25 h for S = 1, 2, 4, 8; CPU-h = 16 + 0.25 S.
    models = {"retrieve_distractors": [unit("retrieve_distractors", "a", 16 * 3600, 900, 100, 0, 0, "")]}
    shards, wall, tried = scale.choose_shards(models, 1)
    assert [k for k, _, _ in tried] == [1, 2, 4, 8]
    assert [w for _, w, _ in tried] == pytest.approx([16.25, 8.25, 4.25, 2.25])
    assert [c for _, _, c in tried] == pytest.approx([16.25, 16.5, 17.0, 18.0])
    assert shards == {"retrieve_distractors": 8} and wall == pytest.approx(2.25)
    # Loading of 3 h a shard: 16 + 3 = 19, 8 + 3 = 11, 4 + 3 = 7, 2 + 3 = 5 h: still 8, but with
    # 4 cores a node the 8 shards queue two deep (2 x 5 h = 10 h) and 4 shards win (7 h).
    models3 = {
        "retrieve_distractors": [unit("retrieve_distractors", "a", 16 * 3600, 3 * 3600, 100, 0, 0, "")]
    }
    monkeypatch.setattr(scale, "NODE_CORES", 4)
    shards, wall, tried = scale.choose_shards(models3, 1)
    assert [w for _, w, _ in tried] == pytest.approx([19, 11, 7, 10])
    assert shards == {"retrieve_distractors": 4} and wall == pytest.approx(7)


def _job(name, hours, mem_gb=1.0, cores=1, deps=()):
    return scale.Job(name, hours, cores, mem_gb, tuple(deps))


def test_memory_forbids_running_side_by_side():
    # 3 jobs of 70 GB, 1 core each, on a 16-core / 128 GB node: never two at once, 1 + 2 + 3 h.
    jobs = [_job("a", 1, 70), _job("b", 2, 70), _job("c", 3, 70)]
    wall, start = scale.list_schedule(jobs, 1, 16, 128)
    assert wall == pytest.approx(6) and start == {"c": 0, "b": 3, "a": 5}
    # 60 GB each: two at a time. c and b start, b ends at 2, a runs 2-3: 3 h.
    jobs60 = [_job(j.name, j.hours, 60) for j in jobs]
    assert scale.list_schedule(jobs60, 1, 16, 128)[0] == pytest.approx(3)
    # Two nodes (one job per node): c and b side by side, a after b on b's node: 3 h.
    assert scale.list_schedule(jobs, 2, 16, 128)[0] == pytest.approx(3)


def test_cores_and_dependencies_by_hand():
    # Three 10-core jobs of 1 h: one at a time on a 16-core node, one per node on 4.
    jobs = [_job(n, 1, 10, cores=10) for n in "abc"]
    assert scale.list_schedule(jobs, 1, 16, 128)[0] == pytest.approx(3)
    assert scale.list_schedule(jobs, 4, 16, 128)[0] == pytest.approx(1)
    # a (2 h) -> b (1 h); c (1 h) starts at once beside a: 3 h, b at 2.
    wall, start = scale.list_schedule([_job("a", 2), _job("b", 1, deps=["a"]), _job("c", 1)], 1, 16, 128)
    assert wall == pytest.approx(3) and start["b"] == pytest.approx(2) and start["c"] == 0
    # The critical path goes first: x (1 h) -> y (3 h) beats z (2 h) for the only core: 4 + 2 h.
    chain = [_job("x", 1, cores=16), _job("y", 3, cores=16, deps=["x"]), _job("z", 2, cores=16)]
    wall, start = scale.list_schedule(chain, 1, 16, 128)
    assert start == {"x": 0, "y": 1, "z": 4} and wall == pytest.approx(6)
    # A job larger than a node runs alone, clamped; one waiting for a missing job is an error.
    assert scale.list_schedule([_job("huge", 1, 500), _job("s", 1, 1)], 1, 16, 128)[0] == pytest.approx(2)
    with pytest.raises(ValueError, match="no job can start"):
        scale.list_schedule([_job("a", 1, deps=["missing"])], 1, 16, 128)


def test_exponent_spread_over_three_sizes():
    # y = 10, 20, 80 at n = 1, 2, 4: k = 1 then 2; increments 10 and 70 over 1 and 3: b = log 7 / log 3.
    assert scale.local_exponents([1, 2, 4], [10, 20, 80]) == pytest.approx([1.0, 2.0])
    assert scale.spread([1, 2, 4], [10, 20, 80], 0.0) == "1.77 [k 1.00-2.00]"
    # One usable increment: '-' (linear assumed), the step still shown.
    assert scale.spread([1, 2], [10, 20], 0.0) == "- [k 1.00-1.00]"


def test_job_paths_map_to_stage_unit_and_part():
    assert scale.job_key(Path("build_sem_index/20190201/3.tsv")) == ("build_sem_index", "20190201", "3")
    assert scale.job_key(Path("retrieve_shard/knowledge/0.log")) == ("retrieve_distractors", "knowledge", "0")
    assert scale.job_key(Path("build_probes/knowledge.tsv")) == ("build_probes", "knowledge", "")


def test_full_jobs_split_units_and_wait_for_their_own_suite():
    unit = scale.UnitModel
    models = {
        "extract_dump": [unit("extract_dump", "d", 4 * 3600, 0, 100, 0, 0, "", 4)],
        "build_probes": [unit("build_probes", s, 3600, 0, 100, 0, 0, "") for s in ("a", "b")],
        # 200 GB that divide: 7 parts of 29 GB + the floor fit 32 GB (4 shards asked for).
        "retrieve_distractors": [unit("retrieve_distractors", "a", 3600, 60, 100, 200 * 1024, 0, "")],
    }
    jobs, parts = scale.full_jobs(models, {"retrieve_distractors": 4})
    by = {j.name: j for j in jobs}
    assert parts[("retrieve_distractors", "a")] == 7
    assert by["extract_dump/d/0"].hours == pytest.approx(1.0) and by["extract_dump/d/0"].cores == 4
    assert by["build_probes/a/0"].deps == ("extract_dump/d/0",)
    # Each part: a seventh of the CPU plus the per-part loading; it waits for its suite's probes only.
    part = by["retrieve_distractors/a/6"]
    assert part.hours == pytest.approx((3600 / 7 + 60) / 3600) and part.deps == ("build_probes/a/0",)
    assert part.mem_gb == pytest.approx((100 + 200 * 1024 / 7) / 1024)


def test_saved_runs_without_job_records_get_one_per_unit():
    run = {
        "dumps": {"20141201": {"items": 1}, "20190201": {"items": 1}, "classes": 3},
        "rules": {"extract_dump": {"jobs": 2, "cpu_s": 10.0, "wall_s": 8.0, "rss_mb": 300.0}},
        "retrieval": {},
    }
    assert scale.run_jobs(run) == [
        {"stage": "extract_dump", "unit": d, "part": "", "wall_s": 4.0, "cpu_s": 5.0, "rss_mb": 300.0}
        for d in ("20141201", "20190201")
    ]


def test_read_jobs_keeps_each_part_with_its_true_cpu(tmp_path):
    for rel, cpu, rss in (
        ("build_sem_index/20190201/0.tsv", 1.0, 300),
        ("build_sem_index/20190201/1.tsv", 2.0, 400),
    ):
        path = tmp_path / "benchmarks" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"s\th:m:s\tmax_rss\tcpu_time\n5.0\t0:00:05\t{rss}\t{cpu}\n")
    (tmp_path / "jobcpu").mkdir()
    record = {"rule": "build_sem_index", "log": ["logs/build_sem_index/20190201/1.log"], "cpu_s": 3.5}
    (tmp_path / "jobcpu" / "x.json").write_text(json.dumps(record))
    jobs = scale.read_jobs(tmp_path)
    assert [(j["unit"], j["part"], j["cpu_s"], j["rss_mb"]) for j in jobs] == [
        ("20190201", "0", 1.0, 300.0),  # Snakemake's figure: no true record
        ("20190201", "1", 3.5, 400.0),
    ]
    # Per unit: CPU summed, parts counted, the largest part's peak.
    series = scale.unit_series([{"jobs": jobs}], "build_sem_index")
    assert series == {"20190201": [{"cpu_s": 4.5, "parts": 2, "rss_mb": 400.0, "worker_mb": 0.0}]}


def test_workdir_leaves_out_suites_of_listed_facts(tmp_path):
    import yaml

    (tmp_path / "dumps").mkdir()
    stats = {d: {"path": f"/x/{d}.json.gz", "items": 1} for d in ("20141201", "20190201")}
    (tmp_path / "dumps" / "stats.json").write_text(json.dumps(stats))
    scale.make_workdir(tmp_path, 1, 7, shards=2)
    config = yaml.safe_load((tmp_path / "config" / "config.yaml").read_text())
    # The project's config has a judged suite from a triples file: real facts, not in synthetic dumps.
    assert "judged" not in config["suites"] and config["suites"]
    assert all(b["n_facts"] == 7 and "source" not in b for b in config["suites"].values())
    assert "judged" not in config["metrics"]["human_alignment"]["suites"]
    assert config["distractors"]["shards"] == 2


def test_the_preparation_scales_its_loading_in_entities_and_its_ranking_per_fact(monkeypatch):
    monkeypatch.setattr(scale, "FULL_ENTITIES", 400)
    monkeypatch.setattr(scale, "FULL_FACTS", 1000)
    runs = [
        {"items": n, "retrieval": {"k": {"facts": 100, "prep_search_s": search, "prep_slices_s": search / 2}}}
        for n, search in ((100, 5.0), (200, 10.0), (300, 15.0))
    ]
    # Loading (CPU - ranking - slices): 10, 20, 30 s at 100, 200, 300 entities, b = 1: 40 s at 400.
    # Slices 2.5, 5, 7.5 s: 10 s at 400. Ranking: 15 s for 100 facts at 300 entities = 0.15 s a
    # fact, x 1000 facts x 400 / 300 entities = 200 s. Slices and ranking divide.
    loading, dividing, how = scale.prepare_full(runs, "k", [17.5, 35.0, 52.5])
    assert (loading, dividing) == pytest.approx((40, 210)) and "b = 1.00" in how
    # On 4 threads only the ranking divides: 40 + 200 / 4 = 90 s of wall, 4 cores held.
    unit = scale.UnitModel("prepare_retrieval", "k", 240, 0, 100, 0, 0, "", 4, serial_cpu_s=40)
    monkeypatch.setitem(scale.STAGES, "prepare_retrieval", scale.Stage("suite", 4))
    (job,), _ = scale.full_jobs({"prepare_retrieval": [unit]})
    assert job.hours * 3600 == pytest.approx(90) and job.cores == 4


def test_build_probes_divides_all_but_its_main_thread_over_its_threads(monkeypatch):
    """build_probes logs its parts' CPU (forked processes) and its main thread's CPU: the main
    thread's is modelled on one core, the rest of the job's CPU divides over its threads."""
    monkeypatch.setattr(scale, "FULL_ENTITIES", 400)
    runs = [
        {"items": n, "probes": {"k": {"parts_s": 0.6 * n / 10, "main_s": n / 50}}} for n in (100, 200, 300)
    ]
    # CPU 10, 20, 30 s; main thread 2, 4, 6 -> 8 s at 400; the rest 8, 16, 24 -> 32 s at 400.
    serial, dividing, how = scale.probes_full(runs, "k", [10.0, 20.0, 30.0])
    assert (serial, dividing) == pytest.approx((8, 32)) and "(parts 6.0 -> 18.0 s)" in how
    assert "main thread" in how
    unit = scale.UnitModel("build_probes", "k", 40, 0, 100, 0, 0, "", 16, serial_cpu_s=8)
    (job,), _ = scale.full_jobs({"build_probes": [unit]})
    assert scale.STAGES["build_probes"].threads == 16
    assert job.hours * 3600 == pytest.approx(8 + 32 / 16) and job.cores == 16
    # A unit given fewer threads (its workers' memory, workers_that_fit) asks for those cores.
    unit = scale.UnitModel("build_probes", "k", 40, 0, 100, 0, 0, "", 3, serial_cpu_s=8)
    (job,), _ = scale.full_jobs({"build_probes": [unit]})
    assert job.hours * 3600 == pytest.approx(8 + 32 / 3) and job.cores == 3
    # Runs saved before the main thread was logged: all but the parts on one core.
    for run in runs:
        del run["probes"]["k"]["main_s"]
    serial, dividing, how = scale.probes_full(runs, "k", [10.0, 20.0, 30.0])
    assert (serial, dividing) == pytest.approx((16, 24)) and "all but the parts" in how
    # Runs saved before the parts were logged: all of it on one core.
    assert scale.probes_full([{"items": n} for n in (100, 200, 300)], "k", [10.0, 20.0, 30.0])[:2] == (
        pytest.approx(40),
        0.0,
    )


def test_forked_workers_memory_is_fitted_and_counted_once_per_thread():
    """A job's forked workers (benchmarks/jobcpu.py samples the largest one's PSS): their peak
    fitted in entities, times the job's threads at full size; nothing where none was sampled."""
    n = [1e6, 2e6, 4e6]
    series = [{"worker_mb": w} for w in (100.0, 160.0, 280.0)]
    # Increments 60 MB over 1M entities and 180 over 3M: b = 1; at 119M: 100 + 180 x 118/3 MB.
    mb, how = scale.workers_memory(n, series, 16)
    assert mb == pytest.approx(100 + 180 * 118 / 3)
    assert "b = 1.00" in how
    assert scale.workers_memory(n, series, 1) == (0.0, "")
    # 32 GB = 32,768 MB: 6,000 of state and DuckDB's smallest limit of 1,024 leave 25,744 MB,
    # two workers of 9,000 MB; workers of 1,000 MB: all 16; workers above the room: still one.
    assert scale.workers_that_fit(16, 9000.0, 6000.0) == 2
    assert scale.workers_that_fit(16, 1000.0, 6000.0) == 16
    assert scale.workers_that_fit(16, 40000.0, 6000.0) == 1
    assert scale.workers_memory(n, [*series[:2], {"worker_mb": 0.0}], 16) == (0.0, "")


def test_timeline_facts_per_monthly_slice_by_hand():
    import scale_timeline as st

    # 400,000 new items a month x 6 statements x 10 % on the common relations x 80 % labelled
    assert st.monthly_facts(400_000, 6.0, 0.10, 0.80) == pytest.approx(192_000)
    # 5,000 facts at that rate need 5,000 / (400,000 x 6 x 0.8) = 0.2604 % of the statements
    assert st.break_even_share(400_000, 6.0, 0.80, 5_000) == pytest.approx(5_000 / 1_920_000)
    # the stream's figures: 80 new ids in 65 s over a 30.44-day month
    assert st.ITEMS_PER_MONTH_HIGH == pytest.approx(80 / 65 * 86_400 * 30.44)


def test_timeline_peak_extrapolates_what_the_job_holds_beside_duckdb():
    import scale_timeline as st

    # beside a 100 MB DuckDB limit the job holds 300, 350, 400 MB at 1, 2, 3 M rows: an
    # increment of 50 MB per M rows (exponent 1), so 300 + 50 x 99 = 5,250 MB at 100 M rows,
    # plus the full-size limit 2,000 MB
    runs = [
        {"kind": "duckdb", "rows": r, "memory_mb": 100, "peak_mb": 100 + p}
        for r, p in ((1e6, 300), (2e6, 350), (3e6, 400))
    ]
    peak, b = st.full_peak_mb(runs, "duckdb", 100e6, 2_000.0)
    assert b == pytest.approx(1.0)
    assert peak == pytest.approx(5_250 + 2_000)
    # a flat job (increments within the 30 MB noise: exponent 0) keeps its largest run's figure,
    # 300 + 20 x (anything) ** 0
    flat = [{"kind": "pivot", "rows": r, "peak_mb": p} for r, p in ((1e6, 300), (2e6, 310), (4e6, 320))]
    peak, b = st.full_peak_mb(flat, "pivot", 1e9)
    assert b == 0.0 and peak == pytest.approx(320)
