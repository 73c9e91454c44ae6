"""Shared fixtures: paths of the bundled real data (the repo passes without ../shared)."""

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"
DEMO = ROOT / "resources" / "demo"
DEMO_OLD = DEMO / "wikidata-20141201-sample.json.bz2"
DEMO_NEW = DEMO / "wikidata-20190201-sample.json.bz2"


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


# A loud list of skipped tests at the end of every run (issue 16 item 8).
from skipreport import pytest_terminal_summary  # noqa: E402, F401
