"""Random distractors (distractors paper §3.3, "Random Distractors"): same-type entities.

The sample of a fact is seeded by ``stable_hash(fact_id, "random")``, so it is reproducible and
independent of the order in which facts are processed.
"""

from __future__ import annotations

import numpy as np

from factprobe.distractors.omega import Omega
from factprobe.hashing import stable_hash

# Types up to this size are shuffled whole; larger ones draw 8n + 64 members first (the same
# uniform sample of Ω(f), for O(n) per fact instead of O(type)). Every demo type is smaller
# (the demo has 7,163 entities in all), so the demo's rows do not depend on it.
FULL_SHUFFLE_BELOW = 10_000


def random_distractors(omega: Omega, fact_id: str, s: int, r: int, o: int, n: int) -> list[int]:
    """Up to ``n`` Ω-valid entities drawn uniformly from the entities sharing a type with o."""
    members = omega.members(omega.types_of(o))
    if len(members) == 0 or n <= 0:
        return []
    rng = np.random.default_rng(stable_hash(fact_id, "random"))
    if len(members) <= FULL_SHUFFLE_BELOW:
        return omega.filter(s, r, o, members[rng.permutation(len(members))], n)
    # Huge types (humans): a bounded draw, then the full shuffle only if Ω rejects too many.
    draw = members[rng.choice(len(members), size=min(len(members), 8 * n + 64), replace=False)]
    found = omega.filter(s, r, o, draw, n)
    if len(found) < n:
        found = omega.filter(s, r, o, members[rng.permutation(len(members))], n)
    return found
