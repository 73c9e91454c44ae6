"""What the ``model`` argument of :func:`factprobe.api.score` stands for, and its loading.

A models.tsv row (or a row's name in the suite's registry), a local folder with a saved model,
``builtin:control`` (the suite's trained control model) or an already loaded ``transformers``
model with its tokenizer. Rows load as rule ``score_shard`` loads them (from the folder rule
``prepare_model`` or ``train_control`` made, else the source); every file is checked before
anything loads, each problem a :class:`~factprobe.suite_open.SetupError` naming the path.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from factprobe.suite_open import SetupError, Suite

#: Weights and tokenizer files one of which a local model folder must hold.
WEIGHT_FILES = ("*.safetensors", "*.bin", "*.pt", "*.gguf")
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "vocab.json", "tokenizer.model", "*.tiktoken")


def check_model_folder(folder: Path) -> None:
    """A local model folder holds weights and a tokenizer, else an error naming what is missing."""
    missing = [
        what
        for what, patterns in (("weights", WEIGHT_FILES), ("a tokenizer", TOKENIZER_FILES))
        if not any(next(folder.glob(p), None) for p in patterns)
    ]
    if not (folder / "config.json").is_file() and not any(folder.glob("*.gguf")):
        missing.append("config.json")
    if missing:
        raise SetupError(
            f"{folder}: model folder without {' and '.join(missing)}; save the model there with "
            "model.save_pretrained(folder) and tokenizer.save_pretrained(folder), or prepare it with "
            "`snakemake resources/models/<name>` from a config/models.tsv row"
        )


def control_row(suite: Suite) -> dict:
    """The suite's models.tsv row of ``builtin:control`` (a bare one when the registry has none)."""
    from factprobe.lm.load import BUILTIN_CONTROL

    rows = [row for row in suite.models.values() if row.get("source") == BUILTIN_CONTROL]
    return dict(rows[0]) if rows else {"name": "control", "source": BUILTIN_CONTROL}


def model_row(model: Any, suite: Suite) -> dict | None:
    """The models.tsv row ``model`` stands for (a row, a row's name, ``builtin:control`` or a local
    folder), or None for an already loaded model."""
    from factprobe.lm.load import BUILTIN_CONTROL

    if isinstance(model, Mapping):
        if "name" not in model or "source" not in model:
            raise SetupError(f"model row {dict(model)!r}: a models.tsv row needs 'name' and 'source'")
        return dict(model)
    if isinstance(model, (str, Path)):
        text = str(model)
        if text == BUILTIN_CONTROL:
            return control_row(suite)
        if text in suite.models and not Path(text).is_dir():
            return dict(suite.models[text])
        folder = Path(text).expanduser()
        if not folder.is_dir():
            raise SetupError(
                f"{folder}: no such model folder, and no row {text!r} in the models.tsv of "
                f"{suite.config_file}; pass a folder holding a saved model, a models.tsv row "
                f"(one of {sorted(suite.models)}) or {BUILTIN_CONTROL}"
            )
        check_model_folder(folder)
        return {"name": folder.name, "source": str(folder.resolve())}
    return None


def model_dir(row: dict, suite: Suite) -> Path | None:
    """The folder the workflow loads ``row`` from: the suite's trained control model, the folder
    rule ``prepare_model`` made, else None (the row's source, loaded directly)."""
    from factprobe.lm.load import BUILTIN_CONTROL

    if row["source"] == BUILTIN_CONTROL:
        folder = suite.results / "models" / "control" / suite.name
        if not folder.is_dir():
            raise SetupError(
                f"{folder}: the suite's builtin:control model is not trained; run "
                f"`snakemake --cores 2 {folder.relative_to(suite.workdir)}` in {suite.workdir}"
            )
        return folder
    prepared = suite.workdir / "resources" / "models" / str(row["name"])
    if prepared.is_dir() and row["name"] in suite.models:
        return prepared
    source = Path(str(row["source"])).expanduser()
    if source.is_dir():
        check_model_folder(source)
    return None


def loaded_model(model: Any, tokenizer: Any) -> tuple[str, Any, Any]:
    """(name, module, tokenizer) of an already loaded model (``(model, tokenizer)`` or ``model``
    with ``tokenizer=``); the name is its ``config._name_or_path``, else its class."""
    if isinstance(model, tuple):
        if len(model) != 2:
            raise SetupError(
                "model: pass (PreTrainedModel, tokenizer), a folder, a models.tsv row or builtin:control"
            )
        model, tokenizer = model
    if tokenizer is None:
        raise SetupError(f"model {type(model).__name__}: a loaded model needs its tokenizer (tokenizer=...)")
    name = str(getattr(getattr(model, "config", None), "_name_or_path", "") or type(model).__name__)
    return name, model, tokenizer


def engine(model: Any, row: dict | None, suite: Suite, settings, tokenizer: Any = None):
    """The factprobe LM of ``model`` (its models.tsv ``row``, None for a loaded model) with the
    suite's scoring settings, as rule ``score_shard`` loads it."""
    from factprobe.lm import load_model

    common = {
        "end_marker": settings.end_marker,
        "token_budget": settings.token_budget,
        "no_space_langs": settings.no_space_languages,
    }
    if row is not None:
        return load_model(row, model_dir=model_dir(row, suite), **common)
    from factprobe.lm.hf import HFCausalLM

    name, module, tokenizer = loaded_model(model, tokenizer)
    return HFCausalLM(module, tokenizer, source=name, **common)
