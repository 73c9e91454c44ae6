"""benchmarks/score.py's model FLOPs of the engine's packed rows, against a count made by hand."""

from __future__ import annotations

import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCH))
import score  # noqa: E402
from factprobe.lm.packed import _build_rows  # noqa: E402


def test_model_flops_by_hand():
    """A GPT-2 of width 8, 2 layers, 2 heads, MLP 16, vocabulary 10 (its learnt position
    embeddings are no layer weights); one packed row: prefix (1, 2, 3), continuations (4, 5), (6,)."""
    from transformers import GPT2Config, GPT2LMHeadModel

    config = GPT2Config(vocab_size=10, n_positions=16, n_embd=8, n_layer=2, n_head=2, n_inner=16)
    model = GPT2LMHeadModel(config)
    rows = _build_rows([((1, 2, 3), (4, 5)), ((1, 2, 3), (6,))], 4096)
    assert len(rows) == 1 and rows[0].length == 4  # the prefix + the one body token of (4, 5)
    flops = score.model_flops(model, rows)
    # per layer: QKV 8x24, output 8x8, MLP 8x16 + 16x8 = 512 weights; 2 layers (wpe 16x8 left out)
    assert flops["n_layers"] == 1024
    assert flops["layers"] == 2 * 1024 * 4
    # keys seen: prefix 1 + 2 + 3; token 4 sees the prefix and itself (4); 10 in all;
    # 4 FLOPs x 2 layers x 8 (heads x head dim) per query-key pair
    assert flops["attention"] == 4 * 2 * 8 * 10
    # logits scored at the prefix's last position and at token 4: 2 x 8 x 10 each
    assert flops["output"] == 2 * (2 * 8 * 10)
    assert flops["total"] == 8192 + 640 + 320
