"""Incremental refresh: adding a later dump row schedules only the new dump's work.

A temporary working directory gets the repo's config plus its own dumps.tsv. The two demo
dumps are extracted (tables copied from the session fixture) and diffed by the real workflow;
then a third, later dump (tests/data/short_stream.json.bz2, the real JSON-lines stream of
2019-04-02, its repeated entities renamed) is registered and the dry run must list exactly: its extraction, its diff with its
predecessor 2019-02-01 and its temporal view.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import unique_stream

ROOT = Path(__file__).resolve().parents[1]
HEADER = "dump\tenabled\tpath\turl\tchecksum\n"
ROWS = [
    "20141201\ttrue\tresources/demo/wikidata-20141201-sample.json.bz2\t\t\n",
    "20190201\ttrue\tresources/demo/wikidata-20190201-sample.json.bz2\t\t\n",
]
# The real stream of tests/data/short_stream.json.bz2 with its repeated entities given fresh ids
# (a dump holds each entity once), written into each working directory (conftest.unique_stream).
THIRD = "20190402\ttrue\tthird/short_stream.json.bz2\t\t\n"


def snakemake(workdir: Path, *args: str, timeout: int = 300) -> str:
    """Snakemake in ``workdir``, from the workflow copy inside it when there is one
    (:func:`_small_config_dir`), else from the repository."""
    own = workdir / REPO / "workflow" / "Snakefile"
    cmd = [
        sys.executable,
        "-m",
        "snakemake",
        "-s",
        str(own if own.exists() else ROOT / "workflow" / "Snakefile"),
        "--directory",
        str(workdir),
        "--configfile",
        str(workdir / "config.yaml"),
        "--cores",
        "2",
        *args,
    ]
    env = {**os.environ, PLUGIN_ENV: f"{PLUGIN},{TOY_PLUGIN}"} if (workdir / PLUGIN).exists() else None
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=workdir, env=env)
    assert proc.returncode == 0, f"{' '.join(cmd)}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc.stdout + proc.stderr


def targets(dumps: list[str]) -> list[str]:
    out = [f"results/temporal/{d}/temporal.parquet" for d in dumps]
    for old, new in zip(dumps[:-1], dumps[1:], strict=False):
        out += [f"results/diff/{old}_{new}/changes.parquet", f"results/diff/{old}_{new}/stats.tsv"]
    return out


def planned_jobs(log: str) -> set[tuple[str, str]]:
    """(rule, wildcards) of every job in a dry-run log."""
    jobs = set()
    for block in re.split(r"\n(?=\[[^\]]+\]\n(?:local)?rule )", log):
        m = re.search(r"^(?:local)?rule (\w+):", block, re.M)
        if m:
            w = re.search(r"^\s+wildcards: (.*)$", block, re.M)
            jobs.add((m.group(1), w.group(1).strip() if w else ""))
    return jobs


# Its dry-run check is part of test_adding_a_dump_gives_the_tables_of_a_clean_run_on_all_dumps
# (which runs the added dump's jobs for real): `make test-full` only.
@pytest.mark.full
@pytest.mark.slow
def test_adding_a_dump_reruns_only_its_work(tmp_path, demo_tables):
    work = tmp_path / "work"
    work.mkdir()
    for name in ("resources", "tests", "config"):  # relative paths of the config resolve here
        (work / name).symlink_to(ROOT / name)
    unique_stream(work / "third")
    config = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    config["dumps"] = "dumps.tsv"
    (work / "config.yaml").write_text(yaml.safe_dump(config))
    (work / "dumps.tsv").write_text(HEADER + "".join(ROWS))
    for dump, folder in demo_tables.items():
        shutil.copytree(folder, work / "results" / "wikidata" / dump)

    two = ["20141201", "20190201"]
    snakemake(work, *targets(two))
    assert (work / "results/diff/20141201_20190201/changes.parquet").exists()
    assert planned_jobs(snakemake(work, "-n", *targets(two))) == set()  # up to date

    (work / "dumps.tsv").write_text(HEADER + "".join(ROWS) + THIRD)
    log = snakemake(work, "-n", *targets([*two, "20190402"]))
    assert planned_jobs(log) == {
        ("extract_dump", "dump=20190402"),
        ("diff_dumps", "old=20190201, new=20190402"),
        ("temporal_view", "dump=20190402"),
    }, log


# --- rerun scope of settings and dumps -------------------------------------

SUITES = {
    # Two suites of the older dump; their labels/types come from that dump only (label_dumps default).
    "knowledge": {
        "kind": "knowledge",
        "dump": "20141201",
        "relations": ["P17", "P36", "P47"],
        "n_facts": 2,
        "templates": {"styles": ["statement"], "max_per_relation": 1},
    },
    "multilingual": {
        "kind": "multilingual",
        "dump": "20141201",
        "languages": ["en", "de"],
        "relations": ["P17", "P36"],
        "n_facts": 2,
        "templates": {"styles": ["statement"], "max_per_relation": 1},
    },
}
FINAL = ("leaderboard", ""), ("render_report", ""), ("all", "")


def per_suite(rules: list[str], *suites: str) -> set[tuple[str, str]]:
    """Jobs of ``rules`` for each suite (control model scored with one shard)."""
    wildcards = {
        "score_shard": "suite={s}, model=control, shard=0",
        "score_suite": "suite={s}, model=control",
        "compute_metrics": "suite={s}, model=control",
        "control_check": "suite={s}, model=control",
    }
    return {(rule, wildcards.get(rule, "suite={s}").format(s=s)) for s in suites for rule in rules}


#: The workflow's own copy inside a small run's directory: library inputs are then relative paths,
#: so a copy of the run (:func:`copy_run`) has its own library to edit.
REPO = "factprobe"
#: A plugin of the small runs (``FACTPROBE_PLUGINS``, a path relative to the working directory):
#: one measure family, so that editing it concerns the measures' jobs only.
PLUGIN = "plugins/probe_mean.py"
PLUGIN_ENV = "FACTPROBE_PLUGINS"
#: The repository's example plugin, loaded too: it fills every registry (a strategy, a source
#: format, a family, a backend) without the run using them, so each rule of the run has it as
#: an input, and an edit still plans only the jobs whose own code reaches the edited module.
TOY_PLUGIN = ROOT / "tests" / "plugins" / "toy_plugin.py"
PLUGIN_CODE = '''"""A measure family of the small test runs: the mean log Pl(o | c) of a fact's object."""

from factprobe.metrics import family, register_measure


@family("probe_mean")
def probe_mean(frame):
    from factprobe.metrics.common import GROUP_KEYS, average_per_fact

    objects = frame.candidates[frame.candidates["role"] == "object"][["fact_id", "entity"]].drop_duplicates()
    per_prompt = (
        frame.prompts[["prompt_id", "fact_id", *GROUP_KEYS]]
        .merge(objects, on="fact_id")
        .merge(frame.entity_scores[["prompt_id", "entity", "logpl"]], on=["prompt_id", "entity"])
        .rename(columns={"logpl": "probe_mean_logpl"})
    )
    return [average_per_fact(per_prompt, [], ["probe_mean_logpl"])], []


register_measure("probe_mean_logpl", "probe_mean", "test only", "mean log Pl(o|c)", unit="nats")
'''


def _workflow_copy(work: Path) -> None:
    """The repository's workflow copied into ``work/factprobe`` (bundled files linked)."""
    repo = work / REPO
    shutil.copytree(ROOT / "workflow", repo / "workflow", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("resources", "config", "tests", "environment.yml", "pyproject.toml"):
        (repo / name).symlink_to(ROOT / name)
    (work / PLUGIN).parent.mkdir(parents=True, exist_ok=True)
    (work / PLUGIN).write_text(PLUGIN_CODE)


def _small_config_dir(work: Path, rows: list[str]) -> None:
    """A working directory with the two-suite config above, the given dump rows, its own copy of
    the workflow and a measure plugin."""
    (work / "config").mkdir(parents=True)
    for name in ("resources", "tests"):
        (work / name).symlink_to(ROOT / name)
    unique_stream(work / "third")
    _workflow_copy(work)
    shutil.copy(ROOT / "config" / "models.tsv", work / "config" / "models.tsv")
    config = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    config.update(dumps="dumps.tsv", suites=SUITES)
    config["distractors"]["strategies"] = ["random"]
    config["scoring"].update(shards=1, models=["control"])  # the real model is tested elsewhere
    config["control"].update(suites=list(SUITES), steps=2, batch_size=4)
    config["metrics"]["human_alignment"]["suites"] = []  # the demo's judged suite is not among them
    for path in (work / "config.yaml", work / "config" / "config.yaml"):
        path.write_text(yaml.safe_dump(config))
    (work / "dumps.tsv").write_text(HEADER + "".join(rows))


@pytest.fixture(scope="module")
def small_run(tmp_path_factory) -> Path:
    """The small config run for real on the two demo dumps (extraction included), once per module."""
    work = tmp_path_factory.mktemp("small") / "work"
    _small_config_dir(work, ROWS)
    snakemake(work, timeout=1200)
    return work


def copy_run(work: Path, dest: Path) -> Path:
    """A copy of a finished run (links kept, times kept: Snakemake sees it up to date)."""
    shutil.copytree(work, dest, symlinks=True)
    return dest


@pytest.mark.slow
def test_settings_and_dumps_rerun_only_what_reads_them(tmp_path, small_run):
    """One real run of a small two-suite config, then dry runs after each change: the exact jobs."""
    work = copy_run(small_run, tmp_path / "work")
    config = yaml.safe_load((work / "config.yaml").read_text())

    def write(config):
        # Both the Snakefile's configfile and --configfile: Snakemake merges them key by key, so
        # a demo suite left in either would stay in the run.
        for path in (work / "config.yaml", work / "config" / "config.yaml"):
            path.write_text(yaml.safe_dump(config))

    def dry_run(change=None) -> set[tuple[str, str]]:
        changed = yaml.safe_load(yaml.safe_dump(config))
        if change:
            change(changed)
        write(changed)
        return planned_jobs(snakemake(work, "-n"))

    assert dry_run() == set()

    (work / "dumps.tsv").write_text(HEADER + "".join(ROWS) + THIRD)
    assert dry_run() == {
        ("extract_dump", "dump=20190402"),
        ("diff_dumps", "old=20190201, new=20190402"),
        ("temporal_view", "dump=20190402"),
        ("all", ""),
    }
    (work / "dumps.tsv").write_text(HEADER + "".join(ROWS))

    suite_jobs = [
        "train_control",
        "score_shard",
        "score_suite",
        "compute_metrics",
        "control_check",
        "summarize_metrics",
    ]
    n_facts = dry_run(lambda c: c["suites"]["multilingual"].update(n_facts=1))
    assert n_facts == per_suite(
        ["build_probes", "translate_prompts", "retrieve_distractors", *suite_jobs], "multilingual"
    ) | set(FINAL)

    n = dry_run(lambda c: c["distractors"].update(n=9))
    assert n == per_suite(["retrieve_distractors", *suite_jobs], "knowledge", "multilingual") | set(FINAL)

    assert dry_run(lambda c: c["report"].update(dpi=91)) == {("render_report", ""), ("all", "")}

    # belief_bins: only the suite with a BELIEF family (knowledge) recomputes its measures.
    bins = dry_run(lambda c: c["metrics"].update(belief_bins=9))
    assert bins == per_suite(["compute_metrics", "control_check", "summarize_metrics"], "knowledge") | set(
        FINAL
    )


# --- incremental run == clean rebuild --------------------------------------


def finished_jobs(log: str) -> list[str]:
    """Rules of the jobs a (real) run executed, from its log."""
    return re.findall(r"^(?:local)?rule (\w+):", log, re.M)


@pytest.mark.slow
def test_adding_a_dump_gives_the_tables_of_a_clean_run_on_all_dumps(tmp_path, small_run):
    """Run {A, B}, add C and run again; a clean run on {A, B, C} elsewhere must give every table
    under results/ the same: Parquet by content, CSV/TSV by value, floats within the demo digest's
    tolerance (tests/demo_digest.py). Every job runs for real: extraction included."""
    from demo_digest import compare, demo_digest

    inc, full = copy_run(small_run, tmp_path / "incremental"), tmp_path / "full"
    _small_config_dir(full, [*ROWS, THIRD])
    assert planned_jobs(snakemake(inc, "-n")) == set()
    (inc / "dumps.tsv").write_text(HEADER + "".join(ROWS) + THIRD)
    added = finished_jobs(snakemake(inc, timeout=1200))
    # What an added dump reruns (README "When a new dump lands"): its extraction, its diff with its
    # predecessor, its temporal view, and the `all` target; nothing of the suites.
    assert sorted(added) == ["all", "diff_dumps", "extract_dump", "temporal_view"], added
    assert planned_jobs(snakemake(inc, "-n")) == set()  # only new work, then nothing
    snakemake(full, timeout=1200)

    def tables(work):
        return sorted(
            p.relative_to(work / "results").as_posix() for p in (work / "results").rglob("*") if p.is_file()
        )

    assert tables(inc) == tables(full)
    expected = demo_digest(full / "results")
    actual, keys = demo_digest(inc / "results", with_keys=True)
    assert len(expected.tables) > 40
    assert compare(expected, actual, keys) == []


# --- a code edit reruns the jobs that run that code, and only those --------------------------

UPSTREAM = {"extract_dump", "diff_dumps", "temporal_view", "build_probes", "translate_prompts"}
SCORING = {"score_shard", "score_suite"}
MEASURES = {"compute_metrics", "control_check", "summarize_metrics", "leaderboard", "render_report"}


@pytest.mark.slow
def test_editing_library_code_reruns_the_jobs_that_run_it(small_run):
    """After a finished run, each edit (a line appended, then undone with its time stamp) plans
    the jobs whose code path runs the module, through registry references (``"module:attr"``),
    lazy attributes and plugins, and none upstream of them; the registries module plans none,
    nor do removed code stamps or a touched but unchanged module."""
    work = small_run
    lib = work / REPO / "workflow" / "scripts" / "factprobe"

    def plan_after_editing(path: Path) -> set[str]:
        before, stat = path.read_text(), path.stat()
        try:
            path.write_text(before + "\n_EDITED = True\n")  # code: comments and docstrings are not
            return {rule for rule, _ in planned_jobs(snakemake(work, "-n"))}
        finally:
            path.write_text(before)
            os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))

    # the scoring engine: registered backend "factprobe.lm.hf:HFCausalLM", which imports packed;
    # translation too loads models through that registry (its LLM translation mode)
    for module in ("lm/packed.py", "lm/hf.py"):
        planned = plan_after_editing(lib / module)
        assert SCORING | MEASURES | {"translate_prompts"} <= planned, (module, sorted(planned))
        unrelated = UPSTREAM - {"translate_prompts"} | {"retrieve_distractors", "train_control"}
        assert not planned & unrelated, (module, sorted(planned))
    # measure families: "factprobe.metrics.families:knowledge", ...
    for module in ("metrics/knowledge.py", "metrics/belief.py"):
        planned = plan_after_editing(lib / module)
        assert {"compute_metrics", "summarize_metrics", "leaderboard"} <= planned, (module, sorted(planned))
        assert not planned & (UPSTREAM | SCORING | {"retrieve_distractors"}), (module, sorted(planned))
    # distractor strategies: "factprobe.distractors.strategies:random_rows"
    planned = plan_after_editing(lib / "distractors" / "strategies.py")
    assert "retrieve_distractors" in planned and SCORING <= planned, sorted(planned)
    assert not planned & UPSTREAM, sorted(planned)
    # the plugin fills the measures' registry only
    planned = plan_after_editing(work / PLUGIN)
    assert {"compute_metrics", "summarize_metrics"} <= planned, sorted(planned)
    assert not planned & (UPSTREAM | SCORING | {"retrieve_distractors"}), sorted(planned)
    # with the toy plugin loaded (it imports retrieval and metrics helpers), a measure edit plans
    # the measures' and the report's jobs only: a plugin brings its own reach, not the built-in
    # entries of the registries it fills
    planned = plan_after_editing(lib / "metrics" / "knowledge.py")
    assert planned <= MEASURES | {"cloze_subsets", "all"}, sorted(planned)
    # the registries module is data, never an input; the code its entries name is
    assert plan_after_editing(lib / "registries.py") == set()
    planned = plan_after_editing(lib / "distractors" / "every_subject.py")
    assert "retrieve_distractors" in planned and not planned & UPSTREAM, sorted(planned)
    assert planned_jobs(snakemake(work, "-n")) == set()  # every edit undone: up to date again
    # stamps removed (a fresh clone): rewritten with the modules' own times, nothing planned;
    # a module touched but unchanged, or with its comments and docstring edited: the hash of its
    # code, hence its rules' stamps, stay as they are
    shutil.rmtree(work / ".snakemake" / "factprobe" / "code")
    assert planned_jobs(snakemake(work, "-n")) == set()
    knowledge, stat = lib / "metrics" / "knowledge.py", (lib / "metrics" / "knowledge.py").stat()
    before = knowledge.read_text()
    try:
        knowledge.touch()
        assert planned_jobs(snakemake(work, "-n")) == set()
        assert before.startswith('"""')
        knowledge.write_text('"""Prose edited. ' + before[3:] + "\n# a comment\n")
        assert planned_jobs(snakemake(work, "-n")) == set()
    finally:
        knowledge.write_text(before)
        os.utime(knowledge, ns=(stat.st_atime_ns, stat.st_mtime_ns))
