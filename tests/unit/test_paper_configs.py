"""config/papers/*.yaml: one config per paper whose protocol matches the paper (issue 13 item 7).

Each config validates against the schemas, passes the cross-key checks and plans a whole run
(``snakemake -n --configfile ... --replace-workflow-config``) without touching the demo config.
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from factprobe.config_check import check_dumps, read_config, read_registry
from factprobe.settings import check_cross_keys

ROOT = Path(__file__).resolve().parents[2]
SCHEMAS = ROOT / "workflow" / "schemas"
PAPERS = sorted((ROOT / "config" / "papers").glob("*.yaml"))


def load(path):
    return yaml.safe_load(path.read_text())


def test_both_papers_have_a_config():
    assert {p.stem for p in PAPERS} >= {"distractors", "belief", "probelm", "fluent-mlama"}


@pytest.mark.parametrize("path", PAPERS, ids=lambda p: p.stem)
def test_paper_config_validates(path):
    config = load(path)
    cfg = read_config(config, SCHEMAS / "config.schema.yaml", source=str(path))
    read_registry(ROOT / config["models"], SCHEMAS / "models.schema.yaml", key="name")
    dumps = read_registry(ROOT / config["dumps"], SCHEMAS / "dumps.schema.yaml", key="dump")
    check_dumps(dumps, config["dumps"], root=ROOT)
    check_cross_keys(cfg, [row["dump"] for row in dumps if row["enabled"]], source=str(path))


def test_distractors_protocol():
    """§4.1 Fig. 1: Min@n for n = 1..100 over 1000 facts; Fig. 2: S′; §4.2: 3-fold CV over the grid
    n ∈ {1, 2, 5, 10} ∪ {20, ..., 200} (Fig. 3 up to 200 too); Table 2 baselines; §3.3 Sem bags."""
    from factprobe.metrics.meta import PAPER_GRID_NS

    config = load(ROOT / "config" / "papers" / "distractors.yaml")
    metrics, suites = config["metrics"], config["suites"]
    assert metrics["ns"] == list(range(1, 201)) and config["distractors"]["n"] == 200
    assert metrics["precision_ns"] == list(PAPER_GRID_NS)
    assert config["scoring"]["topk"] >= max(metrics["precision_ns"]) == 200
    assert set(config["distractors"]["strategies"]) >= {"random", "sem", "temp+sem", "appropt"}
    # S and S′: 1000 facts in all, the reference's popularity-balanced sampler over 10 bins.
    for name in ("knowledge", "knowledge_temporal"):
        assert suites[name]["n_facts"] == 1000 and suites[name]["strata"] == 10
        assert suites[name]["sampler"] == "popularity_bins"
    assert suites["knowledge_temporal"]["temporal_only"] is True
    assert config["scoring"]["end_marker"] == "eos" and metrics["short_lists"] == "undefined"
    assert metrics["human_alignment"]["folds"] == 3
    # §4.2 on a judged triples suite (its file gives the scores), §4.3 on the released pairs.
    assert metrics["human_alignment"]["suites"] == ["knowledge_judged"]
    pairs = suites["knowledge_pairs"]["source"]
    assert pairs["format"] == "verbalization-pairs" and pairs["path"].endswith("taxonomy/taxonomy_hichem.csv")
    sem = config["distractors"]["sem"]
    assert (sem["bag"], sem["namespace"], sem["reverse_features"]) == ("sets", "shared", False)


def test_probelm_protocol():
    """§4.1 sentence perplexity over 11 scenarios, Algorithm 1's 10 + 10 swaps, three prompt types,
    §3.1 facts after the models' cut-off (Pythia: March 2020, data October-November 2020)."""
    config = load(ROOT / "config" / "papers" / "probelm.yaml")
    suite = config["suites"]["probelm"]
    assert suite["kind"] == "plausibility" and config["scoring"]["sentence_kinds"] == ["plausibility"]
    assert config["distractors"]["cooccur"] == {"n": 10, "sides": ["object", "subject"]}
    assert suite["templates"]["styles"] == ["statement", "completion", "question"]
    assert 5900 <= suite["n_facts"] * len(suite["relations"]) <= 6100
    models = read_registry(ROOT / config["models"], SCHEMAS / "models.schema.yaml", key="name")
    assert {row["cutoff"] for row in models} == {"2020-03-01"}
    # Issue 27 item 6: the suite keeps facts from the models' cut-off on, before the older dump.
    assert suite["cutoff"] == "20200301" < suite["diff_old"] < suite["dump"]
    assert "ndcg_normalization" not in config["metrics"]  # NDCG conventions are measures now


def test_belief_protocol():
    """§5.1 N = 50,000, §2.4 M = 10, §3.2 100 samples, §3.1/App. E instruction, layout and contexts."""
    config = load(ROOT / "config" / "papers" / "belief.yaml")
    suite = config["suites"]["belief"]
    assert config["metrics"]["belief_samplings"] == 50_000 and config["metrics"]["belief_bins"] == 10
    assert config["scoring"]["samples"] == 100
    assert suite["layout"] == "mask_qa" and suite["generate"] is True
    assert suite["few_shot"]["instruction"] == "Predict the [MASK] in each sentence in one word."
    assert suite["few_shot"]["settings"] == ["zero-shot", "4-random", "4-relation", "4-template"]
    assert len(suite["relations"]) == 41


def test_fluent_mlama_protocol():
    """§3.1 50 same-relation distractors, §3.2 three verbalizations (Table 1) / two (Table 3), App. A
    LLM prompt, the GT word-order filter, §3.3 R@n up to 5 with LLaMA-2-7b, App. B relations."""
    config = load(ROOT / "config" / "papers" / "fluent-mlama.yaml")
    suites = config["suites"]
    slavic, other = suites["fluent_slavic"], suites["fluent_other"]
    assert slavic["languages"] == ["ru", "cs", "uk", "hr"] and len(slavic["relations"]) == 15
    assert other["languages"] == ["es", "zh", "vi", "id", "da"] and len(other["relations"]) == 8
    assert set(other["relations"]) < set(slavic["relations"])
    assert slavic["source"]["verbalizations"] == ["template", "gt", "chatgpt"]
    assert other["source"]["verbalizations"] == ["template", "gt"]
    for suite in suites.values():
        assert suite["correct_set"] == "table1" and suite["scoring"] == {"end_marker": "none"}
    distractors = config["distractors"]
    assert distractors["by_kind"]["multilingual"]["strategies"] == ["pool"]
    assert distractors["pool_size"] == 50 and distractors["pool_source"] == "dataset"
    assert config["metrics"]["ranking_ties"] == "correct_first"
    assert config["metrics"]["recall_ns"] == [1, 2, 3, 4, 5]
    assert config["scoring"]["models"] == ["llama2-7b-chat"]
    assert config["metrics"]["ranking_average"] == "relation"
    translate = config["translate"]
    assert translate["backend"] == "llm" and translate["word_order"] == "loose"
    models = read_registry(ROOT / config["models"], SCHEMAS / "models.schema.yaml", key="name")
    assert {row["name"] for row in models} == {"llama2-7b-chat", translate["llm"]}
    scored = next(row for row in models if row["name"] == "llama2-7b-chat")
    assert scored["source"] == "meta-llama/Llama-2-7b-chat-hf" and scored["dtype"] == "float16"
    assert translate["prompt_dir"].endswith("fluent-mlama/chatgpt_prompts/translation20")
    assert translate["chat_template"] == "auto"


@pytest.mark.parametrize("path", PAPERS, ids=lambda p: p.stem)
def test_paper_config_dry_runs(path):
    env = dict(os.environ, PYTHONPATH=str(ROOT / "workflow" / "scripts"))
    run = subprocess.run(
        [sys.executable, "-m", "snakemake", "-n", "--configfile", str(path), "--replace-workflow-config"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    out = run.stdout + run.stderr
    assert "compute_metrics" in out and "download_dump" in out
