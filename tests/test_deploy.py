"""Catalog layout and deployment: the workflow run with ``--directory .test``
and used as a ``module`` from a directory that holds nothing but its own Snakefile and config.

Both working directories lack ``resources/``: the demo dump, the templates and the
single-value list must come from the workflow itself (config/README.md, section "Paths").
"""

import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from factprobe.config_check import resolve_config_paths, resolve_dump_paths, resolve_path

ROOT = Path(__file__).resolve().parents[1]
SNAKEFILE = ROOT / "workflow" / "Snakefile"
TEST_CONFIG = ROOT / ".test" / "config"


def snakemake(cwd: Path, *args: str, timeout: int = 400) -> str:
    cmd = [sys.executable, "-m", "snakemake", "--cores", "2", "--show-failed-logs", *args]
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"{cmd} failed:\n{out[-6000:]}"
    return out


# --- path resolution (pure) -----------------------------------------------------------------


def test_resolve_path_prefers_the_working_directory_then_the_workflow(tmp_path):
    workflow, work = tmp_path / "wf", tmp_path / "work"
    (workflow / "resources/templates").mkdir(parents=True)
    (workflow / "resources/only_bundled.tsv").write_text("x")
    (work / "resources/templates").mkdir(parents=True)
    # The user's copy wins and stays relative (it is read from the working directory).
    assert resolve_path("resources/templates", workflow, work) == "resources/templates"
    # Only in the workflow: the bundled file, absolute.
    assert resolve_path("resources/only_bundled.tsv", workflow, work) == str(
        workflow / "resources/only_bundled.tsv"
    )
    # Neither: kept as written, so the error that follows names the user's path.
    assert resolve_path("resources/missing.tsv", workflow, work) == "resources/missing.tsv"
    assert resolve_path("/abs/missing.tsv", workflow, work) == "/abs/missing.tsv"
    assert resolve_path("", workflow, work) == ""


def test_resolve_config_paths_rewrites_only_file_keys_and_copies(tmp_path):
    (tmp_path / "resources/templates").mkdir(parents=True)
    (tmp_path / "resources/sv.tsv").write_text("P17\n")
    config = {
        "dumps": "config/dumps.tsv",
        "diff": {"single_value": "list", "single_value_list": "resources/sv.tsv"},
        "templates": {"sets": {"team": {"format": "yaml", "path": "resources/templates"}}},
        "suites": {"k": {"dump": "resources/sv.tsv"}},
    }
    out = resolve_config_paths(config, tmp_path, workdir=tmp_path / "elsewhere")
    assert out["diff"]["single_value_list"] == str(tmp_path / "resources/sv.tsv")
    assert out["templates"]["sets"]["team"]["path"] == str(tmp_path / "resources/templates")
    assert out["dumps"] == "config/dumps.tsv"  # not bundled there: left for the registry error
    assert out["suites"] == config["suites"]  # not a file key
    # The caller's config (Snakemake's `config`) is not changed.
    assert config["diff"]["single_value_list"] == "resources/sv.tsv"
    assert config["templates"]["sets"]["team"]["path"] == "resources/templates"
    rows = resolve_dump_paths(
        [{"dump": "1", "path": "resources/sv.tsv"}, {"dump": "2", "url": "u"}], tmp_path, tmp_path / "x"
    )
    assert rows == [{"dump": "1", "path": str(tmp_path / "resources/sv.tsv")}, {"dump": "2", "url": "u"}]


# --- .test with --directory ----------------------------------------------------------------


@pytest.fixture
def test_dir(tmp_path):
    """A copy of .test/ (so runs never write into the checkout) and the directory holding it."""
    shutil.copytree(
        ROOT / ".test", tmp_path / ".test", ignore=shutil.ignore_patterns("results", "logs", ".snakemake")
    )
    return tmp_path


def test_dot_test_plans_the_whole_workflow(test_dir):
    out = snakemake(test_dir, "-s", str(SNAKEFILE), "--directory", ".test", "-n", "--quiet", "rules")
    assert "render_report" in out and "compute_metrics" in out


def test_dot_test_runs_to_the_metrics_with_the_bundled_demo_dump(dot_test_run):
    """The session's .test run (conftest.dot_test_run, which tests/test_api.py reads too)."""
    work = dot_test_run
    assert not (work / "resources").exists()
    target = "results/metrics/knowledge/control.parquet"
    # The checksum of the bundled dump was verified and remembered in the working directory.
    stamp = pd.read_json(work / "results/cache/checksums/20141201.json", typ="series")
    assert stamp["path"] == str(ROOT / "resources/demo/wikidata-20141201-sample.json.bz2")
    facts = pd.read_parquet(work / "results/probes/knowledge/facts.parquet")
    assert set(facts["dump"]) == {"20141201"}
    assert set(facts["property"]) <= {"P17", "P30", "P36", "P47", "P131"}
    assert set(facts["split"]) == {"taught", "untaught"}
    per_fact = pd.read_parquet(work / target)
    assert set(per_fact["fact_id"]) <= set(facts["fact_id"])
    knowledge = per_fact[per_fact["measure"].isin(["k_min", "k_avg"])]
    assert set(knowledge["strategy"]) == {"random"}
    wide = knowledge.pivot_table(index=["fact_id", "n"], columns="measure", values="value")
    assert set(wide.index.get_level_values("n")) == {1, 3}
    # Min@n <= Avg@n for every fact (paper 1 §3.2: the minimum over distractors of a 0/1 win).
    assert ((wide["k_min"] >= 0) & (wide["k_min"] <= wide["k_avg"]) & (wide["k_avg"] <= 1)).all()


# --- as a module from another directory ---------------------------------------------------


@pytest.mark.full  # a module run; the .test run covers the bundled resources
def test_module_from_a_separate_directory_with_its_own_config(tmp_path):
    (tmp_path / "config").mkdir()
    for name in ("dumps.tsv", "models.tsv"):
        shutil.copy(TEST_CONFIG / name, tmp_path / "config" / name)
    config = (TEST_CONFIG / "config.yaml").read_text()
    own = config.replace("relations: [P17, P30, P36, P47, P131]", "relations: [P36, P47]")
    assert own != config
    (tmp_path / "config/config.yaml").write_text(own)
    (tmp_path / "Snakefile").write_text(
        'configfile: "config/config.yaml"\n\n\n'
        f'module factprobe:\n    snakefile:\n        "{SNAKEFILE}"\n    config:\n        config\n\n\n'
        "use rule * from factprobe\n"
    )
    snakemake(tmp_path, "results/probes/knowledge/candidates.parquet")
    facts = pd.read_parquet(tmp_path / "results/probes/knowledge/facts.parquet")
    candidates = pd.read_parquet(tmp_path / "results/probes/knowledge/candidates.parquet")
    assert len(facts) > 0 and set(facts["property"]) <= {"P36", "P47"}
    assert set(candidates["fact_id"]) == set(facts["fact_id"])
    objects = facts.set_index("fact_id")
    for row in candidates.itertuples():
        if row.role == "object":
            assert row.entity == objects.at[row.fact_id, "object"]
        else:  # a distractor is never a valid object of its fact
            assert row.entity not in set(objects.at[row.fact_id, "objects"]), row
    assert set(candidates.loc[candidates["role"] != "object", "strategy"]) == {"random"}
    assert not (tmp_path / "resources").exists() and not (tmp_path / "workflow").exists()


def test_a_module_not_on_the_local_disk_stops_with_what_to_do(tmp_path):
    """A module read from git (as snakedeploy's github(...) is) cannot import the library while
    parsing: the run stops before any job with the fix (docs/running.md)."""
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    if head.returncode != 0:
        pytest.skip("the checkout is not a git repository")
    shutil.copytree(TEST_CONFIG, tmp_path / "config")
    source = f"git+file://{ROOT}/workflow/Snakefile@{head.stdout.strip()}"
    (tmp_path / "Snakefile").write_text(
        'configfile: "config/config.yaml"\n\n\n'
        f'module factprobe:\n    snakefile:\n        "{source}"\n    config:\n        config\n\n\n'
        "use rule * from factprobe\n"
    )
    cmd = [sys.executable, "-m", "snakemake", "--cores", "1", "-n"]
    proc = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "factprobe must be on the local file system" in out and "<clone>/workflow/Snakefile" in out, out[
        -3000:
    ]
    assert not (tmp_path / "results").exists()
