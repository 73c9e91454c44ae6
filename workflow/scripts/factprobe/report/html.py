"""The self-contained HTML report (results/report/index.html): figures inline, no external files.

``build_report`` turns the metric tables into one page with a section per view; a section whose
data is absent says so in words, so no section is ever blank.
"""

from __future__ import annotations

import html
from collections.abc import Mapping

import numpy as np
import pandas as pd

from factprobe.settings import Report

from ..metrics.pipeline import coinciding_strategies
from . import figures

CSS = """
body{font-family:system-ui,sans-serif;margin:2em auto;max-width:1200px;color:#222;padding:0 1em}
h1{border-bottom:2px solid #444}h2{margin-top:2em;border-bottom:1px solid #ccc}
table{border-collapse:collapse;font-size:13px;margin:.8em 0}th,td{border:1px solid #ccc;padding:3px 7px;text-align:right}
th{background:#f3f3f3}td:first-child,th:first-child{text-align:left}img{max-width:100%;display:block;margin:.8em 0}
.note{color:#555}.ok{color:#060;font-weight:bold}.bad{color:#a00;font-weight:bold}nav a{margin-right:1em}
"""

SECTIONS = [
    ("models", "Models side by side"),
    ("knowledge", "Knowledge measure K: Min@n and Avg@n against n"),
    ("belief", "BELIEF: accuracy, consistency and calibration"),
    ("ranking", "R@n by language and verbalization"),
    ("plausibility", "Plausibility (PROBELM)"),
    ("control", "Control model: taught vs untaught facts"),
]
#: Shown only when a human judgement file is configured (metrics.human_alignment).
HUMAN_SECTION = ("human", "Alignment with human judgement (Kendall τ, 3-fold CV)")


def _img(uri: str | None, alt: str) -> str:
    return f'<img src="{uri}" alt="{html.escape(alt)}">' if uri else ""


def _table(frame: pd.DataFrame, digits: int = 3) -> str:
    if frame.empty:
        return ""
    frame = frame.copy()
    frame.columns.name = None
    return frame.to_html(
        index=False, float_format=lambda v: f"{v:.{digits}f}", na_rep="–", border=0, escape=True
    )


def _note(text: str) -> str:
    return f'<p class="note">{html.escape(text)}</p>'


def pooled(summary: pd.DataFrame, measures) -> pd.DataFrame:
    """Per-fact-mean rows of ``measures``, averaged over prompt groups (lang, style, shots...)."""
    rows = summary[summary["measure"].isin(list(measures)) & (summary["bin"] == -1)]
    return rows.groupby(["model", "measure", "strategy", "n"], sort=True)["value"].mean().reset_index()


def same_strategy_note(summary: pd.DataFrame) -> str:
    """A sentence naming strategies whose values coincide (their distractor lists are the same)."""
    same = coinciding_strategies(summary)
    if not same:
        return ""
    groups: dict[str, list[str]] = {}
    for name, earlier in same.items():
        groups.setdefault(earlier, []).append(name)
    text = "; ".join(f"{', '.join(names)} = {earlier}" for earlier, names in sorted(groups.items()))
    return _note(
        f"Strategies with identical values at every n: {text}. Their distractor lists coincide "
        "(e.g. temp falls back to sem when no fact has a past object), so they are one result, not several."
    )


def distractors_used_table(summary: pd.DataFrame) -> str:
    """Per strategy and n: distractors actually compared and the random-ranker chance of K."""
    rows = pooled(summary, ["n_used", "k_min_chance", "k_avg_chance"])
    if rows.empty:
        return ""
    table = rows.pivot_table(index=["strategy", "n"], columns="measure", values="value", aggfunc="mean")
    table = table.reindex(columns=["n_used", "k_min_chance", "k_avg_chance"]).reset_index()
    table.columns = ["strategy", "n", "distractors used (mean)", "chance Min@n", "chance Avg@n"]
    note = (
        "<p>Distractors actually compared and the value a random ranker gets: Avg@n 1/2 for every n, "
        "Min@n 1/(m+1) for m distractors used (fewer than n where a strategy found fewer).</p>"
    )
    return note + _table(table)


def knowledge_section(summaries: Mapping[str, pd.DataFrame], dpi: int) -> str:
    parts = []
    for suite, summary in summaries.items():
        data = pooled(summary, ["k_min", "k_avg"])
        if data.empty:
            continue
        chance = pooled(summary, ["k_min_chance", "k_avg_chance"])
        parts.append(f"<h3>suite {html.escape(suite)}</h3>")
        parts.append(_img(figures.k_versus_n(data, dpi, chance), f"Min@n and Avg@n against n, suite {suite}"))
        parts.append(same_strategy_note(summary))
        parts.append(distractors_used_table(summary))
        base = pooled(summary, ["probability", "precision"])
        if not base.empty:
            base = base.assign(
                label=np.where(base["n"] > 0, base["measure"] + "@" + base["n"].astype(str), base["measure"])
            )
            parts.append("<p>Baselines (distractors paper Table 2):</p>")
            order = base.sort_values(["measure", "n"])["label"].drop_duplicates().tolist()
            wide = base.pivot_table(index="model", columns="label", values="value")[order].reset_index()
            parts.append(_table(wide))
    return "".join(parts) or _note("No suite computed the knowledge measure in this run.")


def belief_section(summaries: Mapping[str, pd.DataFrame], dpi: int) -> str:
    parts = []
    wanted = [
        "acc_mean",
        "acc_range",
        "acc_sd",
        "consist",
        "ovconf",
        "cov_average",
        "cov_maximum",
        "cov_oracle",
    ]
    for suite, summary in summaries.items():
        rows = summary[summary["measure"].str.startswith("belief") & (summary["bin"] == -1)]
        if rows.empty:
            continue
        parts.append(f"<h3>suite {html.escape(suite)}</h3>")
        parts.append(_img(figures.calibration(summary, dpi), f"BELIEF calibration, suite {suite}"))
        rows = rows.assign(
            mode=np.where(rows["measure"].str.startswith("belief_icl_"), "generation", "ranking"),
            name=rows["measure"].str.replace(r"^belief(_icl)?_", "", regex=True),
        )
        rows = rows[rows["name"].isin(wanted)]
        table = rows.pivot_table(
            index=["model", "mode", "shots"], columns="name", values="value", aggfunc="mean"
        )
        table = table[[c for c in wanted if c in table.columns]].reset_index()
        parts.append(_table(table))
    return "".join(parts) or _note("No suite computed BELIEF measures in this run.")


def ranking_section(summaries: Mapping[str, pd.DataFrame], dpi: int) -> str:
    parts = []
    for suite, summary in summaries.items():
        rows = summary[summary["measure"].isin(["recall", "mean_rank"]) & (summary["bin"] == -1)]
        if rows.empty:
            continue
        parts.append(f"<h3>suite {html.escape(suite)}</h3>")
        parts.append(
            _img(figures.recall_curves(rows, dpi), f"R@n by language and verbalization, suite {suite}")
        )
        rows = rows.assign(
            col=np.where(rows["measure"] == "recall", "R@" + rows["n"].astype(str), "mean rank")
        )
        table = rows.pivot_table(
            index=["model", "lang", "verbalization"], columns="col", values="value", aggfunc="mean"
        )
        parts.append(_table(table.reset_index()))
    return "".join(parts) or _note("No suite computed ranking measures in this run.")


def plausibility_section(summaries: Mapping[str, pd.DataFrame]) -> str:
    parts = []
    names = {"plaus_acc": "Acc.", "plaus_rr": "MRR", "plaus_ndcg": "NDCG"}
    for suite, summary in summaries.items():
        rows = summary[summary["measure"].isin(list(names)) & (summary["bin"] == -1)]
        if rows.empty:
            continue
        rows = rows.assign(col=rows["style"] + " " + rows["measure"].map(names))
        table = rows.pivot_table(index="model", columns="col", values="value", aggfunc="mean")
        score = summary[summary["measure"] == "plausibility"].groupby("model")["value"].mean()
        table.insert(0, "PLAUSIBILITY", score.reindex(table.index))
        parts.append(f"<h3>suite {html.escape(suite)}</h3>")
        parts.append(_table(table.reset_index()))
    return "".join(parts) or _note("No plausibility suite ran in this run.")


def headline_label(row) -> str:
    """Leaderboard row label: measure, strategy, n, the distractors actually used when fewer, and
    the strategy it coincides with."""
    label = row["measure"] + figures._suffix(row).replace("\n", " ")
    used = row.get("n_used", np.nan)
    if pd.notna(used) and used < int(row["n"]) - 1e-9:
        label += f" ({used:.1f} distractors used)"
    if row.get("same_as", ""):
        label += f" (= {row['same_as']})"
    return label


def models_section(board: pd.DataFrame, dpi: int) -> str:
    if board.empty:
        return _note("No model has metrics yet.")
    board = figures.headline_rows(board)
    board = board.assign(col=board.apply(headline_label, axis=1))
    wide = board.pivot_table(index=["suite", "col"], columns="model", values="value", aggfunc="mean")
    if "chance" in board.columns and board["chance"].notna().any():
        chance = board.groupby(["suite", "col"])["chance"].mean()
        wide["chance (random ranker)"] = chance.reindex(wide.index)
    wide = wide.reset_index().rename(columns={"col": "measure"})
    wide.columns.name = None
    note = _note(
        "K at the largest n, R@1; every n is in results/metrics/leaderboard.csv. Where a strategy found "
        "fewer than n distractors the label says how many were used; '= s' marks a strategy whose "
        "values equal strategy s."
    )
    return _img(figures.model_bars(board, dpi), "headline measures per model") + note + _table(wide)


def control_section(checks: Mapping[str, pd.DataFrame], settings: Report) -> str:
    """Taught vs untaught from each suite's control_check table (written by the metrics stage)."""
    parts = []
    for suite, check in checks.items():
        verdict = check[check["verdict"].isin(["pass", "FAIL"])].set_index("split")
        if verdict.empty:
            continue
        parts.append(f"<h3>suite {html.escape(suite)}, model {html.escape(settings.control_model)}</h3>")
        parts.append(
            _img(
                figures.control_panel(check, settings.dpi), f"control model taught vs untaught, suite {suite}"
            )
        )
        mark = {"pass": '<span class="ok">pass</span>', "FAIL": '<span class="bad">FAIL</span>'}
        first = verdict.iloc[0]
        said = []
        for split in ("taught", "untaught"):
            if split not in verdict.index:
                continue
            row = verdict.loc[split]
            target = (
                f"≥ {row['low']:.2f}"
                if split == "taught"
                else f"{row['chance']:.2f} ± {row['high'] - row['chance']:.2f}"
            )
            said.append(
                f"{split} {row['value']:.3f} over {int(row['facts'])} facts "
                f"(target {target}) {mark[row['verdict']]}"
            )
        used = (verdict["n_used"] * verdict["facts"]).sum() / verdict["facts"].sum()
        parts.append(
            f"<p>Avg@{int(first['n'])} ({html.escape(str(first['strategy']))}, "
            f"{used:.1f} distractors used on average): {'; '.join(said)}.</p>"
        )
    return "".join(parts) or _note("The control model has no knowledge-measure results in this run.")


def human_section(human: Mapping[str, pd.DataFrame] | None) -> str:
    """Mean held-out Kendall τ per measure family and model (distractors paper §4.2, Table 3)."""
    parts = []
    for suite, table in (human or {}).items():
        means = table[table["fold"].astype(int) == -1]
        if means.empty:
            continue
        wide = means.pivot_table(index="family", columns="model", values="test_tau", aggfunc="first")
        parts.append(f"<h3>{html.escape(suite)}</h3>{_table(wide.reset_index())}")
    if not parts:
        return _note("No human judgement file configured (metrics.human_alignment.path).")
    return _note("Mean Kendall τ over the held-out folds; hyperparameters chosen on the other folds.") + "".join(
        parts
    )


def build_report(
    summaries: Mapping[str, pd.DataFrame],
    board: pd.DataFrame,
    control: Mapping[str, pd.DataFrame],
    settings: Report,
    human: Mapping[str, pd.DataFrame] | None = None,
) -> str:
    """The whole page. ``summaries`` maps suite -> summary.csv frame, ``control`` maps suite ->
    the control model's control_check table (metrics stage)."""
    dpi = settings.dpi
    bodies = {
        "models": models_section(board, dpi),
        "knowledge": knowledge_section(summaries, dpi),
        "belief": belief_section(summaries, dpi),
        "ranking": ranking_section(summaries, dpi),
        "plausibility": plausibility_section(summaries),
        "control": control_section(control, settings),
    }
    shown = list(SECTIONS)
    if human:
        bodies["human"] = human_section(human)
        shown.append(HUMAN_SECTION)
    nav = "".join(f'<a href="#{key}">{html.escape(title)}</a>' for key, title in shown)
    sections = "".join(
        f'<section id="{key}"><h2>{html.escape(title)}</h2>{bodies[key]}</section>' for key, title in shown
    )
    suites = ", ".join(html.escape(s) for s in summaries) or "none"
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{html.escape(settings.title)}</title><style>{CSS}</style></head><body>"
        f'<h1>{html.escape(settings.title)}</h1><p class="note">Suites: {suites}. Every value is a mean over '
        "facts; ties between the correct object and a distractor count as failures.</p>"
        f"<nav>{nav}</nav>{sections}</body></html>\n"
    )
