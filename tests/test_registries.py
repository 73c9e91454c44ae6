"""A strategy, a measure family and a model backend added from outside the library
(tests/plugins/toy_plugin.py, named by FACTPROBE_PLUGINS) run end to end through the workflow on
the demo dump: retrieval writes the toy strategy's distractors, the toy backend scores them, the
toy family's measure reaches the summary, the leaderboard (with its direction and interval) and
the paired comparison. No other file is touched: the config and models.tsv of the run name them.
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
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
    assert distractors.tables_of(["temp"]) == ["sem_index", "temporal"]
    assert distractors.tables_of(["random", "cooccur", "pool", "sem"]) == [
        "cooccur",
        "entity_forms",
        "sem_index",
    ]
    assert distractors.needs(["appropt"], "per_model") and not distractors.needs(["sem"], "per_model")
    assert distractors.needs_every_subject({"strategies": ["pool"]})  # pool source relation by default
    assert distractors.needs_every_subject({"strategies": ["cooccur"]})  # both sides by default
    one_side = {"strategies": ["cooccur"], "strategy_settings": {"cooccur": {"sides": ["object"]}}}
    assert not distractors.needs_every_subject(one_side)
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
    from factprobe.config_check import check_models
    from factprobe.settings import ConfigError

    rows = [{"name": "m", "source": str(ROOT / "tests/plugins/toy_model"), "backend": "vllm", "_line": 2}]
    with pytest.raises(ConfigError, match=r"line 2 .*unknown backend 'vllm'"):
        check_models(rows, "config/models.tsv", ROOT)


def test_a_name_registered_twice_fails_naming_both_sources():
    """A plugin cannot silently replace a built-in: the second registration of a name fails."""
    from factprobe.registries import STRATEGIES, register_strategy
    from factprobe.registry import Registry, RegistryError

    def mine(ctx, i, fact_id, fact):
        return []

    with pytest.raises(RegistryError) as err:
        register_strategy("random", mine)
    message = str(err.value)
    assert "'random' is registered twice" in message
    assert "factprobe.distractors.strategies:random_rows" in message and "mine" in message
    assert STRATEGIES["random"].retriever == "factprobe.distractors.strategies:random_rows"
    registry = Registry("thing")
    registry.add("a", 1, "first.py")
    with pytest.raises(RegistryError, match=r"thing 'a' is registered twice: by first.py and by second.py"):
        registry.add("a", 2, "second.py")


def test_an_override_is_logged_naming_both_sources(caplog):
    """``override=True`` replaces an entry, and the run log says which replaced which."""
    from factprobe.measures import MEASURES
    from factprobe.registry import Registry

    with pytest.raises(ValueError, match=r"measure 'k_avg' is registered twice"):
        MEASURES.add("k_avg", MEASURES["k_avg"], "my_plugin.py")
    registry = Registry("measure")
    registry.add("k_avg", "higher", "factprobe.registries")
    with caplog.at_level("WARNING", logger="factprobe.registry"):
        registry.add("k_avg", "lower", "my_plugin.py", override=True)
    assert registry["k_avg"] == "lower" and registry.source("k_avg") == "my_plugin.py"
    assert "measure 'k_avg': my_plugin.py overrides factprobe.registries" in caplog.text


def test_importing_a_stage_package_runs_no_plugin():
    """Plugins load when a registry is first read, not when a package is imported."""
    code = (
        "import sys; import factprobe.distractors, factprobe.metrics, factprobe.lm, factprobe.registries; "
        "print(any(m.startswith('factprobe_plugin_') for m in sys.modules)); "
        "from factprobe.registries import STRATEGIES; 'x' in STRATEGIES; "
        "print(any(m.startswith('factprobe_plugin_') for m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], env=_plugin_env(), cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert out.stdout.split() == ["False", "True"]


def test_code_inputs_follow_the_registries_a_module_reads():
    """A job depends on the code of the registries its modules import names of, not on every
    entry of the light registries module: retrieval runs the strategies, not the measure
    families; the plugin is an input of the jobs whose registries it fills."""
    from factprobe.plumbing.code_inputs import library_modules

    scripts = ROOT / "workflow/scripts"
    retrieval = library_modules(scripts / "retrieve_distractors.py", scripts)
    assert "factprobe/distractors/strategies.py" in retrieval
    assert "factprobe/metrics/families.py" not in retrieval
    assert "factprobe/registries.py" not in retrieval  # followed, never listed
    metrics = library_modules(scripts / "compute_metrics.py", scripts)
    assert "factprobe/metrics/families.py" in metrics
    assert "factprobe/distractors/strategies.py" not in metrics
    for script in ("retrieve_distractors.py", "compute_metrics.py", "build_probes.py"):
        assert str(PLUGIN) in library_modules(scripts / script, scripts, [PLUGIN])
    extract = library_modules(scripts / "extract_dump.py", scripts, [PLUGIN])
    assert str(PLUGIN) not in extract


SETTING_CODE = """
import json, yaml
from factprobe import config_rules
from factprobe import settings as S
from factprobe.registries import SOURCES
config = yaml.safe_load(open("config/config.yaml"))
config["distractors"]["strategy_settings"] = {"toy_same_relation": {"skip": 2}}
config["suites"]["knowledge"]["distractors"] = {"strategies": ["random", "toy_same_relation"]}
cfg = S.load_settings(S.Config, config)
retrieve = config_rules.suite_retrieve(cfg, "knowledge")
plain = config_rules.suite_retrieve(S.load_settings(S.Config, yaml.safe_load(open("config/config.yaml"))), "knowledge")
errors = []
for bad in ({"toy_same_relation": {"skip": "two"}}, {"toy_same_relation": {"jump": 1}}, {"random": {"x": 1}}):
    config["distractors"]["strategy_settings"] = bad
    try:
        S.load_settings(S.Config, config)
    except S.ConfigError as err:
        errors.append(str(err))
# A family's own setting: in the suite's metrics params, then in the frame the family reads.
import pandas as pd
from types import SimpleNamespace
from factprobe.registries import FAMILIES
config["distractors"]["strategy_settings"] = {}
config["metrics"]["families"]["knowledge"] = ["knowledge", "toy"]
config["metrics"]["family_settings"] = {"toy": {"scale": 2.0}}
params = config_rules.suite_metrics(S.load_settings(S.Config, config), "knowledge")
keys = dict(lang="en", verbalization="template", style="statement", shots="0")
frame = SimpleNamespace(
    candidates=pd.DataFrame({"fact_id": ["f"], "entity": ["Q1"], "role": ["object"]}),
    prompts=pd.DataFrame({"prompt_id": ["p"], "fact_id": ["f"], **{k: [v] for k, v in keys.items()}}),
    entity_scores=pd.DataFrame({"prompt_id": ["p"], "entity": ["Q1"], "logpl": [-1.5]}),
)
values = []
for scale in (1.0, 2.0):
    frame.settings = S.load_settings(S.Metrics, {"families": {}, "family_settings": {"toy": {"scale": scale}}})
    values.append(float(FAMILIES["toy"].code()(frame)[0][0]["value"].iloc[0]))
print(json.dumps([retrieve.get("strategy_settings"), "toy_same_relation" in plain["strategy_settings"], errors,
                  SOURCES["toy_triples"].listed, params.get("family_settings"), values]))
"""


def test_a_plugin_strategy_takes_a_setting_of_its_own():
    """The toy strategy declares ``skip``: the config sets it, it is checked against the declared
    type, and it reaches the retriever's settings; suites without such a strategy keep their
    params unchanged. The toy family's ``scale`` reaches the frame it reads alike. The toy source
    format is registered beside them."""
    out = subprocess.run(
        [sys.executable, "-c", SETTING_CODE],
        env={**_plugin_env(), "PYTHONPATH": str(ROOT / "workflow/scripts")},
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    resolved, plain_has_key, errors, listed, family_params, values = json.loads(out.stdout)
    # The toy's setting is no param of a suite that does not use the toy strategy.
    assert resolved == {"toy_same_relation": {"skip": 2}} and not plain_has_key and listed
    # The suite's families' own settings: the toy's as set, the built-in knowledge's defaults.
    assert family_params == {
        "knowledge": {"precision_ns": [1, 5, 10], "combined_strategies": {}},
        "toy": {"scale": 2.0},
    }
    assert values == [-1.5, -3.0]
    assert "setting 'skip' is int" in errors[0] and "allowed objects passed over" in errors[0]
    assert "has no setting(s) ['jump']" in errors[1]
    assert "'random' declares no settings" in errors[2]


#: Facts of the 20141201 demo dump (labels in English there) the toy source format's suite lists.
TOY_TRIPLES = [("Q45", "P36", "Q597"), ("Q148", "P47", "Q863"), ("Q148", "P47", "Q819")]


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
    config["distractors"]["strategy_settings"] = {"toy_same_relation": {"skip": 1}}
    # A suite of the toy source format: the triples it lists, from a file of the test's own folder.
    (work / "toy_triples.tsv").write_text(
        "subject\tproperty\tobject\n" + "".join(f"{s}\t{p}\t{o}\n" for s, p, o in TOY_TRIPLES)
    )
    listed = {
        "kind": "knowledge",
        "dump": "20141201",
        "label_dumps": ["20141201"],
        "relations": ["P36", "P47"],
        "source": {"format": "toy_triples", "path": "toy_triples.tsv"},
        "templates": {"styles": ["statement"], "max_per_relation": 1},
        "distractors": {"strategies": ["random"], "n": 2},
    }
    config["suites"] = {"knowledge": knowledge, "toy_listed": listed}
    config["control"]["suites"] = []
    config["metrics"]["human_alignment"]["suites"] = []
    config["metrics"]["families"] = {"knowledge": ["knowledge", "toy"]}
    config["metrics"]["ns"] = [1, 2]
    config["report"]["bootstrap_samples"] = 50
    config["models"] = "config/models_toy.tsv"
    (work / "config/config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    # prepare_model refuses a folder without weights: the toy model gets an empty safetensors file
    # (an 8-byte header length, then the JSON header {}) beside its config.
    source = work / "toy_model"
    shutil.copytree(ROOT / "tests/plugins/toy_model", source)
    (source / "model.safetensors").write_bytes((2).to_bytes(8, "little") + b"{}")
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
        # Its own setting skip: 1 reached it: the first object it could take is never taken.
        others = sorted(set(contracts.id_ints(same)) - {contracts.id_ints(pd.Series([fact["object"]]))[0]})
        assert contracts.id_ints(pd.Series([row.entity]))[0] != others[0]
    # Scored by the toy backend: its hash log-probabilities, for both models.
    for model in ("toy_a", "toy_b"):
        scores = pd.read_parquet(plugin_run / f"results/scores/knowledge/{model}.parquet")
        assert scores["logprob"].between(-50, -1).all() and scores["logprob"].nunique() > 1
    summary = read_summary(plugin_run / "results/metrics/knowledge/summary.csv")
    assert {"toy_object_logpl", "k_min", "k_avg"} <= set(summary["measure"])
    assert set(summary[summary["measure"] == "k_avg"]["strategy"]) >= {"random", "toy_same_relation"}
    board = contracts.read_csv("leaderboard", plugin_run / "results/metrics/leaderboard.csv")
    toy_rows = board[(board["measure"] == "toy_object_logpl") & (board["suite"] == "knowledge")].set_index(
        "model"
    )
    assert set(toy_rows.index) == {"toy_a", "toy_b"}
    # Ranked in the registry's direction (higher is better), with a bootstrap interval over facts.
    best = toy_rows["value"].idxmax()
    assert toy_rows.loc[best, "rank"] == 1
    assert (toy_rows["ci_low"] <= toy_rows["value"]).all() and (
        toy_rows["value"] <= toy_rows["ci_high"]
    ).all()
    paired = contracts.read_csv("paired", plugin_run / "results/metrics/paired.csv")
    assert "toy_object_logpl" in set(paired["measure"])
    # The toy source format's suite probes exactly the listed triples, one fact each (two objects
    # of one (subject, relation) are two facts), scored and measured like a dump-built suite.
    listed = contracts.read("facts", plugin_run / "results/probes/toy_listed/facts.parquet")
    assert sorted(zip(listed["subject"], listed["property"], listed["object"], strict=True)) == sorted(
        TOY_TRIPLES
    )
    for model in ("toy_a", "toy_b"):
        # toy_object_logpl by hand: log Pl(o | c) = log of the summed probabilities of the object's
        # scored forms, averaged over the fact's prompts (scale 1).
        scores = pd.read_parquet(plugin_run / f"results/scores/toy_listed/{model}.parquet")
        scores = scores.merge(listed[["fact_id", "object"]], on="fact_id")
        scores = scores[scores["entity"] == scores["object"]]
        per_prompt = scores.groupby(["fact_id", "prompt_id"])["logprob"].agg(np.logaddexp.reduce)
        expected = per_prompt.groupby("fact_id").mean()
        per_fact = pd.read_parquet(plugin_run / f"results/metrics/toy_listed/{model}.parquet")
        got = per_fact[per_fact["measure"] == "toy_object_logpl"].set_index("fact_id")["value"]
        assert sorted(got.index) == sorted(listed["fact_id"])
        np.testing.assert_allclose(got.sort_index(), expected.sort_index(), rtol=1e-9)
    summary = read_summary(plugin_run / "results/metrics/toy_listed/summary.csv")
    assert {"toy_object_logpl", "k_avg"} <= set(summary["measure"])
    listed_board = board[(board["measure"] == "toy_object_logpl") & (board["suite"] == "toy_listed")]
    assert sorted(listed_board["model"]) == ["toy_a", "toy_b"]
