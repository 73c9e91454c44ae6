"""One model interface: typed requests/results (:mod:`.api`), the Hugging Face causal LM
(:mod:`.hf`) with its encoding rule (:mod:`.encoding`), loader (:mod:`.load`) and packed scoring
engine (:mod:`.packed`), and the request-caching wrapper (:mod:`.cache`).

:data:`BACKENDS` is the registry of model backends (issue 25 item 1): the ``backend`` column of
``config/models.tsv`` (default ``hf``) names the class that loads a row. Scoring, generation,
top-k, ApprOpt and translation get their model from :func:`load_model` only. A backend class
implements :class:`factprobe.lm.api.LM` and a classmethod ``from_row(row, model_dir, **settings)``;
register one with ``@backend("name")`` (a plugin: :mod:`factprobe.plugins`). This module is
light (standard library only until a model is loaded): ``factprobe.registry`` checks the
column against :data:`BACKENDS` while the Snakefile is parsed. The heavy names below
(``HFCausalLM``, ``CachingLM``, ...) are imported on first use.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

#: backend name -> the class (or ``"module:attribute"``, imported on first use).
BACKENDS: dict[str, type | str] = {}
#: The backend of a models.tsv row without a ``backend`` cell.
DEFAULT_BACKEND = "hf"


def register_backend(name: str, cls: type | str) -> None:
    """Add (or replace) backend ``name``."""
    BACKENDS[name] = cls


def backend(name: str) -> Callable[[type], type]:
    """Class decorator: ``@backend("mine")`` registers the class as backend ``mine``."""

    def add(cls: type) -> type:
        register_backend(name, cls)
        return cls

    return add


def backend_class(name: str, where: str = "config/models.tsv") -> type:
    """The class of backend ``name`` (imported on first use); unknown names fail naming ``where``."""
    if name not in BACKENDS:
        raise KeyError(f"{where}: unknown backend {name!r}; choose from {sorted(BACKENDS)}")
    cls = BACKENDS[name]
    if isinstance(cls, str):
        module, _, attr = cls.partition(":")
        cls = BACKENDS[name] = getattr(importlib.import_module(module), attr)
    return cls


def row_backend(row: Any) -> str:
    """The backend of a models.tsv row (a dict or a ``ModelSpec``): its cell, else ``hf``."""
    value = row.get("backend") if isinstance(row, dict) else getattr(row, "backend", "")
    return str(value or DEFAULT_BACKEND)


def load_model(row: Any, model_dir: Any = None, **settings: Any) -> Any:
    """The model of one models.tsv row, by its backend: the one factory of every stage."""
    return backend_class(row_backend(row)).from_row(row, model_dir, **settings)


register_backend("hf", "factprobe.lm.hf:HFCausalLM")
register_backend("masked", "factprobe.lm.masked:MaskedLM")

_LAZY = {
    "LM": "api",
    "BeamRequest": "api",
    "GenerateRequest": "api",
    "GenerateResult": "api",
    "LoglikRequest": "api",
    "LoglikResult": "api",
    "SentenceRequest": "api",
    "TopkRequest": "api",
    "TopkResult": "api",
    "CachingLM": "cache",
    "RequestCache": "cache",
    "NO_SPACE_LANGS": "encoding",
    "HFCausalLM": "hf",
    "BUILTIN_CONTROL": "load",
    "ModelLoadError": "load",
    "ModelSpec": "load",
}


def __getattr__(name: str) -> Any:
    # PEP 562: the science stack (torch, transformers) is imported when a model class is asked for.
    if name in _LAZY:
        value = getattr(importlib.import_module(f"factprobe.lm.{_LAZY[name]}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'factprobe.lm' has no attribute {name!r}")


__all__ = [
    "BACKENDS",
    "DEFAULT_BACKEND",
    "backend",
    "backend_class",
    "load_model",
    "register_backend",
    "row_backend",
    *_LAZY,
]

from factprobe.plugins import load_plugins  # noqa: E402  (after the registry: plugins fill it)

load_plugins()
