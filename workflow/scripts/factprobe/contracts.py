"""The table contracts of docs/contracts.md in code: one Arrow schema per table, checked I/O, ids.

Every stage reads and writes its tables through :func:`read` / :func:`write` with the table's
name, so a missing column fails at the boundary with the file and the columns named, and the
written types are the contract's whatever pandas inferred. A contract lists the columns a
reader may rely on: writers may add columns (kept as written), never drop or rename one.
``tests/unit/test_contracts.py`` checks that docs/contracts.md lists the same tables and columns.

Ids: big tables use integers (``Q42 -> 42``, ``P19 -> 19``), benchmark tables strings; the
helpers below are the only parsers and formatters of both forms and of fact keys.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

import numpy as np
import pandas as pd
import pyarrow as pa

from factprobe.io import atomic_path, read_table, write_table

S, I8, I32, I64, F64, B = pa.string(), pa.int8(), pa.int32(), pa.int64(), pa.float64(), pa.bool_()
DATES = [("start", I32), ("end", I32), ("point_in_time", I32)]
TRIPLE = [("subject", I64), ("property", I32), ("object", I64)]
FORMS = [("entity", S), ("lang", S), ("form", S), ("source", S)]
PROMPTS = [
    ("prompt_id", S),
    ("fact_id", S),
    ("lang", S),
    ("template_id", S),
    ("style", S),
    ("subject_form", S),
    ("text", S),
    ("context", S),
    ("verbalization", S),
    ("shots", S),
    ("subject_form_index", I32),
    ("property", S),
]
# score_shard writes these; score_suite adds the first token's vocabulary rank.
SCORE_SHARD = [
    ("prompt_id", S),
    ("entity", S),
    ("form", S),
    ("logprob", F64),
    ("n_tokens", I32),
    ("first_logprob", F64),
    ("end_logprob", F64),
    ("fact_id", S),
    ("lang", S),
]
CANDIDATES = [
    ("fact_id", S),
    ("entity", S),
    ("role", S),
    ("strategy", S),
    ("rank", I32),
    ("relevance", F64),
    ("side", S),
    ("source", S),
    ("lang", S),
    ("score", F64),
]
GROUP = [("lang", S), ("verbalization", S), ("style", S), ("shots", S)]
#: A headline value next to its bootstrap interval (metrics stage; the leaderboard adds suite and rank).
HEADLINE = [
    ("measure", S),
    ("strategy", S),
    ("n", I64),
    ("model", S),
    ("value", F64),
    ("ci_low", F64),
    ("ci_high", F64),
    ("n_facts", I64),
    ("n_used", F64),
    ("chance", F64),
    ("same_as", S),
]

#: Table name -> contract schema (docs/contracts.md, "Paths, rules, tables").
#: compute_metrics' per-fact table (also the columns of cloze_subsets', plus ``n_cloze``).
FACT_METRICS = [
    ("fact_id", S),
    ("measure", S),
    ("value", F64),
    ("strategy", S),
    ("n", I64),
    *GROUP,
    ("n_prompts", I64),
    ("split", S),
]

SCHEMAS: dict[str, pa.Schema] = {
    # extract_dump: results/wikidata/{dump}/
    "entities": pa.schema([("id", I64), ("kind", S), ("sitelinks", I32), ("modified", S), ("created", I32)]),
    "labels": pa.schema([("id", I64), ("lang", S), ("text", S), ("is_alias", B)]),
    "claims": pa.schema([*TRIPLE, ("rank", I8), *DATES]),
    "types": pa.schema([("id", I64), ("type", I64), ("via", S)]),
    "properties": pa.schema([("id", I64), ("datatype", S), ("single_value", B), ("label", S)]),
    # diff_dumps, temporal_view
    "changes": pa.schema(
        [*TRIPLE, ("status", S), ("rule", S), ("is_replace", B), *DATES, ("flag", S), ("single_value", B)]
    ),
    "temporal": pa.schema([*TRIPLE, ("status", S), *DATES, ("source", S), ("truthy", B), ("last_seen", S)]),
    # build_probes: results/probes/{suite}/
    "facts": pa.schema(
        [
            ("fact_id", S),
            ("subject", S),
            ("property", S),
            ("object", S),
            ("objects", pa.list_(S)),
            ("popularity", I64),
            ("stratum", I64),
            ("split", S),
            ("dump", S),
        ]
    ),
    "prompts": pa.schema([*PROMPTS, ("demos", pa.list_(S))]),
    "entity_forms": pa.schema(FORMS),
    # translate_prompts: only the new rows (prompts / forms plus provenance)
    "translated_prompts": pa.schema(
        [
            *PROMPTS,
            ("source_prompt_id", S),
            ("source_text", S),
            ("mt_input", S),
            ("translation", S),
            ("object_form", S),
            ("object_score", F64),
            ("object_via", S),
            ("subject_found", B),
            ("mt_model", S),
        ]
    ),
    "translated_forms": pa.schema([*FORMS, ("n_sentences", I32)]),
    # build_subject_swaps: PROBELM's subject swaps as prompts (factprobe.distractors.swaps)
    "subject_swaps": pa.schema(
        [
            *PROMPTS,
            ("ending", S),
            ("group_prompt_id", S),
            ("subject", S),
            ("object", S),
            ("object_form", S),
        ]
    ),
    # retrieve_distractors / appropt_distractors
    "candidates": pa.schema(CANDIDATES),
    "forms": pa.schema(FORMS),
    "appropt": pa.schema([*CANDIDATES[:6], ("score", F64), ("form", S), ("prompt_id", S), ("found", I32)]),
    # train_control
    "split": pa.schema([("subject", S), ("property", S), ("object", S), ("split", S)]),
    # score_suite / generate_suite: results/scores/{suite}/
    "scores": pa.schema([*SCORE_SHARD, ("first_rank", F64)]),
    "score_shard": pa.schema(SCORE_SHARD),
    "topk": pa.schema([("prompt_id", S), ("rank", I32), ("token_id", I64), ("token", S), ("logprob", F64)]),
    "generations": pa.schema([("prompt_id", S), ("sample", I32), ("text", S), ("logprob", F64)]),
    # compute_metrics: results/metrics/{suite}/
    "fact_metrics": pa.schema(FACT_METRICS),
    # candidate_confidence (timeline suites): the candidates' softmax per (prompt, strategy, n)
    "candidate_confidence": pa.schema(
        [
            ("prompt_id", S),
            ("fact_id", S),
            ("strategy", S),
            ("n", I64),
            ("p_true", F64),
            ("confidence", F64),
            ("correct", F64),
            ("brier", F64),
        ]
    ),
    "suite_metrics": pa.schema(
        [("measure", S), ("value", F64), ("strategy", S), ("n", I64), *GROUP, ("bin", I64)]
    ),
    # summarize_metrics: results/metrics/{suite}/headline.parquet, the leaderboard's one source:
    # each headline value next to its bootstrap interval (null n_facts: no interval).
    "headline": pa.schema(HEADLINE),
    # cloze_subsets: the per-fact measures from the first n_cloze cloze sentences (§5.1 Fig. 4)
    "cloze_metrics": pa.schema([*FACT_METRICS, ("n_cloze", I64)]),
    # --- user-facing CSV tables (metrics stage), read back with read_csv: an empty integer cell
    # reads as the field's "missing" metadata value (default 0), an empty float as NaN, an empty
    # string as "".
    "summary": pa.schema(
        [
            ("model", S),
            ("measure", S),
            ("value", F64),
            ("strategy", S),
            ("n", I64),
            *GROUP,
            pa.field("bin", I64, metadata={"missing": "-1"}),
            ("n_facts", I64),
            ("level", S),
        ]
    ),
    "leaderboard": pa.schema([("suite", S), *HEADLINE[:8], ("rank", I64), *HEADLINE[8:]]),
    "paired": pa.schema(
        [
            ("suite", S),
            ("measure", S),
            ("strategy", S),
            ("n", I64),
            ("model_a", S),
            ("model_b", S),
            ("value_a", F64),
            ("value_b", F64),
            ("diff", F64),
            ("ci_low", F64),
            ("ci_high", F64),
            ("p_value", F64),
            ("n_facts", I64),
        ]
    ),
    "control_check": pa.schema(
        [
            ("measure", S),
            ("strategy", S),
            ("n", I64),
            ("split", S),
            ("value", F64),
            ("facts", I64),
            ("n_used", F64),
            ("chance", F64),
            ("low", F64),
            ("high", F64),
            ("verdict", S),
            ("ci_low", F64),
            ("ci_high", F64),
        ]
    ),
}

# CSV/TSV outputs of the diff, probes and translate stages (docs/contracts.md), written and
# read through :func:`write_text` / :func:`read_text` (the separator follows the suffix).
_COUNTS = ("new", "obsolete", "static", "unknown", "ignored", "replace", "total")
_TRANSLATE_DROPS = (
    "no_object_label",
    "empty_translation",
    "object_not_found",
    "object_not_final",
    "object_at_start",
    "object_glued",
)
SCHEMAS.update(
    {
        # diff_dumps: results/diff/{old}_{new}/stats.tsv, one row per property
        "diff_stats": pa.schema([("property", S), *[(c, I64) for c in _COUNTS]]),
        # translate_prompts: results/probes/{suite}/translate_stats.tsv, one row per language
        "translate_stats": pa.schema(
            [
                ("suite", S),
                ("lang", S),
                ("model", S),
                ("status", S),
                ("n_sentences", I64),
                ("n_kept", I64),
                *[(f"dropped_{r}", I64) for r in _TRANSLATE_DROPS],
                ("dropped_share", F64),
                ("subject_missing", I64),
                ("n_inflected_forms", I64),
                ("n_template_prompts", I64),
            ]
        ),
        # timeline: results/metrics/{suite}/timeline.csv, one row per (model, slice)
        "timeline": pa.schema(
            [
                ("model", S),
                ("measure", S),
                ("strategy", S),
                ("n", I64),
                ("slice", S),
                ("slice_start", S),
                ("slice_end", S),
                ("value", F64),
                ("ci_low", F64),
                ("ci_high", F64),
                ("n_facts", I64),
                ("cutoff", S),
                ("cutoff_low", S),
                ("cutoff_high", S),
                ("cutoff_status", S),
                ("cutoff_index", I64),
                ("cutoff_index_low", I64),
                ("cutoff_index_high", I64),
                ("share_none", F64),
                ("declared_cutoff", S),
                ("after_declared", B),
                ("known_value", F64),
                ("known_ci_low", F64),
                ("known_ci_high", F64),
                ("known_n_facts", I64),
            ]
        ),
        # timeline: results/metrics/{suite}/cutoff_profile.csv, one row per model
        "cutoff_profile": pa.schema(
            [
                ("model", S),
                ("measure", S),
                ("strategy", S),
                ("n", I64),
                ("curve", S),
                ("cutoff", S),
                ("cutoff_low", S),
                ("cutoff_high", S),
                ("cutoff_status", S),
                ("cutoff_index", I64),
                ("cutoff_index_low", I64),
                ("cutoff_index_high", I64),
                ("share_none", F64),
                ("decay_slices", F64),
                ("decay_slices_low", F64),
                ("decay_slices_high", F64),
                ("decay_days", F64),
                ("decay_days_low", F64),
                ("decay_days_high", F64),
                ("decay_start", S),
                ("decay_end", S),
                ("level_before", F64),
                ("level_after", F64),
                ("shape", S),
                ("reason", S),
                ("declared_cutoff", S),
                ("n_slices", I64),
                ("n_facts", I64),
                ("n_known_subject", I64),
                ("min_slice_facts", I64),
                ("min_slice_known", I64),
            ]
        ),
        # timeline: results/metrics/{suite}/slice_calibration.csv, one row per (model, part)
        "slice_calibration": pa.schema(
            [
                ("model", S),
                ("strategy", S),
                ("n", I64),
                ("part", S),
                ("slice_start", S),
                ("slice_end", S),
                ("n_facts", I64),
                ("accuracy", F64),
                ("mean_confidence", F64),
                ("mean_p_true", F64),
                ("brier", F64),
                ("ece", F64),
                ("confidently_wrong", F64),
                *[(f"ar_{pct}", F64) for pct in range(0, 100, 10)],
            ]
        ),
        # timeline: results/metrics/{suite}/timeline_profile.csv, one row per (slice, stratum)
        "timeline_profile": pa.schema(
            [("slice", S), ("stratum", I64), ("n", I64), ("mean_popularity", F64), ("median_popularity", F64)]
        ),
        # timeline: results/metrics/{suite}/after_cutoff.csv, per model with a declared cut-off
        # and (measure, strategy, n): its contamination-free suite, the slices after the cut-off
        "after_cutoff": pa.schema(
            [
                ("model", S),
                ("declared_cutoff", S),
                ("measure", S),
                ("strategy", S),
                ("n", I64),
                ("value", F64),
                ("ci_low", F64),
                ("ci_high", F64),
                ("n_facts", I64),
                ("slices", S),
            ]
        ),
        # import_released: results/probes/{suite}/released_matches.csv, one row per released text
        "released_matches": pa.schema(
            [("kind", S), ("text", S), ("id", S), ("matched_by", S), ("n_candidates", I64)]
        ),
    }
)

#: The five tables of one extracted dump, in the order the extraction writes them.
EXTRACT_TABLES = ("entities", "labels", "claims", "types", "properties")

#: Output path patterns as docs/contracts.md writes them (for the doc sync test).
PATHS: dict[str, str] = {
    "entities": "results/wikidata/{dump}/entities.parquet",
    "labels": ".../labels.parquet",
    "claims": ".../claims.parquet",
    "types": ".../types.parquet",
    "properties": ".../properties.parquet",
    "changes": "results/diff/{old}_{new}/changes.parquet",
    "temporal": "results/temporal/{dump}/temporal.parquet",
    "facts": "results/probes/{suite}/facts.parquet",
    "prompts": "results/probes/{suite}/prompts.parquet",
    "entity_forms": "results/probes/{suite}/entity_forms.parquet",
    "translated_prompts": "results/probes/{suite}/translated_prompts.parquet",
    "translated_forms": "translated_forms.parquet",
    "candidates": "results/probes/{suite}/candidates.parquet",
    "forms": "results/probes/{suite}/forms.parquet",
    "subject_swaps": "results/probes/{suite}/subject_swaps.parquet",
    "appropt": "results/probes/{suite}/appropt/{model}.parquet",
    "split": "results/models/control/split.parquet",
    "scores": "results/scores/{suite}/{model}.parquet",
    "score_shard": "results/scores/{suite}/shards/{model}/{shard}.parquet",
    "topk": "results/scores/{suite}/{model}.topk.parquet",
    "generations": "results/scores/{suite}/{model}.generations.parquet",
    "fact_metrics": "results/metrics/{suite}/{model}.parquet",
    "suite_metrics": "results/metrics/{suite}/{model}.suite.parquet",
    "cloze_metrics": "results/metrics/{suite}/{model}.cloze.parquet",
    "summary": "results/metrics/{suite}/summary.csv",
    "headline": "results/metrics/{suite}/headline.parquet",
    "leaderboard": "results/metrics/leaderboard.csv",
    "paired": "results/metrics/paired.csv",
    "control_check": "results/metrics/{suite}/{model}.control_check.csv",
}
# rule human_alignment (distractors paper §4.2, §5.1): Kendall τ of every measure family with
# human scores, per fold and (fold -1) the mean over folds; and the τ curves of Fig. 3 and Fig. 4.
SCHEMAS.update(
    {
        "human_alignment": pa.schema(
            [
                ("model", S),
                ("family", S),
                ("fold", I64),
                ("measure", S),
                ("strategy", S),
                ("n", I64),
                ("train_tau", F64),
                ("test_tau", F64),
                ("std_tau", F64),
                ("n_facts", I64),
            ]
        ),
        "human_alignment_curves": pa.schema(
            [
                ("model", S),
                ("family", S),
                ("axis", S),
                ("x", I64),
                ("fold", I64),
                ("measure", S),
                ("strategy", S),
                ("n", I64),
                ("test_tau", F64),
                ("n_folds", I64),
            ]
        ),
        # rule robustness_table (§4.3 Table 4): per model and measure family, the mean over
        # Table 3's fold-chosen configurations of the flawed-vs-corrected Kendall τ.
        "robustness": pa.schema(
            [("model", S), ("family", S), ("folds", I64), ("robustness_tau", F64), ("n_facts", I64)]
        ),
    }
)
PATHS.update(
    {
        "human_alignment": "results/metrics/{suite}/human_alignment.csv",
        "human_alignment_curves": "results/metrics/{suite}/human_alignment_curves.csv",
        "robustness": "results/metrics/{suite}/robustness.csv",
        "diff_stats": "results/diff/{old}_{new}/stats.tsv",
        "translate_stats": "results/probes/{suite}/translate_stats.tsv",
        "released_matches": "results/probes/{suite}/released_matches.csv",
        "timeline": "results/metrics/{suite}/timeline.csv",
        "timeline_profile": "results/metrics/{suite}/timeline_profile.csv",
        "after_cutoff": "results/metrics/{suite}/after_cutoff.csv",
        "cutoff_profile": "results/metrics/{suite}/cutoff_profile.csv",
        "slice_calibration": "results/metrics/{suite}/slice_calibration.csv",
        "candidate_confidence": "results/metrics/{suite}/{model}.confidence.parquet",
    }
)


class ContractError(ValueError):
    """A table lacks contract columns or has values that do not fit the contract types."""


def columns(name: str) -> list[str]:
    """Contract column names of table ``name`` in contract order."""
    return list(SCHEMAS[name].names)


def check(
    frame: pd.DataFrame | pa.Table | Iterable[str],
    name: str,
    source: object,
    cols: Iterable[str] | None = None,
) -> None:
    """Fail naming ``source`` when ``frame`` (a table or its column names) lacks contract columns
    of ``name``, or only those of ``cols``."""
    if isinstance(frame, pa.Table):
        have = set(frame.column_names)
    elif isinstance(frame, pd.DataFrame):
        have = set(frame.columns)
    else:
        have = set(frame)
    missing = [c for c in (columns(name) if cols is None else cols) if c not in have]
    if missing:
        raise ContractError(
            f"{source}: {name} table lacks column(s) {missing} (docs/contracts.md); "
            "re-run the rule that makes it with the current code"
        )


def conform(table: pa.Table, name: str, source: object = "table") -> pa.Table:
    """``table`` with its contract columns cast to the contract types; other columns kept."""
    check(table, name, source)
    schema = SCHEMAS[name]
    for field in schema:
        i = table.schema.get_field_index(field.name)
        if table.schema.field(i).type != field.type:
            try:
                table = table.set_column(i, field, table.column(i).cast(field.type))
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
                raise ContractError(f"{source}: {name}.{field.name} is not {field.type} ({exc})") from exc
    return table.replace_schema_metadata(None)


def read(name: str, path: str | os.PathLike, cols: list[str] | None = None) -> pd.DataFrame:
    """Table ``name`` at ``path`` as pandas, checked against its contract (only ``cols`` if given)."""
    table = read_table(path, columns=cols)
    check(table, name, path, cols)
    return table.to_pandas()


def write(name: str, frame: pd.DataFrame | pa.Table, path: str | os.PathLike) -> None:
    """Write table ``name`` atomically as zstd Parquet, contract columns checked and cast."""
    table = frame if isinstance(frame, pa.Table) else pa.Table.from_pandas(frame, preserve_index=False)
    write_table(conform(table, name, path), path)


def _text_sep(path: str | os.PathLike) -> str:
    return "\t" if str(path).endswith(".tsv") else ","


def conform_frame(frame: pd.DataFrame, name: str, source: object = "table") -> pd.DataFrame:
    """``frame`` with its contract columns in contract order first and cast to the contract
    dtypes (int64 / float64; strings are left as they are, missing values included); other
    columns kept after them. A value that does not fit is a :class:`ContractError`."""
    check(frame, name, source)
    out = frame.copy()
    for field in SCHEMAS[name]:
        if pa.types.is_string(field.type):
            continue
        dtype = field.type.to_pandas_dtype()
        if out[field.name].dtype != dtype:
            try:
                out[field.name] = out[field.name].astype(dtype)
            except (TypeError, ValueError) as exc:
                raise ContractError(f"{source}: {name}.{field.name} is not {field.type} ({exc})") from exc
    cols = columns(name)
    return out[cols + [c for c in out.columns if c not in cols]]


def write_text(
    name: str, frame: pd.DataFrame, path: str | os.PathLike, float_format: str | None = None
) -> None:
    """Write CSV/TSV table ``name`` atomically (tab-separated for ``.tsv``), contract columns
    checked, cast and first; ``float_format`` as pandas takes it."""
    table = conform_frame(frame, name, path)
    with atomic_path(path) as tmp:
        table.to_csv(tmp, sep=_text_sep(path), index=False, float_format=float_format)


def read_text(name: str, path: str | os.PathLike) -> pd.DataFrame:
    """CSV/TSV table ``name`` at ``path``, checked against its contract and read with its dtypes
    (strings as written: an empty cell is ``""``, not missing; numbers with empty cells as NaN)."""
    schema = SCHEMAS[name]
    strings = [f.name for f in schema if pa.types.is_string(f.type)]
    try:
        frame = pd.read_csv(
            path,
            sep=_text_sep(path),
            dtype=dict.fromkeys(strings, str),
            keep_default_na=False,
            na_values={},
            encoding="utf-8-sig",  # a table edited in Excel starts with a byte-order mark
        )
    except (OSError, ValueError) as exc:
        raise ContractError(f"{path}: cannot read {name} ({exc}); re-run the rule that makes it") from exc
    numeric = [f.name for f in schema if not pa.types.is_string(f.type) and f.name in frame.columns]
    for col in numeric:
        if not pd.api.types.is_numeric_dtype(frame[col]):  # an empty cell (keep_default_na=False) is missing
            frame[col] = frame[col].astype(object).replace("", np.nan)
    return conform_frame(frame, name, path)


def empty(name: str) -> pd.DataFrame:
    """An empty frame with the contract columns of ``name``."""
    return SCHEMAS[name].empty_table().to_pandas()


# --- ids ---------------------------------------------------------------------------------------


def id_int(ident: str) -> int:
    """``"Q42" -> 42``, ``"P19" -> 19``; anything else is a ValueError naming the value."""
    if not isinstance(ident, str) or len(ident) < 2 or ident[0] not in "QP" or not ident[1:].isdigit():
        raise ValueError(f"not a Wikidata item/property id: {ident!r}")
    return int(ident[1:])


def id_int_or_none(ident: object) -> int | None:
    """:func:`id_int`, or ``None`` for anything that is not a ``Q``/``P`` id (parsing dumps)."""
    if isinstance(ident, str) and len(ident) > 1 and ident[0] in "QP" and ident[1:].isdigit():
        return int(ident[1:])
    return None


def id_ints(idents: Iterable[str]) -> np.ndarray:
    """:func:`id_int` of many ids as an int64 array (checked)."""
    s = pd.Series(list(idents), dtype=object)
    if s.empty:
        return np.empty(0, dtype=np.int64)
    ok = s.str.fullmatch(r"[QP]\d+").fillna(False).astype(bool)
    if not ok.all():
        raise ValueError(f"not a Wikidata item/property id: {s[~ok].iloc[0]!r}")
    return s.str.slice(1).astype("int64").to_numpy()


def qid(n: int) -> str:
    """``42 -> "Q42"``."""
    return f"Q{int(n)}"


def pid(n: int) -> str:
    """``19 -> "P19"``."""
    return f"P{int(n)}"


def qid_series(ids: pd.Series) -> pd.Series:
    """Vectorised :func:`qid` of an integer Series."""
    return "Q" + ids.astype("int64").astype(str)


def pid_series(ids: pd.Series) -> pd.Series:
    """Vectorised :func:`pid` of an integer Series."""
    return "P" + ids.astype("int64").astype(str)


def fact_id(subject, prop, obj):
    """``fact_id`` = ``"{subject}|{property}|{object}"`` with string ids (``"Q155|P36|Q2844"``).

    Works on strings and, element-wise, on string Series alike.
    """
    return subject + "|" + prop + "|" + obj


def fact_ids_of(triples: pd.DataFrame) -> pd.Series:
    """``fact_id`` of each row of a table with integer ``subject``, ``property``, ``object`` ids
    (claims, changes)."""
    return fact_id(
        qid_series(triples["subject"]), pid_series(triples["property"]), qid_series(triples["object"])
    )


def split_fact_id(key: str) -> tuple[str, str, str]:
    """``"Q155|P36|Q2844" -> ("Q155", "P36", "Q2844")``."""
    parts = key.split("|")
    if len(parts) != 3:
        raise ValueError(f"not a fact id (subject|property|object): {key!r}")
    return parts[0], parts[1], parts[2]


def pair_key(subject, prop):
    """Key of a (subject, property) pair, ``"Q155|P36"``; strings or string Series."""
    return subject + "|" + prop


def swap_prompt_id(group_prompt_id: str, subject: str, form: str) -> str:
    """Id of a subject-swap prompt (``subject_swaps``): the prompt it swaps, the subject's entity
    id and the form filled into the subject slot, ``"<group_prompt_id>|swap|<subject>|<form>"``."""
    return f"{group_prompt_id}|swap|{subject}|{form}"


def is_subject_side(candidates: pd.DataFrame) -> pd.Series:
    """Rows that are subject-side alternatives (``side == "subject"``, cooccur's swapped subjects):
    they fill a prompt's subject slot (PROBELM Algorithm 1, "repeat with o fixed"), so they are
    scored as prompts of their own (``subject_swaps``), never in the object slot."""
    if "side" not in candidates.columns:
        return pd.Series(False, index=candidates.index)
    return candidates["side"].fillna("object").astype(str) == "subject"


# --- user-facing CSV tables ------------------------------------------------------------------------


def read_csv(name: str, path: str | os.PathLike) -> pd.DataFrame:
    """CSV table ``name`` at ``path``, contract columns checked and typed by :data:`SCHEMAS`:
    strings keep "" for an empty cell, floats read it as NaN, integers as the field's
    ``missing`` metadata value (0 unless set, e.g. -1 for ``summary.bin``)."""
    frame = pd.read_csv(path, keep_default_na=False, dtype=str, encoding="utf-8-sig")
    check(frame, name, path)
    for field in SCHEMAS[name]:
        col = frame[field.name]
        if pa.types.is_floating(field.type):
            frame[field.name] = pd.to_numeric(col.replace("", np.nan), errors="coerce")
        elif pa.types.is_integer(field.type):
            missing = int((field.metadata or {}).get(b"missing", b"0"))
            frame[field.name] = pd.to_numeric(col, errors="coerce").fillna(missing).astype("int64")
    return frame


def write_csv(name: str, frame: pd.DataFrame, path: str | os.PathLike) -> None:
    """Write CSV table ``name`` atomically, its contract columns checked (values as pandas writes them)."""
    check(frame, name, path)
    with atomic_path(path) as tmp:
        frame.to_csv(tmp, index=False)
