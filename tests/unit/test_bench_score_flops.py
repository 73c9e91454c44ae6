"""benchmarks/score.py's model FLOPs of the engine's packed rows, against a count made by hand."""

from __future__ import annotations

import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCH))
import score  # noqa: E402
from factprobe.lm.packed import _build_rows  # noqa: E402


def test_model_flops_by_hand():
    """A GPT-NeoX of hidden 8, 2 layers, 2 heads, MLP 16, vocabulary 10; one packed row: prefix
    (1, 2, 3), continuations (4, 5) and (6,)."""
    import torch
    from transformers import GPTNeoXConfig, GPTNeoXForCausalLM

    torch.manual_seed(0)
    config = GPTNeoXConfig(
        vocab_size=10, hidden_size=8, num_hidden_layers=2, num_attention_heads=2, intermediate_size=16
    )
    model = GPTNeoXForCausalLM(config)
    rows = _build_rows([((1, 2, 3), (4, 5)), ((1, 2, 3), (6,))], 4096)
    assert len(rows) == 1 and rows[0].length == 4  # the prefix + the one body token of (4, 5)
    flops = score.model_flops(model, rows)
    # per layer: QKV 8x24, output 8x8, MLP 8x16 + 16x8 = 512 weights; 2 layers
    assert flops["n_layers"] == 1024
    assert flops["layers"] == 2 * 1024 * 4
    # keys seen: prefix 1 + 2 + 3; token 4 sees the prefix and itself (4); 10 in all;
    # 4 FLOPs x 2 layers x 8 (heads x head dim) per query-key pair
    assert flops["attention"] == 4 * 2 * 8 * 10
    # logits scored at the prefix's last position and at token 4: 2 x 8 x 10 each
    assert flops["output"] == 2 * (2 * 8 * 10)
    assert flops["total"] == 8192 + 640 + 320
