"""Translate stage: tiny Marian model end to end (load, batch, cache, forced subject), and the
sentence-level verbalization pipeline (fluent-mlama-disfluency §3.2) with hand-checked outputs."""

import math

import pandas as pd
import pyarrow as pa
import pytest
import torch
from factprobe import contracts
from factprobe.contracts import SCHEMAS
from factprobe.settings import Translate
from factprobe.translate.mt import (
    ForcedPrefix,
    Request,
    TranslationCache,
    cache_key,
    load_translator,
)
from factprobe.translate.sentence import (
    english_sentences,
    fill,
    object_final_template,
    sentence_verbalization,
    target_languages,
)

CORPUS = [
    "Václav Havel was born in Prague.",
    "Václav Havel se narodil v Praze.",
    "Франц Кафка родился в Праге.",
    "Franz Kafka se narodil v Praze.",
    "Вацлав Гавел родился в Праге.",
    "Лев Толстой родился в Ясной Поляне.",
    "The capital of Czech Republic is Prague.",
    "Hlavním městem Česka je Praha.",
    "Столица России — Москва.",
    "Berlin ist die Hauptstadt Deutschlands.",
    "Er ist ein Bürger Deutschlands.",
]


@pytest.fixture(scope="module")
def tiny_marian(tmp_path_factory):
    """A randomly initialised MarianMTModel + a BPE tokenizer trained here, saved like a hub model."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import MarianConfig, MarianMTModel, PreTrainedTokenizerFast

    torch.set_num_threads(1)
    folder = tmp_path_factory.mktemp("tiny-marian")
    bpe = Tokenizer(models.BPE(unk_token="<unk>"))
    bpe.pre_tokenizer = pre_tokenizers.Metaspace()
    bpe.decoder = decoders.Metaspace()
    bpe.train_from_iterator(
        CORPUS * 3, trainers.BpeTrainer(vocab_size=400, special_tokens=["<pad>", "</s>", "<unk>"])
    )
    bpe.post_processor = processors.TemplateProcessing(single="$A </s>", special_tokens=[("</s>", 1)])
    tok = PreTrainedTokenizerFast(
        tokenizer_object=bpe, pad_token="<pad>", eos_token="</s>", unk_token="<unk>"
    )
    tok.save_pretrained(folder)
    config = MarianConfig(
        vocab_size=len(tok),
        d_model=16,
        encoder_layers=1,
        decoder_layers=1,
        encoder_attention_heads=2,
        decoder_attention_heads=2,
        encoder_ffn_dim=32,
        decoder_ffn_dim=32,
        max_position_embeddings=128,
        pad_token_id=0,
        eos_token_id=1,
        decoder_start_token_id=0,
        forced_eos_token_id=1,
    )
    torch.manual_seed(0)
    MarianMTModel(config).save_pretrained(folder)
    return folder


def _count_forwards(translator):
    calls = {"forward": 0, "generate": 0}
    translator.model.register_forward_hook(lambda *a: calls.__setitem__("forward", calls["forward"] + 1))
    original = translator.model.generate

    def generate(*args, **kwargs):
        calls["generate"] += 1
        return original(*args, **kwargs)

    translator.model.generate = generate
    return calls


def test_loader_batches_caches_and_forces_prefix(tiny_marian, tmp_path):
    settings = Translate(num_beams=2, max_new_tokens=6, batch_size=2)
    tr = load_translator(str(tiny_marian), device="cpu", settings=settings, cache_dir=tmp_path / "cache")
    assert tr.kind == "marian" and tr.device == "cpu"
    calls = _count_forwards(tr)
    reqs = [
        Request("Václav Havel was born in Praha.", "en", "cs", prefix="Václav Havel"),
        Request("The capital of Česko is Praha.", "en", "cs"),
        Request("Франц Кафка was born in Прага.", "en", "ru", prefix="Франц Кафка"),
        Request("Er ist ein Bürger Deutschland.", "en", "de"),
        Request("Václav Havel was born in Praha.", "en", "cs", prefix="Václav Havel"),  # duplicate
    ]
    out = tr.translate(reqs)
    assert len(out) == 5 and all(isinstance(t, str) for t in out)
    # Forced subject prefix: the output starts with the Wikidata label, whatever the random weights.
    assert out[0].startswith("Václav Havel") and out[2].startswith("Франц Кафка")
    assert out[0] == out[4]
    # 4 distinct requests: cs has 2 (one batch of 2), ru 1, de 1 -> 3 generate calls.
    assert calls["generate"] == 3 and calls["forward"] > 0
    assert len(list((tmp_path / "cache").glob("*.parquet"))) == 1

    # A fresh translator reads the Parquet cache: same outputs, no forward pass at all.
    tr2 = load_translator(str(tiny_marian), device="cpu", settings=settings, cache_dir=tmp_path / "cache")
    calls2 = _count_forwards(tr2)
    assert tr2.translate(reqs) == out
    assert calls2 == {"forward": 0, "generate": 0}
    # Different decoding settings are a different cache key.
    other = Translate(num_beams=1, max_new_tokens=6, batch_size=2)
    assert cache_key(tr.name, settings, reqs[0]) != cache_key(tr.name, other, reqs[0])


def test_batch_size_does_not_change_greedy_output(tiny_marian):
    reqs = [Request(s, "en", "cs") for s in CORPUS[:5]]
    one = load_translator(
        str(tiny_marian), "cpu", settings=Translate(num_beams=1, max_new_tokens=6, batch_size=1)
    ).translate(reqs)
    four = load_translator(
        str(tiny_marian), "cpu", settings=Translate(num_beams=1, max_new_tokens=6, batch_size=4)
    ).translate(reqs)
    assert one == four


def test_forced_prefix_processor_masks_per_item_and_beam():
    proc = ForcedPrefix([[5, 6], [7]], num_beams=2)
    scores = torch.zeros(4, 10)
    ids = torch.zeros(4, 1, dtype=torch.long)  # step 0 (only the decoder start token so far)
    out = proc(ids, scores.clone())
    assert [int(row.argmax()) for row in out] == [5, 5, 7, 7]
    assert torch.isinf(out[0, 6]) and out[0, 5] == 0
    out = proc(torch.zeros(4, 2, dtype=torch.long), torch.zeros(4, 10))  # step 1: item 1 is free
    assert int(out[0].argmax()) == 6 and not torch.isinf(out[2]).any()


def test_loader_error_names_the_model(tmp_path):
    with pytest.raises(RuntimeError, match="translate.model .*nonexistent"):
        load_translator(str(tmp_path / "nonexistent"), "cpu")


def test_cache_shards_are_merged(tmp_path):
    a = TranslationCache(tmp_path)
    a.save([dict(key="k1", model="m", src_lang="en", tgt_lang="cs", text="t", prefix="", translation="x")])
    b = TranslationCache(tmp_path)
    b.save([dict(key="k2", model="m", src_lang="en", tgt_lang="cs", text="u", prefix="", translation="y")])
    merged = TranslationCache(tmp_path)
    assert merged.get("k1") == "x" and merged.get("k2") == "y" and merged.get("k3") is None


# --- sentence-level pipeline ---------------------------------------------------------------

TEMPLATES = {
    "P19.en.s1": "[X] was born in [Y].",
    "P36.en.s1": "The capital of [X] is [Y].",
    "P19.en.s2": "[Y] is where [X] was born.",  # object first: never translated
}


def suite_tables():
    """A multilingual suite as the probe builder writes it (contract columns), hand-made."""
    facts = pd.DataFrame(
        {
            "fact_id": ["Q36591|P19|Q1085", "Q213|P36|Q1085", "Q905|P19|Q1085"],
            "subject": ["Q36591", "Q213", "Q905"],
            "property": ["P19", "P36", "P19"],
            "object": ["Q1085", "Q1085", "Q1085"],
        }
    )
    forms = pd.DataFrame(
        [
            ("Q36591", "en", "Václav Havel", "label"),
            ("Q36591", "cs", "Václav Havel", "label"),
            ("Q36591", "ru", "Вацлав Гавел", "label"),
            ("Q213", "en", "Czech Republic", "label"),
            ("Q213", "cs", "Česko", "label"),
            ("Q213", "ru", "Чехия", "label"),
            ("Q905", "en", "Franz Kafka", "label"),
            ("Q905", "cs", "Franz Kafka", "label"),
            ("Q905", "ru", "Франц Кафка", "label"),
            ("Q1085", "en", "Prague", "label"),
            ("Q1085", "cs", "Praha", "label"),
            ("Q1085", "cs", "Hlavní město Praha", "alias"),
            ("Q1085", "ru", "Прага", "label"),
        ],
        columns=["entity", "lang", "form", "source"],
    )
    rows = []
    for fact, subj_en, tid in [
        ("Q36591|P19|Q1085", "Václav Havel", "P19.en.s1"),
        ("Q213|P36|Q1085", "Czech Republic", "P36.en.s1"),
        ("Q905|P19|Q1085", "Franz Kafka", "P19.en.s1"),
    ]:
        text = TEMPLATES[tid].split("[Y]")[0].replace("[X]", subj_en).rstrip()
        rows.append(
            (f"{fact}|{tid}|en|0|none", fact, "en", tid, "statement", subj_en, text, "", "template", "none")
        )
    rows.append(
        (
            "Q213|P36|Q1085|P36.cs.s1|cs|0|none",
            "Q213|P36|Q1085",
            "cs",
            "P36.cs.s1",
            "statement",
            "Česko",
            "Hlavní město Česko:",
            "",
            "template",
            "none",
        )
    )
    # An alias-subject prompt (index 1): the sentence level translates label prompts only.
    rows.append(
        (
            "Q36591|P19|Q1085|P19.en.s1|en|1|none",
            "Q36591|P19|Q1085",
            "en",
            "P19.en.s1",
            "statement",
            "Havel",
            "Havel was born in",
            "",
            "template",
            "none",
        )
    )
    prompts = pd.DataFrame(
        rows,
        columns=[
            "prompt_id",
            "fact_id",
            "lang",
            "template_id",
            "style",
            "subject_form",
            "text",
            "context",
            "verbalization",
            "shots",
        ],
    )
    prompts["subject_form_index"] = [0, 0, 0, 0, 1]
    prompts["property"] = prompts["fact_id"].str.split("|").str[1]
    prompts["demos"] = [[] for _ in range(len(prompts))]
    return facts, prompts, forms


# What the "model" answers: keyed by (target language, source text it receives).
ANSWERS = {
    ("cs", "Václav Havel was born in Praha."): "Václav Havel se narodil v Praze.",
    ("cs", "The capital of Česko is Praha."): "Hlavním městem Česka je Praha.",
    ("cs", "Franz Kafka was born in Praha."): "Franz Kafka se narodil v Praze v roce 1883.",
    ("ru", "Václav Havel was born in Прага."): "Вацлав Гавел родился в Праге.",
    ("ru", "The capital of Чехия is Прага."): "Чехия — это страна.",
    ("ru", "Franz Kafka was born in Прага."): "Франц Кафка родился в Праге.",
}


def dict_translate(requests):
    out = []
    for r in requests:
        text = ANSWERS[(r.tgt_lang, r.text)]
        # A real model is forced to start with the prefix; the canned answers already do.
        assert text.startswith(r.prefix)
        out.append(text)
    return out


def test_english_sentences_fill_templates():
    facts, prompts, forms = suite_tables()
    s = english_sentences(prompts, facts, forms, TEMPLATES)
    assert list(s["source_text"]) == [
        "Václav Havel was born in Prague.",
        "The capital of Czech Republic is Prague.",
        "Franz Kafka was born in Prague.",
    ]
    assert fill("[X] is [Y].", "universe", "big") == "Universe is big."
    assert object_final_template("[X] was born in [Y].") and not object_final_template(TEMPLATES["P19.en.s2"])
    # A template not in the files is rebuilt as prompt + " [Y].".
    s2 = english_sentences(prompts, facts, forms, {})
    assert list(s2["source_text"]) == list(s["source_text"])


def test_sentence_pipeline_counts_and_forms():
    facts, prompts, forms = suite_tables()
    out, new_forms, stats = sentence_verbalization(
        prompts, facts, forms, TEMPLATES, ["cs", "ru"], dict_translate, model_name="dict"
    )
    got = {(r.lang, r.fact_id): (r.text, r.object_form, r.subject_form) for r in out.itertuples()}
    assert got == {
        ("cs", "Q36591|P19|Q1085"): ("Václav Havel se narodil v", "Praze", "Václav Havel"),
        ("cs", "Q213|P36|Q1085"): ("Hlavním městem Česka je", "Praha", "Česko"),
        ("ru", "Q36591|P19|Q1085"): ("Вацлав Гавел родился в", "Праге", "Вацлав Гавел"),
        ("ru", "Q905|P19|Q1085"): ("Франц Кафка родился в", "Праге", "Франц Кафка"),
    }
    assert set(out["verbalization"]) == {"sentence"} and set(out["context"]) == {""}
    assert out["prompt_id"].is_unique and not set(out["prompt_id"]) & set(prompts["prompt_id"])
    assert list(out.columns[:12]) == list(prompts.columns[:12])
    # "Praha" is the label itself, so only the inflected forms are new; Праге found twice.
    assert sorted(
        map(tuple, new_forms[["entity", "lang", "form", "source", "n_sentences"]].values.tolist())
    ) == [
        ("Q1085", "cs", "Praze", "inflected", 1),
        ("Q1085", "ru", "Праге", "inflected", 2),
    ]
    cs = stats.set_index("lang").loc["cs"]
    ru = stats.set_index("lang").loc["ru"]
    assert (cs.n_sentences, cs.n_kept, cs.dropped_object_not_final, cs.dropped_object_not_found) == (
        3,
        2,
        1,
        0,
    )
    assert (ru.n_sentences, ru.n_kept, ru.dropped_object_not_final, ru.dropped_object_not_found) == (
        3,
        2,
        0,
        1,
    )
    assert cs.dropped_share == pytest.approx(1 / 3) and cs.status == "translated"
    assert cs.n_template_prompts == 1 and ru.n_template_prompts == 0
    # Tables convert to the contract schemas.
    pa.Table.from_pandas(out, schema=SCHEMAS["translated_prompts"], preserve_index=False)
    pa.Table.from_pandas(new_forms, schema=SCHEMAS["translated_forms"], preserve_index=False)


def test_missing_object_label_is_counted():
    facts, prompts, forms = suite_tables()
    forms = forms[~((forms["entity"] == "Q1085") & (forms["lang"] == "ru"))]
    _, _, stats = sentence_verbalization(prompts, facts, forms, TEMPLATES, ["ru"], dict_translate)
    row = stats.iloc[0]
    assert (row.n_sentences, row.n_kept, row.dropped_no_object_label, row.dropped_share) == (3, 0, 3, 1.0)


def test_no_model_passes_template_verbalization_only():
    facts, prompts, forms = suite_tables()
    out, new_forms, stats = sentence_verbalization(prompts, facts, forms, TEMPLATES, ["cs", "ru"], None)
    assert out.empty and new_forms.empty
    assert list(stats["status"]) == ["no_model", "no_model"]
    assert list(stats["n_sentences"]) == [3, 3] and math.isnan(stats["dropped_share"].iloc[0])
    table = pa.Table.from_pandas(out, schema=SCHEMAS["translated_prompts"], preserve_index=False)
    assert table.num_rows == 0 and table.schema.field("text").type == pa.string()
    assert target_languages(prompts, None) == ["cs"]
    assert target_languages(prompts, ["en", "de"]) == ["de"]


def test_tiny_marian_through_the_pipeline(tiny_marian, tmp_path):
    facts, prompts, forms = suite_tables()
    tr = load_translator(
        str(tiny_marian),
        "cpu",
        settings=Translate(num_beams=1, max_new_tokens=8, batch_size=8),
        cache_dir=tmp_path,
    )
    out, new_forms, stats = sentence_verbalization(
        prompts, facts, forms, TEMPLATES, ["cs", "ru"], tr.translate, model_name=str(tiny_marian)
    )
    # Random weights: whatever is kept or dropped, every sentence is accounted for once.
    for row in stats.itertuples():
        dropped = sum(
            getattr(row, c) for c in stats.columns if c.startswith("dropped_") and c != "dropped_share"
        )
        assert row.n_kept + dropped == row.n_sentences == 3
        assert row.n_kept == int((out["lang"] == row.lang).sum())
    # The forced subject label opens every P19 translation.
    cached = pd.concat(pd.read_parquet(p) for p in tmp_path.glob("*.parquet"))
    p19 = cached[cached["prefix"] != ""]
    assert len(p19) == 4 and all(
        t.startswith(p) for t, p in zip(p19["translation"], p19["prefix"], strict=True)
    )
    # A prefix the vocabulary cannot spell is not forced (it would decode as nothing).
    assert tr.forced_ids("Ωμέγα") == [] and tr.forced_ids("Franz Kafka") != []


def _run_rule_script(tmp_path, model, models=None, prepared=None):
    """Run workflow/scripts/translate_prompts.py as Snakemake would, with a stand-in ``snakemake``;
    ``prepared`` maps models.tsv rows to their prepared folders (input ``mt_models``)."""
    import runpy
    from pathlib import Path
    from types import SimpleNamespace

    import yaml

    facts, prompts, forms = suite_tables()
    (tmp_path / "in").mkdir(parents=True, exist_ok=True)
    for name, frame in [("facts", facts), ("prompts", prompts), ("forms", forms)]:
        frame.to_parquet(tmp_path / "in" / f"{name}.parquet")
    records = [
        {"id": k, "relation": k.split(".")[0], "style": "statement", "text": v} for k, v in TEMPLATES.items()
    ]
    (tmp_path / "in" / "en.yaml").write_text(yaml.safe_dump({"language": "en", "templates": records}))
    out = tmp_path / "out"
    smk = SimpleNamespace(
        input=SimpleNamespace(
            facts=str(tmp_path / "in/facts.parquet"),
            prompts=str(tmp_path / "in/prompts.parquet"),
            forms=str(tmp_path / "in/forms.parquet"),
            templates=[str(tmp_path / "in/en.yaml")],
            mt_models=[str(f) for f in (prepared or {}).values()],
        ),
        output=SimpleNamespace(
            prompts=str(out / "translated_prompts.parquet"),
            forms=str(out / "translated_forms.parquet"),
            stats=str(out / "translate_stats.tsv"),
        ),
        params=SimpleNamespace(
            settings=dict(
                model=model,
                models=models or {},
                source_lang="en",
                languages=["cs", "ru"],
                styles=["statement"],
                subject="prefix",
                object="substitute",
                min_score=80,
                num_beams=1,
                max_new_tokens=6,
                batch_size=4,
                device="cpu",
                dtype="float32",
                lang_codes={},
                cache=str(tmp_path / "cache"),
            ),
            mt_rows=list(prepared or {}),
        ),
        log=[str(tmp_path / "translate.log")],
        wildcards=SimpleNamespace(suite="multilingual"),
        rule="translate_prompts",
    )
    script = Path(__file__).resolve().parents[2] / "workflow" / "scripts" / "translate_prompts.py"
    smk.scriptdir = str(script.parent)
    runpy.run_path(str(script), init_globals={"snakemake": smk})
    return (
        pd.read_parquet(out / "translated_prompts.parquet"),
        pd.read_parquet(out / "translated_forms.parquet"),
        contracts.read_text("translate_stats", out / "translate_stats.tsv"),
    )


def test_rule_script_without_model(tmp_path):
    prompts, forms, stats = _run_rule_script(tmp_path, "")
    assert prompts.empty and forms.empty and "text" in prompts.columns
    assert list(stats["status"]) == ["no_model", "no_model"] and list(stats["model"]) == ["none", "none"]
    assert list(stats["suite"]) == ["multilingual"] * 2 and list(stats["n_sentences"]) == [3, 3]


def test_rule_script_with_per_language_model(tiny_marian, tmp_path):
    # ru gets the tiny model, cs has none: one language translated, the other template-only.
    prompts, forms, stats = _run_rule_script(tmp_path, "", models={"ru": str(tiny_marian)})
    by_lang = stats.set_index("lang")
    assert by_lang.loc["cs", "status"] == "no_model" and by_lang.loc["ru", "status"] == "translated"
    assert by_lang.loc["ru", "model"] == str(tiny_marian)
    assert len(list((tmp_path / "cache").glob("*.parquet"))) == 1
    assert set(prompts["lang"]) <= {"ru"} and len(prompts) == by_lang.loc["ru", "n_kept"]


def test_rule_script_loads_a_models_tsv_row_from_its_prepared_folder(tiny_marian, tmp_path):
    """Translate.models names a models.tsv row; the job loads the row's prepared folder
    and translates exactly as with the folder itself, recording the row's name."""
    from factprobe.scoring.prepare import prepare_model

    manifest = prepare_model({"name": "opus", "source": str(tiny_marian)}, tmp_path / "models/opus")
    assert manifest["architecture"] == "MarianMTModel" and manifest["kind"] == "local"
    direct = _run_rule_script(tmp_path / "direct", "", models={"ru": str(tiny_marian)})
    named = _run_rule_script(
        tmp_path / "named", "", models={"ru": "opus"}, prepared={"opus": tmp_path / "models/opus"}
    )
    stats = named[2].set_index("lang")
    assert stats.loc["ru", "status"] == "translated" and stats.loc["ru", "model"] == "opus"
    pd.testing.assert_frame_equal(
        named[2].drop(columns="model"), direct[2].drop(columns="model"), check_like=True
    )
    # the same sentences were translated into the same outputs (the tiny model keeps none of them)
    texts = [
        pd.concat([pd.read_parquet(f) for f in (tmp_path / run / "cache").glob("*.parquet")])
        for run in ("direct", "named")
    ]
    assert len(texts[0]) > 0
    key = [c for c in texts[0].columns if c not in ("key", "model")]
    pd.testing.assert_frame_equal(
        texts[1][key].sort_values(key).reset_index(drop=True),
        texts[0][key].sort_values(key).reset_index(drop=True),
    )


def test_nllb_style_model_forces_target_language_then_subject(tmp_path):
    """NLLB path: language codes on the tokenizer, the target code forced as the first token."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import M2M100Config, M2M100ForConditionalGeneration, NllbTokenizerFast

    codes = ["eng_Latn", "ces_Latn", "rus_Cyrl"]
    bpe = Tokenizer(models.BPE(unk_token="<unk>"))
    bpe.pre_tokenizer = pre_tokenizers.Metaspace()
    bpe.decoder = decoders.Metaspace()
    specials = ["<s>", "<pad>", "</s>", "<unk>"] + codes
    bpe.train_from_iterator(CORPUS * 3, trainers.BpeTrainer(vocab_size=300, special_tokens=specials))
    tok = NllbTokenizerFast(
        tokenizer_object=bpe,
        bos_token="<s>",
        eos_token="</s>",
        pad_token="<pad>",
        unk_token="<unk>",
        src_lang="eng_Latn",
        tgt_lang="ces_Latn",
        additional_special_tokens=codes,
    )
    tok.save_pretrained(tmp_path)
    config = M2M100Config(
        vocab_size=len(tok),
        d_model=16,
        encoder_layers=1,
        decoder_layers=1,
        encoder_attention_heads=2,
        decoder_attention_heads=2,
        encoder_ffn_dim=32,
        decoder_ffn_dim=32,
        max_position_embeddings=64,
        pad_token_id=tok.pad_token_id,
        eos_token_id=tok.eos_token_id,
        bos_token_id=tok.bos_token_id,
        decoder_start_token_id=tok.eos_token_id,
    )
    torch.manual_seed(0)
    M2M100ForConditionalGeneration(config).save_pretrained(tmp_path)
    tr = load_translator(
        str(tmp_path), "cpu", settings=Translate(num_beams=2, max_new_tokens=4, batch_size=4)
    )
    assert tr.kind == "nllb" and tr.code("cs") == "ces_Latn"
    generated = []
    original = tr.model.generate
    tr.model.generate = lambda *a, **k: generated.append(original(*a, **k)) or generated[-1]
    out = tr.translate(
        [
            Request("Václav Havel was born in Praha.", "en", "cs", "Václav Havel"),
            Request("Václav Havel was born in Прага.", "en", "ru", "Вацлав Гавел"),
        ]
    )
    assert out[0].startswith("Václav Havel") and out[1].startswith("Вацлав Гавел")
    # Row layout: decoder start (</s>), target language code, then the forced subject tokens.
    first = {tok.convert_ids_to_tokens(int(g[0, 1])) for g in generated}
    assert first == {"ces_Latn", "rus_Cyrl"}
    with pytest.raises(ValueError, match="lang_codes"):
        tr.code("xx")
