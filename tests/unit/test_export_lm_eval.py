"""lm-evaluation-harness export and import on a real demo suite.

A multiprompt suite is built from the demo dumps (zero-shot and 2-random BELIEF-ICL contexts,
English and German templates, random and pool distractors), exported as an lm-eval task, and
run by lm-eval itself, offline: TaskManager with ``include_path``, HFLM loading a tiny
randomly initialised GPT-2 and a BPE tokenizer trained here from a local folder, and the
evaluator writing ``--log_samples`` files through lm-eval's EvaluationTracker.

The independent reference is factprobe's own scorer (packed engine, end marker ``eos``):
lm-eval's per-choice log-likelihoods must equal it to 1e-4 (the export is faithful only if
lm-eval asks for exactly the pairs factprobe scores), and the samples read back must give the
same score table and the same knowledge measure K (distractors paper §3.2 eq. 2).
"""

import json
import os
import shutil

os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from conftest import ROOT, SMOLLM2_SOURCE  # noqa: E402
from contract_frames import full  # noqa: E402
from factprobe.distractors.retrieve import forms_of_candidates, retrieve, suite_omega  # noqa: E402
from factprobe.export.harness import end_text, read_samples, task_docs, task_name, write_task  # noqa: E402
from factprobe.lm import HFCausalLM, LoglikRequest  # noqa: E402
from factprobe.metrics.common import correct_entities, entity_scores  # noqa: E402
from factprobe.metrics.knowledge import knowledge_per_prompt  # noqa: E402
from factprobe.probes.build import DumpTables, build_suite  # noqa: E402
from factprobe.scoring.control import train_bpe_tokenizer  # noqa: E402
from factprobe.scoring.suite import build_pairs, score_pairs  # noqa: E402
from factprobe.settings import Retrieve  # noqa: E402

torch.set_num_threads(1)
EOS = "<|endoftext|>"
SUITE = "demo"
DUMP = "20190201"
SPEC = {
    "kind": "multiprompt",
    "dump": DUMP,
    "languages": ["en", "de"],
    "relations": ["P36", "P530"],
    "n_facts": 2,
    "templates": {"styles": ["statement", "question"], "max_per_relation": 1},
    "few_shot": {"settings": ["zero-shot", "2-random"]},
}
SETS = {"team": {"format": "yaml", "path": str(ROOT / "resources" / "templates")}}


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
def suite(demo_tables):
    """facts, prompts, candidates, forms of a small real suite (random + pool distractors)."""
    tables = demo_tables
    facts, prompts, entity_forms = build_suite(
        SUITE,
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
    settings = retrieve_settings(strategies=["random", "pool"], n=3, pool_size=4, languages=["en", "de"])
    candidates = retrieve(facts, omega, settings, {"entity_forms": entity_forms})
    forms = forms_of_candidates(candidates, entity_forms)
    # Preconditions the assertions below rely on: contexts, two languages, two strategies.
    assert (prompts["shots"] == "2-random").any() and set(prompts["lang"]) == {"en", "de"}
    assert {"random", "pool"} <= set(candidates["strategy"])
    return facts, prompts, candidates, forms


@pytest.fixture(scope="module")
def model_dir(suite, tmp_path_factory):
    """A tiny GPT-2 and a byte-level BPE tokenizer (no BOS, EOS = <|endoftext|>) saved to a folder."""
    from transformers import GPT2Config, GPT2LMHeadModel

    _, prompts, _, forms = suite
    corpus = list(prompts["context"] + prompts["text"]) + list(forms["form"])
    tok = train_bpe_tokenizer(corpus, vocab_size=400, add_bos=False)
    torch.manual_seed(0)
    config = GPT2Config(
        vocab_size=len(tok),
        n_positions=512,
        n_embd=32,
        n_layer=2,
        n_head=4,
        bos_token_id=tok.eos_token_id,
        eos_token_id=tok.eos_token_id,
    )
    folder = tmp_path_factory.mktemp("tiny_gpt2")
    GPT2LMHeadModel(config).eval().save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def loaded(model_dir):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(model_dir).eval()
    return HFCausalLM(model, AutoTokenizer.from_pretrained(model_dir))


def score_texts(lm: HFCausalLM, contexts: list[str], continuations: list[str], end: str) -> np.ndarray:
    """log P(continuation + end marker | context) of each pair, through the model interface."""
    other = HFCausalLM(lm.model, lm.tokenizer, end_marker=end)
    requests = [LoglikRequest(c, x) for c, x in zip(contexts, continuations, strict=True)]
    return np.array([r.logprob for r in other.loglikelihood(requests)])


@pytest.fixture(scope="module")
def exported(suite, tmp_path_factory):
    facts, prompts, candidates, forms = suite
    docs = task_docs(SUITE, prompts, candidates, forms, facts, end_text("eos", EOS))
    folder = tmp_path_factory.mktemp("tasks") / SUITE
    names = write_task(docs, folder, SUITE, "eos", EOS)
    return docs, folder, names


@pytest.fixture(scope="module")
def factprobe_scores(suite, loaded):
    """factprobe's own score table of the suite: the reference."""
    facts, prompts, candidates, forms = suite
    return score_pairs(loaded, build_pairs(prompts, candidates, forms), progress=False)


@pytest.fixture(scope="module")
def lm_eval_run(exported, model_dir, tmp_path_factory):
    """lm-eval's evaluator on the exported tag, samples saved as `lm_eval --log_samples` does."""
    from lm_eval import simple_evaluate
    from lm_eval.loggers import EvaluationTracker
    from lm_eval.models.huggingface import HFLM
    from lm_eval.tasks import TaskManager

    _, folder, _ = exported
    out = tmp_path_factory.mktemp("lm_eval_out")
    manager = TaskManager(include_path=str(folder.parent), include_defaults=False)
    hflm = HFLM(pretrained=str(model_dir), device="cpu", batch_size=64)
    tracker = EvaluationTracker(output_path=str(out))
    results = simple_evaluate(
        model=hflm,
        tasks=[f"factprobe_{SUITE}"],
        task_manager=manager,
        log_samples=True,
        bootstrap_iters=0,
        evaluation_tracker=tracker,
    )
    samples = results.pop("samples")
    tracker.save_results_aggregated(results=results, samples=samples)
    for name in results["configs"]:
        tracker.save_results_samples(task_name=name, samples=samples[name])
    files = sorted(out.rglob("samples_*.jsonl"))
    return results, files, manager


def raw_samples(files) -> pd.DataFrame:
    """Per-choice rows straight from the samples jsonl (not through read_samples)."""
    rows = []
    for path in files:
        for line in path.read_text(encoding="utf-8").splitlines():
            sample = json.loads(line)
            doc = sample["doc"]
            for i, (args, resp) in enumerate(
                zip(sample["arguments"].values(), sample["filtered_resps"], strict=True)
            ):
                rows.append(
                    {
                        "prompt_id": doc["prompt_id"],
                        "strategy": doc["strategy"],
                        "entity": doc["choice_entity"][i],
                        "form": doc["choice_form"][i],
                        "context": args["arg_0"],
                        "continuation": args["arg_1"],
                        "lm_logprob": float(resp[0]),
                    }
                )
    return pd.DataFrame(rows)


def test_task_manager_loads_the_export_offline(exported, suite, lm_eval_run):
    docs, folder, names = exported
    _, _, manager = lm_eval_run
    assert names == [task_name(SUITE, "pool"), task_name(SUITE, "random")]
    assert set(names) | {f"factprobe_{SUITE}", "factprobe"} <= set(manager.all_tasks)
    tasks = manager.load(names)["tasks"]
    by_strategy = pd.Series([d["strategy"] for d in docs]).value_counts()
    for name in names:
        task = tasks[name]
        strategy = name.rsplit("_", 1)[1]
        test_docs = list(task.test_docs())
        assert len(test_docs) == by_strategy[strategy]
        assert all(d["strategy"] == strategy for d in test_docs)
    # Every prompt whose object and some distractor have forms in its language gets one doc per strategy.
    facts, prompts, candidates, forms = suite
    pairs = build_pairs(prompts, candidates, forms)
    roles = pairs.merge(candidates[["fact_id", "entity", "role", "strategy"]], on=["fact_id", "entity"])
    has_obj = set(roles.loc[roles["role"] == "object", "prompt_id"])
    expected = {
        (p, s)
        for p, s in roles.loc[roles["role"] == "distractor", ["prompt_id", "strategy"]].itertuples(
            index=False
        )
        if p in has_obj
    }
    assert {(d["prompt_id"], d["strategy"]) for d in docs} == expected


def test_lm_eval_requests_the_pairs_factprobe_scores(lm_eval_run, factprobe_scores, suite):
    """lm-eval's (context, continuation) = factprobe's (context + text, " " + form + EOS text)."""
    _, files, _ = lm_eval_run
    raw = raw_samples(files)
    facts, prompts, candidates, forms = suite
    pairs = build_pairs(prompts, candidates, forms)
    cols = ["prompt_id", "entity", "form", "prompt_text", "continuation"]
    merged = raw.merge(pairs[cols], on=cols[:3], how="left", suffixes=("", "_fp"), validate="many_to_one")
    assert merged["prompt_text"].notna().all()
    assert (merged["context"] == merged["prompt_text"]).all()
    assert (merged["continuation"] == merged["continuation_fp"] + EOS).all()
    assert merged["continuation_fp"].str.startswith(" ").all()  # English and German: one leading space
    # Every scored pair that belongs to some doc was asked for.
    assert set(map(tuple, raw[["prompt_id", "entity", "form"]].drop_duplicates().to_numpy())) <= set(
        map(tuple, factprobe_scores[["prompt_id", "entity", "form"]].to_numpy())
    )


def test_lm_eval_loglikelihoods_equal_factprobe(lm_eval_run, factprobe_scores, loaded):
    _, files, _ = lm_eval_run
    raw = raw_samples(files)
    merged = raw.merge(factprobe_scores, on=["prompt_id", "entity", "form"], validate="many_to_one")
    assert len(merged) == len(raw) > 500
    diff = np.abs(merged["lm_logprob"] - merged["logprob"]).max()
    print(f"max |lm-eval - factprobe| over {len(merged)} choices: {diff:.2e} nats")
    assert diff < 1e-4
    # The end marker is really scored: without EOS factprobe's values are far from lm-eval's.
    no_end = score_texts(
        loaded,
        merged["context"].tolist(),
        [c[: -len(EOS)] for c in merged["continuation"]],
        end="none",
    )
    assert np.abs(no_end - merged["lm_logprob"]).min() > 1e-2


def test_samples_read_back_as_score_table(lm_eval_run, factprobe_scores, suite, loaded):
    results, files, _ = lm_eval_run
    got = read_samples(files, loaded.tokenizer)
    assert list(got.columns[:5]) == ["prompt_id", "entity", "form", "logprob", "n_tokens"]
    assert not got.duplicated(["prompt_id", "entity", "form"]).any()
    ref = factprobe_scores.merge(got[["prompt_id", "entity", "form"]], on=["prompt_id", "entity", "form"])
    merged = got.merge(ref, on=["prompt_id", "entity", "form"], suffixes=("", "_fp"), validate="one_to_one")
    assert len(merged) == len(got)
    assert np.abs(merged["logprob"] - merged["logprob_fp"]).max() < 1e-4
    assert (merged["n_tokens"] == merged["n_tokens_fp"]).all()  # form tokens + EOS
    assert (merged[["fact_id", "lang"]].to_numpy() == merged[["fact_id_fp", "lang_fp"]].to_numpy()).all()

    # A measure from the lm-eval run equals the same measure from factprobe's own scores.
    facts, prompts, candidates, _ = suite
    correct = correct_entities(facts)
    k_lm = knowledge_per_prompt(
        entity_scores(full("scores", got)), prompts, candidates, facts, correct, [1, 3]
    )
    k_fp = knowledge_per_prompt(
        entity_scores(full("scores", ref)), prompts, candidates, facts, correct, [1, 3]
    )
    keys = ["prompt_id", "strategy", "n"]
    both = k_lm.merge(k_fp, on=keys, suffixes=("_lm", "_fp"), validate="one_to_one")
    assert len(both) == len(k_fp) > 0
    # K at n is undefined (NaN) for a fact with fewer than n distractors, in both tables alike.
    assert np.array_equal(both["k_min_lm"], both["k_min_fp"], equal_nan=True)
    assert np.allclose(both["k_avg_lm"], both["k_avg_fp"], equal_nan=True)
    assert 0 < both["k_avg_lm"].mean() < 1  # a random model: some wins, some losses

    # lm-eval's own acc (top choice is a form of the object) recomputed from the read-back table.
    docs = [
        json.loads(line)["doc"] for path in files for line in path.read_text(encoding="utf-8").splitlines()
    ]
    table = got.set_index(["prompt_id", "entity", "form"])["logprob"]
    for name, res in results["results"].items():
        strategy = name.rsplit("_", 1)[1]
        wins = []
        for doc in (d for d in docs if d["strategy"] == strategy):
            lps = [
                table[(doc["prompt_id"], e, f)]
                for e, f in zip(doc["choice_entity"], doc["choice_form"], strict=True)
            ]
            wins.append(int(np.argmax(lps)) in doc["gold"])
        assert res["acc,none"] == pytest.approx(np.mean(wins))


@pytest.mark.parametrize("end", [".", "none"])
def test_other_end_markers_match_lm_eval(suite, loaded, model_dir, end):
    """With end marker "." or none the choice text carries it (or nothing) and lm-eval agrees."""
    from lm_eval.api.instance import Instance
    from lm_eval.models.huggingface import HFLM

    facts, prompts, candidates, forms = suite
    docs = task_docs(SUITE, prompts, candidates, forms, facts, end_text(end))
    pairs = [(d["query"], c) for d in docs[:6] for c in d["choices"]]
    assert (
        all(c.endswith(".") for _, c in pairs) if end == "." else not any(c.endswith(EOS) for _, c in pairs)
    )
    hflm = HFLM(pretrained=str(model_dir), device="cpu", batch_size=32)
    instances = [
        Instance(request_type="loglikelihood", doc={}, arguments=p, idx=i) for i, p in enumerate(pairs)
    ]
    lm = np.array([v for v, _ in hflm.loglikelihood(instances, disable_tqdm=True)])
    plain = [c[:-1] if end == "." else c for _, c in pairs]
    fp = score_texts(loaded, [q for q, _ in pairs], plain, end=end)
    assert np.abs(lm - fp).max() < 1e-4


def test_task_folder_is_relocatable(exported, tmp_path):
    """The YAML finds its docs through a loader beside it, not through an absolute path."""
    from lm_eval.tasks import TaskManager

    docs, folder, names = exported
    moved = tmp_path / "elsewhere" / "copy"
    shutil.copytree(folder, moved)
    assert str(folder) not in "".join(p.read_text() for p in moved.glob("*.yaml"))
    manager = TaskManager(include_path=str(moved), include_defaults=False)
    task = manager.load([names[0]])["tasks"][names[0]]
    first = next(iter(task.test_docs()))
    assert first["doc_id"] in {d["doc_id"] for d in docs}


def test_object_listed_as_distractor_is_not_repeated(suite):
    """PROBELM subject-side alternatives may name the object; it stays a gold choice only."""
    facts, prompts, candidates, forms = suite
    obj = candidates[candidates["role"] == "object"].iloc[0]
    extra = obj.to_frame().T.assign(role="distractor", strategy="random", rank=99)
    docs = task_docs(SUITE, prompts, pd.concat([candidates, extra], ignore_index=True), forms, facts)
    plain = task_docs(SUITE, prompts, candidates, forms, facts)
    assert docs == plain
    mine = [d for d in docs if d["fact_id"] == obj["fact_id"] and d["strategy"] == "random"]
    assert mine and all(
        obj["entity"]
        not in [e for e, r in zip(d["choice_entity"], d["choice_role"], strict=True) if r == "distractor"]
        for d in mine
    )


def test_read_samples_command_line(lm_eval_run, model_dir, factprobe_scores, tmp_path):
    """`python -m factprobe.export.harness` writes the score table as Parquet."""
    from factprobe.export.harness import main

    _, files, _ = lm_eval_run
    out = tmp_path / "scores.parquet"
    main([*map(str, files), "--tokenizer", str(model_dir), "--out", str(out)])
    table = pd.read_parquet(out)
    merged = table.merge(factprobe_scores, on=["prompt_id", "entity", "form"], suffixes=("", "_fp"))
    assert len(merged) == len(table) > 0
    assert np.abs(merged["logprob"] - merged["logprob_fp"]).max() < 1e-4


def test_bad_inputs_give_clear_errors(suite, tmp_path, loaded):
    facts, prompts, candidates, forms = suite
    with pytest.raises(ValueError, match="candidates: missing column"):
        task_docs(SUITE, prompts, candidates.drop(columns=["role"]), forms, facts)
    with pytest.raises(ValueError, match="export.eos_text is empty"):
        end_text("eos", "")
    with pytest.raises(ValueError, match="no lm-eval doc"):
        write_task([], tmp_path / "empty", SUITE, "eos", EOS)
    assert not (tmp_path / "empty").exists()
    other = tmp_path / "samples_other.jsonl"
    other.write_text(json.dumps({"doc": {"question": "x"}, "filtered_resps": [["-1.0", "False"]]}) + "\n")
    with pytest.raises(ValueError, match=r"samples_other.jsonl:1: doc lacks"):
        read_samples([other], loaded.tokenizer)


def test_correct_set_table1_keeps_only_label_and_inflected_object_forms(suite):
    """fluent-mLAMA Table 1: with ``table1`` an alias of the object is no gold choice (nor any
    choice); ``wide`` keeps it. One object gets an alias and an inflected form by hand."""
    facts, prompts, candidates, forms = suite
    obj = candidates[candidates["role"] == "object"].iloc[0]
    label = forms[(forms["entity"] == obj["entity"]) & (forms["source"] == "label")].iloc[0]
    extra = pd.DataFrame(
        [
            label.to_dict() | {"form": "Zzalias", "source": "alias"},
            label.to_dict() | {"form": "Zzinflected", "source": "inflected"},
        ]
    )
    more = pd.concat([forms, extra], ignore_index=True)

    def object_choices(correct_set):
        docs = task_docs(SUITE, prompts, candidates, more, facts, correct_set=correct_set)
        mine = [d for d in docs if d["fact_id"] == obj["fact_id"] and d["lang"] == label["lang"]]
        assert mine
        return {d["choice_form"][g] for d in mine for g in d["gold"]}

    wide, table1 = object_choices("wide"), object_choices("table1")
    assert {"Zzalias", "Zzinflected", label["form"]} <= wide
    assert "Zzalias" not in table1 and {"Zzinflected", label["form"]} <= table1


@pytest.fixture(scope="module")
def smollm2_run(suite, exported, smollm2_dir, tmp_path_factory):
    """lm-eval's evaluator on a handful of exported docs with the demo's real instruction model
    (prepared folder, as `lm_eval --model hf --model_args pretrained=resources/models/smollm2`)."""
    from lm_eval import simple_evaluate
    from lm_eval.loggers import EvaluationTracker
    from lm_eval.models.huggingface import HFLM
    from lm_eval.tasks import TaskManager

    _, folder, names = exported
    out = tmp_path_factory.mktemp("lm_eval_smollm2")
    manager = TaskManager(include_path=str(folder.parent), include_defaults=False)
    hflm = HFLM(pretrained=str(smollm2_dir), device="cpu", batch_size=16, dtype="float32")
    tracker = EvaluationTracker(output_path=str(out))
    results = simple_evaluate(
        model=hflm,
        tasks=[task_name(SUITE, "random")],
        task_manager=manager,
        log_samples=True,
        bootstrap_iters=0,
        evaluation_tracker=tracker,
        limit=3,
    )
    samples = results.pop("samples")
    tracker.save_results_aggregated(results=results, samples=samples)
    for name in results["configs"]:
        tracker.save_results_samples(task_name=name, samples=samples[name])
    return sorted(out.rglob("samples_*.jsonl"))


def test_real_instruction_model_lm_eval_equals_factprobe(suite, smollm2_run, smollm2_dir):
    """SmolLM2-Instruct's EOS is the end of turn ``<|im_end|>``; factprobe ends a
    plain-text form with the document end ``<|endoftext|>`` (id 0), the text the export writes, so
    lm-eval's per-choice log-likelihoods equal factprobe's scores of the same pairs to 1e-4."""
    facts, prompts, candidates, forms = suite
    row = {"name": "smollm2", "source": SMOLLM2_SOURCE, "dtype": "float32", "device": "cpu"}
    smol = HFCausalLM.from_row(row, model_dir=smollm2_dir)
    assert (smol.tokenizer.eos_token, smol.end_token.text, smol.end_token.id) == ("<|im_end|>", EOS, 0)
    raw = raw_samples(smollm2_run)
    assert raw["prompt_id"].nunique() == 3 and len(raw) >= 15
    pairs = build_pairs(prompts, candidates, forms)
    wanted = pairs.merge(
        raw[["prompt_id", "entity", "form"]].drop_duplicates(), on=["prompt_id", "entity", "form"]
    )
    scores = score_pairs(smol, wanted, progress=False)
    merged = raw.merge(scores, on=["prompt_id", "entity", "form"], validate="many_to_one")
    assert len(merged) == len(raw)
    diff = np.abs(merged["lm_logprob"] - merged["logprob"])
    print(f"SmolLM2: max |lm-eval - factprobe| over {len(merged)} choices: {diff.max():.2e} nats")
    assert diff.max() < 1e-4
    # Read back, the samples give the same table; ending with <|im_end|> (the old rule) is refused.
    got = read_samples(smollm2_run, smol.tokenizer)
    both = got.merge(scores, on=["prompt_id", "entity", "form"], suffixes=("", "_fp"), validate="one_to_one")
    assert np.abs(both["logprob"] - both["logprob_fp"]).max() < 1e-4
    with pytest.raises(ValueError, match="export again with export.eos_text set to '<\\|im_end\\|>'"):
        read_samples(smollm2_run, smol.tokenizer, end_token="<|im_end|>")
    # The end-of-turn ending is a different score, by several nats (what the issue measured).
    im_end = HFCausalLM(smol.model, smol.tokenizer, end_token="<|im_end|>")
    old = score_pairs(im_end, wanted, progress=False).merge(scores, on=["prompt_id", "entity", "form"])
    assert np.abs(old["logprob_x"] - old["logprob_y"]).median() > 1.0


# --- the lm-eval model type ``factprobe`` (factprobe.integrations.lm_eval) -------------------


def evaluate_into(out, **kwargs):
    """lm-eval's evaluator with ``--log_samples`` files written to ``out``: (results, files)."""
    from lm_eval import simple_evaluate
    from lm_eval.loggers import EvaluationTracker

    tracker = EvaluationTracker(output_path=str(out))
    results = simple_evaluate(log_samples=True, bootstrap_iters=0, evaluation_tracker=tracker, **kwargs)
    samples = results.pop("samples")
    tracker.save_results_aggregated(results=results, samples=samples)
    for name in results["configs"]:
        tracker.save_results_samples(task_name=name, samples=samples[name])
    return results, sorted(out.rglob("samples_*.jsonl"))


def greedy_flags(files) -> pd.Series:
    """lm-eval's is_greedy of every choice, keyed like :func:`raw_samples` rows."""
    rows = {}
    for path in files:
        for line in path.read_text(encoding="utf-8").splitlines():
            sample = json.loads(line)
            doc = sample["doc"]
            for i, resp in enumerate(sample["resps"]):
                key = (doc["prompt_id"], doc["strategy"], doc["choice_entity"][i], doc["choice_form"][i])
                rows[key] = resp[0][1] in (True, "True")
    return pd.Series(rows)


def assert_same_choices(ours_files, hflm_files, tol: float = 1e-4) -> pd.DataFrame:
    """The two runs scored the same (context, continuation) of every choice, to ``tol`` nats."""
    keys = ["prompt_id", "strategy", "entity", "form"]
    ours, hflm = raw_samples(ours_files), raw_samples(hflm_files)
    both = ours.merge(hflm, on=keys, suffixes=("", "_hf"), validate="one_to_one")
    assert len(both) == len(ours) == len(hflm)
    assert (both["context"] == both["context_hf"]).all()
    assert (both["continuation"] == both["continuation_hf"]).all()
    diff = np.abs(both["lm_logprob"] - both["lm_logprob_hf"])
    print(f"max |factprobe model type - HFLM| over {len(both)} choices: {diff.max():.2e} nats")
    assert diff.max() < tol
    return both


@pytest.fixture(scope="module")
def factprobe_lm_run(exported, model_dir, lm_eval_run, tmp_path_factory):
    """The exported tag through lm-eval's evaluator with ``model=FactprobeLM(...)``."""
    from factprobe.integrations.lm_eval import FactprobeLM

    _, _, manager = lm_eval_run
    lm = FactprobeLM(pretrained=str(model_dir), device="cpu")
    out = tmp_path_factory.mktemp("lm_eval_factprobe")
    return evaluate_into(out, model=lm, tasks=[f"factprobe_{SUITE}"], task_manager=manager)


def test_factprobe_model_type_equals_hflm(lm_eval_run, factprobe_lm_run):
    """Through lm-eval's own loop, every choice's log-likelihood equals HFLM's to 1e-4 nats,
    its is_greedy flag equals HFLM's, and so does each task's acc."""
    hflm_results, hflm_files, _ = lm_eval_run
    results, files = factprobe_lm_run
    both = assert_same_choices(files, hflm_files)
    assert len(both) > 500
    assert greedy_flags(files).sort_index().equals(greedy_flags(hflm_files).sort_index())
    for name, res in hflm_results["results"].items():
        assert results["results"][name]["acc,none"] == res["acc,none"]
    assert results["config"]["engine"] == "factprobe packed batch-invariant"


def test_factprobe_model_type_on_the_real_model(smollm2_run, smollm2_dir, exported, tmp_path):
    """``model="factprobe"`` by name (lm-eval's registry), SmolLM2-135M-Instruct in fp32, the same
    three docs as HFLM's run: the same per-choice log-likelihoods to 1e-4 nats."""
    import factprobe.integrations.lm_eval  # noqa: F401  (registers the model type)
    from lm_eval.tasks import TaskManager

    _, folder, _ = exported
    _, files = evaluate_into(
        tmp_path,
        model="factprobe",
        model_args={"pretrained": str(smollm2_dir), "dtype": "float32"},
        device="cpu",
        tasks=[task_name(SUITE, "random")],
        task_manager=TaskManager(include_path=str(folder.parent), include_defaults=False),
        limit=3,
    )
    both = assert_same_choices(files, smollm2_run)
    assert both["prompt_id"].nunique() == 3 and len(both) >= 15


def test_factprobe_command_line_runs_lm_eval(exported, model_dir, lm_eval_run, tmp_path, monkeypatch):
    """`python -m factprobe.integrations.lm_eval <lm_eval arguments>` (run as __main__, in this
    process) registers the model type and runs lm-eval's own CLI: samples equal HFLM's."""
    import functools
    import runpy
    import sys

    import factprobe.integrations.lm_eval  # noqa: F401  (registered once, as a library would be)
    import lm_eval.tasks

    # lm-eval's CLI indexes its 14,000 bundled tasks (a minute or more on two busy cores); the
    # export is all this run needs.
    monkeypatch.setattr(
        lm_eval.tasks, "TaskManager", functools.partial(lm_eval.tasks.TaskManager, include_defaults=False)
    )
    _, folder, _ = exported
    _, hflm_files, _ = lm_eval_run
    argv = ["--model", "factprobe", "--model_args", f"pretrained={model_dir},dtype=float32"]
    argv += ["--device", "cpu", "--include_path", str(folder.parent), "--tasks", task_name(SUITE, "random")]
    argv += ["--limit", "3", "--log_samples", "--output_path", str(tmp_path)]
    monkeypatch.setattr(sys, "argv", ["factprobe.integrations.lm_eval", *argv])
    runpy.run_module("factprobe.integrations.lm_eval", run_name="__main__")
    ours = raw_samples(sorted(tmp_path.rglob("samples_*.jsonl")))
    keys = ["prompt_id", "strategy", "entity", "form"]
    both = ours.merge(raw_samples(hflm_files), on=keys, suffixes=("", "_hf"), validate="one_to_one")
    assert len(both) == len(ours) and ours["prompt_id"].nunique() == 3
    assert np.abs(both["lm_logprob"] - both["lm_logprob_hf"]).max() < 1e-4
    config = json.loads(next(tmp_path.rglob("results_*.json")).read_text())["config"]
    assert config["model"] == "factprobe" and config["model_fingerprint"]


def test_factprobe_rolling_and_generation(model_dir):
    """loglikelihood_rolling: HFLM's value over several windows (max_length 24), and for a text
    that fits one window log P(text | EOS), i.e. loglikelihood("", text). generate_until: HFLM's
    greedy text; the greedy tokens score as is_greedy; sampling is refused."""
    from factprobe.integrations.lm_eval import FactprobeLM
    from lm_eval.api.instance import Instance
    from lm_eval.models.huggingface import HFLM

    hflm = HFLM(pretrained=str(model_dir), device="cpu", batch_size=4, max_length=24)
    ours = FactprobeLM(pretrained=str(model_dir), device="cpu", max_length=24)
    long = "Berlin is the capital of Germany. Paris is the capital of France. " * 3
    short = "Berlin is the capital of Germany."
    assert len(ours.tok_encode(long)) > 2 * 24 and len(ours.tok_encode(short)) < 24

    def inst(kind, args):
        return [Instance(request_type=kind, doc={}, arguments=a, idx=i) for i, a in enumerate(args)]

    rolling = ours.loglikelihood_rolling(
        inst("loglikelihood_rolling", [(long,), (short,)]), disable_tqdm=True
    )
    expected = hflm.loglikelihood_rolling(
        inst("loglikelihood_rolling", [(long,), (short,)]), disable_tqdm=True
    )
    assert np.allclose(rolling, expected, rtol=0, atol=1e-4)
    ((alone, _),) = ours.loglikelihood(inst("loglikelihood", [("", short)]), disable_tqdm=True)
    assert rolling[1] == pytest.approx(alone, abs=1e-9) and rolling[0] < 3 * rolling[1]

    gen = {"until": ["."], "max_gen_toks": 8, "do_sample": False}
    prompts = [("Berlin is the capital of", gen), ("Paris", gen), ("The", {**gen, "until": ["\n"]})]
    texts = ours.generate_until(inst("generate_until", prompts), disable_tqdm=True)
    assert texts == hflm.generate_until(inst("generate_until", prompts), disable_tqdm=True)
    assert any(texts) and not any("." in t for t in texts[:2])
    ctx = ours.tok_encode(prompts[0][0])
    answer = ours._greedy([ctx], [["."]], [4])[0]
    wrong = [*answer[:-1], (answer[-1] + 1) % len(ours.tokenizer)]
    flags = [g for _, g in ours._loglikelihood_tokens([(None, ctx, answer), (None, ctx, wrong)])]
    assert flags == [True, False]
    assert flags == [g for _, g in hflm._loglikelihood_tokens([(None, ctx, answer), (None, ctx, wrong)])]
    with pytest.raises(NotImplementedError, match="generates greedily"):
        ours.generate_until(inst("generate_until", [("Paris", {"do_sample": True, "temperature": 0.7})]))
    with pytest.raises(NotImplementedError, match=r"\['num_beams'\]"):
        ours.generate_until(inst("generate_until", [("Paris", {**gen, "num_beams": 4})]))


def test_factprobe_model_type_bad_input(model_dir, tmp_path):
    from factprobe.integrations.lm_eval import FactprobeLM
    from factprobe.lm.load import ModelLoadError
    from lm_eval.api.registry import get_model

    assert get_model("factprobe") is FactprobeLM
    assert get_model("hf").__name__ == "HFLM"  # lm-eval's own models stay registered
    with pytest.raises(ValueError, match="dtype 'fp8': use one of auto, float32"):
        FactprobeLM(pretrained=str(model_dir), dtype="fp8")
    with pytest.raises(ModelLoadError, match="no_model"):
        FactprobeLM(pretrained=str(tmp_path / "no_model" / "x" / "y"), device="cpu")
    from transformers import AutoModelForCausalLM

    with pytest.raises(ValueError, match="pass its tokenizer"):
        FactprobeLM(pretrained=AutoModelForCausalLM.from_pretrained(model_dir))
