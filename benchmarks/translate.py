"""Benchmark of the translate stage: MT batching and caching, object alignment.

1. Translation of ``--sentences`` filled sentences by a tiny randomly initialised Marian model on
   CPU (the workflow's code path; real models are ~100x heavier per token, so the ratios are what
   carries over): baseline = one sentence per ``generate()``; measured = length-sorted batches of
   32, and a second call answered from the Parquet cache.
2. Object alignment (``align.align_sentence``) vs the plain rapidfuzz baseline
   ``fuzz.partial_ratio_alignment`` of the label against the whole sentence, same sentences.
3. With ``--fluent-mlama DIR`` (the Fluent-mLAMA ``fixed_data`` TSVs, research-only licence, read in
   place, never copied): agreement of the found form with the paper's ``gt_infl_object`` and of the
   prompt with ``gt_prompt``, per language, for the aligner and for the baseline.

Usage: .venv/bin/python benchmarks/translate.py [--sentences 256] [--fluent-mlama /tmp/fm/fixed_data]
"""

from __future__ import annotations

import argparse
import csv
import glob
import tempfile
import time
from collections import Counter
from pathlib import Path

import torch
from factprobe.settings import Translate
from factprobe.translate.align import align_sentence
from factprobe.translate.mt import Request, load_translator
from rapidfuzz import fuzz

SUBJECTS = ["Václav Havel", "Franz Kafka", "Lev Tolstoy", "Marie Curie", "Antonín Dvořák", "Karel Čapek"]
CITIES = ["Praha", "Brno", "Wien", "Paris", "Berlin", "Moskva", "Ostrava", "Plzeň"]


def tiny_marian(folder: Path) -> None:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import MarianConfig, MarianMTModel, PreTrainedTokenizerFast

    corpus = [f"{s} was born in {c}." for s in SUBJECTS for c in CITIES]
    bpe = Tokenizer(models.BPE(unk_token="<unk>"))
    bpe.pre_tokenizer = pre_tokenizers.Metaspace()
    bpe.decoder = decoders.Metaspace()
    bpe.train_from_iterator(
        corpus, trainers.BpeTrainer(vocab_size=500, special_tokens=["<pad>", "</s>", "<unk>"])
    )
    bpe.post_processor = processors.TemplateProcessing(single="$A </s>", special_tokens=[("</s>", 1)])
    tok = PreTrainedTokenizerFast(
        tokenizer_object=bpe, pad_token="<pad>", eos_token="</s>", unk_token="<unk>"
    )
    tok.save_pretrained(folder)
    cfg = MarianConfig(
        vocab_size=len(tok),
        d_model=64,
        encoder_layers=2,
        decoder_layers=2,
        encoder_attention_heads=4,
        decoder_attention_heads=4,
        encoder_ffn_dim=128,
        decoder_ffn_dim=128,
        max_position_embeddings=256,
        pad_token_id=0,
        eos_token_id=1,
        decoder_start_token_id=0,
        forced_eos_token_id=1,
    )
    torch.manual_seed(0)
    MarianMTModel(cfg).save_pretrained(folder)


def timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def bench_mt(n: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        tiny_marian(Path(tmp) / "model")
        reqs = [
            Request(
                f"{SUBJECTS[i % 6]} was born in {CITIES[i % 8]} in the year {1800 + i}.",
                "en",
                "cs",
                prefix=SUBJECTS[i % 6],
            )
            for i in range(n)
        ]
        one = load_translator(
            str(Path(tmp) / "model"), "cpu", settings=Translate(num_beams=1, max_new_tokens=16, batch_size=1)
        )
        base, t_base = timed(lambda: one.translate(reqs))
        batched = load_translator(
            str(Path(tmp) / "model"),
            "cpu",
            settings=Translate(num_beams=1, max_new_tokens=16, batch_size=32),
            cache_dir=Path(tmp) / "c",
        )
        out, t_batch = timed(lambda: batched.translate(reqs))
        again = load_translator(
            str(Path(tmp) / "model"),
            "cpu",
            settings=Translate(num_beams=1, max_new_tokens=16, batch_size=32),
            cache_dir=Path(tmp) / "c",
        )
        cached, t_cache = timed(lambda: again.translate(reqs))
        same = sum(a == b for a, b in zip(base, out, strict=True))
        print(f"MT, {n} sentences, tiny Marian, CPU, greedy, 16 new tokens")
        print(f"  baseline batch=1        {t_base:8.3f} s  {n / t_base:8.1f} sent/s  ratio 1.00")
        print(
            f"  batch=32 length-sorted  {t_batch:8.3f} s  {n / t_batch:8.1f} sent/s  ratio {t_base / t_batch:.2f}x"
            f"  (identical outputs: {same}/{n})"
        )
        print(
            f"  cached second call      {t_cache:8.3f} s  ratio {t_base / t_cache:.0f}x  (equal: {cached == out})"
        )


def naive(sentence: str, label: str) -> tuple[str, str] | None:
    """Baseline: rapidfuzz partial_ratio_alignment of the label against the sentence, threshold 80."""
    al = fuzz.partial_ratio_alignment(label, sentence, score_cutoff=80)
    if al is None:
        return None
    return sentence[: al.dest_start].rstrip(), sentence[al.dest_start : al.dest_end]


def read_reference(folder: str) -> list[dict]:
    rows = []
    for path in sorted(glob.glob(f"{folder}/*.tsv")):
        lang = Path(path).name[:2]
        with open(path, newline="") as fh:
            for row in csv.DictReader(fh, delimiter="\t"):
                gold = (row.get("gt_infl_object") or "").strip()
                if row.get("gt_translation") and gold and gold != "ERROR":
                    rows.append(dict(row, lang=lang, gold=gold))
    return rows


def bench_align(rows: list[dict]) -> None:
    sents = [(r["gt_translation"], r["obj_label"], r["en_obj_label"], r["sub_label"]) for r in rows]
    ours, t_ours = timed(
        lambda: [align_sentence(s, [(o, "label"), (e, "source")], [(sub, "label")]) for s, o, e, sub in sents]
    )
    base, t_base = timed(lambda: [naive(s, o) or naive(s, e) for s, o, e, _ in sents])
    print(f"Alignment, {len(sents)} sentences")
    print(
        f"  baseline partial_ratio_alignment  {t_base:7.3f} s  {len(sents) / t_base:9.0f} sent/s  ratio 1.00"
    )
    print(
        f"  align_sentence (n-grams + stems)  {t_ours:7.3f} s  {len(sents) / t_ours:9.0f} sent/s  "
        f"ratio {t_base / t_ours:.2f}x (time ratio < 1 = slower)"
    )
    if "gt_prompt" not in rows[0]:
        return
    acc: Counter = Counter()
    for r, a, b in zip(rows, ours, base, strict=True):
        lang = r["lang"]
        acc[lang, "n"] += 1
        acc[lang, "ours_form"] += a.kept and a.form.strip('«»"') == r["gold"]
        acc[lang, "ours_prompt"] += a.kept and a.prompt == r["gt_prompt"].strip()
        acc[lang, "base_form"] += b is not None and b[1] == r["gold"]
        acc[lang, "base_prompt"] += b is not None and b[0] == r["gt_prompt"].strip()
    print("  agreement with Fluent-mLAMA gt_infl_object / gt_prompt (ours vs baseline)")
    for lang in sorted({r["lang"] for r in rows}):
        n = acc[lang, "n"]
        print(
            f"    {lang}: n={n:5d}  form {acc[lang, 'ours_form'] / n:.3f} vs {acc[lang, 'base_form'] / n:.3f}"
            f"  prompt {acc[lang, 'ours_prompt'] / n:.3f} vs {acc[lang, 'base_prompt'] / n:.3f}"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sentences", type=int, default=256)
    ap.add_argument("--fluent-mlama", help="folder of Fluent-mLAMA fixed_data TSVs (read in place)")
    args = ap.parse_args()
    torch.set_num_threads(1)
    bench_mt(args.sentences)
    if args.fluent_mlama:
        bench_align(read_reference(args.fluent_mlama))
    else:
        rows = [
            dict(gt_translation=f"{s} se narodil v {c}e.", obj_label=c, en_obj_label=c, sub_label=s)
            for s in SUBJECTS
            for c in CITIES
        ] * 50
        bench_align(rows)


if __name__ == "__main__":
    main()
