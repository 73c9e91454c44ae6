"""Shared preparation of score tables for every measure (docs/contracts.md, metrics stage).

Every measure starts from the same two views of ``results/scores/{suite}/{model}.parquet``:

* per (prompt, entity): the plausibility ``Pl(e|c) = Σ_λ Pr(λ + EOS | c)`` (distractors paper
  §3.2 eq. 1) kept in log space (``logpl``, a logsumexp over the entity's forms), the best single
  form (``best_lp``), the best per-token log-probability (``best_norm``, the negative log of
  the lowest perplexity, PROBELM §4.1) and the best first-token log-probability (``best_first``);
* per prompt: the grouping keys ``GROUP_KEYS`` under which per-fact values are averaged.

Tie rule used by every measure in this package: a tie between a correct answer and a distractor
is counted as a failure for the correct answer.
"""

from __future__ import annotations

import logging

import numpy as np
import pandas as pd

from factprobe import contracts

log = logging.getLogger(__name__)

#: Prompt attributes a per-fact value is broken down by (averaged over the remaining ones:
#: templates and subject forms, i.e. the cloze sentences C(s, r) of distractors paper §3.2).
GROUP_KEYS = ["lang", "verbalization", "style", "shots"]

#: Columns of the per-fact table as the measures make it; the pipeline adds ``split``.
FACT_COLUMNS = [c for c in contracts.columns("fact_metrics") if c != "split"]

_PROMPT_DEFAULTS = {
    "lang": "en",
    "verbalization": "template",
    "style": "statement",
    "shots": "",
    "template_id": "",
}


class MetricsInputError(ValueError):
    """An input table lacks a contract column or holds inconsistent rows; names the file."""


def logsumexp_by(frame: pd.DataFrame, keys: list[str], column: str) -> pd.Series:
    """``log Σ exp(column)`` per group of ``keys``, stable for very negative log-probabilities."""
    peak = frame.groupby(keys, sort=False)[column].transform("max")
    shifted = np.exp(frame[column] - peak)
    total = shifted.groupby([frame[k] for k in keys], sort=False).sum()
    peak_first = peak.groupby([frame[k] for k in keys], sort=False).first()
    with np.errstate(divide="ignore"):  # a group of NaNs only (no end marker scored): NaN, not a warning
        return np.log(total) + peak_first


def entity_scores(scores: pd.DataFrame, source: str = "scores") -> pd.DataFrame:
    """One row per (prompt_id, entity): ``logpl``, ``best_lp``, ``best_norm``, ``best_first``, ``n_forms``.

    ``logpl`` is log Pl(e|c) of distractors paper §3.2 eq. (1): the forms' probabilities are
    summed, so an entity with several labels is not penalised for splitting its mass.
    """
    contracts.check(scores, "scores", source)
    frame = scores.copy()
    bad = ~np.isfinite(frame["logprob"].to_numpy(dtype=float))
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise MetricsInputError(f"{source}: row {row} has a non-finite logprob; re-run score_suite")
    frame["norm"] = frame["logprob"] / frame["n_tokens"].clip(lower=1)
    keys = ["prompt_id", "entity"]
    grouped = frame.groupby(keys, sort=False)
    out = grouped.agg(
        best_lp=("logprob", "max"),
        best_norm=("norm", "max"),
        best_first=("first_logprob", "max"),
        n_forms=("form", "size"),
    )
    out["logpl"] = logsumexp_by(frame, keys, "logprob")
    # log Σ_λ Pr(λ | c) without the end marker (distractors paper Table 2, Probability).
    frame["noend"] = frame["logprob"] - frame["end_logprob"]
    out["logpl_noend"] = logsumexp_by(frame, keys, "noend")
    out["first_rank"] = grouped["first_rank"].min()
    return out.reset_index()


def prompt_frame(prompts: pd.DataFrame, source: str = "prompts") -> pd.DataFrame:
    """Prompts with every grouping key a string (contract defaults for missing values)."""
    contracts.check(prompts, "prompts", source)
    frame = prompts.copy()
    for key, default in _PROMPT_DEFAULTS.items():
        frame[key] = frame[key].fillna(default).astype(str)
    frame["subject_form"] = frame["subject_form"].fillna("").astype(str)
    if frame["prompt_id"].duplicated().any():
        dup = frame.loc[frame["prompt_id"].duplicated(), "prompt_id"].iloc[0]
        raise MetricsInputError(f"{source}: prompt_id {dup!r} appears twice; prompt ids must be unique")
    return frame


def correct_entities(facts: pd.DataFrame, source: str = "facts") -> pd.DataFrame:
    """``(fact_id, entity)`` for every correct object of each fact: ``object`` ∪ ``objects``.

    N-M relations have several valid objects; a prediction of any of them is correct.
    """
    contracts.check(facts, "facts", source, ["fact_id", "object", "objects"])
    many = facts[["fact_id", "objects"]].explode("objects").dropna()
    rows = [
        facts[["fact_id", "object"]].rename(columns={"object": "entity"}),
        many.rename(columns={"objects": "entity"}),
    ]
    return pd.concat(rows, ignore_index=True).astype(str).drop_duplicates(ignore_index=True)


#: Form sources that count as correct per ``correct_set`` (None: every form). ``label`` and
#: ``alias`` come from the dump (entity_forms), ``inflected`` from the translate stage.
CORRECT_FORM_SOURCES = {"table1": ("label", "inflected"), "wide": None}


def own_form_table(facts: pd.DataFrame) -> pd.DataFrame | None:
    """``(fact_id, lang, form, source)`` of the facts table's ``own_forms`` (a released
    Fluent-mLAMA suite: the correct strings of each fact's own row per language,
    :func:`factprobe.probes.fluent.row_correct_forms`); None when the column is absent."""
    if "own_forms" not in facts.columns:
        return None
    rows = [
        (str(fact_id), str(f["lang"]), str(f["form"]), str(f["source"]))
        for fact_id, forms in zip(facts["fact_id"], facts["own_forms"], strict=True)
        if forms is not None
        for f in forms
    ]
    return pd.DataFrame(rows, columns=["fact_id", "lang", "form", "source"])


def correct_form_scores(
    scores: pd.DataFrame,
    correct: pd.DataFrame,
    forms: pd.DataFrame | None,
    correct_set: str = "wide",
    own: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """``scores`` without the rows of a correct object's forms that fall outside ``correct_set``.

    fluent-mLAMA Table 1 (§3.2) counts the object's label and its inflected forms ("we consider all
    forms (both non-inflected and possibly inflected) of object NEs as correct ones"); aliases join
    only in the "wide" setting of §5.2. With ``table1`` a correct entity's score row is kept when
    its (entity, lang, form) has source ``label`` or ``inflected`` in ``forms``; distractors keep
    every form (one competitor per entity, its best form). ``wide`` keeps every form.

    ``own`` (:func:`own_form_table`, a released Fluent-mLAMA suite): a fact with own rows in a
    language counts only those strings, as the authors' loader takes the row's own label and
    inflections (and aliases, wide), not the inflections the object got in other facts' sentences
    (:mod:`factprobe.probes.fluent`, "Correct set per row").
    """
    if correct_set not in CORRECT_FORM_SOURCES:
        raise ValueError(f"correct_set {correct_set!r}: use one of {sorted(CORRECT_FORM_SOURCES)}")
    sources = CORRECT_FORM_SOURCES[correct_set]
    has_own = own is not None and not own.empty
    if scores.empty or (sources is None and not has_own):
        return scores
    if forms is None and sources is not None:
        raise MetricsInputError(
            f"correct_set {correct_set}: the forms table (with its source column) is needed to tell "
            "labels from aliases; re-run retrieve_distractors"
        )
    key = ["entity", "lang", "form"]
    flags = (
        scores[["fact_id", *key]]
        .astype(str)
        .merge(correct.assign(_correct=True), on=["fact_id", "entity"], how="left")
    )
    if sources is None:
        allowed = np.ones(len(flags), dtype=bool)
    else:
        contracts.check(forms, "forms", "the suite's forms table")
        ok = forms[forms["source"].isin(sources)][key].astype(str).drop_duplicates()
        allowed = flags.merge(ok.assign(_allowed=True), on=key, how="left")["_allowed"].notna().to_numpy()
    if has_own:
        mine = own if sources is None else own[own["source"].isin(sources)]
        rowkey = ["fact_id", "lang", "form"]
        in_own = flags.merge(mine[rowkey].drop_duplicates().assign(_own=True), on=rowkey, how="left")
        has_row = flags.merge(
            own[["fact_id", "lang"]].drop_duplicates().assign(_row=True), on=["fact_id", "lang"], how="left"
        )
        row_known = has_row["_row"].notna().to_numpy()
        allowed = np.where(row_known, in_own["_own"].notna().to_numpy(), allowed)
    keep = flags["_correct"].isna().to_numpy() | allowed
    dropped = int((~keep).sum())
    if dropped:
        log.info(
            "correct_set %s: %d score row(s) of correct objects' other forms left out", correct_set, dropped
        )
    return scores[keep].reset_index(drop=True)


def average_per_fact(per_prompt: pd.DataFrame, extra_keys: list[str], measures: list[str]) -> pd.DataFrame:
    """Mean of per-prompt ``measures`` over a fact's prompts in each group (distractors paper eq. 3).

    ``per_prompt`` carries ``fact_id``, the ``GROUP_KEYS`` and ``extra_keys`` (e.g. strategy, n).
    Returns the long per-fact format of ``FACT_COLUMNS`` (missing keys filled with defaults).
    """
    keys = ["fact_id", *GROUP_KEYS, *extra_keys]
    if per_prompt.empty:
        return empty_fact_table()
    long = per_prompt.melt(id_vars=[*keys, "prompt_id"], value_vars=measures, var_name="measure")
    long = long.dropna(subset=["value"])
    out = (
        long.groupby([*keys, "measure"], sort=True, dropna=False)
        .agg(value=("value", "mean"), n_prompts=("prompt_id", "nunique"))
        .reset_index()
    )
    return conform_fact_table(out)


def empty_fact_table() -> pd.DataFrame:
    """An empty per-fact table with the contract columns and dtypes."""
    return conform_fact_table(pd.DataFrame(columns=FACT_COLUMNS))


def conform_fact_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Fill absent keys (strategy "", n 0) and fix dtypes so tables from every measure concatenate."""
    frame = frame.copy()
    for col in FACT_COLUMNS:
        if col not in frame.columns:
            frame[col] = 0 if col in ("n", "n_prompts") else ""
    frame["n"] = frame["n"].fillna(0).astype("int64")
    frame["n_prompts"] = frame["n_prompts"].fillna(0).astype("int64")
    frame["value"] = frame["value"].astype("float64")
    for col in ("fact_id", "measure", "strategy", *GROUP_KEYS):
        frame[col] = frame[col].fillna("").astype(str)
    return frame[FACT_COLUMNS].reset_index(drop=True)


def conform_dataset_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Fill absent keys of a suite-level table (strategy "", n 0, bin -1) and fix dtypes."""
    frame = frame.copy()
    for col in contracts.columns("suite_metrics"):
        if col not in frame.columns:
            frame[col] = -1 if col == "bin" else 0 if col == "n" else ""
    frame["n"] = frame["n"].fillna(0).astype("int64")
    frame["bin"] = frame["bin"].fillna(-1).astype("int64")
    frame["value"] = frame["value"].astype("float64")
    for col in ("measure", "strategy", *GROUP_KEYS):
        frame[col] = frame[col].fillna("").astype(str)
    return frame[contracts.columns("suite_metrics")].reset_index(drop=True)


def candidates_for_prompts(prompts: pd.DataFrame, candidates: pd.DataFrame) -> pd.DataFrame:
    """Candidates of each prompt: the fact's candidate rows whose ``lang`` (when given) is the prompt's.

    Per-language candidate lists (e.g. the same-relation pool of Fluent-mLAMA §3.1, sampled per
    language) then only compete in prompts of their own language. Likewise a row with a
    ``prompt_id`` (ApprOpt's per-sentence lists, distractors paper §3.3) belongs to that prompt only;
    a row without one (null) to every prompt of its fact.
    """
    contracts.check(candidates, "candidates", "candidates", ["fact_id", "entity", "lang"])
    rows = prompts[["prompt_id", "fact_id", "lang"]].merge(candidates, on="fact_id", suffixes=("", "_cand"))
    cand_lang = rows["lang_cand"].fillna("").astype(str)
    rows = rows[(cand_lang == "") | (cand_lang == rows["lang"])].drop(columns="lang_cand")
    if "prompt_id_cand" in rows.columns:
        # ApprOpt's per-sentence lists: an optional column of ApprOpt candidate rows only
        own = rows["prompt_id_cand"]
        rows = rows[own.isna() | (own == rows["prompt_id"])].drop(columns="prompt_id_cand")
    return rows.drop(columns="lang")


def object_slot_only(candidates: pd.DataFrame) -> pd.DataFrame:
    """Drop subject-side alternatives (PROBELM Algorithm 1's swapped subjects): every measure here
    compares continuations of one prompt, which only object-slot candidates are."""
    side = candidates["side"].fillna("object").astype(str)
    dropped = int((side == "subject").sum())
    if dropped:
        log.info("%d subject-side candidate row(s) left out (they need their own prompts)", dropped)
    return candidates[side != "subject"]
