"""Model registry rows (config/models.tsv) -> a loaded causal LM, its tokenizer and its identity.

Used only by :meth:`factprobe.lm.hf.HFCausalLM.from_row`. In the workflow every model is loaded
from a folder on disk, ``model_dir``: the folder rule ``prepare_model`` made from the row's source
(:mod:`factprobe.scoring.prepare`: hub id, local folder, GGUF file, GGUF in a Python package) or, for
``builtin:control``, the folder ``train_control`` wrote. Without ``model_dir`` (interactive use,
tests) the row's ``source`` is loaded directly as a hub id or local directory. Loading never
enables ``trust_remote_code`` unless the row says so, and works offline (``HF_HUB_OFFLINE=1``):
a hub id that cannot be reached fails with an error that suggests a local directory instead.
"""

from __future__ import annotations

import hashlib
import logging
import os
from dataclasses import dataclass
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
    backend: str = "hf"
    end_token: str = ""
    prompt_format: str = "plain"

    @property
    def where(self) -> str:
        line = f"line {self.line}, " if self.line else ""
        return f"config/models.tsv: {line}model {self.name!r}"


def spec_from_row(row: dict[str, Any]) -> ModelSpec:
    """Build a :class:`ModelSpec` from a registry row as read by ``factprobe.config_check.read_registry``."""
    return ModelSpec(
        name=str(row["name"]),
        source=str(row["source"]),
        revision=str(row.get("revision") or ""),
        dtype=str(row.get("dtype") or "auto"),
        device=str(row.get("device") or "auto"),
        cutoff=str(row.get("cutoff") or ""),
        trust_remote_code=bool(row.get("trust_remote_code", False)),
        line=row.get("_line"),
        backend=str(row.get("backend") or "hf"),
        end_token=str(row.get("end_token") or ""),
        prompt_format=str(row.get("prompt_format") or "plain"),
    )


def resolve_device(device: str) -> torch.device:
    """``auto`` -> the first CUDA device when present, else CPU."""
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise ModelLoadError(
            f"device {device!r} requested but CUDA is not available; set device to auto or cpu"
        )
    return torch.device(device)


def resolve_dtype(dtype: str, device: torch.device) -> torch.dtype:
    """``auto`` -> bf16 on GPUs that support it (fp16 otherwise), fp32 on CPU (exact scores)."""
    if dtype != "auto":
        return DTYPES[dtype]
    if device.type == "cuda":
        return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    return torch.float32


# Files that make up a model: weights, tokenizer and configuration. Anything else in the folder
# (training.json with its wall time, split.parquet, a manifest with dates) is not the model and
# must not change the cache key.
MODEL_SUFFIXES = {".safetensors", ".bin", ".pt", ".gguf", ".model", ".txt", ".jinja", ".py"}
_JSON_STEMS = "config index tokenizer special_tokens_map added_tokens vocab chat_template"
MODEL_JSON = tuple(f"{stem}.json" for stem in _JSON_STEMS.split())  # *config.json, *index.json, ...


def is_model_file(path: Path) -> bool:
    """Whether ``path`` holds weights, tokenizer or configuration (``*config.json``, remote code)."""
    return path.suffix in MODEL_SUFFIXES or path.name.endswith(MODEL_JSON)


def model_fingerprint(folder: str | os.PathLike, max_bytes: int = 1 << 30) -> str:
    """Content hash of a local model directory: its weights, tokenizer and configuration only.

    A local directory has no hub revision; retraining the control model or replacing weights must
    invalidate the request cache, and retraining to byte-identical weights must not, so the cache
    key uses this hash of :func:`is_model_file` files. Above ``max_bytes`` in total, files are
    identified by name and size only, to keep start-up cheap for big local checkpoints.
    """
    folder = Path(folder)
    files = sorted(p for p in folder.rglob("*") if p.is_file() and is_model_file(p))
    total = sum(p.stat().st_size for p in files)
    digest = hashlib.blake2b(digest_size=12)
    for path in files:
        digest.update(str(path.relative_to(folder)).encode())
        if total <= max_bytes:
            digest.update(path.read_bytes())
        else:
            digest.update(str(path.stat().st_size).encode())
    return digest.hexdigest()


def _resolve_source(spec: ModelSpec, model_dir: str | os.PathLike | None) -> tuple[str, bool]:
    """Where to load from, and whether it is a local directory."""
    if model_dir is not None:
        if not Path(model_dir).is_dir():
            rule = "train_control" if spec.source == BUILTIN_CONTROL else "prepare_model"
            raise ModelLoadError(f"{spec.where}: {model_dir} missing; run the {rule} rule first")
        return str(model_dir), True
    if spec.source == BUILTIN_CONTROL:
        raise ModelLoadError(f"{spec.where}: builtin:control needs the trained control directory")
    path = Path(spec.source).expanduser()
    if path.is_dir():
        return str(path), True
    if path.is_absolute() or spec.source.startswith((".", "~")) or spec.source.count("/") > 1:
        raise ModelLoadError(
            f"{spec.where}: local directory {spec.source!r} does not exist; fix the source column"
        )
    return spec.source, False


def folder_fingerprint(folder: str | os.PathLike) -> str:
    """Identity of a local model folder: its prepared manifest's content hash (``manifest.json``,
    written by :func:`factprobe.scoring.prepare.prepare_model` from the sha256 of every file), else
    :func:`model_fingerprint` of the files."""
    manifest = Path(folder) / "manifest.json"
    if manifest.is_file():
        import json

        fingerprint = json.loads(manifest.read_text()).get("fingerprint")
        if fingerprint:
            return str(fingerprint)
    return model_fingerprint(folder)


@dataclass(frozen=True)
class Loaded:
    """What :func:`load_hf` returns: module in eval mode, tokenizer, and where/how it runs."""

    model: Any
    tokenizer: Any
    device: torch.device
    dtype: torch.dtype
    fingerprint: str


def load_hf(
    spec: ModelSpec,
    model_dir: str | os.PathLike | None = None,
    attn_implementation: str = "sdpa",
    masked: bool = False,
) -> Loaded:
    """Load the model and tokenizer of one models.tsv row, in eval mode on the row's device/dtype.

    ``sdpa`` attention is requested because the packed scorer passes a custom 4D mask (eager
    works too; flash-attention kernels do not accept 4D masks), with a fallback to eager for
    architectures without sdpa support. ``masked``: a masked LM (``AutoModelForMaskedLM``, the
    ``masked`` backend) instead of a causal one.
    """
    from transformers import AutoModelForCausalLM, AutoModelForMaskedLM, AutoTokenizer

    auto = AutoModelForMaskedLM if masked else AutoModelForCausalLM

    source, local = _resolve_source(spec, model_dir)
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
            model = auto.from_pretrained(
                source, dtype=dtype, attn_implementation=attn_implementation, **kwargs
            )
        except (ValueError, ImportError) as exc:
            if "attn" not in str(exc).lower() and "sdpa" not in str(exc).lower():
                raise
            log.warning("%s: %s; falling back to eager attention", spec.where, exc)
            model = auto.from_pretrained(source, dtype=dtype, attn_implementation="eager", **kwargs)
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
    fingerprint = folder_fingerprint(source) if local else spec.revision
    log.info("%s: loaded %s on %s as %s (fingerprint %s)", spec.where, source, device, dtype, fingerprint)
    return Loaded(model, tokenizer, device, dtype, fingerprint)
