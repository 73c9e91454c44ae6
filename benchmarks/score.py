"""Scoring throughput: packed engine vs a naive per-pair loop vs lm-eval's HFLM.loglikelihood.

CPU, a randomly initialised Pythia-architecture (GPT-NeoX, ~70M parameters) model built locally,
a byte-level BPE tokenizer trained here, 1 prompt x 51 candidates x 1-2 forms (+ EOS), zero-shot
and 4-shot prompts. All three run in the same process on the same requests; the script prints
requests/s, the ratios and the largest score difference (nats).

    .venv/bin/python benchmarks/score.py [--threads 2] [--repeats 3]

Targets: >= 3x over lm-eval zero-shot, >= 10x with 4-shot prompts; identical scores; the
batch-invariant engine at >= 0.85x the speed of the shared-mask path (``invariant=False``).
A last section scores 800 whole sentences behind one shared BOS (PROBELM's sentence mode) with the
packed-row cap (``factprobe.lm.packed.PACKED_TOKENS``) against rows as long as the token budget,
and prints the ratio: masked attention costs the square of a packed row.
On busy shared cores prefer ``--threads 1``: multi-threaded small forwards stall on descheduled
threads, which hits the engine's one short packed row harder than lm-eval's big padded batches.

A closing section (``--only peak`` runs it alone) asks how close to the machine the engine runs:
the model FLOP/s it achieves on the same zero-shot and 4-shot requests, for SmolLM2-135M (the
demo's model, ``--smollm2 DIR`` or prepared as benchmarks/peer_lm_eval.py does) and a randomly
initialised Pythia-160M-shaped GPT-NeoX, as a share of the matmul peak measured in the same run (a
2048 x 2048 fp32 ``torch.mm`` on the same threads, best of 5). Model FLOPs (:func:`model_flops`)
count the positions the engine's packed rows hold (padding excluded):
``2 N_layers`` per position (N_layers: every weight matrix of the transformer blocks, i.e. the
non-embedding parameters less norms and biases; Kaplan et al. 2020 Table 1 C_forward = 2N) +
``4 n_layer d_attn k`` per query that sees k keys (QK^T and AV; PaLM App. B counts both) +
``2 d_model V`` per position whose logits are scored. ``--profile`` adds torch.profiler's
self-time table of one engine call: which kernels, and the share outside matrix products.
"""

from __future__ import annotations

import argparse
import logging
import os
import random
import sys
import time
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "workflow" / "scripts"), str(ROOT / "tests")]

import factprobe.lm.packed as packed  # noqa: E402
from factprobe.lm.encoding import tokenize_pairs  # noqa: E402
from factprobe.lm.packed import score_requests  # noqa: E402
from factprobe.scoring.control import train_bpe_tokenizer  # noqa: E402
from reference import naive_requests  # noqa: E402  (the naive loop lives with the tests)

SYLLABLES = "ka lo mi ra ten vo shu pel dar quin bor ast fel gri mon tas ul ven wy zor".split()


def name(rng: random.Random) -> str:
    words = rng.randint(1, 3)
    return " ".join(
        "".join(rng.choice(SYLLABLES) for _ in range(rng.randint(1, 3))).capitalize() for _ in range(words)
    )


def workload(seed: int = 0):
    """51 candidates (object + 50 distractors), each with 1-2 forms; zero-shot and 4-shot prompts."""
    rng = random.Random(seed)
    candidates = [[name(rng) for _ in range(rng.randint(1, 2))] for _ in range(51)]
    subject = name(rng)
    zero = f"{subject} lies within the borders of"  # a demo template (knowledge suite, P17)
    demos = "".join(f"{name(rng)} lies within the borders of {name(rng)}.\n" for _ in range(4))
    four = "Complete each sentence with the correct fact.\n" + demos + zero
    forms = [f for forms in candidates for f in forms]
    corpus = [f"{name(rng)} lies within the borders of {name(rng)}." for _ in range(2000)] + forms
    return zero, four, forms, corpus


#: (hidden size, layers, heads, MLP size) of the Pythia suite's models (Biderman et al. 2023, Table 1)
PYTHIA_SHAPES = {"70m": (512, 6, 8, 2048), "160m": (768, 12, 12, 3072)}


def pythia_70m(vocab_size: int = 50304, shape: str = "70m"):
    """A randomly initialised GPT-NeoX with the shape of Pythia-``shape`` (fp32, sdpa)."""
    from transformers import GPTNeoXConfig, GPTNeoXForCausalLM

    hidden, layers, heads, mlp = PYTHIA_SHAPES[shape]
    torch.manual_seed(0)
    cfg = GPTNeoXConfig(
        vocab_size=vocab_size,
        hidden_size=hidden,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        intermediate_size=mlp,
        rotary_pct=0.25,
        max_position_embeddings=2048,
        use_parallel_residual=True,
        bos_token_id=0,
        eos_token_id=0,
    )
    model = GPTNeoXForCausalLM._from_config(cfg, attn_implementation="sdpa")
    return model.eval()


def timed(fn, repeats: int):
    """Best of ``repeats`` runs: the least disturbed by other processes on shared cores.

    Returns (wall seconds, CPU seconds of this process, result); CPU time is the fairer measure
    when other processes compete for the cores.
    """
    walls, cpus, out = [], [], None
    for _ in range(repeats):
        start, cpu = time.perf_counter(), time.process_time()
        out = fn()
        walls.append(time.perf_counter() - start)
        cpus.append(time.process_time() - cpu)
    return min(walls), min(cpus), out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--lm-eval-batch-size", type=int, default=64)
    parser.add_argument("--only", choices=["peak"], help="run the share-of-peak section only")
    parser.add_argument("--smollm2", type=Path, help="a prepared SmolLM2 folder (default: the demo's)")
    parser.add_argument("--profile", action="store_true", help="torch.profiler table of one engine call")
    args = parser.parse_args()
    logging.disable(logging.WARNING)
    torch.set_num_threads(args.threads)
    if args.only == "peak":
        share_of_peak(args)
        return

    zero, four, forms, corpus = workload()
    tokenizer = train_bpe_tokenizer(corpus, vocab_size=2000, add_bos=False)
    model = pythia_70m()
    n_params = sum(p.numel() for p in model.parameters())
    print(
        f"model: GPT-NeoX (Pythia-70M shape), {n_params / 1e6:.1f}M parameters, fp32, {args.threads} threads"
    )

    from lm_eval.api.instance import Instance
    from lm_eval.models.huggingface import HFLM

    hflm = HFLM(pretrained=model, tokenizer=tokenizer, batch_size=args.lm_eval_batch_size, device="cpu")
    eos_text = tokenizer.eos_token
    for label, prompt in (("zero-shot", zero), ("4-shot", four)):
        conts = [" " + f for f in forms]
        requests, plans = tokenize_pairs(tokenizer, [prompt] * len(conts), conts, "eos")
        assert all(p.minus is None for p in plans)
        p_len = len(requests[0][0])
        instances = [
            Instance(request_type="loglikelihood", doc={}, arguments=(prompt, c + eos_text), idx=i)
            for i, c in enumerate(conts)
        ]
        # Interleaved repeats, best of each: the cores are shared, so load changes over time
        # and must hit every method alike. The naive loop is slow and runs once.
        t_naive, c_naive, naive = timed(lambda r=requests: naive_requests(model, r), 1)
        t_engine = t_lm = c_engine = c_lm = t_shared = c_shared = float("inf")
        for _ in range(args.repeats):
            t, c, (engine, _) = timed(lambda r=requests: score_requests(model, r, token_budget=4096), 1)
            t_engine, c_engine = min(t_engine, t), min(c_engine, c)
            t, c, (shared, _) = timed(
                lambda r=requests: score_requests(model, r, token_budget=4096, invariant=False), 1
            )
            t_shared, c_shared = min(t_shared, t), min(c_shared, c)
            t, c, lm = timed(lambda x=instances: hflm.loglikelihood(x, disable_tqdm=True), 1)
            t_lm, c_lm = min(t_lm, t), min(c_lm, c)
        lm = np.array([v for v, _ in lm])
        engine = engine[[p.plus for p in plans]]
        naive = naive[[p.plus for p in plans]]
        n = len(conts)
        print(
            f"\n{label}: 1 prompt ({p_len} tokens) x {n} forms of 51 candidates "
            f"({sum(len(r[1]) for r in requests)} continuation tokens incl. EOS)"
        )
        positions_engine = sum(row.length for row in packed._build_rows(requests, 4096))
        positions_naive = sum(len(p) + len(c) - 1 for p, c in requests)
        print(f"  token positions computed: engine {positions_engine}, naive/lm-eval {positions_naive}")
        print(
            f"  engine  {n / t_engine:8.1f} req/s  ({t_engine * 1e3:7.1f} ms wall, {c_engine * 1e3:7.1f} ms CPU)"
        )
        print(
            f"  shared-mask path {n / t_shared:8.1f} req/s  ({t_shared * 1e3:7.1f} ms wall, "
            f"{c_shared * 1e3:7.1f} ms CPU): batch-invariant engine at {t_shared / t_engine:4.2f}x its speed "
            f"(wall), {c_shared / c_engine:4.2f}x (CPU); max |difference| "
            f"{np.max(np.abs(engine - shared[[p.plus for p in plans]])):.2e} nats"
        )
        print(
            f"  naive   {n / t_naive:8.1f} req/s  ({t_naive * 1e3:7.1f} ms wall, {c_naive * 1e3:7.1f} ms CPU)"
            f"  engine speed-up {t_naive / t_engine:5.1f}x wall, {c_naive / c_engine:5.1f}x CPU"
        )
        print(
            f"  lm-eval {n / t_lm:8.1f} req/s  ({t_lm * 1e3:7.1f} ms wall, {c_lm * 1e3:7.1f} ms CPU)"
            f"  engine speed-up {t_lm / t_engine:5.1f}x wall, {c_lm / c_engine:5.1f}x CPU"
        )
        print(
            f"  max |engine - naive| = {np.max(np.abs(engine - naive)):.2e} nats, "
            f"max |engine - lm-eval| = {np.max(np.abs(engine - lm)):.2e} nats"
        )
    sentence_rows(model, tokenizer, corpus, args.repeats)
    share_of_peak(args)


def sentence_rows(model, tokenizer, corpus: list[str], repeats: int, n: int = 800) -> None:
    """Whole sentences behind one BOS: capped packed rows vs rows up to the 4096-token budget."""
    requests = [((0,), tuple(tokenizer(s, add_special_tokens=False).input_ids) + (0,)) for s in corpus[:n]]
    cap = packed.PACKED_TOKENS
    times = {}
    for label, tokens in (("capped", cap), ("uncapped", 4096)):
        packed.PACKED_TOKENS = tokens
        try:
            times[label] = timed(
                lambda: score_requests(model, requests, token_budget=4096)[0], max(1, repeats // 2)
            )
        finally:
            packed.PACKED_TOKENS = cap
    (t_cap, c_cap, a), (t_full, c_full, b) = times["capped"], times["uncapped"]
    print(
        f"\nsentences: {n} behind one BOS ({sum(len(c) for _, c in requests)} tokens), rows of at most "
        f"{cap} vs 4096 continuation tokens"
    )
    print(
        f"  capped {t_cap * 1e3:7.1f} ms wall ({c_cap * 1e3:7.1f} ms CPU), uncapped {t_full * 1e3:7.1f} ms wall "
        f"({c_full * 1e3:7.1f} ms CPU): cap speed-up {t_full / t_cap:4.1f}x wall, {c_full / c_cap:4.1f}x CPU; "
        f"max |difference| {np.max(np.abs(a - b)):.2e} nats"
    )


def matmul_peak(n: int = 2048, repeats: int = 5) -> float:
    """FLOP/s of the best of ``repeats`` fp32 ``torch.mm`` of two n x n matrices (2 n^3 FLOPs each)
    on this process's threads: the machine's matrix-product peak, measured beside the engine."""
    a, b = torch.randn(n, n), torch.randn(n, n)
    torch.mm(a, b)  # warm-up: thread pool and kernel selection
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        torch.mm(a, b)
        best = min(best, time.perf_counter() - start)
    return 2 * n**3 / best


def model_flops(model, rows: list) -> dict[str, float]:
    """Forward FLOPs of the positions the engine's packed rows hold (padding excluded).

    Per position ``2 N_layers`` (every weight matrix of the transformer blocks; embeddings and
    the output projection are counted apart, position embeddings not at all); per query ``4 n_layer d_attn k`` for its k visible
    keys (a prefix position i sees i + 1 keys, a continuation position j after a prefix of p
    tokens sees p + j + 1); per scored position ``2 d_model V`` (the output projection). The
    engine scores a row's last prefix position and each continuation body position."""
    cfg = model.config
    embeddings = [m.weight for m in model.modules() if isinstance(m, torch.nn.Embedding)]
    skip = {id(w) for w in embeddings} | {id(model.get_output_embeddings().weight)}
    n_layers = sum(p.numel() for p in model.parameters() if p.ndim == 2 and id(p) not in skip)
    heads = cfg.num_attention_heads
    head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // heads
    positions = keys = scored = 0
    for row in rows:
        plen = len(row.prefix)
        positions += row.length
        keys += plen * (plen + 1) // 2
        scored += 1
        for _, cont in row.items:
            body = len(cont) - 1
            keys += body * plen + body * (body + 1) // 2
            scored += body
    flops = {
        "layers": 2.0 * n_layers * positions,
        "attention": 4.0 * cfg.num_hidden_layers * heads * head_dim * keys,
        "output": 2.0 * cfg.hidden_size * cfg.vocab_size * scored,
    }
    flops["total"] = sum(flops.values())
    flops["positions"], flops["n_layers"] = positions, n_layers
    return flops


class ForwardCounter:
    """Token positions the model is actually run on (padding included) and logit rows computed."""

    def __init__(self, model):
        self.positions = self.logit_rows = 0
        self.handle = model.register_forward_pre_hook(self, with_kwargs=True)

    def __call__(self, module, args, kwargs):
        ids = kwargs["input_ids"]
        self.positions += ids.numel()
        keep = kwargs.get("logits_to_keep")
        self.logit_rows += ids.shape[0] * (keep.numel() if torch.is_tensor(keep) else ids.shape[1])


def smollm2(folder: Path | None):
    """SmolLM2-135M-Instruct (fp32) and its tokenizer, from ``folder`` or the demo's prepared one."""
    from factprobe.lm.load import ModelSpec, load_hf

    if folder is None:
        sys.path.insert(0, str(ROOT / "benchmarks"))
        from peer_lm_eval import model_folder

        folder = model_folder()
    loaded = load_hf(ModelSpec("smollm2", str(folder), dtype="float32", device="cpu"))
    return loaded.model, loaded.tokenizer


def share_of_peak(args) -> None:
    """Model FLOP/s of the engine on SmolLM2 and a Pythia-160M shape, as a share of the mm peak."""
    zero, four, forms, corpus = workload()
    bpe = train_bpe_tokenizer(corpus, vocab_size=2000, add_bos=False)
    models = {
        "SmolLM2-135M": lambda: smollm2(args.smollm2),
        "Pythia-160M shape (random)": lambda: (pythia_70m(shape="160m"), bpe),
    }
    peaks = [matmul_peak()]
    print(f"\nshare of peak: {args.threads} threads, load average {os.getloadavg()[0]:.1f} at the start")
    print(f"  fp32 torch.mm 2048^3 peak: {peaks[0] / 1e9:6.1f} GFLOP/s")
    for label, make in models.items():
        model, tokenizer = make()
        print(f"  {label}: {sum(p.numel() for p in model.parameters()) / 1e6:.1f}M parameters")
        for setting, prompt in (("zero-shot", zero), ("4-shot", four)):
            requests, _ = tokenize_pairs(tokenizer, [prompt] * len(forms), [" " + f for f in forms], "eos")
            counter = ForwardCounter(model)
            score_requests(model, requests, token_budget=4096)  # warm-up, and what one call computes
            counter.handle.remove()
            t, _, _ = timed(lambda r=requests, m=model: score_requests(m, r, token_budget=4096), args.repeats)
            peaks.append(matmul_peak())
            flops = model_flops(model, packed._build_rows(requests, 4096))
            rate = flops["total"] / t
            print(
                f"    {setting}: {len(requests)} requests, {flops['positions']} packed positions "
                f"({counter.positions} run, padding included; {counter.logit_rows} logit rows for "
                f"{sum(len(c) for _, c in requests)} scored tokens), {t * 1e3:.1f} ms"
            )
            print(
                f"      model FLOPs {flops['total'] / 1e9:.2f} G (layers {flops['layers'] / flops['total']:.0%}, "
                f"attention {flops['attention'] / flops['total']:.0%}, output {flops['output'] / flops['total']:.0%}; "
                f"N_layers {flops['n_layers'] / 1e6:.1f}M): {rate / 1e9:.1f} GFLOP/s = "
                f"{rate / peaks[-1]:.0%} of the mm peak beside it ({peaks[-1] / 1e9:.1f} GFLOP/s)"
            )
        if args.profile:
            profile_engine(model, requests)
    print(f"  mm peak over the run: {min(peaks) / 1e9:.1f} - {max(peaks) / 1e9:.1f} GFLOP/s")


MATRIX_OPS = ("aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::_mkldnn_matmul")


def profile_engine(model, requests, rows: int = 14) -> None:
    """torch.profiler self CPU time of one engine call by op, and the share in matrix products."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        score_requests(model, requests, token_budget=4096)
    events = sorted(prof.key_averages(), key=lambda e: -e.self_cpu_time_total)
    total = sum(e.self_cpu_time_total for e in events)
    matrix = sum(e.self_cpu_time_total for e in events if e.key in MATRIX_OPS)
    print(f"      profile (4-shot): {total / 1e3:.1f} ms self CPU time, matrix products {matrix / total:.0%}")
    for e in events[:rows]:
        print(
            f"        {e.key:<42} {e.self_cpu_time_total / 1e3:8.1f} ms {e.self_cpu_time_total / total:5.1%}  x{e.count}"
        )


if __name__ == "__main__":
    main()
