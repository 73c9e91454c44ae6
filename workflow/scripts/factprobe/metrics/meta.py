"""Meta-evaluation of knowledge measures (distractors paper §4.2–4.3, docs/references.md).

* §4.2: alignment with human judgement = Kendall's τ between a measure and human scores, as the
  mean (and SD) over K folds (K = 3 in the paper), where each fold's configuration (the
  measure's hyperparameters: aggregation, strategy, n, ...) is chosen by grid search on the
  other folds and τ is reported on the held-out fold.
* §4.3: robustness to verbalization artifacts = Kendall's τ between a measure's values on two
  verbalization sets of the same facts, averaged over configurations.

Human scores come as a TSV with a header ``subject  relation  object  score`` (string ids,
score in [0, 1]) or as the JSON of KaRR / DistFactAssessLM (``wikidata_triples_to_human_scores.json``:
``[[["Q361", "P276", "Q15"], 0.33], ...]``); ``read_human`` reads either. Facts are matched on
(subject, relation, object) through the suite's facts table (``attach_fact_ids``). The project
ships no annotation file. ``human_alignment`` is what rule ``human_alignment`` writes: per
measure family (one knowledge-measure family per distractor strategy with the grid aggregation x
n, Precision@n with the grid n, Probability, and every other per-fact measure), the §4.2 3-fold
cross-validated Kendall τ.
"""

from __future__ import annotations

import csv
import json
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


def read_human_json(path: str | Path) -> pd.DataFrame:
    """Human scores in the KaRR / DistFactAssessLM JSON layout: ``[[[s, r, o], score], ...]``.

    Returns the columns of ``read_human_scores``. Errors name the file and the item index.
    """
    path = Path(path)
    try:
        items = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: not valid JSON ({exc}); expected [[[s, r, o], score], ...]") from None
    if not isinstance(items, list):
        raise ValueError(f"{path}: top level must be a list of [[s, r, o], score] items")
    rows, seen = [], {}
    for i, item in enumerate(items):
        ok = isinstance(item, list) and len(item) == 2 and isinstance(item[0], list) and len(item[0]) == 3
        if not ok:
            raise ValueError(f"{path}: item {i}: {item!r} is not [[subject, relation, object], score]")
        (subject, relation, obj), score = item
        try:
            score = float(score)
        except (TypeError, ValueError):
            raise ValueError(f"{path}: item {i}: score {score!r} is not a number") from None
        fact_id = f"{subject}|{relation}|{obj}"
        if fact_id in seen:
            raise ValueError(f"{path}: item {i}: fact {fact_id} already scored at item {seen[fact_id]}")
        seen[fact_id] = i
        rows.append(
            {
                "fact_id": fact_id,
                "subject": str(subject),
                "relation": str(relation),
                "object": str(obj),
                "score": score,
            }
        )
    return pd.DataFrame(rows, columns=["fact_id", *HUMAN_COLUMNS])


def read_human(path: str | Path) -> pd.DataFrame:
    """Human scores from a ``.json`` (KaRR layout) or a TSV file (``read_human_scores``)."""
    return read_human_json(path) if str(path).endswith(".json") else read_human_scores(path)


def attach_fact_ids(human: pd.DataFrame, facts: pd.DataFrame) -> pd.DataFrame:
    """Human rows with the suite's ``fact_id`` of the same (subject, property, object); others dropped."""
    keys = (
        facts[["fact_id", "subject", "property", "object"]]
        .astype(str)
        .drop_duplicates(["subject", "property", "object"])
    )
    joined = human.drop(columns="fact_id").merge(
        keys, left_on=["subject", "relation", "object"], right_on=["subject", "property", "object"]
    )
    return joined.drop(columns="property")[["fact_id", *HUMAN_COLUMNS]]


def measure_families(per_fact: pd.DataFrame) -> dict[str, list[dict]]:
    """§4.2 grids per measure family.

    ``dist:<strategy>``: K with aggregation (Min/Avg) x n as hyperparameters; ``precision``:
    Precision@n over n; any other measure: its own (strategy, n) values. ``n_used`` and
    ``k_dropped_facts`` are bookkeeping, not measures.
    """
    table = per_fact[~per_fact["measure"].isin(["n_used"])]
    families: dict[str, list[dict]] = {}
    for config in configuration_grid(table, ("measure", "strategy", "n")):
        measure = config["measure"]
        name = f"dist:{config['strategy']}" if measure in ("k_min", "k_avg") else measure
        families.setdefault(name, []).append(config)
    return families


def human_alignment(per_fact: pd.DataFrame, human: pd.DataFrame, k: int = 3) -> pd.DataFrame:
    """§4.2: per measure family, mean Kendall τ with human scores over k folds with grid search.

    ``human`` carries the suite's ``fact_id`` (``attach_fact_ids``). One row per (family, fold)
    with the chosen configuration and its train/test τ, plus one row per family with fold -1:
    ``test_tau`` = mean over folds, ``std_tau`` their SD. Families with fewer than 2k facts that
    have both a value and a human score are left out.
    """
    cols = ["family", "fold", "measure", "strategy", "n", "train_tau", "test_tau", "std_tau", "n_facts"]
    rows = []
    for family, configs in sorted(measure_families(per_fact).items()):
        names = {c["measure"] for c in configs}
        sub = per_fact[per_fact["measure"].isin(names)]
        n_facts = len(set(sub["fact_id"]) & set(human["fact_id"]))
        if n_facts < 2 * k:
            continue
        result = cross_validated_tau(sub, human, configs, k)
        for fold in result["folds"]:
            config = fold["config"] or {"measure": "", "strategy": "", "n": 0}
            rows.append(
                {
                    "family": family,
                    "fold": fold["fold"],
                    **config,
                    "train_tau": fold["train_tau"],
                    "test_tau": fold["test_tau"],
                    "std_tau": np.nan,
                    "n_facts": n_facts,
                }
            )
        rows.append(
            {
                "family": family,
                "fold": -1,
                "measure": "",
                "strategy": "",
                "n": 0,
                "train_tau": np.nan,
                "test_tau": result["mean"],
                "std_tau": result["std"],
                "n_facts": n_facts,
            }
        )
    return pd.DataFrame(rows, columns=cols)


def alignment_for_models(
    per_fact: Mapping[str, pd.DataFrame],
    human: pd.DataFrame,
    facts: pd.DataFrame,
    k: int = 3,
    source: str = "human",
) -> pd.DataFrame:
    """``human_alignment`` of every model's per-fact table (``{model: table}``), with a ``model`` column.

    ``human`` holds (subject, relation, object, score) rows; they are joined to the suite's facts
    first, and a file none of whose triples is a fact of the suite is an error naming ``source``.
    """
    joined = attach_fact_ids(human, facts)
    if joined.empty:
        raise ValueError(
            f"{source}: none of its {len(human)} triples is a fact of this suite; check the ids "
            "(subject, relation, object as Wikidata ids) or the suite's relations"
        )
    parts = [human_alignment(table, joined, k).assign(model=model) for model, table in per_fact.items()]
    out = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()
    return out[["model", *[c for c in out.columns if c != "model"]]]
