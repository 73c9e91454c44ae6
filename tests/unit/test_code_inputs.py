"""factprobe.plumbing.code_inputs against the library itself: the ``KINDS`` table of the registries module
names every registry and every public name that reads one, a plugin brings its own reach only,
and the behaviour of registry entries lives in modules the rules list as inputs.

The end-to-end check (an edit, then a dry run) is tests/test_incremental.py; these compare the
scan with a walk of the registries module written here, so a registry added without its
``KINDS`` line fails."""

import ast
import hashlib
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from factprobe import registries
from factprobe.plumbing.code_inputs import library_modules, stamp_file, write_stamp
from factprobe.registry import Registry

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = ROOT / "workflow" / "scripts"
PLUGIN = ROOT / "tests" / "plugins" / "toy_plugin.py"
#: Rule scripts of the measures' stage: they alone run the measure families.
MEASURE_SCRIPTS = {
    "candidate_confidence.py",
    "compute_metrics.py",
    "control_check.py",
    "cloze_subsets.py",
    "summarize_metrics.py",
    "leaderboard.py",
    "render_report.py",
}
#: Metrics-stage scripts that may import a measure module directly (the timeline's calibration
#: reads the knowledge family's candidate sets), besides the scripts that run every family.
METRICS_STAGE = MEASURE_SCRIPTS | {"timeline.py"}


def _registry_readers(tree: ast.Module, registry_names: set[str]) -> dict[str, set[str]]:
    """``public name -> registries it reads``, following calls between the module's functions
    (a local variable named like a module function is not a call of it)."""
    direct: dict[str, set[str]] = {}
    calls: dict[str, set[str]] = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.ClassDef):
            names = [n for n in ast.walk(node) if isinstance(n, ast.Name)]
            local = {n.id for n in names if isinstance(n.ctx, ast.Store)} | {
                a.arg for a in ast.walk(node) if isinstance(a, ast.arg)
            }
            used = {n.id for n in names if isinstance(n.ctx, ast.Load)} - local
            direct[node.name] = used & registry_names
            calls[node.name] = used
    reads = {name: set(found) for name, found in direct.items()}
    changed = True
    while changed:
        changed = False
        for name, used in calls.items():
            for callee in used & set(reads):
                if not reads[callee] <= reads[name]:
                    reads[name] |= reads[callee]
                    changed = True
    return {name: found for name, found in reads.items() if not name.startswith("_") and found}


def test_kinds_names_every_registry_and_every_name_that_reads_one():
    tree = ast.parse(Path(registries.__file__).read_text())
    instances = {name for name, value in vars(registries).items() if isinstance(value, Registry)}
    assert instances == set(registries.KINDS), "a registry without its KINDS line"
    listed = {name: kind for kind, names in registries.KINDS.items() for name in names}
    assert all(hasattr(registries, name) for name in listed), sorted(
        n for n in listed if not hasattr(registries, n)
    )
    for name, kinds in _registry_readers(tree, instances).items():
        assert len(kinds) == 1 and listed.get(name) == next(iter(kinds)), (name, kinds, listed.get(name))


def test_the_walk_sees_a_function_reading_a_registry_through_another():
    tree = ast.parse(
        "R = Registry('x')\n"
        "def get(n):\n    return R[n]\n"
        "def twice(n):\n    return get(n), get(n)\n"
        "def plain():\n    get = 1\n    return get\n"
    )
    assert _registry_readers(tree, {"R"}) == {"get": {"R"}, "twice": {"R"}}


def test_a_plugin_adds_its_own_reach_not_the_registries_entries():
    """The toy plugin fills the four registries and imports retrieval, listed-facts and metrics
    helpers: the rules it joins gain those, not the built-in entries of other stages (a measure
    family edit stays a measures' edit)."""
    plain = {s.name: library_modules(s, SCRIPTS) for s in SCRIPTS.glob("*.py")}
    plugin = {s.name: library_modules(s, SCRIPTS, [PLUGIN]) for s in SCRIPTS.glob("*.py")}
    for module in ("factprobe/metrics/knowledge.py", "factprobe/metrics/belief.py"):
        assert MEASURE_SCRIPTS <= {s for s, mods in plugin.items() if module in mods} <= METRICS_STAGE
        assert MEASURE_SCRIPTS <= {s for s, mods in plain.items() if module in mods} <= METRICS_STAGE
    joined = {s for s, mods in plugin.items() if str(PLUGIN) in mods}
    assert {"retrieve_distractors.py", "build_probes.py", "score_shard.py", "compute_metrics.py"} <= joined
    assert "extract_dump.py" not in joined
    # the plugin's own imports (factprobe.distractors.retrieve inside its strategy) reach scoring
    assert "factprobe/distractors/retrieve.py" in set(plugin["score_shard.py"]) - set(plain["score_shard.py"])
    assert "factprobe/distractors/strategies.py" not in plugin["score_shard.py"]


def test_a_plugin_fills_the_registries_it_names_through_a_package(tmp_path):
    """``from factprobe.metrics import family``: the measures' registry, re-exported by a package."""
    plugin = tmp_path / "mine.py"
    plugin.write_text(
        "from factprobe.metrics import family\n\n@family('mine')\ndef mine(frame):\n    return [], []\n"
    )
    assert str(plugin) in library_modules(SCRIPTS / "compute_metrics.py", SCRIPTS, [plugin])
    assert str(plugin) not in library_modules(SCRIPTS / "retrieve_distractors.py", SCRIPTS, [plugin])


def test_entry_behaviour_is_an_input_of_the_rules_that_run_it():
    """Whether Ω holds every subject (``every_subject``) is decided in a module named by the
    strategies' registry, listed by the retrieval rules; the registries module is data, never
    listed."""
    module = "factprobe/distractors/every_subject.py"
    for script in ("retrieve_distractors.py", "prepare_retrieval.py"):
        assert module in library_modules(SCRIPTS / script, SCRIPTS)
    assert module not in library_modules(SCRIPTS / "compute_metrics.py", SCRIPTS)
    for kind in registries.KINDS:
        for name, entry in getattr(registries, kind).items():
            code = entry if isinstance(entry, str) else vars(entry) if hasattr(entry, "__dict__") else {}
            values = [code] if isinstance(code, str) else list(code.values())
            # no entry's behaviour hides in the registries module: its code is named, not held
            assert not [
                v for v in values if callable(v) and getattr(v, "__module__", "") == registries.__name__
            ], (
                kind,
                name,
            )
    assert (
        registries.STRATEGIES["cooccur"].every_subject == "factprobe.distractors.every_subject:subject_side"
    )


def test_a_stamp_moves_when_a_module_changes_not_when_it_is_touched(tmp_path):
    """write_stamp: created with the newest module's time (what the modules as inputs would
    plan); a touch leaves it as it is, and so does an edit of comments and docstrings; an edit
    of code gives it the edit's time; an edit undone with its time stamp gives the old time
    back. A plugin set has its own stamp."""
    root = tmp_path / "scripts"
    (root / "factprobe").mkdir(parents=True)
    a, b = root / "factprobe" / "a.py", root / "factprobe" / "b.py"
    a.write_text("A = 1\n")
    b.write_text("B = 2\n")
    old = 1_000_000_000 * 10**9
    os.utime(a, ns=(old, old))
    os.utime(b, ns=(old + 5, old + 5))
    modules = ["factprobe/a.py", "factprobe/b.py"]
    stamp = stamp_file(tmp_path, "run.py", modules)
    assert stamp == tmp_path / ".snakemake" / "factprobe" / "code" / "run.modules"

    def mtime():
        return write_stamp(stamp, modules, root).stat().st_mtime_ns

    assert mtime() == old + 5
    # the hash of the code: the syntax tree, here one assignment and no docstring
    sha = hashlib.sha256(ast.dump(ast.parse("A = 1\n")).encode()).hexdigest()
    assert stamp.read_text().splitlines()[0] == f"{sha}  factprobe/a.py"
    os.utime(a, ns=(old + 100, old + 100))  # touched, unchanged
    assert mtime() == old + 5
    a.write_text('"""Module prose."""\n\n# a comment\nA = 1  # why\n\n\ndef f():\n    """Doc."""\n')
    os.utime(a, ns=(old + 150, old + 150))  # prose only, against a version with f() itself:
    base = mtime()
    a.write_text('"""Other prose."""\nA = 1\n\n\ndef f():\n    """Other doc, two lines.\n\n    More."""\n')
    os.utime(a, ns=(old + 160, old + 160))
    assert mtime() == base == old + 150
    a.write_text('"""Other prose."""\nA = 1\n\n\ndef f():\n    """Doc."""\n    return 1\n')
    os.utime(a, ns=(old + 170, old + 170))  # code: a return added
    assert mtime() == old + 170
    a.write_text("A = 1\n")
    os.utime(a, ns=(old + 100, old + 100))
    b.write_text("B = 3\n")
    os.utime(b, ns=(old + 200, old + 200))
    assert mtime() == old + 200
    b.write_text("B = 2\n")
    os.utime(b, ns=(old + 5, old + 5))  # undone, time stamp too
    assert mtime() == old + 100  # the touched module is now the newest
    assert [p.name for p in stamp.parent.iterdir()] == ["run.modules"]  # no temporary file left
    plugin = str(tmp_path / "plugin.py")
    other = stamp_file(tmp_path, "run.py", [*modules, plugin])
    assert other.parent == stamp.parent and other.name.startswith("run+") and other != stamp


def test_concurrent_calls_leave_one_complete_stamp(tmp_path):
    """Cluster jobs re-parse the Snakefile at once: each writer renames a whole file into place."""
    root = tmp_path / "scripts"
    (root / "factprobe").mkdir(parents=True)
    modules = [f"factprobe/m{i}.py" for i in range(20)]
    for i, module in enumerate(modules):
        (root / module).write_text(f"X = {i}\n")
    stamp = stamp_file(tmp_path, "run.py", modules)
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda _: write_stamp(stamp, modules, root), range(32)))
    digests = [
        hashlib.sha256(ast.dump(ast.parse((root / m).read_text())).encode()).hexdigest() for m in modules
    ]
    expected = "".join(f"{d}  {m}\n" for d, m in zip(digests, modules, strict=True))
    assert stamp.read_text() == expected
    assert [p.name for p in stamp.parent.iterdir()] == ["run.modules"]
    assert stamp.stat().st_mtime_ns == max((root / m).stat().st_mtime_ns for m in modules)


def test_a_copied_working_directory_keeps_its_stamp_names(tmp_path):
    """A plugin inside the working directory is named relative to it: a copy of the directory
    (another absolute path) asks Snakemake for the same stamp, so no input set changes; a plugin
    outside keeps its absolute path."""
    first, second, outside = tmp_path / "a", tmp_path / "b", tmp_path / "shared" / "p.py"
    names = [
        stamp_file(work, "run.py", ["factprobe/x.py", str(work / "plugins" / "p.py")]).name
        for work in (first, second)
    ]
    assert names[0] == names[1] and "+" in names[0]
    assert stamp_file(first, "run.py", ["factprobe/x.py", str(outside)]).name != names[0]
