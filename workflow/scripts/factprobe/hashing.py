"""Deterministic, order-independent hashing for every sample the workflow draws.

Principle: each sample is seeded by a hash of its key, never by call order or
Python's salted ``hash()``.
"""

from __future__ import annotations

import hashlib


def stable_hash(*parts: object) -> int:
    """64-bit unsigned hash of ``parts`` joined by ``\\x1f``; stable across runs and machines."""
    key = "\x1f".join(str(p) for p in parts).encode("utf-8")
    return int.from_bytes(hashlib.blake2b(key, digest_size=8).digest(), "big")


def hash_fraction(*parts: object) -> float:
    """``stable_hash`` mapped to [0, 1)."""
    return stable_hash(*parts) / 2.0**64
