"""A suite's summary covers every fact it probes: scores that lost facts are refused.

A scoring job that loses part of a suite (a lost shard, a crash read as a result) must not turn
into a summary or a leaderboard row computed over the facts that happened to survive: the mean
over fewer facts looks like a result. :func:`require_all_facts_scored` compares the facts a
model's score table covers with the suite's facts table, and fails naming both counts.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from factprobe import contracts


def missing_facts(facts: Iterable[str], scored: Iterable[str]) -> list[str]:
    """The fact ids of ``facts`` that ``scored`` lacks, sorted."""
    return sorted(set(facts) - set(scored))


def require_all_facts_scored(
    suite: str, model: str, facts: Iterable[str], scored: Iterable[str], facts_path: str, scores_path: str
) -> None:
    """Raise ValueError when the score table of ``model`` covers fewer facts than the facts table."""
    facts, scored = set(facts), set(scored)
    missing = missing_facts(facts, scored)
    if missing:
        shown = ", ".join(missing[:3]) + (", ..." if len(missing) > 3 else "")
        raise ValueError(
            f"suite {suite!r}, model {model!r}: {scores_path} scores {len(facts) - len(missing)} facts but "
            f"the facts table {facts_path} has {len(facts)} (missing: {shown}); the scores are incomplete, "
            f"so no summary is made. Delete {scores_path} and run the workflow again to rescore the suite."
        )


def check_suite_scores(
    suite: str, models: list[str], facts_path: str | os.PathLike, scores_paths: list[str]
) -> None:
    """:func:`require_all_facts_scored` for every model's score table of one suite (fact ids only read)."""
    facts = contracts.read("facts", facts_path, ["fact_id"])["fact_id"]
    for model, path in zip(models, scores_paths, strict=True):
        scored = contracts.read("scores", path, ["fact_id"])["fact_id"]
        require_all_facts_scored(suite, model, facts, scored, str(facts_path), str(path))
