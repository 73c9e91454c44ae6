"""The self-contained HTML report (results/report/index.html): figures inline, no external files.

``build_report`` turns the metric tables into one page with a section per view; a section whose
data is absent says so in words, so no section is ever blank.
"""

from __future__ import annotations

import html
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

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


@dataclass
class ReportSettings:
    """Config ``report`` (config/README.md, section report)."""

    title: str = "factprobe report"
    control_model: str = "control"
    control_strategy: str = "random"
    taught_target: float = 0.9
    chance: float = 0.5
    chance_band: float = 0.15
    dpi: int = 90

    @classmethod
    def from_config(cls, section: Mapping | None) -> ReportSettings:
        section = dict(section or {})
        return cls(**{k: section[k] for k in cls.__dataclass_fields__ if k in section})


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


def knowledge_section(summaries: Mapping[str, pd.DataFrame], dpi: int) -> str:
    parts = []
    for suite, summary in summaries.items():
        data = pooled(summary, ["k_min", "k_avg"])
        if data.empty:
            continue
        parts.append(f"<h3>suite {html.escape(suite)}</h3>")
        parts.append(_img(figures.k_versus_n(data, dpi), f"Min@n and Avg@n against n, suite {suite}"))
        base = pooled(summary, ["probability", "precision"])
        if not base.empty:
            base = base.assign(
                label=np.where(base["n"] > 0, base["measure"] + "@" + base["n"].astype(str), base["measure"])
            )
            parts.append("<p>Baselines (paper 1 Table 2):</p>")
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


def models_section(board: pd.DataFrame, dpi: int) -> str:
    if board.empty:
        return _note("No model has metrics yet.")
    board = figures.headline_rows(board)
    wide = board.assign(
        col=board["measure"] + board.apply(figures._suffix, axis=1).str.replace("\n", " ")
    ).pivot_table(index=["suite", "col"], columns="model", values="value", aggfunc="mean")
    wide = wide.reset_index().rename(columns={"col": "measure"})
    wide.columns.name = None
    note = _note("K at the largest n, R@1; every n is in results/metrics/leaderboard.csv.")
    return _img(figures.model_bars(board, dpi), "headline measures per model") + note + _table(wide)


def control_section(control: Mapping[str, pd.DataFrame], settings: ReportSettings) -> str:
    parts = []
    for suite, per_fact in control.items():
        data = per_fact[per_fact["measure"].isin(["k_avg", "k_min"])]
        if data.empty or not data["split"].isin(["taught", "untaught"]).any():
            continue
        parts.append(f"<h3>suite {html.escape(suite)}, model {html.escape(settings.control_model)}</h3>")
        parts.append(
            _img(
                figures.control_panel(
                    per_fact, settings.taught_target, settings.chance, settings.chance_band, settings.dpi
                ),
                f"control model taught vs untaught, suite {suite}",
            )
        )
        avg = data[data["measure"] == "k_avg"]
        if settings.control_strategy in set(avg["strategy"]):
            avg = avg[avg["strategy"] == settings.control_strategy]
        n = int(avg["n"].max())
        facts = (
            avg[avg["n"] == n]
            .groupby(["split", "fact_id"])["value"]
            .mean()
            .groupby("split")
            .agg(["mean", "size"])
        )
        taught = facts["mean"].get("taught", float("nan"))
        untaught = facts["mean"].get("untaught", float("nan"))
        ok_t = taught >= settings.taught_target
        ok_u = abs(untaught - settings.chance) <= settings.chance_band
        verdict = lambda ok: '<span class="ok">pass</span>' if ok else '<span class="bad">FAIL</span>'  # noqa: E731
        parts.append(
            f"<p>Avg@{n} ({html.escape(str(avg['strategy'].iloc[0]) if len(avg) else '')}): taught "
            f"{taught:.3f} over {int(facts['size'].get('taught', 0))} facts (target ≥ {settings.taught_target}) "
            f"{verdict(ok_t)}; untaught {untaught:.3f} over {int(facts['size'].get('untaught', 0))} facts "
            f"(target {settings.chance} ± {settings.chance_band}) {verdict(ok_u)}.</p>"
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
    settings: ReportSettings,
    human: Mapping[str, pd.DataFrame] | None = None,
) -> str:
    """The whole page. ``summaries`` maps suite -> summary.csv frame, ``control`` maps suite ->
    the control model's per-fact table (with ``split``)."""
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
