"""Model registry rows (config/models.tsv) -> a loaded causal LM, its tokenizer and its identity.

A row names ``source`` as a Hugging Face hub id, a local directory, or ``builtin:control`` (the
positive-control model the workflow trains, see :mod:`factprobe.scoring.control`). Loading never
enables ``trust_remote_code`` unless the row says so, and works offline (``HF_HUB_OFFLINE=1``):
a hub id that cannot be reached fails with an error that suggests a local directory instead.
"""

from __future__ import annotations

import hashlib
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

log = logging.getLogger(__name__)

BUILTIN_CONTROL = "builtin:control"
DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}


class ModelLoadError(RuntimeError):
    """A models.tsv row cannot be turned into a model; the message names the row and the fix."""


@dataclass(frozen=True)
class ModelSpec:
    """One row of config/models.tsv, with defaults filled in."""

    name: str
    source: str
    revision: str = ""
    dtype: str = "auto"
    device: str = "auto"
    cutoff: str = ""
    trust_remote_code: bool = False
    line: int | None = None

    @property
    def where(self) -> str:
        line = f"line {self.line}, " if self.line else ""
        return f"config/models.tsv: {line}model {self.name!r}"


def spec_from_row(row: dict[str, Any]) -> ModelSpec:
    """Build a :class:`ModelSpec` from a registry row as read by ``factprobe.registry.read_registry``."""
    return ModelSpec(
        name=str(row["name"]),
        source=str(row["source"]),
        revision=str(row.get("revision") or ""),
        dtype=str(row.get("dtype") or "auto"),
        device=str(row.get("device") or "auto"),
        cutoff=str(row.get("cutoff") or ""),
        trust_remote_code=bool(row.get("trust_remote_code", False)),
        line=row.get("_line"),
    )


def resolve_device(device: str) -> torch.device:
    """``auto`` -> the first CUDA device when present, else CPU."""
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise ModelLoadError(f"device {device!r} requested but CUDA is not available; set device to auto or cpu")
    return torch.device(device)


def resolve_dtype(dtype: str, device: torch.device) -> torch.dtype:
    """``auto`` -> bf16 on GPUs that support it (fp16 otherwise), fp32 on CPU (exact scores)."""
    if dtype != "auto":
        return DTYPES[dtype]
    if device.type == "cuda":
        return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    return torch.float32


@dataclass
class LoadedModel:
    """A model ready for scoring: module in eval mode, tokenizer, and cache identity."""

    spec: ModelSpec
    model: Any
    tokenizer: Any
    device: torch.device
    dtype: torch.dtype
    fingerprint: str = ""
    extra: dict = field(default_factory=dict)

    @property
    def cache_identity(self) -> tuple[str, str, str]:
        """(model, revision, dtype) part of the request-cache key (see factprobe.scoring.cache)."""
        return (self.spec.source, self.fingerprint or self.spec.revision, str(self.dtype).removeprefix("torch."))


def directory_fingerprint(folder: str | os.PathLike, max_bytes: int = 1 << 30) -> str:
    """Content hash of a local model directory (config, tokenizer and weights).

    A local directory has no hub revision; retraining the control model or replacing weights must
    invalidate the request cache, so the cache key uses this hash. Files above ``max_bytes`` in
    total are identified by name and size only, to keep start-up cheap for big local checkpoints.
    """
    folder = Path(folder)
    files = sorted(p for p in folder.rglob("*") if p.is_file() and not p.name.startswith("."))
    files = [p for p in files if p.suffix in {".json", ".safetensors", ".bin", ".txt", ".model", ".py"}]
    total = sum(p.stat().st_size for p in files)
    digest = hashlib.blake2b(digest_size=12)
    for path in files:
        digest.update(str(path.relative_to(folder)).encode())
        if total <= max_bytes:
            digest.update(path.read_bytes())
        else:
            digest.update(str(path.stat().st_size).encode())
    return digest.hexdigest()


def _resolve_source(spec: ModelSpec, control_dir: str | os.PathLike | None) -> tuple[str, bool]:
    """Where to load from, and whether it is a local directory."""
    if spec.source == BUILTIN_CONTROL:
        if control_dir is None:
            raise ModelLoadError(f"{spec.where}: builtin:control needs the trained control directory")
        if not Path(control_dir).is_dir():
            raise ModelLoadError(f"{spec.where}: {control_dir} missing; run the train_control rule first")
        return str(control_dir), True
    path = Path(spec.source).expanduser()
    if path.is_dir():
        return str(path), True
    if path.is_absolute() or spec.source.startswith((".", "~")) or spec.source.count("/") > 1:
        raise ModelLoadError(f"{spec.where}: local directory {spec.source!r} does not exist; fix the source column")
    return spec.source, False


def load_model(
    row: dict[str, Any] | ModelSpec,
    control_dir: str | os.PathLike | None = None,
    attn_implementation: str = "sdpa",
) -> LoadedModel:
    """Load the model and tokenizer of one models.tsv row, in eval mode on the row's device/dtype.

    ``sdpa`` attention is requested because the packed scorer passes a custom 4D mask (eager
    works too; flash-attention kernels do not accept 4D masks), with a fallback to eager for
    architectures without sdpa support.
    """
    from transformers import AutoModelForCausalLM, AutoTokenizer

    spec = row if isinstance(row, ModelSpec) else spec_from_row(row)
    source, local = _resolve_source(spec, control_dir)
    device = resolve_device(spec.device)
    dtype = resolve_dtype(spec.dtype, device)
    kwargs: dict[str, Any] = {"trust_remote_code": spec.trust_remote_code}
    if not local and spec.revision:
        kwargs["revision"] = spec.revision
    if local or os.environ.get("HF_HUB_OFFLINE") == "1":
        kwargs["local_files_only"] = True
    try:
        tokenizer = AutoTokenizer.from_pretrained(source, **kwargs)
        try:
            model = AutoModelForCausalLM.from_pretrained(
                source, dtype=dtype, attn_implementation=attn_implementation, **kwargs
            )
        except (ValueError, ImportError) as exc:
            if "attn" not in str(exc).lower() and "sdpa" not in str(exc).lower():
                raise
            log.warning("%s: %s; falling back to eager attention", spec.where, exc)
            model = AutoModelForCausalLM.from_pretrained(source, dtype=dtype, attn_implementation="eager", **kwargs)
    except OSError as exc:
        if local:
            raise ModelLoadError(f"{spec.where}: cannot load local directory {source}: {exc}") from exc
        raise ModelLoadError(
            f"{spec.where}: cannot load hub id {source!r} (revision {spec.revision or 'main'}): {exc}\n"
            f"Compute nodes are often offline. Download it once where the network is reachable, e.g. "
            f"`hf download {source} --local-dir resources/models/{spec.name}`, and set the "
            f"row's source to that directory (or fill the HF cache and set HF_HUB_OFFLINE=1)."
        ) from exc
    model.to(device)
    model.eval()
    fingerprint = directory_fingerprint(source) if local else spec.revision
    log.info("%s: loaded %s on %s as %s (fingerprint %s)", spec.where, source, device, dtype, fingerprint)
    return LoadedModel(spec, model, tokenizer, device, dtype, fingerprint)


def wrap_model(model: Any, tokenizer: Any, name: str = "model", fingerprint: str = "") -> LoadedModel:
    """A :class:`LoadedModel` around objects already in memory (tests, benchmarks)."""
    param = next(model.parameters())
    spec = ModelSpec(name=name, source=name, dtype=str(param.dtype).removeprefix("torch."))
    model.eval()
    return LoadedModel(spec, model, tokenizer, param.device, param.dtype, fingerprint)
