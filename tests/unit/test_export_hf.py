"""Hugging Face ``datasets`` export of a real demo suite, loaded offline.

The suite tables are written as the workflow writes them (factprobe.io), split into a base and
a "translated" part to exercise the concatenation, exported, and loaded back with
``datasets.load_dataset`` both through the card's configs and as plain Parquet files: every row
must equal the suite table's. The card must declare the configs, CC0 for the Wikidata content,
the template sets' licences and every field.
"""

import os

os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402
import pytest  # noqa: E402
import yaml  # noqa: E402
from conftest import ROOT  # noqa: E402
from factprobe.distractors.retrieve import forms_of_candidates, retrieve, suite_omega  # noqa: E402
from factprobe.export.hf import CONFIGS, dataset_card, suite_tables, template_licences, write_hf_dataset  # noqa: E402
from factprobe.io import read_table, write_frame  # noqa: E402
from factprobe.probes.build import DumpTables, build_suite  # noqa: E402
from factprobe.settings import Retrieve  # noqa: E402

DUMP = "20190201"
SPEC = {
    "kind": "multiprompt",
    "dump": DUMP,
    "languages": ["en", "de"],
    "relations": ["P36", "P530"],
    "n_facts": 2,
    "templates": {"sets": ["team", "pararel"], "max_per_relation": 1},
    "few_shot": {"settings": ["zero-shot", "2-random"]},
}
SETS = {
    "team": {"format": "yaml", "path": str(ROOT / "resources" / "templates")},
    "pararel": {
        "format": "pararel",
        "path": str(ROOT / "resources" / "templates" / "external" / "pararel" / "graphs_json"),
        "language": "en",
    },
}
DUMPS = [
    {
        "dump": DUMP,
        "path": "resources/demo/wikidata-20190201-sample.json.bz2",
        "checksum": "sha1:d14a7864de5e19ad1d5fc02640af80b91c51320b",
    }
]


def retrieve_settings(**chosen) -> Retrieve:
    """Distractor settings of one suite: the config defaults (config/README.md) plus ``chosen``."""
    defaults = dict(
        strategies=["random"],
        n=10,
        pool_size=50,
        search="exact",
        languages=["en"],
        dump=DUMP,
        form_threshold=90.0,
        valid_ranks="non_deprecated",
        ef_search=200,
    )
    return Retrieve(**{**defaults, **chosen})


@pytest.fixture(scope="module")
def files(demo_tables, tmp_path_factory):
    """The suite's Parquet files as the workflow writes them; German prompts/forms as the 'translated' part."""
    tables = demo_tables
    facts, prompts, entity_forms = build_suite(
        "demo",
        SPEC,
        SETS,
        DumpTables(
            str(tables[DUMP] / "claims.parquet"),
            str(tables[DUMP] / "entities.parquet"),
            [str(tables[d] / "labels.parquet") for d in sorted(tables)],
        ),
    )
    claims = pq.read_table(tables[DUMP] / "claims.parquet").to_pandas()
    omega = suite_omega(
        facts,
        entity_forms,
        claims,
        [tables[d] / "types.parquet" for d in tables],
        DUMP,
        "non_deprecated",
        90.0,
    )
    candidates = retrieve(
        facts,
        omega,
        retrieve_settings(strategies=["random"], n=3, languages=["en", "de"]),
        {"entity_forms": entity_forms},
    )
    forms = forms_of_candidates(candidates, entity_forms)
    folder = tmp_path_factory.mktemp("probes")
    de_prompts = prompts["lang"] == "de"
    de_forms = forms["lang"] == "de"
    assert de_prompts.any() and (~de_prompts).any() and de_forms.any()
    parts = {
        "facts": [facts],
        "prompts": [
            prompts[~de_prompts],
            prompts[de_prompts].assign(verbalization="sentence", mt_model="none"),
        ],
        "candidates": [candidates],
        "forms": [forms[~de_forms], forms[de_forms]],
    }
    out = {}
    for name, frames in parts.items():
        out[name] = []
        for i, frame in enumerate(frames):
            path = folder / f"{name}{i}.parquet"
            write_frame(frame, path)
            out[name].append(str(path))
    return out


@pytest.fixture(scope="module")
def dataset(files, tmp_path_factory):
    tables = suite_tables(files)
    card = dataset_card(
        "demo", {**SPEC, "distractors": {"strategies": ["random"], "n": 3}}, DUMPS, SETS, tables
    )
    folder = tmp_path_factory.mktemp("hf") / "demo"
    write_hf_dataset(tables, card, folder)
    return folder, tables


def expected_rows(paths):
    """Rows of the suite table from its files, read independently of the exporter."""
    rows = []
    for path in paths:
        rows += read_table(path).to_pylist()
    return rows


def test_load_dataset_offline_rows_equal_suite_tables(dataset, files, tmp_path):
    from datasets import load_dataset

    folder, _ = dataset
    for name in CONFIGS:
        expected = expected_rows(files[name])
        by_card = load_dataset(str(folder), name, split="test", cache_dir=str(tmp_path / "cache"))
        plain = load_dataset(
            "parquet",
            data_files=str(folder / "data" / f"{name}.parquet"),
            split="train",
            cache_dir=str(tmp_path / "cache"),
        )
        columns = list(dict.fromkeys(c for row in expected for c in row))
        assert by_card.column_names == columns
        for got in (by_card.to_list(), plain.to_list()):
            assert len(got) == len(expected)
            # Columns only some files have (mt_model) are null in the other rows.
            assert got == [{c: row.get(c) for c in columns} for row in expected], name
    prompts = load_dataset(str(folder), "prompts", split="test", cache_dir=str(tmp_path / "cache"))
    assert set(prompts["verbalization"]) == {"template", "sentence"}
    assert any(isinstance(d, list) and d for d in prompts["demos"])  # list columns survive


def test_card_declares_configs_licences_and_fields(dataset):
    folder, tables = dataset
    text = (folder / "README.md").read_text(encoding="utf-8")
    assert text.startswith("---\n")
    header = yaml.safe_load(text.split("---\n")[1])
    assert [c["config_name"] for c in header["configs"]] == list(CONFIGS)
    assert all(c["data_files"][0]["path"] == f"data/{c['config_name']}.parquet" for c in header["configs"])
    assert header["license"] == ["cc0-1.0", "apache-2.0", "mit"]  # Wikidata, team templates, ParaRel
    assert header["language"] == ["de", "en"]
    body = text.split("---\n", 2)[2]
    assert "CC0" in body and "20190201" in body and DUMPS[0]["checksum"] in body
    for name, table in tables.items():
        assert f"### `{name}` ({table.num_rows} rows)" in body
        for field in table.schema.names:
            assert f"| `{field}` |" in body
    assert "n_facts: 2" in body  # the suite settings that built it


def test_template_licences():
    got = template_licences(
        {
            "team": {"format": "yaml", "path": "resources/templates"},
            "mine": {"format": "yaml", "path": "/data/my_templates"},
            "pararel": {"format": "pararel", "path": "x"},
            "lama": {"format": "lama", "path": "x"},
            "xfactr": {"format": "xfactr", "path": "x"},
        }
    )
    assert got == {
        "team": "apache-2.0",
        "mine": "other",
        "pararel": "mit",
        "lama": "cc-by-nc-4.0",
        "xfactr": "other",
    }


def test_missing_table_is_a_clear_error(files):
    with pytest.raises(ValueError, match="no forms table"):
        suite_tables({k: v for k, v in files.items() if k != "forms"})


def test_export_is_atomic(dataset, tmp_path):
    """A failing write leaves no folder behind and keeps an older complete export."""
    _, tables = dataset
    target = tmp_path / "out"
    write_hf_dataset(tables, "card", target)
    broken = {**tables, "forms": None}
    with pytest.raises((TypeError, AttributeError, pa.ArrowException)):
        write_hf_dataset(broken, "new card", target)
    assert (target / "README.md").read_text() == "card"
    assert [p.name for p in tmp_path.iterdir()] == ["out"]
