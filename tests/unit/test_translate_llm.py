"""LLM translation backend and the loose word-order filter.

Fluent-mLAMA §3.2 / Appendix A: a causal LM is given the filled English sentence and the Wikidata
translations of its subject and object, after few-shot examples, and translates the sentence;
§3.2: GT translations are filtered when their word order "differs significantly (e.g. an object
NE in the beginning of the sentence)".
"""

import runpy
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest
import torch
import yaml
from factprobe import contracts
from factprobe.lm import HFCausalLM
from factprobe.settings import LLM_INSTRUCTION, Translate
from factprobe.translate.align import align_sentence
from factprobe.translate.llm import (
    LLMTranslator,
    build_prompt,
    examples_for,
    language_name,
    parse_translation,
)
from factprobe.translate.mt import Request, TranslationCache
from factprobe.translate.sentence import sentence_verbalization, translation_requests
from test_translate import TEMPLATES, suite_tables

ROOT = Path(__file__).resolve().parents[2]

# Appendix A, Czech P19 (the paper's own shots).
SHOTS = [
    (
        "Cunigunde of Luxembourg was born in Luxembourg .",
        "Kunhuta Lucemburská",
        "Lucembursko",
        "Kunhuta Lucemburská se narodila v Lucembursku.",
    ),
    (
        "Karel Schwarzenberg was born in Prague .",
        "Karel Schwarzenberg",
        "Praha",
        "Karel Schwarzenberg se narodil v Praze.",
    ),
    (
        "William Carlos Williams was born in Rutherford .",
        "William Carlos Williams",
        "Rutherford (New Jersey, U. S.)",
        "William Carlos Williams se narodil v Rutherfordu (New Jersey, U. S.).",
    ),
    (
        "Marion Davies was born in Brooklyn .",
        "Marion Daviesová",
        "Brooklyn",
        "Marion Daviesová se narodila v Brooklynu.",
    ),
    ("Peter Mark Roget was born in London .", "Peter Roget", "Londýn", "Peter Roget se narodil v Londýně."),
]
FEW_SHOT = {
    "cs": [dict(source=a, subject=b, object=c, translation=d, relation="P19") for a, b, c, d in SHOTS]
}


def test_prompt_is_the_appendix_a_layout_written_by_hand():
    req = Request(
        "Theodore the Studite was born in Constantinople .",
        "en",
        "cs",
        subject="Theodoros Studijský",
        object="Konstantinopol",
        relation="P19",
    )
    got = build_prompt(req, examples_for(FEW_SHOT, "cs", "P19")[:2], LLM_INSTRUCTION)
    expected = (
        "You are a professional English-Czech translator. You are given English sentences about subjects "
        "and objects. You are also given translations of subjects and objects separately. You need to "
        "translate full sentences to Czech. When translating, you have to use the translated subjects and "
        "objects. Pay special attention to grammatical agreement between the words in the translated "
        "sentences. When translating, follow the examples:\n"
        "\n"
        "Source sentence: Cunigunde of Luxembourg was born in Luxembourg .\n"
        "Subject translation: Kunhuta Lucemburská\n"
        "Object translation: Lucembursko\n"
        "Translation: Kunhuta Lucemburská se narodila v Lucembursku.\n"
        "\n"
        "Source sentence: Karel Schwarzenberg was born in Prague .\n"
        "Subject translation: Karel Schwarzenberg\n"
        "Object translation: Praha\n"
        "Translation: Karel Schwarzenberg se narodil v Praze.\n"
        "\n"
        "Source sentence: Theodore the Studite was born in Constantinople .\n"
        "Subject translation: Theodoros Studijský\n"
        "Object translation: Konstantinopol\n"
        "Translation:"
    )
    assert got == expected


def test_examples_follow_language_and_relation():
    few = {"cs": FEW_SHOT["cs"] + [dict(source="a", subject="b", object="c", translation="d")]}
    assert len(examples_for(few, "cs", "P19")) == 6  # five P19 shots + one for every relation
    assert [e.source for e in examples_for(few, "cs", "P36")] == ["a"]
    assert examples_for(few, "ru", "P19") == []
    with pytest.raises(ValueError, match=r"translate.few_shot.cs\[0\].*'translation'"):
        examples_for({"cs": [dict(source="a", subject="b", object="c")]}, "cs")
    assert language_name("hr") == "Croatian" and language_name("xx", {"xx": "Xish"}) == "Xish"
    with pytest.raises(ValueError, match="translate.language_names"):
        language_name("xx")


def test_parse_translation_hand_cases():
    assert parse_translation(" Franz Kafka se narodil v Praze.") == "Franz Kafka se narodil v Praze."
    assert parse_translation("Translation: Kafka se narodil v Praze.\nSource sentence: x") == (
        "Kafka se narodil v Praze."
    )
    assert parse_translation("«Kafka se narodil v Praze.»") == "Kafka se narodil v Praze."
    # A quote that does not enclose the whole sentence stays.
    assert parse_translation('"Proces" napsal Kafka') == '"Proces" napsal Kafka'
    assert parse_translation("") == ""


def test_llm_requests_carry_the_english_sentence_and_forced_target_labels():
    facts, prompts, forms = suite_tables()
    from factprobe.translate.sentence import english_sentences

    sentences = english_sentences(prompts, facts, forms, TEMPLATES)
    jobs, skipped = translation_requests(sentences, forms, "ru", backend="llm")
    got = [
        (j["request"].text, j["request"].subject, j["request"].object, j["request"].relation) for j in jobs
    ]
    assert got == [
        ("Václav Havel was born in Prague.", "Вацлав Гавел", "Прага", "P19"),
        ("The capital of Czech Republic is Prague.", "Чехия", "Прага", "P36"),
        ("Franz Kafka was born in Prague.", "Франц Кафка", "Прага", "P19"),
    ]
    assert all(j["request"].prefix == "" for j in jobs) and skipped == []


# --- word order: strict (object-final) versus the paper's loose filter -----------------------

OBJ = [("Praha", "label"), ("Prague", "source")]
SUBJ = [("Franz Kafka", "label")]


@pytest.mark.parametrize(
    "sentence, strict, loose, loose_prompt",
    [
        # object final: both keep it
        ("Franz Kafka se narodil v Praze.", "kept", "kept", "Franz Kafka se narodil v"),
        # words after the object: strict drops, loose cuts them off with the object
        (
            "Franz Kafka se narodil v Praze v roce 1883.",
            "object_not_final",
            "kept",
            "Franz Kafka se narodil v",
        ),
        # object before the subject: both drop (loose: as an object at the start)
        ("V Praze se narodil Franz Kafka.", "object_not_final", "object_at_start", "V"),
        # object opening the sentence
        ("Praha je rodištěm Franze Kafky.", "object_not_final", "object_at_start", ""),
    ],
)
def test_word_order_filters_on_hand_cases(sentence, strict, loose, loose_prompt):
    assert align_sentence(sentence, OBJ, SUBJ).reason == strict
    a = align_sentence(sentence, OBJ, SUBJ, word_order="loose")
    assert a.reason == loose and a.prompt == loose_prompt
    if loose == "kept":
        assert a.form == "Praze"


def test_loose_word_order_through_the_pipeline():
    facts, prompts, forms = suite_tables()
    answers = {
        "Franz Kafka": "Franz Kafka se narodil v Praze v roce 1883.",
        "Václav Havel": "V Praze se narodil Václav Havel.",
        "Česko": "Hlavním městem Česka je Praha.",
    }

    def fake(requests):
        return [answers[r.subject] for r in requests]

    kept = {}
    for order in ("strict", "loose"):
        out, _, stats = sentence_verbalization(
            prompts, facts, forms, TEMPLATES, ["cs"], fake, "fake", Translate(backend="llm", word_order=order)
        )
        kept[order] = dict(zip(out["fact_id"], out["text"], strict=True))
        row = stats.iloc[0]
        kept[order + "_drops"] = (row["dropped_object_not_final"], row["dropped_object_at_start"])
    assert kept["strict"] == {"Q213|P36|Q1085": "Hlavním městem Česka je"}
    assert kept["loose"] == {
        "Q213|P36|Q1085": "Hlavním městem Česka je",
        "Q905|P19|Q1085": "Franz Kafka se narodil v",
    }
    assert kept["strict_drops"] == (2, 0) and kept["loose_drops"] == (0, 1)


# --- the translator on a model ----------------------------------------------------------------


@pytest.fixture(scope="module")
def tiny_folder(tmp_path_factory):
    """A tiny random GPT-2 with a BPE tokenizer trained on the prompt layout, saved as a folder."""
    from factprobe.scoring.control import train_bpe_tokenizer
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.set_num_threads(1)
    texts = [
        f"Source sentence: {a}\nSubject translation: {b}\nObject translation: {c}\nTranslation: {d}"
        for a, b, c, d in SHOTS
    ]
    tok = train_bpe_tokenizer(texts * 10 + [LLM_INSTRUCTION], 400)
    torch.manual_seed(5)
    model = GPT2LMHeadModel(
        GPT2Config(
            vocab_size=len(tok),
            n_positions=1024,
            n_embd=32,
            n_layer=1,
            n_head=2,
            bos_token_id=tok.eos_token_id,
            eos_token_id=tok.eos_token_id,
        )
    )
    folder = tmp_path_factory.mktemp("models") / "tiny"
    model.eval().save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


def _naive_greedy(lm, prompt, max_new):
    """Greedy decoding by repeated full forwards, stopping after EOS or a token with a line break."""
    ids = lm.context_ids(prompt)
    start = len(ids)
    for _ in range(max_new):
        with torch.no_grad():
            nxt = int(lm.model(input_ids=torch.tensor([ids])).logits[0, -1].argmax())
        ids.append(nxt)
        if nxt == lm.tokenizer.eos_token_id or "\n" in lm.tokenizer.decode([nxt]):
            break
    return lm.tokenizer.decode(ids[start:], skip_special_tokens=True).split("\n", 1)[0].strip()


def test_tiny_model_translation_is_greedy_decoding_of_the_prompt_and_cached(tiny_folder, tmp_path):
    row = {"name": "tiny", "source": str(tiny_folder), "dtype": "float32", "device": "cpu"}
    lm = HFCausalLM.from_row(row, model_dir=tiny_folder)
    settings = Translate(few_shot=FEW_SHOT, max_new_tokens=8)
    calls = []
    generate = lm.generate

    def counting(requests, progress=False):
        calls.append([r.context for r in requests])
        return generate(requests, progress=progress)

    lm.generate = counting
    translator = LLMTranslator("tiny", lm, settings, TranslationCache(tmp_path / "cache"))
    reqs = [
        Request(
            "Franz Kafka was born in Prague.",
            "en",
            "cs",
            subject="Franz Kafka",
            object="Praha",
            relation="P19",
        ),
        Request(
            "The capital of Czech Republic is Prague.",
            "en",
            "cs",
            subject="Česko",
            object="Praha",
            relation="P36",
        ),
        Request(
            "Franz Kafka was born in Prague.",
            "en",
            "cs",
            subject="Franz Kafka",
            object="Praha",
            relation="P19",
        ),
    ]
    out = translator.translate(reqs)
    # one generate call, duplicates asked once, each context the hand-checked Appendix A prompt
    assert len(calls) == 1 and len(calls[0]) == 2
    first = calls[0][0]
    assert first == build_prompt(reqs[0], examples_for(FEW_SHOT, "cs", "P19"), LLM_INSTRUCTION)
    assert first.endswith("Subject translation: Franz Kafka\nObject translation: Praha\nTranslation:")
    assert "Karel Schwarzenberg" not in calls[0][1]  # P19 shots are not shown for P36
    for req, got in zip(reqs, out, strict=True):
        assert got == parse_translation(_naive_greedy(lm, translator.prompt(req), 8))
    assert out[0] == out[2]
    # a second translator on the same cache folder generates nothing
    again = LLMTranslator("tiny", lm, settings, TranslationCache(tmp_path / "cache"))
    assert again.translate(reqs) == out and len(calls) == 1


def test_rule_script_with_llm_backend(tiny_folder, tmp_path):
    """translate_prompts.py as Snakemake runs it, backend llm, the model from its folder."""
    facts, prompts, forms = suite_tables()
    (tmp_path / "in").mkdir()
    for name, frame in [("facts", facts), ("prompts", prompts), ("forms", forms)]:
        frame.to_parquet(tmp_path / "in" / f"{name}.parquet")
    records = [
        {"id": k, "relation": k.split(".")[0], "style": "statement", "text": v} for k, v in TEMPLATES.items()
    ]
    (tmp_path / "in" / "en.yaml").write_text(yaml.safe_dump({"language": "en", "templates": records}))
    out = tmp_path / "out"
    settings = dict(
        backend="llm",
        llm="tiny",
        languages=["cs"],
        few_shot=FEW_SHOT,
        max_new_tokens=6,
        word_order="loose",
        cache=str(tmp_path / "cache"),
    )
    smk = SimpleNamespace(
        input=SimpleNamespace(
            facts=str(tmp_path / "in/facts.parquet"),
            prompts=str(tmp_path / "in/prompts.parquet"),
            forms=str(tmp_path / "in/forms.parquet"),
            templates=[str(tmp_path / "in/en.yaml")],
            llm=str(tiny_folder),
        ),
        output=SimpleNamespace(
            prompts=str(out / "translated_prompts.parquet"),
            forms=str(out / "translated_forms.parquet"),
            stats=str(out / "translate_stats.tsv"),
        ),
        params=SimpleNamespace(
            settings=settings,
            llm={"name": "tiny", "source": "resources/models/tiny", "dtype": "float32", "device": "cpu"},
            no_space=["zh"],
        ),
        log=[str(tmp_path / "translate.log")],
        wildcards=SimpleNamespace(suite="multilingual"),
        rule="translate_prompts",
    )
    script = ROOT / "workflow" / "scripts" / "translate_prompts.py"
    smk.scriptdir = str(script.parent)
    runpy.run_path(str(script), init_globals={"snakemake": smk})
    stats = contracts.read_text("translate_stats", out / "translate_stats.tsv")
    row = stats.iloc[0]
    assert (row["lang"], row["model"], row["status"], row["n_sentences"]) == ("cs", "tiny", "translated", 3)
    # every sentence is either kept or counted under one drop reason
    dropped = sum(row[c] for c in stats.columns if c.startswith("dropped_") and c != "dropped_share")
    assert row["n_kept"] + dropped == 3
    cache = pd.concat(pd.read_parquet(p) for p in (tmp_path / "cache").glob("*.parquet"))
    assert len(cache) == 3 and set(cache["model"]) == {"tiny"}
    assert all(t.rstrip().endswith("Object translation: Praha\nTranslation:") for t in cache["text"])


# --- the real SmolLM2 model (when installed; the project's real-model test needs it too) ------


def test_real_smollm2_follows_the_forced_labels(smollm2_dir):
    """SmolLM2-135M-Instruct with the paper's five Czech P19 shots translates two sentences:
    each starts with the forced subject label and its object is found as the inflected locative
    of the forced label ("Praha" -> "Praze"), so both prompts are kept."""
    from conftest import SMOLLM2_SOURCE as SOURCE

    folder = smollm2_dir
    torch.set_num_threads(2)
    lm = HFCausalLM.from_row(
        {"name": "smollm2", "source": SOURCE, "dtype": "float32", "device": "cpu"}, folder
    )
    translator = LLMTranslator("smollm2", lm, Translate(few_shot=FEW_SHOT, max_new_tokens=24))
    facts, prompts, forms = suite_tables()
    prompts = prompts[prompts["property"] == "P19"]
    out, new_forms, stats = sentence_verbalization(
        prompts, facts, forms, TEMPLATES, ["cs"], translator.translate, "smollm2", Translate(backend="llm")
    )
    assert stats.iloc[0]["n_sentences"] == 2
    got = dict(
        zip(
            out["subject_form"],
            zip(out["translation"], out["text"], out["object_form"], strict=True),
            strict=True,
        )
    )
    assert set(got) == {"Václav Havel", "Franz Kafka"}
    for subject, (translation, prompt, form) in got.items():
        assert translation.startswith(subject) and prompt.startswith(subject)
        assert form == "Praze"
    assert set(new_forms["form"]) == {"Praze"}


def _dry_run(tmp_path, translate):
    """``snakemake -n`` of the translate target on the demo config with ``translate`` overridden."""
    import subprocess
    import sys

    config = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    config["translate"].update(translate)
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    env = dict(__import__("os").environ, PYTHONPATH=str(ROOT / "workflow" / "scripts"))
    target = "results/probes/multilingual/translated_prompts.parquet"
    cmd = [
        sys.executable,
        "-m",
        "snakemake",
        "-n",
        "--configfile",
        str(path),
        "--replace-workflow-config",
        "--forceall",  # list prepare_model even where this checkout has the folder already
        target,
    ]
    return subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)


def test_translate_rule_takes_the_prepared_model_folder(tmp_path):
    run = _dry_run(tmp_path, {"backend": "llm", "llm": "smollm2"})
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    out = run.stdout + run.stderr
    assert "rule prepare_model" in out and "resources/models/smollm2" in out
    bad = _dry_run(tmp_path, {"backend": "llm", "llm": "nope"})
    assert bad.returncode != 0 and "translate.llm: 'nope' is not a row of" in bad.stdout + bad.stderr


def test_seq2seq_translation_model_from_a_models_tsv_row_is_prepared_not_scored(tmp_path):
    """A translation model named by a models.tsv row (here a hub id, never fetched by a
    dry run) is made a prepared folder by rule prepare_model and fed to translate_prompts; the
    workflow does not score it as a causal LM."""
    import subprocess
    import sys

    models = tmp_path / "models.tsv"
    rows = (ROOT / "config" / "models.tsv").read_text().splitlines()
    models.write_text(
        "\n".join([*rows, "opus\tHelsinki-NLP/opus-mt-en-cs\tmain\tfloat32\tauto\t\tfalse"]) + "\n"
    )
    config = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    config["models"] = str(models)
    config["translate"].update({"backend": "seq2seq", "model": "", "models": {"cs": "opus"}})
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    env = dict(__import__("os").environ, PYTHONPATH=str(ROOT / "workflow" / "scripts"))
    cmd = [sys.executable, "-m", "snakemake", "-n", "--forceall", "--configfile", str(path)]
    cmd += ["--replace-workflow-config", "all"]
    run = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    out = run.stdout + run.stderr
    assert run.returncode == 0, out[-3000:]
    assert "resources/models/opus" in out and "rule prepare_model" in out
    translate = out[out.index("rule translate_prompts:") :].split("\n\n", 1)[0]
    assert "resources/models/opus" in translate
    assert "results/scores/multilingual/smollm2.parquet" in out  # the causal LMs still are scored
    assert "/opus.parquet" not in out and "shards/opus/" not in out
