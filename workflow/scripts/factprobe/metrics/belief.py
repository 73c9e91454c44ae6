"""BELIEF measures (belief-myriadlama.txt §2–3, §7) from candidate ranking or from generations.

Per prompt a *prediction*, whether it is *correct* and a *confidence* are derived, by one of three
modes:

* ``vocabulary`` (§2.1, measures ``belief_*``): the prediction is ŵ = argmax of the output
  distribution over the whole vocabulary, i.e. the most probable next token after the prompt
  (rank 1 of the top-k table); it is correct when it is one of the names of a correct object
  according to the model's tokenizer: both strings through the tokenizer's own normalization
  (:func:`factprobe.lm.encoding.tokenizer_normalizer`: an uncased BERT or ALBERT lower-cases, so
  its "japan" is "Japan"), whitespace stripped, so only single-token names can match, as
  MyriadLAMA's single-token objects; a job without the tokenizer (causal LMs, whose next token
  keeps the case of its vocabulary) compares them stripped only. The confidence is that token's
  probability o_max (§2.4). Acc@1, Ovconf and coverage all follow this one ``correct``.
* ``candidates`` (measures ``belief_cand_*``, a closed-set variant that is NOT the paper's): the
  prediction is the candidate (correct objects ∪ every strategy's distractors) with the highest
  Pl(e|c); the confidence is its probability renormalised over the candidate set. Ties are broken
  against the correct objects (a tie counts as a failure), then by entity id.
* ``generation`` (BELIEF-ICL, §3.2): the prediction is the greedy output (``sample`` 0); it is
  correct if a correct object's form is included in it (one-directional match); the confidence is
  the share of the other samples that match the greedy output (bi-directional match). Both
  matches use the one normaliser of this module (``normalize``).

From these, over the (subject, relation) pairs T of a group of prompts:

* Acc@1 averaged over N samplings of one prompt per pair, with range and SD (§2.2; the SD is
  the population SD of the N accuracies);
* Consist: pairwise agreement of predictions across a pair's prompts, averaged over the pairs
  (§2.3, eq. 1: one term per pair t ∈ T, so an N-M pair with k facts counts once; a pair with a
  single prompt has no prompt pair and is left out of the mean);
* Ovconf with M equal-size confidence bins (§2.4, eq. 2; bins of sizes differing by at most one
  when M does not divide |P|; each bin weighs |P(i)| / |P|, which is 1/M for equal bins);
* average / maximum / oracle knowledge coverage (§7), each over pairs.

P_t is *every* prompt of pair t (§2.1): all its templates, whatever their style (statement,
question, completion), and all its subject expressions. The measures are therefore computed per
:data:`BELIEF_KEYS` (language, verbalization, context setting), pooled over styles, and written
with ``style`` "". The per-style values are a breakdown, written as ``{measure}_by_style`` rows
with the style filled in (:data:`BREAKDOWN_SUFFIX`); they are not the paper's measures.

A pair's prompts are de-duplicated by prompt text, so the identical prompts of an N-M pair's
several facts count once; any of the pair's objects is a correct answer.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd
from tqdm import tqdm

from ..hashing import stable_hash
from .common import GROUP_KEYS, candidates_for_prompts

_WORD = re.compile(r"\w+", re.UNICODE)

#: The prompt attributes BELIEF's prompt sets are split by. Not ``style``: P_t holds all prompts
#: of a pair (§2.1, MyriadLAMA mixes statement and question templates, App. A.3 and E.3).
BELIEF_KEYS = [k for k in GROUP_KEYS if k != "style"]

#: Suffix of the per-style breakdown rows (``belief_consist_by_style`` etc.).
BREAKDOWN_SUFFIX = "_by_style"

#: How Consist compares two predictions, per measure prefix (§2.3; §3.2 for generations).
MATCHES = {"belief": "exact", "belief_cand": "exact", "belief_icl": "two_way"}


# --------------------------------------------------------------------------- string matching (§3.2)


#: Columns of a prediction table, from candidate ranking and from generations alike.
PREDICTION_COLUMNS = [
    "prompt_id",
    "pair",
    "property",
    "template_id",
    *GROUP_KEYS,
    "prediction",
    "correct",
    "confidence",
]


_KEEP_S = ("ss", "us", "is", "os", "as")


def lemma(word: str) -> str:
    """Rule-based English lemma of a lower-cased word (plural nouns, 3rd person -s).

    A small, deterministic stand-in for a lemmatiser (no NLP dependency): §3.2 needs number and
    article variation to collapse ("guitars" ~ "a guitar", "cities" ~ "city"). Words of three
    letters or fewer are kept, as are -ss/-us/-is/-os/-as endings ("Texas", "Paris").
    """
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 4 and word.endswith(("sses", "xes", "ches", "shes", "zes")):
        return word[:-2]
    if len(word) > 3 and word.endswith("s") and not word.endswith(_KEEP_S):
        return word[:-1]
    return word


def normalize(text: str, lang: str = "en") -> tuple[str, ...]:
    """Tokens of ``text`` NFKC-normalised, lower-cased and, for English, lemmatised (§3.2).

    The only answer normaliser of the project: Acc (one-way) and Consist/confidence (two-way)
    both compare these token tuples.
    """
    tokens = _WORD.findall(unicodedata.normalize("NFKC", str(text or "")).lower())
    if lang == "en":
        tokens = [lemma(t) for t in tokens]
    return tuple(tokens)


def contains(haystack: Sequence[str], needle: Sequence[str]) -> bool:
    """True if the token list ``needle`` occurs contiguously in ``haystack`` (empty never matches)."""
    k = len(needle)
    if k == 0 or k > len(haystack):
        return False
    first = needle[0]
    return any(
        haystack[i] == first and tuple(haystack[i : i + k]) == tuple(needle)
        for i in range(len(haystack) - k + 1)
    )


def one_way_match(generated: Sequence[str], answer: Sequence[str]) -> bool:
    """Accuracy matching of §3.2: the answer is included in the generated text."""
    return contains(generated, answer)


def two_way_match(a: Sequence[str], b: Sequence[str]) -> bool:
    """Consistency/confidence matching of §3.2: either normalised string includes the other."""
    return contains(a, b) or contains(b, a)


# --------------------------------------------------------------------------- per-prompt predictions


def _pairs(prompts: pd.DataFrame, facts: pd.DataFrame) -> pd.DataFrame:
    """Prompts with their (subject, relation) pair, de-duplicated by text within the pair."""
    keys = facts[["fact_id", "subject", "property"]].astype(str)
    keys["pair"] = keys["subject"] + "|" + keys["property"]
    frame = prompts.drop(columns=["pair", "property"], errors="ignore").merge(
        keys[["fact_id", "pair", "property"]], on="fact_id"
    )
    frame["_dedup"] = frame["context"].fillna("").astype(str) + frame["text"].fillna("").astype(str)
    frame = frame.sort_values("prompt_id", kind="stable").drop_duplicates(["pair", *BELIEF_KEYS, "_dedup"])
    return frame.drop(columns="_dedup")


def _pair_correct(facts: pd.DataFrame, correct: pd.DataFrame) -> pd.DataFrame:
    """(pair, entity) for every correct object of the pair (union over the pair's facts)."""
    keys = facts[["fact_id", "subject", "property"]].astype(str)
    keys["pair"] = keys["subject"] + "|" + keys["property"]
    return correct.merge(keys[["fact_id", "pair"]], on="fact_id")[["pair", "entity"]].drop_duplicates()


def ranking_predictions(
    ent: pd.DataFrame,
    prompts: pd.DataFrame,
    candidates: pd.DataFrame,
    facts: pd.DataFrame,
    correct: pd.DataFrame,
) -> pd.DataFrame:
    """Per prompt: pair, prediction (entity id), correct (0/1), confidence, template_id + group keys."""
    frame = _pairs(prompts, facts)
    good = _pair_correct(facts, correct)
    # Every fact of the pair contributes its candidates (in the prompt's language) to the pool.
    fact_pair = facts[["fact_id", "subject", "property"]].astype(str)
    fact_pair = pd.DataFrame(
        {"fact_id": fact_pair["fact_id"], "pair": fact_pair["subject"] + "|" + fact_pair["property"]}
    )
    pair_prompts = frame[["prompt_id", "pair", "lang"]].merge(fact_pair, on="pair")[
        ["prompt_id", "fact_id", "lang"]
    ]
    cands = candidates_for_prompts(pair_prompts, candidates)[["prompt_id", "entity"]]
    goods = frame[["prompt_id", "pair"]].merge(good, on="pair")[["prompt_id", "entity"]]
    pool = pd.concat([cands, goods], ignore_index=True).drop_duplicates()
    rows = pool.merge(frame[["prompt_id", "pair"]], on="prompt_id")
    rows = rows.merge(ent[["prompt_id", "entity", "logpl"]], on=["prompt_id", "entity"])
    rows = rows.merge(good.assign(is_correct=1), on=["pair", "entity"], how="left")
    rows["is_correct"] = rows["is_correct"].fillna(0).astype(int)
    # A prompt whose correct objects were all left unscored has no meaningful prediction.
    rows = rows[rows.groupby("prompt_id")["is_correct"].transform("max") == 1]
    cols = PREDICTION_COLUMNS
    if rows.empty:
        return pd.DataFrame(columns=cols)
    peak = rows.groupby("prompt_id")["logpl"].transform("max")
    rows["mass"] = np.exp(rows["logpl"] - peak)
    total = rows.groupby("prompt_id")["mass"].sum()
    rows = rows.sort_values(
        ["prompt_id", "logpl", "is_correct", "entity"], ascending=[True, False, True, True]
    )
    top = rows.drop_duplicates("prompt_id").set_index("prompt_id")
    out = pd.DataFrame(
        {
            "prediction": top["entity"],
            "correct": top["is_correct"].astype(float),
            "confidence": 1.0 / total.reindex(top.index),
        }
    )
    out = out.reset_index().merge(frame, on="prompt_id")
    return out[cols]


def candidate_predictions(
    ent: pd.DataFrame,
    prompts: pd.DataFrame,
    candidates: pd.DataFrame,
    facts: pd.DataFrame,
    correct: pd.DataFrame,
) -> pd.DataFrame:
    """The closed-set variant (``belief_cand_*``): argmax over the candidates, renormalised confidence."""
    return ranking_predictions(ent, prompts, candidates, facts, correct)


def vocabulary_predictions(
    topk: pd.DataFrame,
    scores: pd.DataFrame,
    prompts: pd.DataFrame,
    facts: pd.DataFrame,
    correct: pd.DataFrame,
    normalize: Callable[[str], str] | None = None,
) -> pd.DataFrame:
    """BELIEF per prompt (§2.1, §2.4): ŵ = argmax over the vocabulary, correct, confidence o_max.

    ``topk`` holds each prompt's next tokens (``prompt_id, rank, token, logprob``; rank 1 is the
    vocabulary argmax). The names of the pair's correct objects are the forms scored for the
    prompt (``scores``: ``prompt_id, entity, form``). ŵ is correct when ``normalize`` (the model
    tokenizer's :func:`~factprobe.lm.encoding.tokenizer_normalizer`; None: whitespace stripped)
    maps it and one of those names to the same string; the prediction compared by Consist (§2.3)
    is that normalized token. A prompt without top-k rows, or whose correct objects have no
    scored name, is left out.
    """
    norm = normalize or _stripped
    cols = PREDICTION_COLUMNS
    if topk is None or topk.empty:
        return pd.DataFrame(columns=cols)
    frame = _pairs(prompts, facts)
    good = _pair_correct(facts, correct)
    top = topk[pd.to_numeric(topk["rank"]) == 1][["prompt_id", "token", "logprob"]].drop_duplicates(
        "prompt_id"
    )
    top = top.assign(word=[norm(t) for t in top["token"].astype(str)])
    names = frame[["prompt_id", "pair"]].merge(good, on="pair")
    names = names.merge(scores[["prompt_id", "entity", "form"]].astype(str), on=["prompt_id", "entity"])
    words = {f: norm(f) for f in names["form"].unique()}
    names = names.assign(word=names["form"].map(words))[["prompt_id", "word"]].drop_duplicates()
    judged = top[top["prompt_id"].isin(set(names["prompt_id"]))]
    hit = judged.merge(names.assign(_hit=1.0), on=["prompt_id", "word"], how="left")
    hit = hit.drop_duplicates("prompt_id")
    out = pd.DataFrame(
        {
            "prompt_id": hit["prompt_id"],
            "prediction": hit["word"],
            "correct": hit["_hit"].fillna(0.0).astype(float),
            "confidence": np.exp(hit["logprob"].astype(float)),
        }
    )
    if out.empty:
        return pd.DataFrame(columns=cols)
    return out.merge(frame, on="prompt_id")[cols]


def _stripped(text: str) -> str:
    return str(text).strip()


def generation_predictions(
    generations: pd.DataFrame,
    prompts: pd.DataFrame,
    facts: pd.DataFrame,
    correct: pd.DataFrame,
    forms: pd.DataFrame,
) -> pd.DataFrame:
    """BELIEF-ICL per prompt (§3.2): normalised greedy output, correct (one-way), confidence.

    ``forms`` (entity, lang, form) gives the answer strings of the correct objects in the prompt's
    language. Confidence is NaN for a prompt without extra samples.
    """
    frame = _pairs(prompts, facts)
    good = _pair_correct(facts, correct)
    answers = good.merge(forms[["entity", "lang", "form"]], on="entity")
    answers["tokens"] = [normalize(f, lang) for f, lang in zip(answers["form"], answers["lang"], strict=True)]
    by_pair_lang = answers.groupby(["pair", "lang"])["tokens"].apply(list).to_dict()
    gens = generations[generations["prompt_id"].isin(frame["prompt_id"])]
    lang_of = frame.set_index("prompt_id")["lang"].to_dict()
    pair_of = frame.set_index("prompt_id")["pair"].to_dict()
    records = []
    groups = gens.groupby("prompt_id", sort=True)
    for pid, group in tqdm(
        groups, total=groups.ngroups, desc="BELIEF-ICL matching", unit="prompt", disable=None
    ):
        lang = lang_of[pid]
        greedy_rows = group[group["sample"] == 0]
        if greedy_rows.empty:
            continue
        greedy = normalize(greedy_rows["text"].iloc[0], lang)
        samples = [normalize(t, lang) for t in group.loc[group["sample"] > 0, "text"]]
        ans = by_pair_lang.get((pair_of[pid], lang), [])
        conf = float(np.mean([two_way_match(greedy, s) for s in samples])) if samples else float("nan")
        records.append(
            {
                "prompt_id": pid,
                "prediction": " ".join(greedy),
                "correct": float(any(one_way_match(greedy, a) for a in ans)),
                "confidence": conf,
            }
        )
    cols = PREDICTION_COLUMNS
    if not records:
        return pd.DataFrame(columns=cols)
    return pd.DataFrame.from_records(records).merge(frame, on="prompt_id")[cols]


# --------------------------------------------------------------------------- measures


def consistency(predictions: Sequence[str], match: str = "exact") -> float:
    """Share of prompt pairs of one (s, r) with matching predictions (§2.3 eq. 1); NaN if < 2 prompts.

    ``match="exact"`` compares entity ids (ranking mode); ``"two_way"`` compares normalised
    generated strings with bi-directional inclusion (§3.2, generation mode).
    """
    k = len(predictions)
    if k < 2:
        return float("nan")
    if match == "exact":
        _, counts = np.unique(np.asarray(predictions, dtype=object).astype(str), return_counts=True)
        agree = float((counts * (counts - 1) / 2).sum())
    else:
        toks = [tuple(str(p).split()) for p in predictions]
        agree = float(sum(two_way_match(toks[i], toks[j]) for i in range(k) for j in range(i + 1, k)))
    return agree / (k * (k - 1) / 2)


_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)


def splitmix64(x: np.ndarray) -> np.ndarray:
    """SplitMix64 finaliser of uint64 values (vectorised; wraps modulo 2**64 by design)."""
    with np.errstate(over="ignore"):
        z = x.astype(np.uint64, copy=True)
        z = (z ^ (z >> np.uint64(30))) * _MIX1
        z = (z ^ (z >> np.uint64(27))) * _MIX2
        return z ^ (z >> np.uint64(31))


def sampled_accuracies(
    per_prompt: pd.DataFrame, n_samplings: int, seed: str = "belief", chunk_cells: int = 20_000_000
) -> np.ndarray:
    """Acc@1 of N prompt sets, each holding one prompt per (s, r) pair (§2.2).

    Prompt i of pair t in sampling j is ``splitmix64(stable_hash(seed, t) + (j + 1) * φ) mod
    |P_t|`` over the pair's prompts sorted by prompt id (φ = 0x9E3779B97F4A7C15), so the draw
    does not depend on row order; it is vectorised over pairs and samplings, so the paper's
    N = 50,000 (§5.1) over tens of thousands of pairs takes seconds.
    """
    groups = [
        (pair, g.sort_values("prompt_id")["correct"].to_numpy(dtype=float))
        for pair, g in per_prompt.groupby("pair", sort=True)
    ]
    if not groups:
        return np.array([])
    base = np.array([stable_hash(seed, pair) for pair, _ in groups], dtype=np.uint64)
    sizes = np.array([len(vals) for _, vals in groups], dtype=np.uint64)
    offsets = np.concatenate([[0], np.cumsum([len(vals) for _, vals in groups])[:-1]]).astype(np.int64)
    flat = np.concatenate([vals for _, vals in groups])
    accs = np.empty(n_samplings)
    step = max(1, chunk_cells // len(groups))
    for start in range(0, n_samplings, step):
        js = np.arange(start, min(start + step, n_samplings), dtype=np.uint64)
        with np.errstate(over="ignore"):
            keys = base[None, :] + (js[:, None] + np.uint64(1)) * _GOLDEN
        idx = (splitmix64(keys) % sizes[None, :]).astype(np.int64)
        accs[start : start + len(js)] = flat[offsets[None, :] + idx].mean(axis=1)
    return accs


def accuracy_fluctuation(accs: np.ndarray) -> dict[str, float]:
    """Mean, range (max - min) and population SD of the N sampled accuracies (§2.2)."""
    if accs.size == 0:
        return {"acc_mean": float("nan"), "acc_range": float("nan"), "acc_sd": float("nan")}
    return {
        "acc_mean": float(accs.mean()),
        "acc_range": float(accs.max() - accs.min()),
        "acc_sd": float(accs.std()),
    }


def calibration_bins(
    confidence: Sequence[float], correct: Sequence[float], n_bins: int = 10, keys: Sequence[str] | None = None
) -> pd.DataFrame:
    """Equal-size bins of prompts sorted by descending confidence (§2.4): bin, size, conf, acc.

    ``keys`` (e.g. prompt ids) break confidence ties so the split is deterministic. With fewer
    prompts than bins each prompt is its own bin.
    """
    conf = np.asarray(confidence, dtype=float)
    acc = np.asarray(correct, dtype=float)
    ok = np.isfinite(conf)
    conf, acc = conf[ok], acc[ok]
    tie = np.asarray(keys, dtype=object)[ok].astype(str) if keys is not None else np.arange(conf.size)
    if conf.size == 0:
        return pd.DataFrame(columns=["bin", "size", "conf", "acc"])
    order = np.lexsort((tie, -conf))
    chunks = np.array_split(order, min(n_bins, conf.size))
    return pd.DataFrame(
        {
            "bin": np.arange(len(chunks)),
            "size": [len(c) for c in chunks],
            "conf": [float(conf[c].mean()) for c in chunks],
            "acc": [float(acc[c].mean()) for c in chunks],
        }
    )


def overconfidence(bins: pd.DataFrame) -> float:
    """Ovconf of §2.4 eq. (2): Σ_i (|P(i)| / |P|) (mean confidence_i − Acc@1_i)."""
    if bins.empty:
        return float("nan")
    weight = bins["size"] / bins["size"].sum()
    return float((weight * (bins["conf"] - bins["acc"])).sum())


def coverage(per_prompt: pd.DataFrame, accs: np.ndarray) -> dict[str, float]:
    """Knowledge coverage of §7: average (mean sampled Acc@1), maximum and oracle.

    maximum: per relation, the template with the best accuracy, where a pair counts as correct
    under a template if any of that template's prompts (subject forms) is correct; relations are
    weighted by their number of pairs. oracle: share of pairs with at least one correct prompt.
    """
    if per_prompt.empty:
        return {"cov_average": float("nan"), "cov_maximum": float("nan"), "cov_oracle": float("nan")}
    by_tpl = per_prompt.groupby(["property", "template_id", "pair"])["correct"].max().reset_index()
    tpl_acc = by_tpl.groupby(["property", "template_id"])["correct"].mean()
    best = tpl_acc.groupby(level="property").max()
    pairs_per_rel = per_prompt.groupby("property")["pair"].nunique()
    maximum = float((best * pairs_per_rel.reindex(best.index)).sum() / pairs_per_rel.sum())
    oracle = float(per_prompt.groupby("pair")["correct"].max().mean())
    average = float(accs.mean()) if accs.size else float("nan")
    return {"cov_average": average, "cov_maximum": maximum, "cov_oracle": oracle}


def pair_consistency(per_prompt: pd.DataFrame, match: str) -> pd.Series:
    """Consistency of each pair t over all its prompts P_t (§2.3, the term of eq. 1), indexed by pair.

    NaN for a pair with fewer than two prompts (eq. 1 has no prompt pair to compare there).
    """
    if per_prompt.empty:
        return pd.Series(dtype=float)
    return per_prompt.groupby("pair", sort=True)["prediction"].agg(lambda p: consistency(list(p), match))


def mean_consistency(per_prompt: pd.DataFrame, match: str) -> float:
    """Consist of §2.3 eq. (1): the mean over pairs t ∈ T of :func:`pair_consistency`.

    Every pair counts once, however many facts (objects) it has; pairs with a single prompt are
    left out (NaN when no pair has two prompts).
    """
    per_pair = pair_consistency(per_prompt, match).dropna()
    return float(per_pair.mean()) if len(per_pair) else float("nan")


def belief_per_fact(per_prompt: pd.DataFrame, facts: pd.DataFrame, prefix: str, match: str) -> pd.DataFrame:
    """Per-fact BELIEF values over all prompts of the fact's pair (``style`` ""): ``{prefix}_acc``
    (the share of P_t predicted right) and ``{prefix}_conf`` (the mean confidence over P_t).

    Every fact of a pair gets the pair's values. Consist and coverage are not per-fact values:
    eq. (1) and §7 average over pairs, so they are written by :func:`belief_dataset` only (a
    mean over facts would count an N-M pair once per object). ``match`` is unused here and kept
    for the callers' signature.
    """
    from .common import conform_fact_table

    del match
    if per_prompt.empty:
        return conform_fact_table(pd.DataFrame())
    rows = []
    for (pair, *key), g in per_prompt.groupby(["pair", *BELIEF_KEYS], sort=True):
        values = {
            "acc": float(g["correct"].mean()),
            "conf": float(g["confidence"].mean()) if g["confidence"].notna().any() else float("nan"),
        }
        where = {"pair": pair, **dict(zip(BELIEF_KEYS, key, strict=True)), "style": ""}
        rows += [
            {**where, "measure": f"{prefix}_{name}", "value": value, "n_prompts": len(g)}
            for name, value in values.items()
        ]
    table = pd.DataFrame(rows).dropna(subset=["value"])
    keys = facts[["fact_id", "subject", "property"]].astype(str)
    keys["pair"] = keys["subject"] + "|" + keys["property"]
    table = table.merge(keys[["fact_id", "pair"]], on="pair").drop(columns="pair")
    return conform_fact_table(table)


def group_measures(
    group: pd.DataFrame, match: str, n_samplings: int, n_bins: int, seed: str
) -> tuple[dict[str, float], pd.DataFrame]:
    """BELIEF's suite-level values of one prompt set and its calibration bins (§2.2–2.4, §7).

    Returns ``({acc_mean, acc_range, acc_sd, consist, ovconf, cov_average, cov_maximum,
    cov_oracle}, bins)``.
    """
    accs = sampled_accuracies(group, n_samplings, seed=seed)
    values = {**accuracy_fluctuation(accs), "consist": mean_consistency(group, match)}
    bins = calibration_bins(group["confidence"], group["correct"], n_bins, keys=group["prompt_id"])
    values["ovconf"] = overconfidence(bins)
    values.update(coverage(group, accs))
    return values, bins


def belief_dataset(
    per_prompt: pd.DataFrame, prefix: str, n_samplings: int, n_bins: int, match: str | None = None
) -> pd.DataFrame:
    """Suite-level BELIEF rows: the measures pooled over every prompt of each pair, and a per-style breakdown.

    Per :data:`BELIEF_KEYS` group, ``style`` "": ``{prefix}_acc_mean/_acc_range/_acc_sd``,
    ``_consist``, ``_ovconf``, ``_cov_average/_cov_maximum/_cov_oracle`` and the calibration bins
    ``_calib_conf/_calib_acc`` — the paper's measures over P_t (§2.1–2.4, §7). Then the same
    values (no bins) per style, named ``{prefix}_{name}_by_style``: how each style alone would
    score. An undefined value (Consist where no pair has two prompts, Ovconf without any
    confidence) gets no row. ``match`` defaults to the prefix's entry in :data:`MATCHES`.
    """
    from .common import conform_dataset_table

    match = match or MATCHES.get(prefix, "exact")
    rows = []
    for key, g in per_prompt.groupby(BELIEF_KEYS, sort=True):
        where = {**dict(zip(BELIEF_KEYS, key, strict=True)), "style": ""}
        values, bins = group_measures(g, match, n_samplings, n_bins, f"{prefix}|{'|'.join(key)}")
        rows += [
            {**where, "measure": f"{prefix}_{name}", "value": value}
            for name, value in values.items()
            if np.isfinite(value)
        ]
        for b in bins.itertuples():
            rows.append({**where, "measure": f"{prefix}_calib_conf", "value": b.conf, "bin": b.bin})
            rows.append({**where, "measure": f"{prefix}_calib_acc", "value": b.acc, "bin": b.bin})
    for key, g in per_prompt.groupby(GROUP_KEYS, sort=True):
        where = dict(zip(GROUP_KEYS, key, strict=True))
        values, _ = group_measures(g, match, n_samplings, n_bins, f"{prefix}|{'|'.join(key)}")
        rows += [
            {**where, "measure": f"{prefix}_{name}{BREAKDOWN_SUFFIX}", "value": value}
            for name, value in values.items()
            if np.isfinite(value)
        ]
    return conform_dataset_table(pd.DataFrame(rows))
