"""The reproducible-CPU settings of rule train_control (factprobe.reproducible)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from factprobe.reproducible import CPU_REPRODUCIBLE_ENV, use_reproducible_cpu

SCRIPTS = Path(__file__).resolve().parents[2] / "workflow" / "scripts"


def test_settings_are_applied_to_the_given_environment():
    env = {"KEEP": "1", "OMP_NUM_THREADS": "8"}
    applied = use_reproducible_cpu(env)
    assert applied == CPU_REPRODUCIBLE_ENV
    assert env["KEEP"] == "1" and env["OMP_NUM_THREADS"] == "1" and env["ATEN_CPU_CAPABILITY"] == "default"


def test_refused_once_torch_is_loaded_in_this_process():
    import torch  # noqa: F401  (the test process has torch loaded)

    with pytest.raises(RuntimeError, match="before torch is imported"):
        use_reproducible_cpu()


def test_a_fresh_process_gets_scalar_kernels_and_one_thread():
    """ATen's scalar kernels whatever vector units the CPU has."""
    expected = "DEFAULT"
    code = (
        "import json, sys; sys.path.insert(0, sys.argv[1]);"
        "from factprobe.reproducible import use_reproducible_cpu; use_reproducible_cpu();"
        "import torch; print(json.dumps([torch.backends.cpu.get_cpu_capability(), torch.get_num_threads()]))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(SCRIPTS)], capture_output=True, text=True, check=True
    )
    assert json.loads(out.stdout) == [expected, 1]
