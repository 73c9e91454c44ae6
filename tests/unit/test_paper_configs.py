"""config/papers/*.yaml: one config per paper whose protocol matches the paper.

Each config validates against the schemas, passes the cross-key checks and plans a whole run
(``snakemake -n --configfile ... --replace-workflow-config``) without touching the demo config.
"""

import copy
import functools
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from factprobe.config_check import check_dumps, read_config, read_registry
from factprobe.config_rules import check_cross_keys

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
    precision_ns = metrics["family_settings"]["knowledge"]["precision_ns"]
    assert precision_ns == list(PAPER_GRID_NS)
    assert config["scoring"]["topk"] >= max(precision_ns) == 200
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
    # ROUGE-L as the reference's rouge_l: LCS over the characters of the strings.
    assert metrics["family_settings"]["overlap"]["rouge_units"] == "characters"
    # §4.2: B(c) over the beam grid for the Table 3 and Table 4 suites
    assert config["scoring"]["beam_widths"] == [1, 2, 5, 10, 20, 30, 50, 100]
    assert suites["knowledge_judged"]["generate"] == suites["knowledge_pairs"]["generate"] == "beams"


def test_probelm_protocol():
    """§4.1 sentence perplexity over 11 scenarios, Algorithm 1's 10 + 10 swaps, three prompt types,
    §3.1 facts after the models' cut-off (Pythia: March 2020, data October-November 2020)."""
    config = load(ROOT / "config" / "papers" / "probelm.yaml")
    suite = config["suites"]["probelm"]
    assert suite["kind"] == "plausibility" and config["scoring"]["sentence_kinds"] == ["plausibility"]
    assert config["distractors"]["strategy_settings"]["cooccur"] == {"n": 10, "sides": ["object", "subject"]}
    assert suite["templates"]["styles"] == ["statement", "completion", "question"]
    assert 5900 <= suite["n_facts"] * len(suite["relations"]) <= 6100
    models = read_registry(ROOT / config["models"], SCHEMAS / "models.schema.yaml", key="name")
    assert {row["cutoff"] for row in models} == {"2020-03-01"}
    # The suite keeps facts from the models' cut-off on, before the older dump.
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
    # §4: MyriadLAMA's own facts, subject expressions and templates (the release, read in place)
    assert suite["source"]["format"] == "myriadlama" and suite["templates"]["sets"] == []


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
    assert distractors["pool_size"] == 50 and distractors["strategy_settings"]["pool"] == {
        "source": "dataset"
    }
    assert config["metrics"]["family_settings"]["ranking"] == {
        "recall_ns": [1, 2, 3, 4, 5],
        "ties": "correct_first",
    }
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


def dry_run(path, *extra):
    env = dict(os.environ, PYTHONPATH=str(ROOT / "workflow" / "scripts"))
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "snakemake",
            "-n",
            "--configfile",
            str(path),
            "--replace-workflow-config",
            *extra,
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def judged_override(tmp_path):
    """The distractors config's judged suite needs the reference's human scores, which never ship:
    a two-triple stand-in in its format, given as metrics.human_alignment.path."""
    judged = tmp_path / "wikidata_triples_to_human_scores.json"
    judged.write_text('[[["Q361", "P276", "Q15"], 0.33], [["Q1163715", "P17", "Q30"], 0.07]]')
    return ["--config", "metrics=" + json.dumps({"human_alignment": {"path": str(judged)}})]


def test_judged_suite_is_on_and_its_absent_scores_stop_the_run():
    """A suite named in human_alignment.suites is defined (never dropped in silence); without the
    human scores file the run stops at start-up naming the file to supply."""
    config = load(ROOT / "config" / "papers" / "distractors.yaml")
    judged = config["suites"]["knowledge_judged"]
    assert judged["source"]["format"] == "triples" and judged["templates"]["max_per_relation"] == 5
    assert not (ROOT / judged["source"]["path"]).exists()
    run = dry_run(ROOT / "config" / "papers" / "distractors.yaml")
    assert run.returncode != 0
    assert "wikidata_triples_to_human_scores.json does not exist" in run.stderr + run.stdout


def test_human_alignment_check_names_what_is_missing(tmp_path):
    from factprobe.config_rules import check_human_alignment
    from factprobe.settings import ConfigError

    config = load(ROOT / "config" / "papers" / "distractors.yaml")
    cfg = read_config(config, SCHEMAS / "config.schema.yaml")
    with pytest.raises(ConfigError, match="human scores of suite 'knowledge_judged' are absent"):
        check_human_alignment(cfg, workdir=ROOT)
    (tmp_path / "resources" / "human").mkdir(parents=True)
    (tmp_path / judged_path(config)).write_text("[]")
    check_human_alignment(cfg, workdir=tmp_path)
    config["metrics"]["human_alignment"]["suites"] = ["knowledge_judged", "nope"]
    cfg = read_config(config, SCHEMAS / "config.schema.yaml")
    with pytest.raises(ConfigError, match="names 'nope', which is not a suite"):
        check_human_alignment(cfg, workdir=tmp_path)
    config["metrics"]["human_alignment"]["suites"] = ["knowledge"]
    cfg = read_config(config, SCHEMAS / "config.schema.yaml")
    with pytest.raises(ConfigError, match="suite 'knowledge' has no judged triples"):
        check_human_alignment(cfg, workdir=tmp_path)


def judged_path(config):
    return config["suites"]["knowledge_judged"]["source"]["path"]


def weights_override(tmp_path):
    """The masked BELIEF config's weights never ship: stand-in model folders (a config.json each)
    in a copy of its models.tsv, given as ``models``."""
    path = ROOT / "config" / "papers" / "belief-masked.models.tsv"
    lines = path.read_text().splitlines()
    for line in lines[1:]:
        folder = tmp_path / Path(line.split("\t")[1]).name
        folder.mkdir()
        (folder / "config.json").write_text("{}")
    table = tmp_path / "models.tsv"
    table.write_text("\n".join(lines).replace("resources/weights", str(tmp_path)) + "\n")
    return ["--config", f"models={table}"]


def test_belief_masked_protocol():
    """Table 3's encoder half (BELIEF §2): BERT base / large / wwm and ALBERT base / large, backend
    masked, on MyriadLAMA in the mask layout, ŵ from the top-k, no generation (BELIEF-ICL is the
    causal config's); local weights that, absent, stop the run at start-up naming their folder."""
    from factprobe.config_check import check_models
    from factprobe.settings import ConfigError

    config = load(ROOT / "config" / "papers" / "belief-masked.yaml")
    suite = config["suites"]["belief_masked"]
    assert suite["layout"] == "mask" and suite["generate"] is False and "few_shot" not in suite
    assert suite["source"] == load(ROOT / "config" / "papers" / "belief.yaml")["suites"]["belief"]["source"]
    assert config["metrics"]["families"] == {"multiprompt": ["belief"]} and config["scoring"]["topk"] >= 1
    models = read_registry(ROOT / config["models"], SCHEMAS / "models.schema.yaml", key="name")
    assert [row["name"] for row in models] == [
        "bert-base",
        "bert-large",
        "bert-wwm",
        "albert-base",
        "albert-large",
    ]
    assert {row["backend"] for row in models} == {"masked"}
    assert not (ROOT / models[0]["source"]).exists()
    with pytest.raises(
        ConfigError,
        match=r"resources/weights/bert-base-uncased not found: supply the weights of model bert-base",
    ):
        check_models(models, config["models"], root=ROOT)


#: Dry runs of the paper configs; belief-masked plans as belief does, only in `make test-full`.
DRY_RUNS = [pytest.param(p, marks=pytest.mark.full) if p.stem == "belief-masked" else p for p in PAPERS]


@pytest.mark.parametrize("path", DRY_RUNS, ids=lambda p: p.stem)
def test_paper_config_dry_runs(path, tmp_path):
    extra = {"distractors": judged_override, "belief-masked": weights_override}.get(path.stem)
    run = dry_run(
        path, *(extra(tmp_path) if extra else []), *(["-p"] if path.stem == "belief-masked" else [])
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    out = run.stdout + run.stderr
    assert "compute_metrics" in out and "download_dump" in out
    if path.stem == "belief-masked":
        # a masked LM's metrics job reads its tokenizer (BELIEF matches ŵ by it); no generation
        jobs = out.split("rule compute_metrics:")[1:]
        assert len(jobs) == 5
        for job in jobs:
            model = job.split("results/metrics/belief_masked/")[1].split(".parquet")[0]
            assert re.search(rf"resources/models/{model}(,|\s*$)", job.split("output:")[0]), model
        assert "generate_suite" not in out


def test_fluent_table1_plans_from_the_release_alone():
    """Table 1's suite (fluent_slavic) reads the release alone: planning its measures schedules
    no dump download or extraction and no translation (nor the translating model)."""
    if not (ROOT.parent / "shared" / "data" / "fluent-mlama" / "fixed_data" / "fixed_data.zip").is_file():
        pytest.skip("the Fluent-mLAMA release is not beside the repository (../shared/data/fluent-mlama)")
    path = ROOT / "config" / "papers" / "fluent-mlama.yaml"
    env = dict(os.environ, PYTHONPATH=str(ROOT / "workflow" / "scripts"))
    target = "results/metrics/fluent_slavic/summary.csv"
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "snakemake",
            "-n",
            "--configfile",
            str(path),
            "--replace-workflow-config",
            target,
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    jobs = {line.split()[0] for line in run.stdout.split("Job stats:")[1].split("\n\n")[0].splitlines()[3:]}
    assert {"build_probes", "retrieve_distractors", "score_shard", "compute_metrics"} <= jobs
    assert not jobs & {"download_dump", "extract_dump", "translate_prompts", "temporal_view"}
    assert "qwen2.5-7b-instruct" not in run.stdout  # the translating model is not prepared


#: Keys whose value is a paper's protocol, and the paper config that holds it.
PROTOCOL_KEYS = {
    "distractors.n": "distractors",
    "distractors.appropt.n": "distractors",
    "distractors.sem.reverse_features": "distractors",
    "distractors.sem.bag": "distractors",
    "distractors.sem.namespace": "distractors",
    "distractors.strategy_settings.pool.source": "fluent-mlama",
    "distractors.pool_size": "fluent-mlama",
    "distractors.strategy_settings.cooccur.n": "probelm",
    "metrics.ns": "distractors",
    "metrics.short_lists": "distractors",
    "metrics.family_settings.overlap.rouge_units": "distractors",
    "metrics.ranking_average": "fluent-mlama",
    "metrics.family_settings.ranking.ties": "fluent-mlama",
    "metrics.belief_samplings": "belief",
    "metrics.belief_bins": "belief",
    "scoring.samples": "belief",
    "suites.knowledge.sampler": "distractors",
    "translate.word_order": "fluent-mlama",
}


def effective(raw: dict, key: str):
    return attribute(read_config(raw, SCHEMAS / "config.schema.yaml"), key)


def attribute(cfg, key: str):
    value = cfg
    for part in key.split("."):
        value = value[part] if isinstance(value, dict) else getattr(value, part)
    return value


@functools.cache
def paper_config(paper: str):
    """A paper config's typed settings, read once per test session."""
    return read_config(load(ROOT / "config" / "papers" / f"{paper}.yaml"), SCHEMAS / "config.schema.yaml")


def without(raw: dict, key: str) -> dict:
    """A copy of ``raw`` without ``key`` (the library default applies)."""
    out = copy.deepcopy(raw)
    *path, last = key.split(".")
    block = out
    for part in path:
        block = block.get(part, {})
    block.pop(last, None)
    return out


def departures_block() -> str:
    text = (ROOT / "config" / "config.yaml").read_text()
    start = text.index("# Departures from the papers")
    return text[start : text.index("\n\n", start)]


def test_demo_says_where_it_departs_from_the_papers():
    """Every protocol key on which the demo differs from its paper is named, with a reason, in the
    demo config's departures block (e.g. Sem reverse features: on in the demo, off in §3.3)."""
    demo_cfg = read_config(load(ROOT / "config" / "config.yaml"), SCHEMAS / "config.schema.yaml")
    block = departures_block()
    differ = {
        key
        for key, paper in PROTOCOL_KEYS.items()
        if attribute(demo_cfg, key) != attribute(paper_config(paper), key)
    }
    assert {
        "distractors.sem.reverse_features",
        "metrics.family_settings.ranking.ties",
        "metrics.family_settings.overlap.rouge_units",
    } <= differ
    assert [key for key in sorted(differ) if key not in block] == []


def test_library_defaults_that_differ_from_the_papers_are_documented():
    """A default that is not its paper's choice is listed with its reason in docs/papers.md."""
    demo = load(ROOT / "config" / "config.yaml")
    readme = (ROOT / "docs" / "papers.md").read_text()
    section = readme[readme.index("## Defaults that differ from the papers") :]
    section = section[: section.index("\n## ")] if "\n## " in section else section
    differ = {
        key
        for key, paper in PROTOCOL_KEYS.items()
        if effective(without(demo, key), key) != attribute(paper_config(paper), key)
    }
    assert {
        "metrics.ranking_average",
        "metrics.family_settings.ranking.ties",
        "distractors.strategy_settings.pool.source",
        "suites.knowledge.sampler",
        "translate.word_order",
    } <= differ
    assert [key for key in sorted(differ) if f"`{key}`" not in section] == []
