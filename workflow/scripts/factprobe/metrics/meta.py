"""Meta-evaluation of knowledge measures (distractors paper §4.2–4.3, docs/references.md).

* §4.2: alignment with human judgement = Kendall's τ between a measure and human scores, as the
  mean (and SD) over K folds (K = 3 in the paper), where each fold's configuration (the
  measure's hyperparameters: aggregation, strategy, n, ...) is chosen by grid search on the
  other folds and τ is reported on the held-out fold.
* §4.3: robustness to verbalization artifacts = Kendall's τ between a measure's values on two
  verbalization sets of the same facts, averaged over configurations.

Human scores come as a TSV with a header ``subject  relation  object  score`` (string ids,
score in [0, 1]); facts are matched on ``fact_id = subject|relation|object``. The project ships
no such annotation file; ``read_human_scores`` is what a user's file goes through.
"""

from __future__ import annotations

import csv
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from ..hashing import stable_hash

HUMAN_COLUMNS = ["subject", "relation", "object", "score"]


def read_human_scores(path: str | Path) -> pd.DataFrame:
    """Human knowledge scores: fact_id, subject, relation, object, score (float).

    Errors name the file and line: missing header columns, a non-numeric score, a duplicate fact.
    """
    path = Path(path)
    with open(path, newline="") as fh:
        reader = csv.DictReader(fh, delimiter="\t")
        missing = [c for c in HUMAN_COLUMNS if c not in (reader.fieldnames or [])]
        if missing:
            raise ValueError(f"{path}: line 1: header lacks {missing}; expected columns {HUMAN_COLUMNS}")
        rows, seen = [], {}
        for lineno, row in enumerate(reader, start=2):
            try:
                score = float(row["score"])
            except (TypeError, ValueError):
                raise ValueError(f"{path}: line {lineno}: score {row['score']!r} is not a number") from None
            fact_id = f"{row['subject']}|{row['relation']}|{row['object']}"
            if fact_id in seen:
                raise ValueError(
                    f"{path}: line {lineno}: fact {fact_id} already scored on line {seen[fact_id]}"
                )
            seen[fact_id] = lineno
            rows.append({"fact_id": fact_id, **{c: row[c] for c in HUMAN_COLUMNS[:3]}, "score": score})
    return pd.DataFrame(rows, columns=["fact_id", *HUMAN_COLUMNS])


def kendall_tau(x: Sequence[float], y: Sequence[float]) -> float:
    """Kendall's τ-b between two paired samples (NaN when either is constant or < 2 pairs)."""
    from scipy.stats import kendalltau  # deferred: scipy.stats is slow to import in every rule job

    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    if x.size < 2 or np.all(x == x[0]) or np.all(y == y[0]):
        return float("nan")
    return float(kendalltau(x, y).statistic)


def fold_of(keys: Sequence[str], k: int, seed: str = "meta") -> np.ndarray:
    """Fold index 0..k-1 of each key: keys sorted by ``stable_hash`` and dealt round-robin.

    Folds differ in size by at most one and do not depend on input order.
    """
    keys = [str(x) for x in keys]
    order = sorted(range(len(keys)), key=lambda i: (stable_hash(seed, keys[i]), keys[i]))
    folds = np.empty(len(keys), dtype=int)
    for position, index in enumerate(order):
        folds[index] = position % k
    return folds


def configuration_grid(
    per_fact: pd.DataFrame, hyper: Sequence[str] = ("measure", "strategy", "n")
) -> list[dict]:
    """Every combination of hyperparameter values present in a per-fact table (§4.2 grid)."""
    combos = per_fact[list(hyper)].drop_duplicates().sort_values(list(hyper))
    return [dict(zip(hyper, row, strict=True)) for row in combos.itertuples(index=False)]


def values_for(per_fact: pd.DataFrame, config: Mapping[str, object]) -> pd.Series:
    """A measure's value per fact under one configuration (mean if several groups remain)."""
    mask = np.ones(len(per_fact), dtype=bool)
    for key, value in config.items():
        mask &= (per_fact[key] == value).to_numpy()
    return per_fact[mask].groupby("fact_id")["value"].mean()


def tau_with_humans(
    per_fact: pd.DataFrame, human: pd.DataFrame, config: Mapping[str, object], facts=None
) -> float:
    """τ between the configured measure and human scores on the shared facts (optionally a subset)."""
    values = values_for(per_fact, config)
    scores = human.set_index("fact_id")["score"]
    common = values.index.intersection(scores.index)
    if facts is not None:
        common = common.intersection(pd.Index(facts))
    return kendall_tau(values.reindex(common).to_numpy(), scores.reindex(common).to_numpy())


def cross_validated_tau(
    per_fact: pd.DataFrame, human: pd.DataFrame, configs: Sequence[Mapping[str, object]], k: int = 3
) -> dict:
    """Mean and SD of held-out Kendall τ over k folds, grid-searching the configuration (§4.2).

    For each fold, the configuration with the highest τ on the other folds (first one on ties,
    NaN τ never chosen) is evaluated on the fold. Returns ``mean``, ``std`` (population) and
    ``folds`` (list of dicts: fold, config, train_tau, test_tau).
    """
    facts = sorted(set(per_fact["fact_id"]) & set(human["fact_id"]))
    if len(facts) < 2 * k:
        raise ValueError(f"only {len(facts)} facts have both a measure value and a human score; need {2 * k}")
    folds = fold_of(facts, k)
    facts_arr = np.asarray(facts, dtype=object)
    results = []
    for fold in range(k):
        train, test = facts_arr[folds != fold], facts_arr[folds == fold]
        best, best_tau = None, -np.inf
        for config in configs:
            tau = tau_with_humans(per_fact, human, config, train)
            if np.isfinite(tau) and tau > best_tau:
                best, best_tau = dict(config), tau
        test_tau = tau_with_humans(per_fact, human, best, test) if best is not None else float("nan")
        results.append({"fold": fold, "config": best, "train_tau": float(best_tau), "test_tau": test_tau})
    taus = np.array([r["test_tau"] for r in results], dtype=float)
    return {"mean": float(np.nanmean(taus)), "std": float(np.nanstd(taus)), "folds": results}


def robustness_tau(
    per_fact_a: pd.DataFrame, per_fact_b: pd.DataFrame, configs: Sequence[Mapping[str, object]]
) -> float:
    """Robustness (§4.3): Kendall τ between two verbalization sets of the same facts, averaged
    over ``configs`` (configurations with an undefined τ are left out of the mean)."""
    taus = []
    for config in configs:
        a, b = values_for(per_fact_a, config), values_for(per_fact_b, config)
        common = a.index.intersection(b.index)
        taus.append(kendall_tau(a.reindex(common).to_numpy(), b.reindex(common).to_numpy()))
    taus = np.asarray(taus, dtype=float)
    return float(np.nanmean(taus)) if np.isfinite(taus).any() else float("nan")


def verbalization_robustness(
    per_fact: pd.DataFrame, first: str, second: str, configs: Sequence[Mapping[str, object]]
) -> float:
    """``robustness_tau`` between the ``verbalization`` values ``first`` and ``second`` of one table."""
    return robustness_tau(
        per_fact[per_fact["verbalization"] == first], per_fact[per_fact["verbalization"] == second], configs
    )
