"""Batch invariance of the scoring engine on the demo's requests, and its cost.

Reads the demo's suite tables (``results/probes/{suite}``, after ``make demo``), turns them into
scoring requests as rule ``score_shard`` does, and scores them with SmolLM2-135M-Instruct
(``resources/models/smollm2``) and the demo's control model (``results/models/control/{suite}``):

1. once, all requests together: the reference;
2. ``--trials`` times a random subset (50-100 %) in a random order, with a random token budget
   and a random packed-row cap (``factprobe.lm.packed.PACKED_TOKENS``): max |Δ| against the
   reference, for the batch-invariant engine (target 0) and for the shared-mask path
   (``invariant=False``, the engine before batch invariance) beside it;
3. the reference again with the other thread count (1 vs 2): max |Δ|;
4. top-k lists (the ``topk`` table) of random subsets of prompts: max |Δ| of the log-probabilities
   and whether the token lists are equal;
5. speed: requests/s of both paths on all requests, best of ``--repeats``, and their ratio.

Across instruction sets: ``--trials 0 --dump native.npz``, then the same under the AVX2 kernels
(``ATEN_CPU_CAPABILITY=avx2 ONEDNN_MAX_CPU_ISA=AVX2 MKL_ENABLE_INSTRUCTIONS=AVX2``) with
``--against native.npz``: the largest score difference between the two, which sets the demo
digest's float tolerance (tests/demo_digest.py).

    .venv/bin/python benchmarks/invariance.py [--suites knowledge] [--trials 20] [--threads 2]
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "workflow" / "scripts")]

import factprobe.lm.packed as packed  # noqa: E402
from factprobe.lm import load_model  # noqa: E402
from factprobe.lm.encoding import tokenize_pairs  # noqa: E402
from factprobe.lm.packed import next_token_logprobs, score_requests  # noqa: E402
from factprobe.scoring.suite import build_pairs  # noqa: E402
from factprobe.suite_tables import PARTS, load_suite_tables  # noqa: E402


def suite_pairs(suite: str):
    """(contexts, continuations) of a demo suite's pairs, deduplicated as score_pairs does."""
    folder = ROOT / "results" / "probes" / suite
    inputs = {}
    for parts in PARTS.values():
        for part in parts:
            path = folder / ("appropt/smollm2.parquet" if part == "appropt" else f"{part}.parquet")
            if part in ("appropt", "appropt_forms"):
                continue  # per-model candidates: the shared ones are enough here
            if path.exists():
                inputs[part] = str(path)
    tables = load_suite_tables(inputs)
    pairs = build_pairs(tables.prompts, tables.candidates, tables.forms)
    uniq = sorted(set(zip(pairs["prompt_text"], pairs["continuation"], strict=True)))
    return [c for c, _ in uniq], [x for _, x in uniq], sorted(set(pairs["prompt_text"]))


def models(suites: list[str]):
    """The demo's two models, from their prepared / trained folders (config/models.tsv rows)."""
    folders = {
        "smollm2": ROOT / "resources" / "models" / "smollm2",
        "control": ROOT / "results" / "models" / "control" / suites[0],
    }
    for name, folder in folders.items():
        if not folder.is_dir():
            sys.exit(f"{folder} is missing: run `make demo` first")
        yield (
            name,
            load_model({"name": name, "source": "builtin:control" if name == "control" else "x"}, folder),
        )


def timed(model, reqs, repeats: int, invariant: bool) -> float:
    """Best wall time of scoring ``reqs`` with a 4096-token budget."""
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        score_requests(model, reqs, 4096, invariant=invariant)
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--suites", nargs="+", default=["knowledge", "judged"])
    ap.add_argument("--trials", type=int, default=20)
    ap.add_argument(
        "--shared-trials", type=int, default=5, help="of those, how many also on the shared-mask path"
    )
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--dump", help="write each model's reference scores and top-k to this .npz")
    ap.add_argument("--against", help="print max |d| of the reference scores against this --dump file")
    args = ap.parse_args()
    saved: dict[str, np.ndarray] = {}
    torch.set_num_threads(args.threads)
    contexts, conts, prompts = [], [], []
    for suite in args.suites:
        c, x, p = suite_pairs(suite)
        contexts += c
        conts += x
        prompts += p
    print(
        f"suites {args.suites}: {len(contexts)} requests, {len(set(contexts))} prompts; threads {args.threads}"
    )
    for name, lm in models(args.suites):
        reqs, _ = tokenize_pairs(lm.tokenizer, contexts, conts, "eos", end_token=lm.end_token, head=lm.head)
        rng = random.Random(args.seed)
        ref, _ = score_requests(lm.model, reqs, 4096)
        ids = [lm.context_ids(p) for p in prompts]
        top_ref = next_token_logprobs(lm.model, ids, 10)
        saved.update(
            {f"{name}_scores": ref, f"{name}_topk": top_ref[0].numpy(), f"{name}_ids": top_ref[1].numpy()}
        )
        if args.against:
            other = np.load(args.against)
            print(
                f"\n{name}: reference vs {args.against}: max |d| scores "
                f"{float(np.max(np.abs(ref - other[f'{name}_scores']))):.3g} nats, top-k log-probs "
                f"{float(np.max(np.abs(top_ref[0].numpy() - other[f'{name}_topk']))):.3g}, same top-k tokens "
                f"{bool(np.array_equal(top_ref[1].numpy(), other[f'{name}_ids']))}"
            )
        if args.trials == 0:
            continue
        fast_ref, _ = score_requests(lm.model, reqs, 4096, invariant=False)
        worst = {True: 0.0, False: 0.0}
        default_cap = packed.PACKED_TOKENS
        for trial in range(args.trials):
            idx = [i for i in range(len(reqs)) if rng.random() < rng.uniform(0.5, 1.0)] or [0]
            rng.shuffle(idx)
            budget = rng.choice([128, 256, 512, 1024, 2048, 4096, 8192])
            packed.PACKED_TOKENS = rng.choice([16, 32, 64, 128, 256, 512])
            try:
                paths = ((True, ref), (False, fast_ref)) if trial < args.shared_trials else ((True, ref),)
                for invariant, base in paths:
                    lp, _ = score_requests(lm.model, [reqs[i] for i in idx], budget, invariant=invariant)
                    worst[invariant] = max(worst[invariant], float(np.max(np.abs(lp - base[idx]))))
            finally:
                packed.PACKED_TOKENS = default_cap
        other = 1 if args.threads != 1 else 2
        torch.set_num_threads(other)
        threads_lp, _ = score_requests(lm.model, reqs, 4096)
        torch.set_num_threads(args.threads)
        # top-k of the prompts, alone vs in random company
        top_worst, top_same = 0.0, True
        for _ in range(max(1, args.trials // 4)):
            pick = rng.sample(range(len(ids)), max(1, len(ids) // 3))
            values, indices = next_token_logprobs(
                lm.model, [ids[i] for i in pick], 10, rng.choice([64, 512, 4096])
            )
            top_worst = max(top_worst, float((values - top_ref[0][pick]).abs().max()))
            top_same &= bool(torch.equal(indices, top_ref[1][pick]))
        t_inv = timed(lm.model, reqs, args.repeats, True)
        t_fast = timed(lm.model, reqs, args.repeats, False)
        print(f"\n{name}: {len(reqs)} requests")
        print(f"  invariant engine, {args.trials} orders/packings/budgets: max |d| = {worst[True]:.3g} nats")
        print(
            f"  shared-mask path, the first {args.shared_trials}:             max |d| = {worst[False]:.3g} nats"
        )
        print(
            f"  invariant engine, {args.threads} vs {other} threads:        max |d| = "
            f"{float(np.max(np.abs(threads_lp - ref))):.3g} nats"
        )
        print(
            f"  invariant vs shared-mask scores:           max |d| = {float(np.max(np.abs(ref - fast_ref))):.3g} nats"
        )
        print(f"  top-k (k=10) in random company: max |d| = {top_worst:.3g}, same tokens: {top_same}")
        print(
            f"  speed: invariant {len(reqs) / t_inv:.1f} req/s, shared-mask {len(reqs) / t_fast:.1f} req/s, "
            f"ratio {t_fast / t_inv:.2f}x"
        )

    if args.dump:
        np.savez(args.dump, **saved)


if __name__ == "__main__":
    main()
