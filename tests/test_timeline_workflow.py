"""config/timeline.yaml: it validates, its cross-key checks refuse a short series, and (``full``)
the whole workflow on the monthly series finds the control model's known cut-off."""

from __future__ import annotations

import copy
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml
from factprobe import contracts
from factprobe.config_check import read_config
from factprobe.config_rules import check_cross_keys
from factprobe.settings import ConfigError

ROOT = Path(__file__).resolve().parents[1]
SCHEMAS = ROOT / "workflow" / "schemas"
CONFIG = ROOT / "config" / "timeline.yaml"
SERIES = ["20190201", "20190301", "20190401", "20190501", "20190601"]


def _checked(config: dict, enabled=SERIES):
    cfg = read_config(config, SCHEMAS / "config.schema.yaml", source="timeline.yaml")
    check_cross_keys(cfg, enabled, source="timeline.yaml")
    return cfg


def test_timeline_config_validates():
    cfg = _checked(yaml.safe_load(CONFIG.read_text()))
    block = cfg.suites["timeline"].timeline
    assert (block.by, block.per_bin, block.popularity_edges, block.n) == ("diff", 10, [100], 3)
    assert cfg.suites["timeline_dated"].timeline.edges[0] == 20190201


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda s: s["timeline"].update(dump="20190301"), "by diff needs >= 3 enabled dumps"),
        (lambda s: s["timeline_dated"]["timeline"].update(edges=[20190201, 20190101, 20190301]), "ascending"),
        (lambda s: s["timeline_dated"]["timeline"].update(edges=[20190201, 20190301, 20190701]), "after"),
        (lambda s: s["timeline"]["timeline"].update(popularity_edges=[100, 10]), "popularity_edges"),
        # 10 facts a bin x 2 bins = 20 a slice: a profile asking for 50 could only be insufficient
        (
            lambda s: s["timeline"]["timeline"].update(min_facts=50),
            "sampled to 20 facts, fewer than min_facts=50",
        ),
        (lambda s: s["timeline_dated"]["timeline"].update(min_facts=31), "sampled to 30 facts"),
    ],
)
def test_short_or_unordered_series_fail_at_start_up(edit, message):
    config = copy.deepcopy(yaml.safe_load(CONFIG.read_text()))
    edit(config["suites"])
    with pytest.raises(ConfigError, match=message):
        _checked(config)


@pytest.mark.full
def test_series_run_finds_the_taught_cutoff(tmp_path):
    """About 4.5 minutes on 2 busy cores: 5 dumps, 2 timeline suites, the control model taught
    up to 20190401 (benchmarks/RESULTS.md, "Series run end to end")."""
    for name in ("workflow", "config", "profiles"):
        shutil.copytree(ROOT / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "environment.yml", tmp_path / "environment.yml")
    (tmp_path / "resources").mkdir()
    for name in ("demo", "templates", "properties"):
        (tmp_path / "resources" / name).symlink_to(ROOT / "resources" / name)
    run = [sys.executable, str(ROOT / "benchmarks" / "timeline_dumps.py"), "resources/dumps/timeline"]
    subprocess.run(run, cwd=tmp_path, check=True, capture_output=True)
    snake = [sys.executable, "-m", "snakemake", "--configfile", "config/timeline.yaml"]
    proc = subprocess.run(
        [*snake, "--replace-workflow-config", "--cores", "2"], cwd=tmp_path, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    for suite in ("timeline", "timeline_dated"):
        table = pd.read_csv(tmp_path / f"results/metrics/{suite}/timeline.csv", dtype={"cutoff": str})
        assert set(table["cutoff"]) == {"20190401"}, table
        assert set(table["cutoff_status"]) == {"within"}
        # the cut-off profile: every column for every model; the control's drop is sharp: on 20
        # facts a slice one slice wide, on 16 (timeline_dated) the interval admits that width
        profile = contracts.read_text(
            "cutoff_profile", tmp_path / f"results/metrics/{suite}/cutoff_profile.csv"
        )
        assert list(profile.columns) == contracts.columns("cutoff_profile")
        assert list(profile["model"]) == ["control"], profile
        row = profile.iloc[0]
        assert (row["cutoff"], row["curve"]) == ("20190401", "all"), row.to_dict()
        assert row["decay_slices_low"] <= 1.0 and (suite != "timeline" or row["shape"] == "sharp"), (
            row.to_dict()
        )
        calibration = contracts.read_text(
            "slice_calibration", tmp_path / f"results/metrics/{suite}/slice_calibration.csv"
        )
        assert {"before", "after"} <= set(calibration["part"])


def _series_workdir(work: Path, months: int) -> Path:
    """A copy of the workflow with the series of ``months`` months and a one-suite config
    (suite ``timeline`` by diff, its dump the newest)."""
    for name in ("workflow", "config", "profiles"):
        shutil.copytree(ROOT / name, work / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "environment.yml", work / "environment.yml")
    (work / "resources").mkdir()
    for name in ("demo", "templates", "properties"):
        (work / "resources" / name).symlink_to(ROOT / "resources" / name)
    gen = [sys.executable, str(ROOT / "benchmarks" / "timeline_dumps.py"), "resources/dumps/timeline"]
    subprocess.run([*gen, "--months", str(months)], cwd=work, check=True, capture_output=True)
    _one_suite(work)
    return work


def _one_suite(work: Path) -> None:
    """config/timeline.yaml with suite ``timeline`` alone, its dump the newest dump of the series."""
    config = yaml.safe_load(CONFIG.read_text())
    rows = (work / "resources/dumps/timeline/dumps.tsv").read_text().split()
    newest = max(r for r in rows if r.isdigit() and len(r) == 8)
    config["suites"] = {"timeline": {**config["suites"]["timeline"], "dump": newest}}
    config["control"]["suites"] = ["timeline"]
    (work / "config" / "timeline.yaml").write_text(yaml.safe_dump(config))


def _snakemake(work: Path, *args: str) -> str:
    cmd = [
        sys.executable,
        "-m",
        "snakemake",
        "--configfile",
        "config/timeline.yaml",
        "--replace-workflow-config",
    ]
    proc = subprocess.run([*cmd, "--cores", "2", *args], cwd=work, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return proc.stdout + proc.stderr


def _of_facts(work: Path, name: str, fact_ids: pd.Series) -> pd.DataFrame:
    """The rows of ``results/probes/timeline/{name}.parquet`` of ``fact_ids``."""
    table = pd.read_parquet(work / f"results/probes/timeline/{name}.parquet")
    return table[table["fact_id"].isin(set(fact_ids))].reset_index(drop=True)


def _job_counts(log: str) -> dict[str, int]:
    table = log.split("Job stats:")[-1].split("Reasons:")[0]
    rows = (line.split() for line in table.splitlines()[3:])
    return {row[0]: int(row[1]) for row in rows if len(row) == 2 and row[0] != "total"}


@pytest.mark.full
def test_adding_a_dump_reruns_its_own_jobs_and_the_suite(tmp_path):
    """Refresh: after a run on dumps t_0..t_3, adding t_4 extracts only t_4, diffs only
    (t_3, t_4], makes only t_4's temporal view, and rebuilds, rescores and re-measures the suite;
    its slices have fixed quotas (``per_bin``), so the older slices keep their facts (their
    prompts' scores come from the request cache) and slice t_4 is added; the tables equal a
    clean run on t_0..t_4. About 10 minutes on 2 busy cores (three runs)."""
    work = _series_workdir(tmp_path / "refresh", months=3)
    _snakemake(work)
    first = pd.read_parquet(work / "results/probes/timeline/facts.parquet")
    requests = {name: _of_facts(work, name, first["fact_id"]) for name in ("prompts", "candidates")}
    # the control model declares 2019-04-01: its own suite is the slice (20190401, 20190501]
    after = pd.read_csv(work / "results/metrics/timeline/after_cutoff.csv", dtype={"slices": str})
    assert set(after["slices"]) == {"20190501"} and set(after["n_facts"]) == {20}
    # dump t_4: only its file is added (the older files keep their bytes and times)
    fresh = tmp_path / "series4"
    gen = [sys.executable, str(ROOT / "benchmarks" / "timeline_dumps.py"), str(fresh), "--months", "4"]
    subprocess.run(gen, check=True, capture_output=True)
    shutil.copy(fresh / "wikidata-20190601-timeline.json.bz2", work / "resources/dumps/timeline")
    with open(work / "resources/dumps/timeline/dumps.tsv", "a") as f:
        f.write("20190601\ttrue\tresources/dumps/timeline/wikidata-20190601-timeline.json.bz2\t\t\n")
    _one_suite(work)
    planned = _job_counts(_snakemake(work, "-n", "--quiet", "rules"))
    per_suite = ["build_probes", "retrieve_distractors", "train_control", "score_shard", "score_suite"]
    per_suite += ["compute_metrics", "candidate_confidence", "control_check", "summarize_metrics", "timeline"]
    expected = {"extract_dump": 1, "diff_dumps": 1, "temporal_view": 1, **dict.fromkeys(per_suite, 1)}
    assert planned == {**expected, "leaderboard": 1, "render_report": 1, "all": 1}
    _snakemake(work)
    refreshed = pd.read_parquet(work / "results/probes/timeline/facts.parquet")
    assert set(refreshed["slice"]) == {*first["slice"], "20190601"}
    # the suite's dump moved to t_4: every other column of the older slices' facts and of their
    # subjects' anchors is unchanged; the new facts are slice t_4's and its new subjects' anchors
    kept = refreshed["fact_id"].isin(first["fact_id"])
    old = refreshed[kept].drop(columns="dump").reset_index(drop=True)
    pd.testing.assert_frame_equal(old, first.drop(columns="dump"))
    added = refreshed[~kept]
    assert set(added["slice"]) <= {"20190601", "anchor"}
    new_subjects = set(added.loc[added["slice"] == "20190601", "subject"])
    assert set(added.loc[added["slice"] == "anchor", "subject"]) <= new_subjects
    assert (refreshed["slice"] == "20190601").sum() == 20
    # the older slices' prompts and distractors are the same requests: scored from the cache
    for name, before in requests.items():
        pd.testing.assert_frame_equal(_of_facts(work, name, first["fact_id"]), before)
    after = pd.read_csv(work / "results/metrics/timeline/after_cutoff.csv", dtype={"slices": str})
    assert set(after["slices"]) == {"20190501;20190601"} and set(after["n_facts"]) == {40}
    clean = _series_workdir(tmp_path / "clean", months=4)
    _snakemake(clean)
    for table in ("probes/timeline/facts.parquet", "scores/timeline/control.parquet"):
        pd.testing.assert_frame_equal(
            pd.read_parquet(work / "results" / table), pd.read_parquet(clean / "results" / table)
        )
    for name in ("timeline.csv", "timeline_profile.csv", "after_cutoff.csv"):
        table = Path("results/metrics/timeline") / name
        assert (work / table).read_text() == (clean / table).read_text()


@pytest.mark.full
def test_real_demo_samples_by_statement_date_find_the_taught_decade(tmp_path):
    """config/timeline_real.yaml: the demo's real samples, facts dated by their own qualifiers in
    decade slices; the control model taught up to 1970 is estimated there (about 40 s)."""
    for name in ("workflow", "config", "profiles", "resources"):
        shutil.copytree(
            ROOT / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__", "dumps", "models")
        )
    shutil.copy(ROOT / "environment.yml", tmp_path / "environment.yml")
    snake = [sys.executable, "-m", "snakemake", "--configfile", "config/timeline_real.yaml"]
    run = subprocess.run(
        [*snake, "--replace-workflow-config", "--cores", "2"], cwd=tmp_path, capture_output=True, text=True
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    table = pd.read_csv(tmp_path / "results/metrics/timeline_real/timeline.csv", dtype=str)
    assert list(table["slice"]) == ["19500101", "19700101", "20000101", "static"]
    assert set(table["cutoff"]) == {"19700101"} and set(table["cutoff_status"]) == {"within"}
    profile = contracts.read_text(
        "cutoff_profile", tmp_path / "results/metrics/timeline_real/cutoff_profile.csv"
    )
    assert list(profile.columns) == contracts.columns("cutoff_profile") and list(profile["model"]) == [
        "control"
    ]
    # a date only with enough facts per slice (else an insufficient row saying which slice)
    row = profile.iloc[0]
    assert row["cutoff"] == "19700101" or (row["shape"] == "insufficient" and "min_facts" in row["reason"])
    # anchors: static facts about the dated facts' subjects, so the known-subject curve has facts
    facts = contracts.read("facts", tmp_path / "results/probes/timeline_real/facts.parquet")
    dated = facts[~facts["slice"].isin(["static", "anchor"])]
    anchors = facts[facts["slice"] == "anchor"]
    assert len(anchors) and set(anchors["subject"]) <= set(dated["subject"])
    assert anchors.groupby("subject").size().max() <= 2 and (anchors["stratum"] == -1).all()
    # the samples are small (71 candidates, 11 facts): the anchors make some subjects known, too
    # few for min_facts per slice, so the profile says it used all facts
    dated_rows = table[table["slice"] != "static"]
    known = dated_rows["known_n_facts"].astype(int)
    assert known.sum() > 0 and (known <= dated_rows["n_facts"].astype(int)).all()
    assert int(row["n_known_subject"]) == dated_rows["known_n_facts"].astype(int).sum()
    enough = int(row["min_slice_known"]) >= 20  # timeline.min_facts
    assert row["curve"] == ("known_subject" if enough else "all")
    print(table[["slice", "n_facts", "known_n_facts", "value", "known_value"]].to_string())
    print(profile.T.to_string())
