"""`make test` names skipped tests and why."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_skips_are_listed_with_reasons(tmp_path):
    (tmp_path / "test_x.py").write_text(
        "import pytest\n"
        "def test_ok():\n    pass\n"
        "@pytest.mark.skipif(True, reason='Debian package chromium is not installed')\n"
        "def test_browser():\n    pass\n"
        "def test_runtime_skip():\n    pytest.skip('no control model configured')\n"
    )
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "skipreport", "-p", "no:cacheprovider", str(tmp_path)],
        cwd=tmp_path,
        env={"PYTHONPATH": str(ROOT / "tests"), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    out = proc.stdout
    assert proc.returncode == 0, out
    assert "2 test(s) SKIPPED: not run, not passed" in out
    assert "1 x Debian package chromium is not installed" in out
    assert "1 x no control model configured" in out
    assert "test_x.py::test_browser" in out and "test_x.py::test_runtime_skip" in out


def test_make_test_asks_pytest_for_skip_reasons():
    makefile = (ROOT / "Makefile").read_text()
    test_recipe = makefile.split("\ntest:", 1)[1].split("\n\n", 1)[0]
    assert "-rs" in test_recipe.split()
