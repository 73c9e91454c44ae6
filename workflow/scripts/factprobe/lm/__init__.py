"""One model interface: typed requests/results (:mod:`.api`), the Hugging Face causal LM
(:mod:`.hf`) with its encoding rule (:mod:`.encoding`), loader (:mod:`.load`) and packed scoring
engine (:mod:`.packed`), and the request-caching wrapper (:mod:`.cache`).

:data:`BACKENDS` is the registry of model backends (kept in :mod:`factprobe.registries`,
re-exported here): the ``backend`` column of ``config/models.tsv`` (default ``hf``) names the
class that loads a row. Scoring, generation, top-k, ApprOpt and translation get their model from
:func:`load_model` only. A backend class implements :class:`factprobe.lm.api.LM` and a
classmethod ``from_row(row, model_dir, **settings)``; register one with ``@backend("name")`` (a
plugin: :mod:`factprobe.plugins`). This module is light (standard library only until a model is
loaded). The heavy names below
(``HFCausalLM``, ``CachingLM``, ...) are imported on first use.
"""

from __future__ import annotations

import importlib
from typing import Any

from factprobe.registries import (
    BACKENDS,
    DEFAULT_BACKEND,
    backend,
    backend_class,
    register_backend,
    row_backend,
)


def load_model(row: Any, model_dir: Any = None, **settings: Any) -> Any:
    """The model of one models.tsv row, by its backend: the one factory of every stage."""
    return backend_class(row_backend(row)).from_row(row, model_dir, **settings)


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
