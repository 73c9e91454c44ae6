"""factprobe from Python: score a model on a built suite and measure it, on the workflow's code path.

Every function here calls the library functions the rule scripts call (rules ``score_shard`` /
``score_suite``: :mod:`factprobe.scoring.jobs`; ``compute_metrics`` / ``summarize_metrics``:
:mod:`factprobe.metrics.jobs`; ``timeline``: :mod:`factprobe.metrics.timeline`) with the settings
the rules receive (:mod:`factprobe.suite_open` reads the suite's config as the workflow does), so
:func:`score` returns ``results/scores/<suite>/<model>.parquet`` and :func:`measures`
``results/metrics/<suite>/<model>.parquet`` value for value (docs/api.md).

Scoring fails closed: an error in any relation raises; with ``on_error="missing"`` the relation's
rows come back marked ``missing`` (log-probabilities NaN, the error text beside them), and
:func:`measures` refuses such a table. Never a shorter table. Importing this module loads
neither torch nor transformers: they load with the first model.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from factprobe.api_models import engine, loaded_model, model_dir, model_row
from factprobe.suite_open import SetupError, Suite, open_suite

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "IncompleteScores",
    "ScoreTables",
    "SetupError",
    "Suite",
    "Timeline",
    "measure_tables",
    "measures",
    "open_suite",
    "score",
    "score_tables",
    "summary",
    "timeline",
]

#: ``on_error`` values of :func:`score`.
ON_ERROR = ("raise", "missing")


class IncompleteScores(ValueError):
    """A score table with ``missing`` rows (a relation that failed) or fewer facts than the suite:
    no measure is computed from it."""


@dataclass
class ScoreTables:
    """What scoring one (suite, model) makes: the ``scores`` and ``topk`` tables (docs/contracts.md)."""

    scores: pd.DataFrame
    topk: pd.DataFrame
    model: str
    suite: str


@dataclass
class Timeline:
    """A timeline suite's curves with each model's effective cut-off (``timeline.csv``), the
    post-declared-cut-off suite (``after_cutoff.csv``), each model's cut-off profile
    (``cutoff_profile.csv``) and, when candidate confidences were given, the calibration per
    slice (``slice_calibration.csv``)."""

    curves: pd.DataFrame
    after_cutoff: pd.DataFrame
    profile: pd.DataFrame
    calibration: pd.DataFrame | None = None


# --- settings ------------------------------------------------------------------------------


def score_settings(suite: Suite):
    """The suite's scoring settings exactly as rule ``score_shard`` receives them (score.smk)."""
    from factprobe.scoring.jobs import ScoreSettings

    cfg, name = suite.cfg, suite.name
    return ScoreSettings(
        mode=suite.run.scoring_modes[name],
        end_marker=suite.run.end_markers[name],
        token_budget=int(cfg.scoring.token_budget),
        no_space_languages=tuple(cfg.scoring.no_space_languages),
        topk=int(cfg.scoring.topk),
        shards=int(cfg.scoring.shards),
        sentence_forms=cfg.scoring.sentence_forms,
        sentence_first_token=cfg.scoring.sentence_first_token,
    )


def model_cutoff(suite: Suite, row: Mapping[str, Any]) -> dict:
    """The (plausibility suite, model) cut-off of ``compute_metrics`` (empty for other kinds); a
    model whose cut-off precedes the one the suite was built for is an error naming the suite."""
    from factprobe.config_rules import suite_model_cutoff

    try:
        return suite_model_cutoff(suite.cfg, suite.name, dict(row))
    except Exception as exc:  # ConfigError: the suite was built for a later cut-off
        raise SetupError(
            f"{suite.folder}: this suite was built for cut-off {suite.cfg.suites[suite.name].cutoff} "
            f"({suite.config_file}); {exc}; then rebuild the suite"
        ) from exc


# --- scoring -------------------------------------------------------------------------------


def conformed(frame: pd.DataFrame, name: str) -> pd.DataFrame:
    """``frame`` as :func:`factprobe.contracts.write` then ``read`` give it back (contract types)."""
    import pyarrow as pa

    from factprobe import contracts

    return contracts.conform(pa.Table.from_pandas(frame, preserve_index=False), name).to_pandas()


def relation_of(prompts: pd.DataFrame, facts: pd.DataFrame) -> pd.Series:
    """Each prompt's relation (its fact's ``property``)."""
    keyed = facts.drop_duplicates("fact_id").set_index("fact_id")["property"]
    return prompts["fact_id"].map(keyed).fillna("").astype(str)


def missing_rows(pairs: pd.DataFrame, relation: str, error: BaseException) -> pd.DataFrame:
    """Explicit ``missing`` score rows of the pairs of a relation that failed."""
    import numpy as np

    from factprobe import contracts

    out = pairs[["prompt_id", "entity", "form", "fact_id", "lang"]].copy()
    for column in ("logprob", "first_logprob", "end_logprob"):
        out[column] = np.nan
    out["n_tokens"] = np.zeros(len(out), dtype=np.int32)
    out = out[contracts.columns("score_shard")]
    return out.assign(missing=True, relation=relation, error=f"{type(error).__name__}: {error}")


def score_shard_by_relation(lm, prompts, tables, settings, job, swaps, facts, progress):
    """One shard scored relation by relation, a failed relation's pairs kept as missing rows."""
    from factprobe.scoring.jobs import score_prompts
    from factprobe.scoring.suite import build_pairs

    relations = relation_of(prompts, facts)
    parts, topks = [], []
    for relation in sorted(set(relations)):
        group = prompts[relations == relation]
        sub_swaps = None if swaps is None else swaps[swaps["group_prompt_id"].isin(group["prompt_id"])]
        try:
            scores, topk = score_prompts(
                lm, group, tables.candidates, tables.forms, settings, job, swaps=sub_swaps, progress=progress
            )
            parts.append(scores.assign(missing=False, relation=relation, error=""))
            topks.append(topk)
        except Exception as exc:  # the caller asked for missing rows in place of a raise
            pairs = build_pairs(
                group,
                tables.candidates,
                tables.forms,
                settings.no_space_languages,
                swaps=sub_swaps,
                ending=settings.sentence,
                sentence_forms=settings.sentence_forms if settings.sentence else "all",
            )
            parts.append(missing_rows(pairs, relation, exc))
    return parts, topks


def score_tables(
    model: Any,
    suite: str | Path | Suite,
    *,
    tokenizer: Any = None,
    config: str | Path | dict | None = None,
    cache: str | Path | None = None,
    on_error: str = "raise",
    progress: bool = False,
) -> ScoreTables:
    """The ``scores`` and ``topk`` tables of ``model`` on ``suite``: rules ``score_shard`` (every
    shard) and ``score_suite`` in one call. See :func:`score`."""
    import pandas as pd

    from factprobe import contracts
    from factprobe.scoring.failclosed import CheckedLM, ScoringJob
    from factprobe.scoring.jobs import gather_scores, score_prompts, shard_prompts, shard_swaps
    from factprobe.suite_tables import load_suite_tables

    if on_error not in ON_ERROR:
        raise ValueError(f"on_error {on_error!r}: use one of {ON_ERROR}")
    suite = open_suite(suite, config)
    settings = score_settings(suite)
    # Every check before the model loads: its files, the suite's tables, the cut-off.
    row = model_row(model, suite)
    name = row["name"] if row is not None else loaded_model(model, tokenizer)[0]
    if row is not None:
        model_cutoff(suite, row)  # a suite built for a later cut-off than the model's: fail now
    files = suite.tables(name)
    if row is not None:
        model_dir(row, suite)
    lm = engine(model, row, suite, settings, tokenizer)
    tables = load_suite_tables(files)
    facts = contracts.read("facts", files["facts"])
    swaps = contracts.read("subject_swaps", files["subject_swaps"]) if "subject_swaps" in files else None
    job = ScoringJob(name, suite.name)
    checked = CheckedLM(lm, job)
    if cache is not None:
        from factprobe.lm import CachingLM, RequestCache

        checked = CachingLM(checked, RequestCache(cache))
    parts, topks = [], []
    for shard in range(settings.shards):
        prompts = shard_prompts(tables.prompts, shard, settings.shards)
        shard_swap = shard_swaps(swaps, shard, settings.shards)
        if on_error == "raise":
            scores, topk = score_prompts(
                checked,
                prompts,
                tables.candidates,
                tables.forms,
                settings,
                job,
                swaps=shard_swap,
                progress=progress,
            )
            parts.append(scores)
            topks.append(topk)
        else:
            more, more_topk = score_shard_by_relation(
                checked, prompts, tables, settings, job, shard_swap, facts, progress
            )
            parts += more
            topks += more_topk
    # What rule score_shard writes and score_suite reads back: contract types.
    parts = [conformed(p, "score_shard") for p in parts]
    topks = [conformed(t, "topk") for t in topks] or [
        conformed(pd.DataFrame(columns=contracts.columns("topk")), "topk")
    ]
    scores, topk = gather_scores(parts, topks)
    if on_error == "missing":
        scores = scores.astype({"missing": bool})
    scores = conformed(scores, "scores")
    scores.attrs["factprobe"] = {"model": name, "suite": suite.name, "engine": engine_version()}
    return ScoreTables(scores, conformed(topk, "topk"), name, suite.name)


def score(
    model: Any,
    suite: str | Path | Suite,
    *,
    tokenizer: Any = None,
    config: str | Path | dict | None = None,
    cache: str | Path | None = None,
    on_error: str = "raise",
    progress: bool = False,
) -> pd.DataFrame:
    """Score ``model`` on a built suite: the ``scores`` table (docs/contracts.md), every shard
    gathered and ``first_rank`` filled, as rule ``score_suite`` writes it.

    ``model``: a models.tsv row (dict with ``name`` and ``source``), the name of a row of the
    suite's models.tsv, a local folder with a saved model, ``"builtin:control"`` (the suite's
    trained control model), or a loaded ``PreTrainedModel`` with ``tokenizer=`` (or a
    ``(model, tokenizer)`` tuple). ``suite``: ``<workdir>/results/probes/<suite>`` or an
    :func:`open_suite` result; ``config``: the config it was built with (default
    ``<workdir>/config/config.yaml``). ``cache``: a request-cache folder (None: none).
    ``on_error``: ``"raise"`` (any error stops scoring) or ``"missing"`` (each relation scored on
    its own; a failed relation's rows come back with ``missing`` True, log-probabilities NaN and
    the ``error``; :func:`measures` refuses them). The engine is batch-invariant, so scoring by
    relation gives the same values as scoring the shard at once.
    """
    return score_tables(
        model, suite, tokenizer=tokenizer, config=config, cache=cache, on_error=on_error, progress=progress
    ).scores


def engine_version() -> str:
    """The scoring engine's version (:data:`factprobe.lm.cache.ENGINE_VERSION`)."""
    from factprobe.lm.cache import ENGINE_VERSION

    return ENGINE_VERSION


# --- measures ------------------------------------------------------------------------------


def read_scores(path: Path) -> ScoreTables:
    """A workflow score table and its top-k sibling, refused when another engine wrote it."""
    from factprobe import contracts

    written = contracts.engine_version(path)
    if written != engine_version():
        by = f"engine {written}" if written else "an engine without a version stamp"
        raise SetupError(
            f"{path}: scores written by {by}, this factprobe scores with engine {engine_version()}; "
            "its values may differ: delete the file and run the workflow again (or score anew with "
            "factprobe.api.score)"
        )
    topk = path.with_name(path.name.removesuffix(".parquet") + ".topk.parquet")
    if not topk.is_file():
        raise SetupError(f"{topk}: the top-k table next to {path} is missing; run rule score_suite again")
    return ScoreTables(
        contracts.read("scores", path), contracts.read("topk", topk), path.stem, path.parent.name
    )


def as_score_tables(scores: Any, topk: Any, model: str | None, suite: Suite) -> ScoreTables:
    """``scores`` (a :class:`ScoreTables`, a score table or its path) as score and top-k tables,
    with the model's name."""
    import pandas as pd

    if isinstance(scores, ScoreTables):
        tables = scores
    elif isinstance(scores, (str, Path)):
        tables = read_scores(Path(scores))
    elif isinstance(scores, pd.DataFrame):
        stamp = scores.attrs.get("factprobe", {})
        if stamp.get("engine", engine_version()) != engine_version():
            raise SetupError(
                f"scores of model {stamp.get('model')!r}: made by engine {stamp['engine']}, this is "
                f"{engine_version()}; score again with factprobe.api.score"
            )
        if topk is None and suite.cfg.scoring.topk > 0:
            raise SetupError(
                f"{suite.folder}: the suite's measures read the top-k table (scoring.topk "
                f"{suite.cfg.scoring.topk}); pass topk=, or score_tables(...) in place of its scores"
            )
        tables = ScoreTables(scores, topk, stamp.get("model", ""), stamp.get("suite", suite.name))
    else:
        raise SetupError(
            f"scores: pass a score table, score_tables(...) or a path, not {type(scores).__name__}"
        )
    if topk is not None:
        tables = ScoreTables(tables.scores, topk, tables.model, tables.suite)
    if model is not None:
        tables = ScoreTables(tables.scores, tables.topk, model, tables.suite)
    if tables.suite != suite.name:
        raise SetupError(f"{suite.folder}: these scores are of suite {tables.suite!r}, not {suite.name!r}")
    return tables


def require_complete(scores: pd.DataFrame, facts: pd.DataFrame, suite: Suite, model: str) -> None:
    """Refuse ``missing`` rows and a table that scores fewer facts than the suite has."""
    from factprobe.metrics.coverage import require_all_facts_scored

    if "missing" in scores.columns and scores["missing"].astype(bool).any():
        failed = scores[scores["missing"].astype(bool)]
        relations = sorted(failed["relation"].unique()) if "relation" in failed else []
        raise IncompleteScores(
            f"suite {suite.name!r}, model {model!r}: {len(failed)} score rows are missing (relations "
            f"{relations}; first error: {failed['error'].iloc[0] if 'error' in failed else '?'}); no "
            "measure is computed from an incomplete table: fix the cause and score again"
        )
    if scores["logprob"].isna().any():
        raise IncompleteScores(f"suite {suite.name!r}, model {model!r}: score rows without a log-probability")
    require_all_facts_scored(
        suite.name,
        model,
        facts["fact_id"],
        scores["fact_id"],
        str(suite.folder / "facts.parquet"),
        "the scores",
    )


def measure_tables(
    scores: Any,
    suite: str | Path | Suite,
    *,
    model: str | None = None,
    topk: pd.DataFrame | None = None,
    families: list[str] | None = None,
    generations: pd.DataFrame | str | Path | None = None,
    config: str | Path | dict | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(per-fact table, suite-level table) of one (suite, model): rule ``compute_metrics``."""
    from factprobe.lm.load import BUILTIN_CONTROL
    from factprobe.metrics.jobs import suite_measures
    from factprobe.metrics.pipeline import read_inputs

    suite = open_suite(suite, config)
    tables = as_score_tables(scores, topk, model, suite)
    name = tables.model
    row = suite.models.get(name) or (
        {"name": name, "source": BUILTIN_CONTROL} if name == "control" else {"name": name}
    )
    files = suite.tables(name)
    inputs = read_inputs({**files, "scores": [], "topk": None})
    inputs.scores, inputs.topk = tables.scores, tables.topk
    require_complete(inputs.scores, inputs.facts, suite, name)
    if suite.cfg.suites[suite.name].generate:
        if generations is None:
            raise SetupError(
                f"{suite.folder}: suite {suite.name!r} generates answers; pass generations= (rule "
                f"generate_suite's results/scores/{suite.name}/<model>.generations.parquet)"
            )
        from factprobe.suite_tables import read_concat

        inputs.generations = read_concat(generations) if isinstance(generations, (str, Path)) else generations
    block = dict(suite.run.metrics[suite.name])
    if families is not None:
        block["families"] = list(families)
    encoder = None
    from factprobe.plumbing.run_inputs import needs_encoder

    enc = needs_encoder(suite.cfg, block["families"], suite.models)
    if enc:
        encoder = suite.workdir / "resources" / "models" / enc
    per_fact, dataset = suite_measures(
        inputs, block, suite.run.correct_sets[suite.name], model_cutoff(suite, row), name, encoder
    )
    return conformed(per_fact, "fact_metrics"), conformed(dataset, "suite_metrics")


def measures(
    scores: Any,
    suite: str | Path | Suite,
    families: list[str] | None = None,
    *,
    model: str | None = None,
    topk: pd.DataFrame | None = None,
    generations: pd.DataFrame | str | Path | None = None,
    config: str | Path | dict | None = None,
) -> pd.DataFrame:
    """Every measure of the suite's families per fact (``fact_metrics``, docs/measures.md), as rule
    ``compute_metrics`` writes ``results/metrics/<suite>/<model>.parquet``.

    ``scores``: :func:`score_tables`'s result, :func:`score`'s table (with ``topk=`` when the
    suite reads top-k) or the path of a workflow score table (refused when another engine
    version wrote it). ``families``: the measure families to run (default the suite's). A table
    with ``missing`` rows or fewer facts than the suite raises :class:`IncompleteScores`."""
    return measure_tables(
        scores, suite, model=model, topk=topk, families=families, generations=generations, config=config
    )[0]


def summary(
    scores: Mapping[str, Any],
    suite: str | Path | Suite,
    *,
    config: str | Path | dict | None = None,
) -> pd.DataFrame:
    """The suite's leaderboard rows (``leaderboard.csv`` restricted to it): every headline measure
    of every model with its percentile-bootstrap interval over facts (config ``report``), ranked.

    ``scores``: ``{model name: scores}`` as :func:`measures` takes them."""
    from factprobe.metrics.jobs import bootstrap_of, summarize_suite
    from factprobe.metrics.pipeline import leaderboard

    suite = open_suite(suite, config)
    per_fact, dataset = [], []
    for name, table in scores.items():
        fact, level = measure_tables(table, suite, model=name)
        per_fact.append(fact)
        dataset.append(level)
    average = dict(suite.run.metrics[suite.name]).get("ranking_average", "facts")
    _, headline = summarize_suite(list(scores), per_fact, dataset, average, bootstrap_of(suite.run.bootstrap))
    return leaderboard({suite.name: headline})


def timeline(
    per_fact: Mapping[str, pd.DataFrame],
    suite: str | Path | Suite,
    *,
    declared: Mapping[str, str] | None = None,
    config: str | Path | dict | None = None,
    confidence: Mapping[str, pd.DataFrame] | None = None,
) -> Timeline:
    """A timeline suite's per-slice curves, each model's effective cut-off with its interval, its
    post-cut-off suite and its cut-off profile, as rule ``timeline`` computes them.

    ``per_fact``: ``{model name: measures(...)}``; ``declared``: each model's declared cut-off
    (YYYY-MM-DD; default the models.tsv ``cutoff`` of rows of that name, else none);
    ``confidence``: ``{model name: candidate_confidence table}`` (rule ``candidate_confidence``,
    :func:`factprobe.metrics.slice_calibration.candidate_confidence`) for the calibration per slice."""
    from factprobe import contracts
    from factprobe.measures import fact_headline
    from factprobe.metrics.cutoff_profile import profile_table
    from factprobe.metrics.slice_calibration import calibration_table
    from factprobe.metrics.timeline import after_cutoff_table, timeline_table
    from factprobe.plumbing.run_inputs import timeline_params

    suite = open_suite(suite, config)
    block = timeline_params(suite.cfg).get(suite.name)
    if block is None:
        raise SetupError(
            f"{suite.folder}: suite {suite.name!r} is not a timeline suite (suites.<s>.timeline)"
        )
    facts = contracts.read("facts", suite.table("facts"))
    if declared is None:
        declared = {m: str(suite.models.get(m, {}).get("cutoff") or "") for m in per_fact}
    boot = suite.run.bootstrap
    kwargs = {
        "samples": int(boot["bootstrap_samples"]),
        "seed": int(boot["bootstrap_seed"]),
        "level": float(boot["confidence_level"]),
    }
    curves = timeline_table(dict(per_fact), facts, dict(block), dict(declared), **kwargs)
    after = after_cutoff_table(dict(per_fact), facts, dict(declared), fact_headline(), **kwargs)
    # as the rule: the profile refits the change point per replicate, at most 200 of them
    profile = profile_table(
        dict(per_fact),
        facts,
        dict(block),
        dict(declared),
        **{**kwargs, "samples": min(kwargs["samples"], 200)},
    )
    calibration = None
    if confidence is not None:
        calibration = calibration_table(dict(confidence), facts, dict(block), profile)
    return Timeline(curves, after, profile, calibration)
