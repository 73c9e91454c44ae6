"""environment.yml (the rules' conda env) lists every runtime dependency of pyproject.toml.

Conda-forge names differ from PyPI names for a few packages; the mapping below is the only
place that knows it. environment.yml must list dependencies only: no pip section installing the
package itself (``pip -e .`` cannot resolve inside Snakemake's conda env folder).
"""

import re
import tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]

# PyPI name -> conda-forge name, where they differ.
CONDA_NAMES = {
    "torch": "pytorch",
    "isal": "python-isal",
    "duckdb": "python-duckdb",
    "matplotlib": "matplotlib-base",  # matplotlib without the Qt GUI stack
}
# Runtime dependencies deliberately not in the rule env, with the reason.
NOT_IN_ENV = {"snakemake": "runs the workflow; rule scripts get its objects from the host Snakemake"}


def _name(spec: str) -> str:
    """Package name of a PyPI or conda match spec ("pytorch[build=...]", "numpy>=1.26", "c::x")."""
    spec = spec.split("::")[-1]
    return re.split(r"[\s<>=!~\[;]", spec.strip(), maxsplit=1)[0].lower().replace("_", "-")


def env_packages() -> tuple[set[str], list]:
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    plain = [d for d in env["dependencies"] if isinstance(d, str)]
    nested = [d for d in env["dependencies"] if not isinstance(d, str)]
    return {_name(d) for d in plain}, nested


def test_environment_covers_pyproject_runtime_dependencies():
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    names, _ = env_packages()
    missing = []
    for dep in deps:
        name = _name(dep)
        if name in NOT_IN_ENV:
            assert name not in names
            continue
        if CONDA_NAMES.get(name, name) not in names:
            missing.append(f"{name} (conda: {CONDA_NAMES.get(name, name)})")
    assert not missing, f"environment.yml lacks {missing}; add them or map the name in CONDA_NAMES"
    assert "python" in names


def test_environment_lists_dependencies_only():
    names, nested = env_packages()
    assert not nested, "no pip: section - rule scripts import the workflow's own library"
    assert "factprobe" not in names and "pip" not in names


def test_environment_torch_is_the_cpu_build():
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    torch = [d for d in env["dependencies"] if _name(d) == "pytorch"]
    assert torch == ["pytorch[version='2.13.0',build='cpu*']"]


def test_name_parser():
    assert _name("pytorch[version='>=2.3',build='cpu*']") == "pytorch"
    assert _name("conda-forge::python-isal>=1.6") == "python-isal"
    assert _name("msgspec>=0.18  # comment") == "msgspec"
    assert _name("tqdm") == "tqdm"


def _lock_versions() -> dict[str, str]:
    text = (ROOT / "requirements/lock.txt").read_text()
    return {_name(m.group(1)): m.group(2) for m in re.finditer(r"^([A-Za-z0-9_.\-]+)==(\S+)", text, re.M)}


def test_environment_pins_the_lock_files_versions():
    """environment.yml pins each package to requirements/lock.txt's version."""
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    lock = _lock_versions()
    conda_to_pypi = {v: k for k, v in CONDA_NAMES.items()}
    mismatched = []
    for dep in env["dependencies"]:
        name = _name(dep)
        if name == "python":
            continue
        pin = re.search(r"(?:=|version=')([0-9][^',\]]*)", dep)
        pypi = conda_to_pypi.get(name, name)
        expected = "2.13.0" if pypi == "torch" else lock.get(pypi)  # torch: the Makefile's CPU wheel
        if pin is None or pin.group(1) != expected:
            mismatched.append(f"{dep} (lock: {expected})")
    assert not mismatched, f"environment.yml pins differ from requirements/lock.txt: {mismatched}"


def test_makefile_installs_the_torch_the_environment_pins():
    makefile = (ROOT / "Makefile").read_text()
    assert "TORCH ?= torch==2.13.0" in makefile
    assert "--require-hashes -r $(LOCK)" in makefile and "--no-deps" in makefile
