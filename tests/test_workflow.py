"""Workflow-level checks: style gates, dry-runs, and config errors raised before any job runs."""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def run(args, cwd=ROOT, check=True):
    proc = subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=300)
    if check and proc.returncode != 0:
        raise AssertionError(
            f"{args} failed ({proc.returncode}):\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"
        )
    return proc


def snakemake(*args, cwd=ROOT, check=True):
    return run([sys.executable, "-m", "snakemake", *args], cwd=cwd, check=check)


def test_snakefmt_clean():
    files = [
        "workflow/Snakefile",
        *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "workflow/rules").rglob("*.smk")),
    ]
    run([str(BIN / "snakefmt"), "--check", *files])


def test_ruff_clean():
    run([str(BIN / "ruff"), "check", "workflow", "tests", "benchmarks"])
    # One formatting, enforced: no formatter escapes either.
    run([str(BIN / "ruff"), "format", "--check", "workflow", "tests", "benchmarks"])
    files = [p for d in ("workflow", "tests", "benchmarks") for p in (ROOT / d).rglob("*.py")]
    escape = "# fmt: " + "skip"  # split so that this file does not match itself
    escapes = [p for p in files if escape in p.read_text(encoding="utf-8")]
    assert not escapes, escapes


def test_snakemake_lint_clean():
    proc = snakemake("--lint", check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-4000:]
    assert "Lints for rule" not in out and "Lints for snakefile" not in out, out[-4000:]


#: Jobs per rule of the demo config (2 dumps, 4 suites, 2 models, scoring.shards 2): one per dump
#: (extract, index, temporal view), per consecutive pair (diff), per suite (probes, distractors,
#: control model, gather, metrics, summary), per shard, per multilingual / generating suite, per
#: (ApprOpt suite, model).
DEMO_JOBS = {
    # five suites: knowledge, multiprompt, plausibility, multilingual, judged
    "extract_dump": 2,
    "sem_bags": 2,  # one part per dump: the demo dumps are far below semantic.part_count.PART_DUMP_BYTES
    "build_sem_index": 2,
    "temporal_view": 2,
    "diff_dumps": 1,
    "build_probes": 5,
    "retrieve_distractors": 5,
    # the one sentence-mode suite (plausibility): its subject swaps as prompts (PROBELM Algorithm 1)
    "build_subject_swaps": 1,
    "appropt_distractors": 2,
    "translate_prompts": 1,
    "train_control": 5,
    "prepare_model": 1,
    "score_shard": 10,
    "score_suite": 10,
    "generate_shard": 4,
    "generate_suite": 4,
    "compute_metrics": 10,
    "control_check": 3,
    # the judged triples suite (distractors paper §4.2): Fig. 4 subsets per model, one alignment table
    "cloze_subsets": 2,
    "human_alignment": 1,
    "summarize_metrics": 5,
    "leaderboard": 1,
    "render_report": 1,
    "all": 1,
}


def job_counts(log):
    """{rule: count} from the "Job stats" table of a Snakemake log."""
    table = log.split("Job stats:")[-1].split("Reasons:")[0]
    rows = (line.split() for line in table.splitlines()[3:])
    return {row[0]: int(row[1]) for row in rows if len(row) == 2 and row[0] != "total"}


def test_dry_run_of_whole_dag_has_the_expected_jobs_per_rule():
    proc = snakemake("-n", "--forceall", "--cores", "2", "--quiet", "rules")
    assert job_counts(proc.stdout + proc.stderr) == DEMO_JOBS


def test_sharded_retrieval_prepares_each_suite_once(tmp_path):
    """distractors.shards 3: per built suite one prepare_retrieval job (the types, forms and type
    slices its shards map) and three retrieve_shard jobs, gathered by retrieve_distractors; every
    other rule as in the demo. One job per suite (the demo) has no preparation."""
    shards = tmp_path / "shards.yaml"
    shards.write_text("distractors:\n  shards: 3\n")
    args = ("--configfile", "config/config.yaml", str(shards))
    proc = snakemake("-n", "--forceall", "--cores", "2", "--quiet", "rules", *args)
    suites = DEMO_JOBS["retrieve_distractors"]
    expected = {**DEMO_JOBS, "prepare_retrieval": suites, "retrieve_shard": 3 * suites}
    assert job_counts(proc.stdout + proc.stderr) == expected
    assert "prepare_retrieval" not in DEMO_JOBS


def test_one_min_version_equal_to_the_pyproject_pin():
    sources = [ROOT / "workflow/Snakefile", *sorted((ROOT / "workflow/rules").rglob("*.smk"))]
    calls = [m for p in sources for m in re.findall(r'min_version\("([^"]+)"\)', p.read_text())]
    pin = re.search(r'"snakemake>=([0-9.]+)"', (ROOT / "pyproject.toml").read_text()).group(1)
    assert calls == [pin]


def test_rules_import_only_the_light_settings_modules():
    """The Snakefile parses without the science stack: the rules import only
    factprobe.settings and factprobe.config_check, plus the workflow's plumbing and a few
    parse-time helpers; none imports
    pandas/numpy/torch/tqdm/pyarrow (tests/unit/test_settings.py). Dumps are hashed by their
    extraction job, not while parsing."""
    sources = [ROOT / "workflow/Snakefile", *sorted((ROOT / "workflow/rules").rglob("*.smk"))]
    imported = {
        m for p in sources for m in re.findall(r"^\s*(?:from|import) (factprobe[\w.]*)", p.read_text(), re.M)
    }
    # ``from factprobe import settings as S``: the module is the imported name
    library = ROOT / "workflow/scripts"
    imported |= {
        f"{package}.{m}"
        for p in sources
        for package, m in re.findall(r"^\s*from (factprobe[\w.]*) import (\w+)", p.read_text(), re.M)
        if library.joinpath(*package.split("."), f"{m}.py").is_file()
    }
    assert (
        imported
        == {
            "factprobe",
            "factprobe.settings",
            "factprobe.config_check",
            "factprobe.plumbing",  # how the workflow runs (its modules below): imports nothing itself
            "factprobe.plumbing.diskspace",
            "factprobe.report",  # the package of report.provenance
            "factprobe.report.provenance",  # the report's provenance block: standard library only
            "factprobe.plumbing.profiles",  # the --profile/--workflow-profile check: stdlib and yaml
            "factprobe.plumbing.interpreter",  # the interpreter-path check: standard library only
            "factprobe.plumbing.run_settings",  # every rule's settings resolved once: settings + registries
            "factprobe.plumbing.run_inputs",  # the choices behind the input functions: settings + registries
            "factprobe.registries",  # every extension point: standard library only
            "factprobe.distractors.semantic.part_count",  # the Sem index's parts from the dump's size: standard library only
            "factprobe.wikidata.resolve",  # a date row's recorded resolution path: standard library only
            "factprobe.plumbing.slurmfail",  # onerror's line per failed SLURM job: standard library only
            "factprobe.plumbing.slurmfit",  # onstart's check of SLURM requests: standard library only
        }
    )
    light = "import sys, {}; print(sorted(m for m in ('pandas', 'numpy', 'torch', 'pyarrow', 'tqdm', 'duckdb') if m in sys.modules))"
    for module in imported - {"factprobe"}:
        out = subprocess.run(
            [sys.executable, "-c", light.format(module)],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "PYTHONPATH": str(ROOT / "workflow/scripts")},
        ).stdout
        assert out.strip() == "[]", (module, out)
    assert re.search(
        r"^from factprobe import settings  # noqa", (ROOT / "workflow/rules/common.smk").read_text(), re.M
    )


@pytest.fixture
def workdir(tmp_path):
    """A copy of the workflow files (not results) in which config can be broken safely."""
    for name in ("workflow", "config", "profiles"):
        src = ROOT / name
        (shutil.copytree if src.is_dir() else shutil.copy)(src, tmp_path / name)
    (tmp_path / "resources").symlink_to(ROOT / "resources")
    return tmp_path


def _edit(path, old, new):
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


def test_wrong_config_key_fails_before_jobs(workdir):
    _edit(workdir / "config/config.yaml", "  languages:", "  langauges:")
    proc = snakemake("-n", "--cores", "1", cwd=workdir, check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "config/config.yaml: invalid configuration" in out and "langauges" in out
    assert "Job stats" not in out


def test_unquoted_dump_date_and_missing_file_fail(workdir):
    tsv = workdir / "config/dumps.tsv"
    _edit(tsv, "20190201\ttrue", "2019-02-01\ttrue")
    out = snakemake("-n", "--cores", "1", cwd=workdir, check=False)
    assert out.returncode != 0 and "line 3, column dump" in out.stdout + out.stderr
    _edit(tsv, "2019-02-01\ttrue", "20190201\ttrue")
    _edit(tsv, "wikidata-20190201-sample", "wikidata-20190201-missing")
    out = snakemake("-n", "--cores", "1", cwd=workdir, check=False)
    assert out.returncode != 0
    assert "line 3 (dump 20190201): file resources/demo/wikidata-20190201-missing.json.bz2 not found" in (
        out.stdout + out.stderr
    )


# --- Every setting checked before the first job; headline targets; dry runs stay dry ---


def _fails_before_jobs(workdir, *args):
    """The one-line error of a dry run that must stop while parsing."""
    proc = snakemake("-n", "--cores", "1", *args, cwd=workdir, check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "Job stats" not in out, out[-3000:]
    return out


def test_suite_language_without_templates_fails_at_start_up(workdir):
    config = workdir / "config/config.yaml"
    _edit(
        config, "languages: [en, de, fr, ru, cs]\n  # Fail", "languages: [en, de, fr, ru, cs, zz]\n  # Fail"
    )
    _edit(
        config,
        "languages: [en, de, fr, ru, cs]\n    relations",
        "languages: [en, de, fr, ru, cs, zz]\n    relations",
    )
    out = _fails_before_jobs(workdir)
    assert "MissingInputException" not in out
    assert (
        "config/config.yaml: suites.multilingual.languages: template set 'team' "
        "(resources/templates) has no templates for ['zz']; supported languages: "
        "['cs', 'de', 'en', 'fr', 'ru']"
    ) in out


def test_config_errors_name_the_config_file_given(workdir):
    other = workdir / "other.yaml"
    shutil.copy(workdir / "config/config.yaml", other)
    _edit(other, "languages: [en, de, fr, ru, cs]\n  # Fail", "languages: [en, de, fr, ru, cs, xx]\n  # Fail")
    out = _fails_before_jobs(workdir, "--configfile", "other.yaml")
    assert "other.yaml (merged over config/config.yaml): extract.languages: unknown language(s) ['xx']" in out
    _edit(other, "  languages: [en, de, fr, ru, cs, xx]", "  langauges: [en, de, fr, ru, cs]")
    out = _fails_before_jobs(workdir, "--configfile", "other.yaml", "--replace-workflow-config")
    assert "other.yaml: invalid configuration" in out and "langauges" in out


def test_bad_dates_and_remote_code_rows_fail_at_start_up(workdir):
    _edit(workdir / "config/dumps.tsv", "20190201\ttrue", "20191301\ttrue")
    out = _fails_before_jobs(workdir)
    assert "config/dumps.tsv: line 3 (dump 20191301): 20191301 is not a calendar date" in out
    _edit(workdir / "config/dumps.tsv", "20191301\ttrue", "20190201\ttrue")
    models = workdir / "config/models.tsv"
    _edit(models, "2016-01-01", "2016-13-45")
    out = _fails_before_jobs(workdir)
    assert "config/models.tsv: line 2 (model control): cutoff 2016-13-45 is not a calendar date" in out
    _edit(models, "2016-13-45", "2016-01-01")
    custom = workdir / "custom-model"
    custom.mkdir()
    (custom / "config.json").write_text('{"auto_map": {"AutoModelForCausalLM": "modeling.X"}}')
    with open(models, "a") as fh:
        fh.write(f"custom\t{custom}\t\tfloat32\tauto\t\tfalse\n")
    out = _fails_before_jobs(workdir)
    assert f"config/models.tsv: line 4 (model custom): {custom} needs its own modelling code" in out
    assert "set trust_remote_code=true on that line" in out


def test_headline_tables_are_targets_of_rule_all():
    """summary.csv per suite, leaderboard.csv and paired.csv are inputs of `all` itself."""
    proc = snakemake("--rulegraph", "--forceall", "--quiet", "all")
    labels = dict(re.findall(r'^\s*(\d+)\[label = "([^"]+)"', proc.stdout, re.M))
    into_all = {
        labels[a] for a, b in re.findall(r"^\s*(\d+) -> (\d+)", proc.stdout, re.M) if labels[b] == "all"
    }
    assert {"summarize_metrics", "leaderboard", "render_report"} <= into_all, proc.stdout


@pytest.mark.parametrize("mode", [["-n", "--cores", "1"], ["--lint"]])
def test_dry_run_and_lint_write_nothing_under_results(workdir, mode):
    """No dump is hashed and no checksum stamp written while parsing."""
    snakemake(*mode, cwd=workdir)
    assert not (workdir / "results").exists()
