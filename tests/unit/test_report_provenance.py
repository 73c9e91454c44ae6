"""factprobe.report.provenance: what the report's provenance block shows."""

import hashlib
import json
from pathlib import Path

import pytest
from factprobe.report.provenance import (
    config_hash,
    coverage_cell,
    dump_date,
    dump_records,
    factprobe_version,
    malformed_cell,
    model_records,
    read_manifest,
    registry_path,
    with_label_coverage,
    with_malformed,
)

ROOT = Path(__file__).resolve().parents[2]


def test_config_hash_is_sha256_of_canonical_json():
    a = {"report": {"dpi": 90, "title": "x"}, "metrics": {"ns": [1, 2]}}
    b = {"metrics": {"ns": [1, 2]}, "report": {"title": "x", "dpi": 90}}
    expected = hashlib.sha256(b'{"metrics":{"ns":[1,2]},"report":{"dpi":90,"title":"x"}}').hexdigest()[:12]
    assert config_hash(a) == config_hash(b) == expected
    assert config_hash({**a, "report": {"dpi": 91, "title": "x"}}) != expected


def test_version_is_the_workflows_own_pyproject(tmp_path):
    text = (ROOT / "pyproject.toml").read_text()
    version = text.split('version = "', 1)[1].split('"', 1)[0]
    assert factprobe_version(ROOT) == version
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "factprobe"\nversion = "7.7.7"\n')
    assert factprobe_version(tmp_path) == "7.7.7"


def test_dump_rows_used_with_their_dates():
    rows = {
        "20141201": {"path": "a.json.bz2", "checksum": "sha1:1"},
        "20190201": {"url": "https://x/y.json.gz", "checksum": ""},
        "20200101": {"path": "unused"},
    }
    assert dump_date("20190201") == "2019-02-01"
    assert dump_records(rows, ["20190201", "20141201", "20141201"]) == [
        {"dump": "20141201", "date": "2014-12-01", "source": "a.json.bz2", "checksum": "sha1:1"},
        {"dump": "20190201", "date": "2019-02-01", "source": "https://x/y.json.gz", "checksum": ""},
    ]


def test_models_row_completed_by_manifest_and_control_fingerprint(tmp_path):
    manifest = tmp_path / "gpt2" / "manifest.json"
    manifest.parent.mkdir()
    manifest.write_text(
        json.dumps(
            {"source": "gpt2", "kind": "hub", "revision": "abc123", "source_sha256": "ff" * 32, "extra": 1}
        )
    )
    rows = {
        "gpt2": {"source": "gpt2", "revision": "", "dtype": "float32"},
        "control": {"source": "builtin:control", "dtype": "float32"},
        "local": {"source": "/models/x", "revision": "", "dtype": "bfloat16"},
    }
    manifests = {"gpt2": str(manifest), "local": str(tmp_path / "absent.json")}
    records = model_records(rows, manifests, {"b": "dir-b", "a": "dir-a"}, lambda d: f"fp({d})")
    by_name = {r["model"]: r for r in records}
    assert by_name["gpt2"]["revision"] == "abc123" and by_name["gpt2"]["source_sha256"] == "ff" * 32
    assert "extra" not in by_name["gpt2"]
    assert by_name["control"]["fingerprint"] == "a: fp(dir-a); b: fp(dir-b)"
    assert by_name["local"] == {"model": "local", "source": "/models/x", "revision": "", "dtype": "bfloat16"}


def test_broken_manifest_names_the_file(tmp_path):
    bad = tmp_path / "manifest.json"
    bad.write_text("{not json")
    with pytest.raises(ValueError, match="manifest.json: not valid JSON"):
        read_manifest(bad)


def test_paths_under_the_workflow_or_working_directory_become_relative(tmp_path):
    demo = str(ROOT / "resources/demo/wikidata-20141201-sample.json.bz2")
    assert registry_path(demo, [tmp_path, ROOT]) == "resources/demo/wikidata-20141201-sample.json.bz2"
    mine = str(tmp_path / "dumps" / "latest.json.gz")
    assert registry_path(mine, [tmp_path, ROOT]) == "dumps/latest.json.gz"
    assert registry_path("/data/wikidata/latest.json.gz", [tmp_path, ROOT]) == "/data/wikidata/latest.json.gz"
    assert registry_path("relative/as/given.json", [tmp_path]) == "relative/as/given.json"


def test_dump_records_use_the_registry_path_or_the_url(tmp_path):
    rows = {
        "20141201": {"path": str(ROOT / "resources/demo/a.json.bz2"), "checksum": "sha1:x"},
        "20190201": {"path": "", "url": "https://example.org/b.json.gz"},
    }
    records = dump_records(rows, ["20190201", "20141201"], [tmp_path, ROOT])
    assert [r["source"] for r in records] == ["resources/demo/a.json.bz2", "https://example.org/b.json.gz"]
    assert records[0]["date"] == "2014-12-01" and records[0]["checksum"] == "sha1:x"


def test_malformed_lines_cell_per_dump():
    assert malformed_cell(None) == ""
    assert malformed_cell({"lines": 635, "malformed": 0}) == "0 of 635 lines"
    bad = {"lines": 635, "malformed": 3, "first_malformed_line": 7}
    assert malformed_cell(bad) == "3 of 635 lines (first at line 7)"
    rows = with_malformed([{"dump": "20141201"}, {"dump": "20190201"}], {"20190201": bad})
    assert [r["malformed lines skipped"] for r in rows] == ["", "3 of 635 lines (first at line 7)"]


def test_label_coverage_cell_per_dump():
    """The report's provenance shows, per dump and language, the items labelled on their own,
    only through ``mul``, and not at all (``extract_stats.json``'s ``label_coverage``)."""
    record = {
        "label_coverage": {
            "en": {"own": 5, "default": 1, "none": 0},
            "de": {"own": 1, "default": 2, "none": 3},
        }
    }
    assert coverage_cell(record) == "en 5 own + 1 mul, 0 none; de 1 own + 2 mul, 3 none"
    assert coverage_cell(None) == "" and coverage_cell({"lines": 3}) == ""
    rows = with_label_coverage([{"dump": "20141201"}, {"dump": "20260105"}], {"20260105": record})
    assert [r["labels per language"] for r in rows] == ["", coverage_cell(record)]


def test_models_say_which_end_token_was_scored(tmp_path):
    """The manifest's document end, a row's own end_token / chat format over it,
    and the control model's token from its folder."""
    manifest = tmp_path / "manifest.json"
    manifest.write_text(json.dumps({"source": "s", "end_token": "<|endoftext|> (id 0, document end)"}))
    rows = {
        "smol": {"source": "s"},
        "named": {"source": "s", "end_token": "<|im_end|>"},
        "chat": {"source": "s", "prompt_format": "chat"},
        "control": {"source": "builtin:control"},
    }
    manifests = {m: str(manifest) for m in ("smol", "named", "chat")}
    records = model_records(rows, manifests, {"k": "dir-k"}, lambda d: "fp", lambda d, row: f"eos of {d}")
    by_name = {r["model"]: r["end_token"] for r in records}
    assert by_name == {
        "smol": "<|endoftext|> (id 0, document end)",
        "named": "<|im_end|> (models.tsv end_token)",
        "chat": "the chat template's end of turn (prompt format chat)",
        "control": "eos of dir-k",
    }


def test_config_hash_does_not_depend_on_where_the_clone_is(tmp_path):
    """A config run from outside the clone (--directory, a module): bundled paths resolve to
    absolute paths inside the clone; the hash is of what the user configured."""
    from factprobe.config_check import resolve_config_paths
    from factprobe.report.provenance import as_configured, run_provenance

    raw = {
        "dumps": "config/dumps.tsv",
        "diff": {"single_value_list": "resources/single_value.tsv"},
        "suites": {"s": {"source": {"path": "/data/mine.tsv"}}},
        "report": {"dpi": 90},
    }
    work = tmp_path / "work"
    work.mkdir()
    hashes = []
    for clone in (tmp_path / "a", tmp_path / "elsewhere" / "b"):
        (clone / "config").mkdir(parents=True)
        (clone / "resources").mkdir()
        (clone / "config/dumps.tsv").write_text("dump\n")
        (clone / "resources/single_value.tsv").write_text("property\n")
        resolved = resolve_config_paths(raw, clone, work)
        assert resolved["dumps"] == str(clone / "config/dumps.tsv")  # what the jobs read
        assert as_configured(resolved, clone) == raw
        hashes.append(run_provenance(clone, resolved, {}, [], [])["config_hash"])
    assert hashes[0] == hashes[1] == config_hash(raw)


def test_plugins_loaded_are_named_with_their_file_hash(tmp_path):
    """The report names each plugin file that ran, with its SHA-256; none loaded, no key."""
    import hashlib

    from factprobe.plumbing.run_inputs import loaded_plugins
    from factprobe.report.html import provenance_section
    from factprobe.report.provenance import plugin_records, run_provenance
    from factprobe.settings import Report

    mine = tmp_path / "mine.py"
    mine.write_text("X = 1\n")
    names, files = loaded_plugins(ROOT / "workflow" / "scripts", {"FACTPROBE_PLUGINS": f" {mine} ,"})
    assert names == [str(mine)] and files == [mine]
    records = plugin_records(names, files)
    assert records == [{"plugin": str(mine), "sha256": hashlib.sha256(b"X = 1\n").hexdigest()}]
    assert "plugins" not in run_provenance(tmp_path, {}, {}, [], [])
    block = run_provenance(tmp_path, {}, {}, [], [], records)
    assert block["plugins"] == records
    assert records[0]["sha256"] in provenance_section(block, Report())
