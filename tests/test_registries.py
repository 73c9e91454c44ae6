"""A strategy, a measure family and a model backend added from outside the library
(tests/plugins/toy_plugin.py, named by FACTPROBE_PLUGINS) run end to end through the workflow on
the demo dump: retrieval writes the toy strategy's distractors, the toy backend scores them, the
toy family's measure reaches the summary, the leaderboard (with its direction and interval) and
the paired comparison. No other file is touched: the config and models.tsv of the run name them.
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml
from factprobe import contracts

ROOT = Path(__file__).resolve().parents[1]
PLUGIN = ROOT / "tests/plugins/toy_plugin.py"


def _plugin_env():
    env = dict(os.environ)
    env["FACTPROBE_PLUGINS"] = str(PLUGIN)
    return env


def test_registries_hold_the_built_in_entries_only_once():
    """Each kind has one registry; the built-ins are there and the needs drive the inputs."""
    from factprobe import distractors, lm, metrics

    assert list(distractors.STRATEGIES)[:6] == ["random", "sem", "temp+sem", "cooccur", "pool", "appropt"]
    assert distractors.canonical(["temp", "sem", "temp+sem"]) == ["temp+sem", "sem"]
    assert distractors.needs(["temp"], "temporal") and distractors.needs(["sem"], "index")
    assert not distractors.needs(["random", "pool"], "index")
    assert distractors.needs_every_subject({"strategies": ["pool"]})  # pool_source relation by default
    assert not distractors.needs_every_subject({"strategies": ["cooccur"], "cooccur_sides": ["object"]})
    assert metrics.MEASURES["mean_rank"].better_key(3.0) < metrics.MEASURES["mean_rank"].better_key(2.0)
    assert metrics.MEASURES["belief_ovconf"].better_key(-0.1) > metrics.MEASURES["belief_ovconf"].better_key(
        0.2
    )
    assert metrics.fact_headline() == [
        "k_min",
        "k_avg",
        "probability",
        "recall",
        "mean_rank",
        "rouge_l",
        "bertscore",
    ]
    assert lm.row_backend({"name": "m"}) == "hf" and lm.backend_class("hf").__name__ == "HFCausalLM"
    with pytest.raises(KeyError, match="unknown backend 'nope'"):
        lm.backend_class("nope")


def test_unknown_backend_fails_at_start_up(tmp_path):
    """A models.tsv backend that no module registered fails before any job, naming the line."""
    from factprobe.registry import check_models
    from factprobe.settings import ConfigError

    rows = [{"name": "m", "source": str(ROOT / "tests/plugins/toy_model"), "backend": "vllm", "_line": 2}]
    with pytest.raises(ConfigError, match=r"line 2 .*unknown backend 'vllm'"):
        check_models(rows, "config/models.tsv", ROOT)


@pytest.fixture(scope="module")
def plugin_run(tmp_path_factory):
    work = tmp_path_factory.mktemp("plugin")
    for name in ("workflow", "config", "profiles", "environment.yml"):
        src = ROOT / name
        (shutil.copytree if src.is_dir() else shutil.copy)(src, work / name)
    (work / "resources").symlink_to(ROOT / "resources")
    config = yaml.safe_load((work / "config/config.yaml").read_text())
    knowledge = config["suites"]["knowledge"]
    knowledge.update(label_dumps=["20141201"], distractors={"strategies": ["random", "toy_same_relation"]})
    config["suites"] = {"knowledge": knowledge}
    config["control"]["suites"] = []
    config["metrics"]["families"] = {"knowledge": ["knowledge", "toy"]}
    config["metrics"]["ns"] = [1, 2]
    config["report"]["bootstrap_samples"] = 50
    config["models"] = "config/models_toy.tsv"
    (work / "config/config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    source = ROOT / "tests/plugins/toy_model"
    (work / "config/models_toy.tsv").write_text(
        "name\tsource\tbackend\n" + "".join(f"{m}\t{source}\ttoy\n" for m in ("toy_a", "toy_b"))
    )
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "snakemake",
            "--cores",
            "2",
            "--quiet",
            "rules",
            "--",
            "results/metrics/leaderboard.csv",
        ],
        cwd=work,
        env=_plugin_env(),
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-6000:]
    return work


@pytest.mark.full
def test_toy_strategy_measure_and_backend_run_end_to_end(plugin_run):
    from factprobe.metrics.pipeline import read_summary

    cands = contracts.read("candidates", plugin_run / "results/probes/knowledge/candidates.parquet")
    toy = cands[cands["strategy"] == "toy_same_relation"]
    assert len(toy) > 0 and set(cands["strategy"]) == {"object", "random", "toy_same_relation"}
    # The toy strategy's rule: objects of other facts of the same relation, never the fact's own.
    facts = contracts.read("facts", plugin_run / "results/probes/knowledge/facts.parquet").set_index(
        "fact_id"
    )
    for row in toy.itertuples():
        fact = facts.loc[row.fact_id]
        same = facts[facts["property"] == fact["property"]]["object"]
        assert row.entity in set(same) and row.entity != fact["object"]
    # Scored by the toy backend: its hash log-probabilities, for both models.
    for model in ("toy_a", "toy_b"):
        scores = pd.read_parquet(plugin_run / f"results/scores/knowledge/{model}.parquet")
        assert scores["logprob"].between(-50, -1).all() and scores["logprob"].nunique() > 1
    summary = read_summary(plugin_run / "results/metrics/knowledge/summary.csv")
    assert {"toy_object_logpl", "k_min", "k_avg"} <= set(summary["measure"])
    assert set(summary[summary["measure"] == "k_avg"]["strategy"]) >= {"random", "toy_same_relation"}
    board = contracts.read_csv("leaderboard", plugin_run / "results/metrics/leaderboard.csv")
    toy_rows = board[board["measure"] == "toy_object_logpl"].set_index("model")
    assert set(toy_rows.index) == {"toy_a", "toy_b"}
    # Ranked in the registry's direction (higher is better), with a bootstrap interval over facts.
    best = toy_rows["value"].idxmax()
    assert toy_rows.loc[best, "rank"] == 1
    assert (toy_rows["ci_low"] <= toy_rows["value"]).all() and (
        toy_rows["value"] <= toy_rows["ci_high"]
    ).all()
    paired = contracts.read_csv("paired", plugin_run / "results/metrics/paired.csv")
    assert "toy_object_logpl" in set(paired["measure"])
