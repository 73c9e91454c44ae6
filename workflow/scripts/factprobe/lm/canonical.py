"""Batch-invariant attention for packed rows: every score a function of its own request.

A packed row holds a prefix and several continuations (:mod:`factprobe.lm.packed`). With one
attention call over the whole padded batch, a query's softmax and weighted sum run over a key
axis whose length and layout depend on what else is in the row and the batch: the kernels
vectorise and block that reduction by position, so the masked keys of other continuations (and
the padding) change the order in which the visible keys are added, and the float result moves in
its last bits (benchmarks/RESULTS.md, "The cause").

Here attention is computed per *unit* instead: a prefix (its queries over its own keys) or one
continuation (its queries over the prefix's keys followed by its own), each gathered into a
dense block of exactly its own keys, so the block's shape and contents depend on that unit
alone. Units of one shape are stacked into one ``scaled_dot_product_attention`` call on its
math backend: the CPU flash kernel's results for short key axes change with the number of units
and threads, the math backend's did not. The other layers act on one token at a time; their
matrix products are made row-invariant by giving every forward at least :data:`ROW_QUANTUM`
rows in a multiple of it (:func:`padded_width`), which on the CPU kernels measured here keeps
every row on the same code path (``benchmarks/invariance.py`` checks the whole chain).
"""

from __future__ import annotations

import contextlib
from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

NAME = "factprobe_canonical"

#: Forwards get a multiple of this many token rows (at least this many): small or ragged
#: matrix products take other kernel paths whose rounding differs row by row.
ROW_QUANTUM = 16


def padded_width(width: int, rows: int) -> int:
    """Smallest width >= ``width`` for which ``rows * width`` is a positive multiple of
    :data:`ROW_QUANTUM` (every token-wise product of the forward then has such a row count)."""
    w = max(1, width)
    while (rows * w) % ROW_QUANTUM:
        w += 1
    return w


def padded_keep(keep: torch.Tensor, rows: int) -> torch.Tensor:
    """Positions whose logits are computed, repeated at the end so that ``rows * len`` is a multiple
    of :data:`ROW_QUANTUM` (the vocabulary projection is a token-wise product too)."""
    extra = padded_width(len(keep), rows) - len(keep)
    return torch.cat([keep, keep[-1:].expand(extra)]) if extra else keep


@dataclass(frozen=True)
class Group:
    """Units of one shape: ``queries`` [n, nq] and ``keys`` [n, nk] flat (row * width + column)
    positions; each unit's query i sees its keys 0 .. nk - nq + i (bottom-right causal)."""

    queries: torch.Tensor
    keys: torch.Tensor
    #: [nq, nk] bool, built once per forward (every layer reuses it)
    mask: torch.Tensor


@dataclass(frozen=True)
class Plan:
    """The attention units of one packed forward, grouped by shape.

    ``extra``: per layer, keys and values computed by an earlier forward (a prefix's, see
    :func:`factprobe.lm.packed.prefix_states`), addressed by unit key positions from
    ``batch * width`` on. ``capture``: flat positions whose keys and values each layer stores in
    ``captured[layer]``."""

    groups: tuple[Group, ...]
    extra: dict[int, tuple[torch.Tensor, torch.Tensor]] | None = None
    capture: torch.Tensor | None = None
    captured: dict[int, tuple[torch.Tensor, torch.Tensor]] = field(default_factory=dict)


def plan_units(units: Sequence[tuple[Sequence[int], Sequence[int]]], device: torch.device, **fields) -> Plan:
    """Group ``(query positions, key positions)`` units by shape into a :class:`Plan` (``fields``:
    its ``extra`` and ``capture``)."""
    by_shape: dict[tuple[int, int], tuple[list, list]] = defaultdict(lambda: ([], []))
    for queries, keys in units:
        qs, ks = by_shape[(len(queries), len(keys))]
        qs.append(list(queries))
        ks.append(list(keys))
    groups = tuple(
        Group(
            torch.tensor(qs, device=device),
            torch.tensor(ks, device=device),
            (torch.arange(nk)[None, :] <= torch.arange(nq)[:, None] + (nk - nq)).to(device),
        )
        for (nq, nk), (qs, ks) in sorted(by_shape.items())
    )
    return Plan(groups, **fields)


_UNSUPPORTED = ("softcap", "s_aux", "position_bias")


def attention(module, query, key, value, attention_mask, dropout: float = 0.0, scaling=None, **kwargs):
    """An ``AttentionInterface`` function: attention of each unit of ``kwargs['factprobe_plan']``.

    ``query`` is [batch, heads, width, dim], ``key``/``value`` [batch, kv heads, width, dim];
    returns [batch, width, heads, value dim] (positions in no unit, i.e. padding, are zero)."""
    plan: Plan | None = kwargs.get("factprobe_plan")
    if plan is None:
        raise RuntimeError(f"{NAME} attention needs a factprobe_plan (it runs inside score_requests only)")
    for name in _UNSUPPORTED:
        if kwargs.get(name) is not None:
            raise NotImplementedError(f"batch-invariant scoring does not support attention with {name}")
    window = kwargs.get("sliding_window")
    batch, heads, width, _ = query.shape
    kv_heads, dim_v = key.shape[1], value.shape[-1]
    q = query.transpose(1, 2).reshape(batch * width, heads, -1)
    k = key.transpose(1, 2).reshape(batch * width, kv_heads, -1)
    v = value.transpose(1, 2).reshape(batch * width, kv_heads, dim_v)
    layer = getattr(module, "layer_idx", None)
    if plan.capture is not None:
        plan.captured[layer] = (k[plan.capture], v[plan.capture])
    if plan.extra is not None:
        extra_k, extra_v = plan.extra[layer]
        k, v = torch.cat([k, extra_k.to(k.dtype)]), torch.cat([v, extra_v.to(v.dtype)])
    out = query.new_zeros(batch * width, heads, dim_v)
    for group in plan.groups:
        if window is not None and group.keys.shape[1] > window:
            raise NotImplementedError(
                f"a unit of {group.keys.shape[1]} keys exceeds the model's sliding window of {window}"
            )
        # contiguous: on strided inputs the math backend's products took another path for one unit
        qg = q[group.queries].transpose(1, 2).contiguous()  # [n, heads, nq, dim]
        kg = k[group.keys].transpose(1, 2).contiguous()
        vg = v[group.keys].transpose(1, 2).contiguous()
        with sdpa_kernel(SDPBackend.MATH):
            og = torch.nn.functional.scaled_dot_product_attention(
                qg,
                kg,
                vg,
                attn_mask=group.mask,
                scale=scaling,
                enable_gqa=heads != kv_heads,
            )
        out[group.queries.reshape(-1)] = og.transpose(1, 2).reshape(-1, heads, dim_v)
    return out.view(batch, width, heads, dim_v), None


def _register() -> None:
    from transformers import AttentionInterface
    from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS, sdpa_mask

    AttentionInterface.register(NAME, attention)
    ALL_MASK_ATTENTION_FUNCTIONS.register(NAME, sdpa_mask)


def _configs(model) -> Iterator:
    seen = set()
    for module in model.modules():
        config = getattr(module, "config", None)
        if config is not None and id(config) not in seen and hasattr(config, "_attn_implementation"):
            seen.add(id(config))
            yield config


@contextlib.contextmanager
def canonical_attention(model) -> Iterator[None]:
    """Run ``model``'s attention through :func:`attention` inside the block (restored after)."""
    _register()
    configs = list(_configs(model))
    before = [config._attn_implementation for config in configs]
    try:
        for config in configs:
            config._attn_implementation = NAME
        yield
    finally:
        for config, name in zip(configs, before, strict=True):
            config._attn_implementation = name
