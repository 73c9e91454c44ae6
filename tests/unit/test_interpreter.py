"""An interpreter path the shell would split is refused at start-up with the remedy
(factprobe.plumbing.interpreter; Snakemake runs script jobs as `<interpreter> <script>` unquoted)."""

from pathlib import Path

import pytest
from factprobe.plumbing.interpreter import interpreter_error

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    "executable", ["/home/ada/My Projects/factprobe/.venv/bin/python", "/home/ada/it's/.venv/bin/python"]
)
def test_interpreter_path_with_a_space_is_refused_with_the_remedy(executable):
    message = interpreter_error(executable)
    assert message is not None and "\n" not in message
    assert message.startswith(f"the Python interpreter {executable!r} has a space")
    assert "exit 127" in message and "Move the project to a path without spaces" in message
    assert "python3 -m venv ~/venvs/factprobe" in message and "--sdm conda" in message


def test_safe_paths_and_own_python_deployments_pass():
    assert interpreter_error("/home/ada/factprobe/.venv/bin/python") is None
    assert interpreter_error("/opt/py-3.11+x/bin/python3.11") is None
    spaced = "/home/ada/My Projects/.venv/bin/python"
    assert interpreter_error(spaced, ["CONDA"]) is None  # jobs run the environment's python
    assert interpreter_error(spaced, ["ENV_MODULES"]) is not None


def test_the_snakefile_refuses_before_any_rule():
    text = (ROOT / "workflow/Snakefile").read_text()
    assert "interpreter_error(\n    sys.executable," in text and "raise WorkflowError(_BAD_PYTHON)" in text
    assert text.index("raise WorkflowError(_BAD_PYTHON)") < text.index('include: "rules/download.smk"')
