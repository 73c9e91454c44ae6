"""The Python interpreter must have a path the shell does not split.

Snakemake runs a ``script:`` job as ``<interpreter> <script>`` through the shell, the script's
path quoted but the interpreter's (``sys.executable``) not: with a virtual environment inside a
project whose path has a space (``make venv`` puts ``.venv`` there), every job fails with
``No such file or directory`` (exit 127). :func:`interpreter_error` refuses that at start-up with
the remedy. Jobs run in a conda environment or a container call ``python`` from that environment
instead, so those runs pass.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable

#: Deployment methods whose jobs run their environment's own ``python``, not this interpreter.
OWN_PYTHON = {"conda", "apptainer"}


def interpreter_error(executable: str, deployment: Iterable[str] = ()) -> str | None:
    """The one-line refusal when ``executable`` would be split by the shell (a space, a quote, ...)
    and the jobs would run it; None when it is safe or when jobs bring their own Python."""
    if OWN_PYTHON & {str(m).lower() for m in deployment} or shlex.quote(executable) == executable:
        return None
    return (
        f"the Python interpreter {executable!r} has a space or another character the shell splits "
        "on in its path: Snakemake runs every script job as `<interpreter> <script>` without quoting "
        "it, so each would fail with exit 127. Move the project to a path without spaces, or create "
        "the virtual environment in one (python3 -m venv ~/venvs/factprobe, then "
        "~/venvs/factprobe/bin/pip install -e . and run ~/venvs/factprobe/bin/snakemake), or run with "
        "--sdm conda (docs/running.md)"
    )
