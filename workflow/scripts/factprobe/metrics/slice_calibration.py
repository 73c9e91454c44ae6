"""Calibration per time slice: how sure a model is of its answers before and after its cut-off,
from the scores the knowledge measure already compares (no new scoring).

**Forecast per prompt.** The candidates of a cloze sentence are the fact's object and the first
``n`` distractors of a strategy, in the order K compares them
(:func:`factprobe.metrics.knowledge.knowledge_per_prompt`; with fewer than ``n`` distractors the
prompt has no forecast unless ``metrics.short_lists`` is ``available``, as for K). The model's
distribution over them is the softmax of their log Pl(. | c): ``q``. Its answer is the candidate
of highest log Pl, right when that is the object (strictly above every distractor: a tie is
wrong, as K's indicator); its ``confidence`` is the answer's probability ``max q`` and
``p_true`` is the object's ``q``. The **Brier score** (Brier 1950, the multi-class form) is
``(1 - p_true)^2 + sum over distractors of q^2``: 0 when all mass is on the object, 2 when all
of it is on one distractor.

**Per fact** the values are averaged over the fact's prompts (a timeline suite has one prompt
per fact by default; then they are that prompt's). ``confidently_wrong`` is the share of the
fact's prompts answered wrongly with ``confidence >= confident`` (default 0.8).

**Per group of facts** (a slice, or the dated slices before/after the estimated cut-off), each
fact weighing the same: ``accuracy`` (mean right), ``mean_confidence``, ``mean_p_true``,
``brier`` (mean), ``ece``, the expected calibration error over 20 equal-count bins of the facts
ordered by confidence (Naeini et al. 2015; Guo et al. 2017 §2, with equal-count instead of
equal-width bins): ``sum_b |B_b| / N * |accuracy(B_b) - confidence(B_b)|``, bins as
``numpy.array_split`` cuts the ordered facts (fewer than 20 facts: one per bin), and the
**accuracy-rejection curve** (Nadeem et al. 2009): the accuracy on the facts kept when the
least confident fraction r is set aside, ``ceil((1 - r) N)`` kept, for r = 0, 0.1, ..., 0.9
(``ar_0`` .. ``ar_90``); a calibrated model's curve rises with r. Facts are ordered by
confidence, ties by fact id, so every value is a function of the inputs alone.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

#: ECE bins (equal-count).
ECE_BINS = 20
#: Rejected fractions of the accuracy-rejection curve, in percent.
REJECT = tuple(range(0, 100, 10))

#: Columns of ``results/metrics/{suite}/{model}.confidence.parquet`` (docs/contracts.md).
CONFIDENCE_COLUMNS = ["prompt_id", "fact_id", "strategy", "n", "p_true", "confidence", "correct", "brier"]


def candidate_confidence(
    ent: pd.DataFrame,
    prompts: pd.DataFrame,
    candidates: pd.DataFrame,
    facts: pd.DataFrame,
    correct: pd.DataFrame,
    ns: Sequence[int],
    short_lists: str = "undefined",
) -> pd.DataFrame:
    """Per (prompt, strategy, n): ``p_true``, ``confidence``, ``correct`` (0/1) and ``brier``
    (module docstring) from the shared tables of a metrics job
    (:class:`factprobe.metrics.pipeline.SuiteFrame`)."""
    from factprobe.metrics.knowledge import _distractor_scores, _object_scores

    obj = _object_scores(ent, prompts, facts)[["prompt_id", "fact_id", "obj_logpl"]]
    dis = _distractor_scores(ent, prompts, candidates, correct)
    frame = dis.merge(obj[["prompt_id", "obj_logpl"]], on="prompt_id")
    if frame.empty:
        return pd.DataFrame(columns=CONFIDENCE_COLUMNS)
    frame = frame.sort_values(["prompt_id", "strategy", "rank", "entity"], kind="stable")
    frame["pos"] = frame.groupby(["prompt_id", "strategy"], sort=False).cumcount()
    frame["count"] = frame.groupby(["prompt_id", "strategy"], sort=False)["pos"].transform("size")
    out = []
    for n in sorted({int(x) for x in ns}):
        part = frame[frame["pos"] < n]
        if short_lists == "undefined":
            part = part[part["count"] >= n]
        if part.empty:
            continue
        keys = ["prompt_id", "fact_id", "strategy"]
        part = part.assign(top=part.groupby(keys, sort=False)["logpl"].transform("max"))
        # softmax over the object and the n distractors, shifted by the largest log Pl
        part = part.assign(shift=np.maximum(part["top"], part["obj_logpl"]))
        part = part.assign(e=np.exp(part["logpl"] - part["shift"]))
        part = part.assign(e2=part["e"] ** 2)
        g = part.groupby(keys, sort=True).agg(
            top=("top", "first"),
            obj=("obj_logpl", "first"),
            shift=("shift", "first"),
            s=("e", "sum"),
            s2=("e2", "sum"),
        )
        obj_e = np.exp(g["obj"] - g["shift"])
        total = obj_e + g["s"]
        p_true = obj_e / total
        right = (g["obj"] > g["top"]).astype(float)
        confidence = np.where(right > 0, p_true, np.exp(g["top"] - g["shift"]) / total)
        brier = (1 - p_true) ** 2 + g["s2"] / total**2
        table = pd.DataFrame(
            {"p_true": p_true, "confidence": confidence, "correct": right, "brier": brier}, index=g.index
        ).reset_index()
        table["n"] = n
        out.append(table)
    if not out:
        return pd.DataFrame(columns=CONFIDENCE_COLUMNS)
    return pd.concat(out, ignore_index=True)[CONFIDENCE_COLUMNS]


def fact_confidence(
    table: pd.DataFrame, strategy: str | None = None, n: int | None = None, confident: float = 0.8
) -> pd.DataFrame:
    """Per fact (index fact_id): the mean over its prompts (and over strategies / ns when
    ``strategy`` / ``n`` is None, as :func:`factprobe.metrics.timeline.fact_values` averages the
    measure) of ``p_true``, ``confidence``, ``correct``, ``brier`` and ``confidently_wrong``."""
    rows = table
    if strategy is not None:
        rows = rows[rows["strategy"].astype(str) == str(strategy)]
    if n is not None:
        rows = rows[pd.to_numeric(rows["n"], errors="coerce") == n]
    rows = rows.assign(
        confidently_wrong=((rows["correct"] < 0.5) & (rows["confidence"] >= confident)).astype(float),
        fact_id=rows["fact_id"].astype(str),
    )
    cols = ["p_true", "confidence", "correct", "brier", "confidently_wrong"]
    return rows.groupby("fact_id")[cols].mean()


def _order(facts: pd.DataFrame) -> pd.DataFrame:
    """Facts from least to most confident, ties by fact id."""
    return facts.assign(_id=facts.index.astype(str)).sort_values(["confidence", "_id"], kind="stable")


def ece(confidence: np.ndarray, correct: np.ndarray, bins: int = ECE_BINS) -> float:
    """Expected calibration error over ``bins`` equal-count bins of values already ordered by
    confidence (module docstring)."""
    total = len(confidence)
    if total == 0:
        return float("nan")
    parts = [p for p in np.array_split(np.arange(total), bins) if p.size]
    return float(sum(p.size / total * abs(correct[p].mean() - confidence[p].mean()) for p in parts))


def accuracy_rejection(correct_ordered: np.ndarray) -> list[float]:
    """Accuracy of the ``ceil((1 - r) N)`` most confident facts for each r of :data:`REJECT`
    (``correct_ordered``: least confident first)."""
    total = len(correct_ordered)
    out = []
    for pct in REJECT:
        kept = int(np.ceil(total * (100 - pct) / 100))
        out.append(float(correct_ordered[total - kept :].mean()) if kept else float("nan"))
    return out


def group_calibration(facts: pd.DataFrame) -> dict:
    """The module docstring's per-group values of per-fact rows (:func:`fact_confidence`)."""
    ordered = _order(facts)
    conf = ordered["confidence"].to_numpy(dtype=np.float64)
    right = ordered["correct"].to_numpy(dtype=np.float64)
    row = {
        "n_facts": len(ordered),
        "accuracy": float(right.mean()) if len(right) else float("nan"),
        "mean_confidence": float(conf.mean()) if len(conf) else float("nan"),
        "mean_p_true": float(ordered["p_true"].mean()) if len(ordered) else float("nan"),
        "brier": float(ordered["brier"].mean()) if len(ordered) else float("nan"),
        "ece": ece(conf, right),
        "confidently_wrong": float(ordered["confidently_wrong"].mean()) if len(ordered) else float("nan"),
    }
    row.update({f"ar_{pct}": v for pct, v in zip(REJECT, accuracy_rejection(right), strict=True)})
    return row


#: Columns of ``results/metrics/{suite}/slice_calibration.csv`` (docs/contracts.md).
CALIBRATION_COLUMNS = [
    "model",
    "strategy",
    "n",
    "part",
    "slice_start",
    "slice_end",
    "n_facts",
    "accuracy",
    "mean_confidence",
    "mean_p_true",
    "brier",
    "ece",
    "confidently_wrong",
    *[f"ar_{pct}" for pct in REJECT],
]

#: The parts that pool the dated slices up to / after the estimated cut-off.
BEFORE, AFTER = "before", "after"


def calibration_rows(per_fact: pd.DataFrame, facts: pd.DataFrame, cutoff_index: int | None) -> list[dict]:
    """Rows per slice (time order, static last) and, when the profile has a date
    (``cutoff_index`` k), for the dated slices 1..k (``before``) and k+1..N (``after``)."""
    from factprobe.metrics.timeline import STATIC, series_edges

    keyed = facts.astype({"fact_id": str}).drop_duplicates("fact_id").set_index("fact_id")
    edges = series_edges(facts)
    labels = [str(e) for e in edges[1:]]
    joined = per_fact.join(keyed["slice"], how="inner")
    rows = []
    for i, label in enumerate([*labels, STATIC]):
        start, end = ("", "") if label == STATIC else (str(edges[i]), str(edges[i + 1]))
        part = joined[joined["slice"] == label]
        rows.append({"part": label, "slice_start": start, "slice_end": end, **group_calibration(part)})
    if cutoff_index is not None and 0 <= cutoff_index < len(labels):
        k = cutoff_index
        for name, chosen, start, end in (
            (BEFORE, labels[:k], edges[0], edges[k]),
            (AFTER, labels[k:], edges[k], edges[-1]),
        ):
            part = joined[joined["slice"].isin(chosen)]
            rows.append(
                {"part": name, "slice_start": str(start), "slice_end": str(end), **group_calibration(part)}
            )
    return rows


def calibration_table(
    confidence: dict[str, pd.DataFrame],
    facts: pd.DataFrame,
    block: dict,
    profiles: pd.DataFrame,
) -> pd.DataFrame:
    """``slice_calibration.csv``: per model its :func:`calibration_rows` at the timeline block's
    strategy and n, split before/after the cut-off of its ``cutoff_profile.csv`` row (status
    ``within``; none otherwise)."""
    cut = profiles.set_index("model")
    rows = []
    for model in sorted(confidence):
        per_fact = fact_confidence(
            confidence[model], block.get("strategy"), block.get("n"), float(block.get("confident", 0.8))
        )
        k = None
        if model in cut.index and cut.loc[model, "cutoff_status"] == "within":
            k = int(cut.loc[model, "cutoff_index"])
        for row in calibration_rows(per_fact, facts, k):
            rows.append(
                {"model": model, "strategy": block.get("strategy") or "", "n": block.get("n") or 0, **row}
            )
    return pd.DataFrame(rows, columns=CALIBRATION_COLUMNS)
