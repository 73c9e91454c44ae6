"""Meta-evaluation of knowledge measures (distractors paper §4.2–4.3, docs/references.md).

* §4.2: alignment with human judgement = Kendall's τ between a measure and human scores, as the
  mean (and SD) over K folds (K = 3 in the paper), where each fold's configuration (the
  measure's hyperparameters: aggregation, strategy, n, ...) is chosen by grid search on the
  other folds and τ is reported on the held-out fold. The paper leaves the CV conventions
  unsaid; they follow the reference implementation (DistFactAssessLM,
  ``scripts/optimize_know_evals/optimize.ipynb``), each next to the paper's sentence:

  - "the mean Kendall's τ across the K = 3 folds of cross-validation": folds are scikit-learn's
    ``KFold(3, shuffle=True, random_state=42)`` over the judged facts in the human file's order
    (:func:`shuffled_folds`, the same split computed here with numpy); the SD reported beside the
    mean (Table 3) is pandas' ``std``, the sample SD (ddof = 1, :func:`cross_validated_tau`).
  - "the number of distractors is varied in {1, 2, 5, 10} ∪ {20, 40, ..., 200}, as well as n in
    Precision@n": :data:`PAPER_GRID_NS`, the n of every grid (the per-fact table may hold more n,
    e.g. 1..200 for Fig. 1 and 3; only these are configurations).
  - K of a fact with fewer than n distractors is undefined (§3.3, Fig. 1); K(f) is the mean over
    all the fact's cloze sentences, undefined at n when one of them is short
    (:func:`factprobe.metrics.knowledge.fact_rule`). In the grid the reference scores such a fact
    with K at its largest defined n: it averages the sentences' Min/Avg@1..200 curves (a NaN in
    one sentence makes the mean NaN) and walks the mean curve up to its last defined value, i.e.
    back to the fact's shortest list: :func:`values_for` with ``short_n="largest_defined"``.
* §4.3: robustness to verbalization artifacts = Kendall's τ between a measure's values on two
  verbalization sets of the same facts, averaged over configurations; Table 4 averages over the
  configurations Table 3's folds chose (:func:`fold_best_robustness`).

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

from factprobe.measures import chance_measures

from .common import GROUP_KEYS

HUMAN_COLUMNS = ["subject", "relation", "object", "score"]
#: §4.2's grid of n (number of distractors, and n of Precision@n): {1, 2, 5, 10} ∪ {20, 40, ..., 200}.
PAPER_GRID_NS = (1, 2, 5, 10, *range(20, 201, 20))
#: §4.2: "the beam width parameter is varied in {1, 2, 5, 10, 20, 30, 50, 100}" (ROUGE-L,
#: BERTScore: their per-fact rows carry the width as n; factprobe.scoring.generate.BEAM_GRID).
BEAM_GRID = (1, 2, 5, 10, 20, 30, 50, 100)
BEAM_MEASURES = ("rouge_l", "bertscore")
#: The reference's ``KFold(..., shuffle=True, random_state=42)``.
CV_SEED = 42
#: Measures whose value at n is undefined for a fact with fewer than n distractors.
K_MEASURES = ("k_min", "k_avg")
SHORT_N_RULES = ("largest_defined", "undefined")


def read_human_scores(path: str | Path) -> pd.DataFrame:
    """Human knowledge scores: fact_id, subject, relation, object, score (float).

    Errors name the file and line: missing header columns, a non-numeric score, a duplicate fact.
    """
    path = Path(path)
    with open(path, newline="", encoding="utf-8-sig") as fh:
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


def shuffled_folds(n: int, k: int, seed: int = CV_SEED) -> np.ndarray:
    """Fold index 0..k-1 of each of ``n`` items in their given order, as scikit-learn's
    ``KFold(k, shuffle=True, random_state=seed)`` splits them (§4.2, reference behaviour).

    The positions are shuffled by ``numpy.random.RandomState(seed)``; the first ``n % k`` folds
    get ``n // k + 1`` of the shuffled positions, the others ``n // k``, in that order.
    """
    if n < k:
        raise ValueError(f"{n} items cannot make {k} folds")
    order = np.random.RandomState(seed).permutation(n)
    sizes = np.full(k, n // k)
    sizes[: n % k] += 1
    folds = np.empty(n, dtype=int)
    folds[order] = np.repeat(np.arange(k), sizes)
    return folds


def configuration_grid(
    per_fact: pd.DataFrame, hyper: Sequence[str] = ("measure", "strategy", "n")
) -> list[dict]:
    """Every combination of hyperparameter values present in a per-fact table (§4.2 grid)."""
    combos = per_fact[list(hyper)].drop_duplicates().sort_values(list(hyper))
    return [dict(zip(hyper, row, strict=True)) for row in combos.itertuples(index=False)]


def values_for(
    per_fact: pd.DataFrame, config: Mapping[str, object], short_n: str = "largest_defined"
) -> pd.Series:
    """A measure's value per fact under one configuration (mean if several groups remain).

    ``short_n="largest_defined"`` (the reference's rule in its §4.2 grid): a fact whose K
    (``k_min``/``k_avg``) is undefined at the configuration's n (a sentence with fewer than n
    distractors) takes its K at the largest n below it that the table holds and at which every
    group of the fact (language, verbalization, ...) has a value: all the fact's cloze sentences
    are walked back together to the shortest list, as the reference's mean over sentences is;
    ``"undefined"``: such a fact has no value (Fig. 1's rule). The walk-back lands on the n of
    the table: with ``metrics.ns`` = 1..200 it is the reference's exactly.
    """
    if short_n not in SHORT_N_RULES:
        raise ValueError(f"short_n {short_n!r}: use one of {SHORT_N_RULES}")
    fill = short_n == "largest_defined" and config.get("measure") in K_MEASURES and "n" in config
    mask = np.ones(len(per_fact), dtype=bool)
    for key, value in config.items():
        if fill and key == "n":
            mask &= (per_fact["n"] <= value).to_numpy()
        else:
            mask &= (per_fact[key] == value).to_numpy()
    rows = per_fact[mask]
    if fill:
        rows = walk_back(rows)
    return rows.groupby("fact_id")["value"].mean()


def walk_back(rows: pd.DataFrame) -> pd.DataFrame:
    """Each fact's rows at the largest n where all its groups have a value (§4.2, reference grid).

    ``rows``: one configuration's K rows at n up to the configuration's n. A fact's groups hold
    disjoint sets of its cloze sentences; the reference's K(f) averages all of them, so the fact
    is defined at n only when every group is, and it is walked back to the largest such n.
    """
    groups = [c for c in GROUP_KEYS if c in rows.columns]
    rows = rows.dropna(subset=["value"])
    if rows.empty:
        return rows
    kinds = rows.drop_duplicates(["fact_id", *groups]).groupby("fact_id").size().rename("_groups")
    counts = rows.groupby(["fact_id", "n"]).size().rename("_have").reset_index()
    counts = counts.merge(kinds.reset_index(), on="fact_id")
    full = counts[counts["_have"] == counts["_groups"]]
    full = full.sort_values("n").groupby("fact_id").tail(1)[["fact_id", "n"]]
    return rows.merge(full, on=["fact_id", "n"])


def tau_with_humans(
    per_fact: pd.DataFrame,
    human: pd.DataFrame,
    config: Mapping[str, object],
    facts=None,
    short_n: str = "largest_defined",
) -> float:
    """τ between the configured measure and human scores on the shared facts (optionally a subset)."""
    values = values_for(per_fact, config, short_n)
    scores = human.set_index("fact_id")["score"]
    common = values.index.intersection(scores.index)
    if facts is not None:
        common = common.intersection(pd.Index(facts))
    return kendall_tau(values.reindex(common).to_numpy(), scores.reindex(common).to_numpy())


def cv_split(per_fact: pd.DataFrame, human: pd.DataFrame, k: int, seed: int = CV_SEED):
    """(facts with both a value and a human score in ``human``'s row order, their fold index):
    the split of :func:`cross_validated_tau` (§4.2)."""
    have = set(per_fact["fact_id"])
    facts = list(dict.fromkeys(f for f in human["fact_id"] if f in have))
    if len(facts) < 2 * k:
        raise ValueError(f"only {len(facts)} facts have both a measure value and a human score; need {2 * k}")
    return np.asarray(facts, dtype=object), shuffled_folds(len(facts), k, seed)


def cross_validated_tau(
    per_fact: pd.DataFrame,
    human: pd.DataFrame,
    configs: Sequence[Mapping[str, object]],
    k: int = 3,
    seed: int = CV_SEED,
    short_n: str = "largest_defined",
) -> dict:
    """Mean and SD of held-out Kendall τ over k folds, grid-searching the configuration (§4.2).

    Facts: those with both a value and a human score, in ``human``'s row order (the human file's,
    as the reference's list of judged triples), split by :func:`shuffled_folds`. For each fold,
    the configuration with the highest τ on the other folds (first one on ties, NaN τ never
    chosen) is evaluated on the fold. Returns ``mean``, ``std`` (sample SD, ddof = 1, as the
    reference's pandas ``std``; NaN folds left out of both) and ``folds`` (list of dicts: fold,
    config, train_tau, test_tau).
    """
    facts_arr, folds = cv_split(per_fact, human, k, seed)
    results = []
    for fold in range(k):
        train, test = facts_arr[folds != fold], facts_arr[folds == fold]
        best, best_tau = None, -np.inf
        for config in configs:
            tau = tau_with_humans(per_fact, human, config, train, short_n)
            if np.isfinite(tau) and tau > best_tau:
                best, best_tau = dict(config), tau
        test_tau = tau_with_humans(per_fact, human, best, test, short_n) if best is not None else float("nan")
        # No configuration with a defined τ on the training folds: the fold has no value.
        train_tau = float(best_tau) if best is not None else float("nan")
        results.append({"fold": fold, "config": best, "train_tau": train_tau, "test_tau": test_tau})
    taus = np.array([r["test_tau"] for r in results], dtype=float)
    taus = taus[np.isfinite(taus)]
    mean = float(taus.mean()) if len(taus) else float("nan")
    std = float(taus.std(ddof=1)) if len(taus) > 1 else float("nan")
    return {"mean": mean, "std": std, "folds": results}


def robustness_tau(
    per_fact_a: pd.DataFrame, per_fact_b: pd.DataFrame, configs: Sequence[Mapping[str, object]]
) -> float:
    """Robustness (§4.3): Kendall τ between two verbalization sets of the same facts, averaged
    over ``configs`` (configurations with an undefined τ are left out of the mean)."""
    taus = []
    for config in configs:
        # Both tables are read as they are (a short list stays undefined), without the grid's walk-back.
        a, b = values_for(per_fact_a, config, "undefined"), values_for(per_fact_b, config, "undefined")
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


#: Table 4's columns (:func:`fold_best_robustness`).
ROBUSTNESS_COLUMNS = ["model", "family", "folds", "robustness_tau", "n_facts"]


def fold_best_robustness(
    per_fact: pd.DataFrame,
    alignment: pd.DataFrame,
    first: str = "flawed",
    second: str = "corrected",
) -> pd.DataFrame:
    """Table 4 (§4.3): per measure family, Kendall τ between the values on the ``first`` and
    ``second`` verbalizations of the same facts, "averaged over the best configurations of each
    measure": the configuration each fold of Table 3 chose (``alignment``, one model's
    :func:`human_alignment` table, fold >= 0 rows), so a configuration chosen by two folds
    counts twice, as the reference's loop over its per-fold best configurations
    (``optimize.ipynb``). Facts: those with a value in both verbalizations under every one of the
    family's fold configurations (the reference intersects over all its Table 4 measures; here
    per family, so that one family's missing lists do not shrink another's facts). Columns
    ``family, folds, robustness_tau, n_facts`` (τ NaN when no fold configuration gives one).
    """
    rows = []
    a = per_fact[per_fact["verbalization"] == first]
    b = per_fact[per_fact["verbalization"] == second]
    for family in sorted(set(alignment["family"])):
        configs = [config for _, config in _fold_configs(alignment, family)]
        if not configs:
            continue
        pairs = []
        for config in configs:
            va, vb = values_for(a, config, "undefined").dropna(), values_for(b, config, "undefined").dropna()
            pairs.append((va, vb))
        common = None
        for va, vb in pairs:
            have = va.index.intersection(vb.index)
            common = have if common is None else common.intersection(have)
        taus = [kendall_tau(va.reindex(common).to_numpy(), vb.reindex(common).to_numpy()) for va, vb in pairs]
        taus = np.asarray(taus, dtype=float)
        tau = float(np.nanmean(taus)) if np.isfinite(taus).any() else float("nan")
        rows.append({"family": family, "folds": len(configs), "robustness_tau": tau, "n_facts": len(common)})
    return pd.DataFrame(rows, columns=ROBUSTNESS_COLUMNS[1:])


def robustness_for_models(
    per_fact: Mapping[str, pd.DataFrame],
    alignment: pd.DataFrame,
    first: str = "flawed",
    second: str = "corrected",
) -> pd.DataFrame:
    """:func:`fold_best_robustness` of every model (``{model: per-fact table}``), each with its
    own fold configurations from ``alignment`` (a ``human_alignment.csv`` with a ``model``
    column); a model the alignment lacks gets no row."""
    parts = [
        fold_best_robustness(table, alignment[alignment["model"] == model], first, second).assign(model=model)
        for model, table in per_fact.items()
    ]
    out = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=ROBUSTNESS_COLUMNS)
    return out[ROBUSTNESS_COLUMNS]


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
    """Human scores from a ``.json`` (KaRR layout), a TSV headed ``subject relation object score``
    (``read_human_scores``) or a ``source: {format: triples}`` TSV (``subject property object
    score``, header optional; ``probes.importers.read_triples``), whose unscored rows are left out."""
    if str(path).endswith(".json"):
        return read_human_json(path)
    with open(path, encoding="utf-8-sig") as fh:
        header = fh.readline().rstrip("\n").split("\t")
    if "relation" in header:
        return read_human_scores(path)
    from factprobe.probes.importers import read_triples

    listed = read_triples(path).dropna(subset=["score"]).rename(columns={"property": "relation"})
    listed.insert(0, "fact_id", listed["subject"] + "|" + listed["relation"] + "|" + listed["object"])
    return listed[["fact_id", *HUMAN_COLUMNS]].reset_index(drop=True)


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


def measure_families(
    per_fact: pd.DataFrame, grid_ns: Sequence[int] | None = PAPER_GRID_NS
) -> dict[str, list[dict]]:
    """§4.2 grids per measure family.

    ``dist:<strategy>``: K with aggregation (Min/Avg) x n as hyperparameters; ``precision``:
    Precision@n over n; any other measure: its own (strategy, n) values. ``n_used`` and
    ``k_dropped_facts`` are bookkeeping and the random-ranker chance levels
    (:func:`factprobe.metrics.chance_measures`) are baselines, not measures. ``grid_ns``: the n a configuration may
    take (§4.2's grid by default; ``None`` = every n of the table); measures without n (n = 0)
    are kept.
    """
    table = per_fact[~per_fact["measure"].isin(["n_used", *chance_measures().values()])]
    if grid_ns is not None:
        # ROUGE-L and BERTScore: n is the beam width, gridded over §4.2's widths instead.
        beam = table["measure"].isin(BEAM_MEASURES) & table["n"].isin(list(BEAM_GRID))
        table = table[(table["n"] == 0) | table["n"].isin(list(grid_ns)) | beam]
    families: dict[str, list[dict]] = {}
    for config in configuration_grid(table, ("measure", "strategy", "n")):
        measure = config["measure"]
        name = f"dist:{config['strategy']}" if measure in ("k_min", "k_avg") else measure
        families.setdefault(name, []).append(config)
    return families


def human_alignment(
    per_fact: pd.DataFrame,
    human: pd.DataFrame,
    k: int = 3,
    seed: int = CV_SEED,
    grid_ns: Sequence[int] | None = PAPER_GRID_NS,
    short_n: str = "largest_defined",
) -> pd.DataFrame:
    """§4.2: per measure family, mean Kendall τ with human scores over k folds with grid search.

    ``human`` carries the suite's ``fact_id`` (``attach_fact_ids``). One row per (family, fold)
    with the chosen configuration and its train/test τ, plus one row per family with fold -1:
    ``test_tau`` = mean over folds, ``std_tau`` their sample SD. Families with fewer than 2k
    facts that have both a value and a human score are left out. The conventions (folds, seed,
    grid, short lists) are the module docstring's.
    """
    cols = ["family", "fold", "measure", "strategy", "n", "train_tau", "test_tau", "std_tau", "n_facts"]
    rows = []
    for family, configs in sorted(measure_families(per_fact, grid_ns).items()):
        names = {c["measure"] for c in configs}
        sub = per_fact[per_fact["measure"].isin(names)]
        n_facts = len(set(sub["fact_id"]) & set(human["fact_id"]))
        if n_facts < 2 * k:
            continue
        result = cross_validated_tau(sub, human, configs, k, seed, short_n)
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


def curves_for_models(
    per_fact: Mapping[str, pd.DataFrame],
    cloze: Mapping[str, pd.DataFrame],
    human: pd.DataFrame,
    facts: pd.DataFrame,
    alignment: pd.DataFrame,
    k: int = 3,
) -> pd.DataFrame:
    """``alignment_curves`` of every model (``alignment``: :func:`alignment_for_models`'s table;
    ``cloze``: each model's per-fact table by number of cloze sentences, may lack a model)."""
    joined = attach_fact_ids(human, facts)
    parts = [
        alignment_curves(table, joined, alignment[alignment["model"] == model], cloze.get(model), k).assign(
            model=model
        )
        for model, table in per_fact.items()
    ]
    out = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=CURVE_COLUMNS)
    return out[CURVE_COLUMNS]


# --------------------------------------------------------------------------- §5.1 curves (Fig. 3, 4)
CURVE_COLUMNS = ["model", "family", "axis", "x", "fold", "measure", "strategy", "n", "test_tau", "n_folds"]


def _fold_configs(alignment: pd.DataFrame, family: str) -> list[tuple[int, dict]]:
    """(fold, chosen configuration) of one family's rows of a ``human_alignment`` table."""
    rows = alignment[
        (alignment["family"] == family) & (alignment["fold"] >= 0) & (alignment["measure"] != "")
    ]
    return [
        (int(r.fold), {"measure": r.measure, "strategy": r.strategy, "n": int(r.n)})
        for r in rows.itertuples(index=False)
    ]


def _curve_points(rows: list[dict]) -> list[dict]:
    """Per-fold points plus one mean row (fold -1) per (family, axis, x): the mean test τ over
    the folds where it is defined (the reference's ``lineplot`` mean over folds)."""
    frame = pd.DataFrame(rows)
    out = list(rows)
    for (family, axis, x), group in frame.groupby(["family", "axis", "x"], sort=True):
        taus = group["test_tau"].to_numpy(dtype=float)
        taus = taus[np.isfinite(taus)]
        out.append(
            {
                "family": family,
                "axis": axis,
                "x": x,
                "fold": -1,
                "measure": "",
                "strategy": "",
                "n": 0,
                "test_tau": float(taus.mean()) if len(taus) else float("nan"),
                "n_folds": len(taus),
            }
        )
    return out


def alignment_curves(
    per_fact: pd.DataFrame,
    human: pd.DataFrame,
    alignment: pd.DataFrame,
    cloze: pd.DataFrame | None = None,
    k: int = 3,
    seed: int = CV_SEED,
    short_n: str = "largest_defined",
) -> pd.DataFrame:
    """§5.1 (Fig. 3 and 4): held-out τ of each fold's best configuration (``alignment``, from
    :func:`human_alignment`) when one hyperparameter is varied, on the same folds.

    ``axis = distractors`` (Fig. 3, ``dist:<strategy>`` families): the configuration with n
    replaced by every n of the per-fact table. ``axis = cloze_sentences`` (Fig. 4, every family):
    the configuration evaluated on the measure recomputed from the first ``x`` cloze sentences of
    each fact (``cloze``: the per-fact table with ``n_cloze``, :mod:`factprobe.metrics.cloze`).
    One row per (family, axis, x, fold) and a mean row with fold -1 (:func:`_curve_points`).
    """
    rows = []
    for family in sorted(set(alignment["family"])):
        chosen = _fold_configs(alignment, family)
        if not chosen:
            continue
        # the family's measures, as human_alignment selects them: the same facts, the same folds
        names = {c["measure"] for c in measure_families(per_fact, None).get(family, [])}
        sub = per_fact[per_fact["measure"].isin(names)]
        facts_arr, folds = cv_split(sub, human, k, seed)
        for fold, config in chosen:
            test = facts_arr[folds == fold]
            point = {"family": family, "fold": fold, **config, "n_folds": 1}
            if family.startswith("dist:"):
                mine = sub[(sub["measure"] == config["measure"]) & (sub["strategy"] == config["strategy"])]
                for n in sorted(int(v) for v in set(mine["n"]) if v > 0):
                    tau = tau_with_humans(mine, human, {**config, "n": n}, test, short_n)
                    rows.append({**point, "axis": "distractors", "x": n, "test_tau": tau})
            if cloze is not None:
                for m in sorted(int(v) for v in set(cloze["n_cloze"])):
                    at_m = cloze[cloze["n_cloze"] == m]
                    tau = tau_with_humans(at_m, human, config, test, short_n)
                    rows.append({**point, "axis": "cloze_sentences", "x": m, "test_tau": tau})
    if not rows:
        return pd.DataFrame(columns=CURVE_COLUMNS[1:])
    return pd.DataFrame(_curve_points(rows))[CURVE_COLUMNS[1:]]
