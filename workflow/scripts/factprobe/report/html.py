"""The self-contained HTML report (results/report/index.html): figures inline, no external files.

``build_report`` turns the metric tables into one page with a section per view; a section whose
data is absent says so in words, so no section is ever blank. The page opens with a provenance
block (dumps, suites, models, version, config hash); headline values carry their bootstrap
interval over facts (:mod:`factprobe.metrics.uncertainty`) and models are compared pairwise.
"""

from __future__ import annotations

import html
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from factprobe.settings import Report

from ..metrics import measure_of
from ..metrics.ranking import table1
from . import figures
from .profile_html import profile_parts

CSS = """
body{font-family:system-ui,sans-serif;margin:2em auto;max-width:1200px;color:#222;padding:0 1em}
h1{border-bottom:2px solid #444}h2{margin-top:2em;border-bottom:1px solid #ccc}
table{border-collapse:collapse;font-size:13px;margin:.8em 0}th,td{border:1px solid #ccc;padding:3px 7px;text-align:right}
th{background:#f3f3f3}td:first-child,th:first-child{text-align:left}img{max-width:100%;display:block;margin:.8em 0}
.note{color:#555}.ok{color:#060;font-weight:bold}.bad{color:#a00;font-weight:bold}nav a{margin-right:1em}
.unsure{color:#a60;font-weight:bold}#provenance table{font-size:12px}#provenance td{text-align:left}
"""

SECTIONS = [
    ("provenance", "Provenance: what this report was built from"),
    ("models", "Models side by side"),
    ("knowledge", "Knowledge measure K: Min@n and Avg@n against n"),
    ("belief", "BELIEF: accuracy, consistency and calibration"),
    ("ranking", "R@n by language and verbalization"),
    ("plausibility", "Plausibility (PROBELM)"),
    ("control", "Control model: taught vs untaught facts"),
]
#: Shown only when a human judgement file is configured (metrics.human_alignment).
HUMAN_SECTION = ("human", "Alignment with human judgement (Kendall τ, 3-fold CV)")
TIMELINE_SECTION = ("timeline", "Knowledge over time: effective cut-off per model")
#: Shown only when a verbalization-pairs suite wrote robustness.csv (rule robustness_table).
ROBUSTNESS_SECTION = ("robustness", "Robustness to verbalization flaws (Kendall τ, Table 4)")


@dataclass
class Figures:
    """Figure sink: every figure drawn for the page, by file name (``{name}.png``), so that
    render_report can also write them as separate files for ``snakemake --report``."""

    dpi: int
    level: float = 0.95
    drawn: dict[str, str] = field(default_factory=dict)

    def img(self, uri: str | None, alt: str, name: str) -> str:
        if not uri:
            return ""
        self.drawn[_file_name(name)] = uri
        return f'<img src="{uri}" alt="{html.escape(alt)}">'

    def suite_figure(self, suite: str, uri: str | None, what: str, name: str) -> str:
        """A suite's heading and its figure (alt text "<what>, suite <suite>", file <name>-<suite>)."""
        return f"<h3>suite {html.escape(suite)}</h3>" + self.img(
            uri, f"{what}, suite {suite}", f"{name}-{suite}"
        )


def _file_name(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in name)


def _table(frame: pd.DataFrame, digits: int = 3) -> str:
    if frame.empty:
        return ""
    frame = frame.copy()
    frame.columns.name = None
    return frame.to_html(
        index=False, float_format=lambda v: figures.fmt(v, digits), na_rep="–", border=0, escape=True
    )


def with_interval(value: float, low: float, high: float) -> str:
    """ "value [low, high]" (the interval left out when there is none)."""
    if not (np.isfinite(low) and np.isfinite(high)):
        return figures.fmt(value)
    return f"{figures.fmt(value)} [{figures.fmt(low)}, {figures.fmt(high)}]"


def _note(text: str) -> str:
    return f'<p class="note">{html.escape(text)}</p>'


def pooled(summary: pd.DataFrame, measures) -> pd.DataFrame:
    """Per-fact-mean rows of ``measures``, averaged over prompt groups (lang, style, shots...)."""
    rows = summary[summary["measure"].isin(list(measures)) & (summary["bin"] == -1)]
    return rows.groupby(["model", "measure", "strategy", "n"], sort=True)["value"].mean().reset_index()


def same_strategy_note(board: pd.DataFrame) -> str:
    """A sentence naming strategies whose values coincide (their distractor lists are the same),
    read from one suite's leaderboard rows (``same_as``, computed once by the leaderboard)."""
    named = board[board["same_as"].fillna("").astype(str) != ""]
    same = dict(zip(named["strategy"], named["same_as"], strict=True))
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
        "<p>Distractors actually compared and the value a random ranker gets, over the same facts "
        "and cloze sentences as Min@n and Avg@n: Avg@n 1/2 for every n, Min@n 1/(m+1) for m "
        "distractors used (fewer than n only with short_lists: available).</p>"
    )
    return note + _table(table)


def knowledge_section(summaries: Mapping[str, pd.DataFrame], figs: Figures, board: pd.DataFrame) -> str:
    parts = []
    for suite, summary in summaries.items():
        data = pooled(summary, ["k_min", "k_avg"])
        if data.empty:
            continue
        chance = pooled(summary, ["k_min_chance", "k_avg_chance"])
        intervals = board[board["suite"] == suite]
        parts.append(
            figs.suite_figure(
                suite,
                figures.k_versus_n(data, figs.dpi, chance, intervals, figs.level),
                "Min@n and Avg@n against n",
                "k_versus_n",
            )
        )
        parts.append(same_strategy_note(intervals))
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


def belief_section(summaries: Mapping[str, pd.DataFrame], figs: Figures) -> str:
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
        parts.append(
            figs.suite_figure(
                suite, figures.calibration(summary, figs.dpi), "BELIEF calibration", "calibration"
            )
        )
        rows = rows.assign(
            mode=np.where(rows["measure"].str.startswith("belief_icl_"), "generation", "ranking"),
            name=rows["measure"].str.replace(r"^belief(_icl)?_", "", regex=True),
        )
        parts.append(_belief_table(rows[rows["name"].isin(wanted)], wanted, ["model", "mode", "shots"]))
        # Per-style breakdown (not the paper's measures, which pool every prompt of a pair).
        split = rows[rows["name"].str.endswith("_by_style")]
        split = split.assign(name=split["name"].str.removesuffix("_by_style"))
        split = split[split["name"].isin(wanted)]
        if split["style"].nunique() > 1:
            parts.append("<p>Breakdown by template style (each style's prompts alone):</p>")
            parts.append(_belief_table(split, wanted, ["model", "mode", "shots", "style"]))
    return "".join(parts) or _note("No suite computed BELIEF measures in this run.")


def _belief_table(rows: pd.DataFrame, wanted: list[str], index: list[str]) -> str:
    """BELIEF values wide: one row per ``index`` key, one column per measure in ``wanted`` order."""
    table = rows.pivot_table(index=index, columns="name", values="value", aggfunc="mean")
    return _table(table[[c for c in wanted if c in table.columns]].reset_index())


#: R@n columns of the Table 1 layout (the paper's R@1 and R@3).
TABLE1_NS = (1, 3)


def ranking_section(summaries: Mapping[str, pd.DataFrame], figs: Figures) -> str:
    parts = []
    for suite, summary in summaries.items():
        rows = summary[summary["measure"].isin(["recall", "mean_rank"]) & (summary["bin"] == -1)]
        if rows.empty:
            continue
        parts.append(
            figs.suite_figure(
                suite, figures.recall_curves(rows, figs.dpi), "R@n by language and verbalization", "recall"
            )
        )
        # fluent-mLAMA Table 1 (§3.3): model x verbalization rows, R@1 / R@3 / mean rank per language
        for strategy, group in rows.groupby(rows["strategy"].fillna(""), sort=True):
            table = table1(group, ns=TABLE1_NS)
            if table.empty:
                continue
            table.columns = [f"{measure} {lang}" for measure, lang in table.columns]
            label = f", distractors {strategy}" if strategy else ""
            parts.append(f"<p>Table 1 layout (fluent-mLAMA §3.3){html.escape(label)}</p>")
            parts.append(_table(table.reset_index()))
    return "".join(parts) or _note("No suite computed ranking measures in this run.")


def plausibility_section(summaries: Mapping[str, pd.DataFrame]) -> str:
    parts = []
    # NDCG is the headline convention, the one PLAUSIBILITY averages (metrics.plausibility).
    names = {"plaus_acc": "Acc.", "plaus_rr": "MRR", "plaus_ndcg_minmax": "NDCG"}
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


def models_section(
    board: pd.DataFrame,
    figs: Figures,
    paired: pd.DataFrame | None = None,
    model_notes: Mapping[str, str] | None = None,
) -> str:
    """Headline measures per model side by side; ``model_notes`` (model -> its manifest's note)
    say next to the values when a model's weights are not the original release."""
    if board.empty:
        return _note("No model has metrics yet.")
    board = figures.headline_rows(board)
    board = board.assign(
        col=board.apply(headline_label, axis=1),
        cell=[
            with_interval(v, lo, hi)
            for v, lo, hi in zip(board["value"], board["ci_low"], board["ci_high"], strict=True)
        ],
        better=[figures.measure_axis(m)[2] for m in board["measure"]],
    )
    wide = board.pivot_table(index=["suite", "col"], columns="model", values="cell", aggfunc="first")
    facts = pd.to_numeric(board["n_facts"], errors="coerce").astype(float)
    facts = facts.where(facts > 0)  # 0 / empty: a suite-level measure
    counts = facts.groupby([board["suite"], board["col"]]).agg(
        lambda f: "suite-level" if f.isna().all() else "/".join(str(int(x)) for x in sorted(set(f.dropna())))
    )
    wide["n facts"] = counts.reindex(wide.index)
    wide["better"] = board.groupby(["suite", "col"])["better"].first().reindex(wide.index)
    if board["chance"].notna().any():
        chance = board.groupby(["suite", "col"])["chance"].mean()
        wide["chance (random ranker)"] = [figures.fmt(v) for v in chance.reindex(wide.index)]
    wide = wide.reset_index().rename(columns={"col": "measure"})
    wide.columns.name = None
    level = f"{figs.level:.0%}"
    note = _note(
        f"K at the largest n, R@1; every n is in results/metrics/leaderboard.csv. Cells: value [{level} "
        "percentile bootstrap interval], resampling facts (not prompts) with replacement; measures defined "
        "over a whole prompt set (suite-level) have no interval. Where a strategy found fewer than n "
        "distractors the label says how many were used; '= s' marks a strategy whose values equal strategy s."
    )
    chart = figs.img(figures.model_bars(board, figs.dpi, figs.level), "headline measures per model", "models")
    shown = set(board["model"])
    caveats = "".join(
        _note(f"{model}: {text}")
        for model, text in sorted((model_notes or {}).items())
        if model in shown and text
    )
    return chart + note + caveats + _table(wide) + paired_section(paired, figs.level)


def paired_section(paired: pd.DataFrame | None, level: float = 0.95) -> str:
    """Paired bootstrap comparisons (model a − model b over shared facts) of the headline rows."""
    if paired is None or paired.empty:
        return _note("Paired comparison: needs at least two models scored on the same suite.")
    rows = figures.headline_rows(paired.rename(columns={"model_a": "model"})).rename(
        columns={"model": "model_a"}
    )
    if rows.empty:
        return ""
    verdict = []
    for row in rows.itertuples():
        if row.ci_low > 0 or row.ci_high < 0:
            a_better = measure_of(row.measure).a_better(row.diff)
            verdict.append(f"{row.model_a if a_better else row.model_b} better (CI excludes 0)")
        else:
            verdict.append("no clear difference (CI includes 0)")
    table = pd.DataFrame(
        {
            "suite": rows["suite"],
            "measure": [headline_label(r) for _, r in rows.iterrows()],
            "a − b": rows["model_a"] + " − " + rows["model_b"],
            "difference [CI]": [
                with_interval(d, lo, hi)
                for d, lo, hi in zip(rows["diff"], rows["ci_low"], rows["ci_high"], strict=True)
            ],
            "p (two-sided)": [figures.fmt(p) for p in rows["p_value"]],
            "shared facts": rows["n_facts"].astype(int),
            "reading": verdict,
        }
    )
    note = (
        f"<p>Paired comparison (results/metrics/paired.csv): the difference a − b on the facts both models "
        f"were scored on, its {level:.0%} paired percentile bootstrap interval (the same resampled facts for "
        "both models) and the two-sided bootstrap p-value of no difference. For the mean rank, lower is "
        "better.</p>"
    )
    return "<h3>Paired comparison</h3>" + note + _table(table)


def verdict_reading(row, level: float = 0.95) -> str:
    """pass/FAIL mark of a control verdict row, marked uncertain when its bootstrap interval over
    facts crosses the target (taught: ``low``; untaught: the band ``low``..``high``)."""
    mark = {"pass": '<span class="ok">pass</span>', "FAIL": '<span class="bad">FAIL</span>'}[row["verdict"]]
    low, high = row.get("ci_low", np.nan), row.get("ci_high", np.nan)
    if not (np.isfinite(low) and np.isfinite(high)):
        return mark
    if low < row["low"] - 1e-12 and high >= row["low"] or (high > row["high"] + 1e-12 and low <= row["high"]):
        return (
            f'{mark} <span class="unsure">(uncertain: the {level:.0%} interval over {int(row["facts"])} '
            "facts crosses the target)</span>"
        )
    return mark


def control_section(checks: Mapping[str, pd.DataFrame], settings: Report, figs: Figures | None = None) -> str:
    """Taught vs untaught from each suite's control_check table (written by the metrics stage)."""
    figs = figs or Figures(settings.dpi, settings.confidence_level)
    parts = []
    for suite, check in checks.items():
        verdict = check[check["verdict"].isin(["pass", "FAIL"])].set_index("split")
        if verdict.empty:
            continue
        parts.append(f"<h3>suite {html.escape(suite)}, model {html.escape(settings.control_model)}</h3>")
        parts.append(
            figs.img(
                figures.control_panel(check, figs.dpi),
                f"control model taught vs untaught, suite {suite}",
                f"control-{suite}",
            )
        )
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
            interval = ""
            if np.isfinite(row.get("ci_low", np.nan)):
                interval = (
                    f" [{figs.level:.0%} CI {figures.fmt(row['ci_low'])}, {figures.fmt(row['ci_high'])}]"
                )
            said.append(
                f"{split} {row['value']:.3f}{interval} over {int(row['facts'])} facts "
                f"(target {target}) {verdict_reading(row, figs.level)}"
            )
        used = (verdict["n_used"] * verdict["facts"]).sum() / verdict["facts"].sum()
        parts.append(
            f"<p>Avg@{int(first['n'])} ({html.escape(str(first['strategy']))}, "
            f"{used:.1f} distractors used on average): {'; '.join(said)}.</p>"
        )
    return "".join(parts) or _note("The control model has no knowledge-measure results in this run.")


def provenance_section(provenance: Mapping | None, settings: Report) -> str:
    """Dumps and dates, suites and fact counts, models and their identity, version, config hash,
    and the plugins loaded (their file hashes), if any."""
    if not provenance:
        return _note("No provenance was passed to the report (library use without the workflow).")
    parts = [
        "<p>factprobe "
        f"<b>{html.escape(str(provenance.get('version', 'unknown')))}</b>, configuration hash "
        f"<code>{html.escape(str(provenance.get('config_hash', 'unknown')))}</code> (SHA-256 of the "
        f"resolved config), intervals: {settings.confidence_level:.0%} percentile bootstrap over facts, "
        f"B = {settings.bootstrap_samples} replicates, seed {settings.bootstrap_seed}.</p>"
    ]
    for key, title in (("dumps", "Wikidata dumps used"), ("suites", "Suites"), ("models", "Models")):
        rows = provenance.get(key) or []
        if rows:
            frame = pd.DataFrame(rows).fillna("").astype(str)
            parts.append(f"<h3>{title}</h3>{_table(frame)}")
        else:
            parts.append(_note(f"{title}: none recorded."))
    if provenance.get("plugins"):
        frame = pd.DataFrame(provenance["plugins"]).astype(str)
        parts.append(f"<h3>Plugins (FACTPROBE_PLUGINS)</h3>{_table(frame)}")
    return "".join(parts)


def human_section(
    human: Mapping[str, pd.DataFrame] | None,
    curves: Mapping[str, pd.DataFrame] | None = None,
    figs: Figures | None = None,
) -> str:
    """Mean held-out Kendall τ per measure family and model (distractors paper §4.2, Table 3) and,
    with ``curves`` (``human_alignment_curves.csv`` per suite), Fig. 3 and Fig. 4 (§5.1)."""
    parts = []
    for suite, table in (human or {}).items():
        means = table[table["fold"].astype(int) == -1]
        if means.empty:
            continue
        wide = means.pivot_table(index="family", columns="model", values="test_tau", aggfunc="first")
        parts.append(f"<h3>{html.escape(suite)}</h3>{_table(wide.reset_index())}")
        curve = (curves or {}).get(suite)
        if curve is not None and figs is not None:
            for axis in figures.CURVE_AXES:
                uri = figures.alignment_curve(curve, axis, figs.dpi)
                parts.append(figs.img(uri, figures.CURVE_AXES[axis][1], f"human_{axis}_{suite}"))
    if not parts:
        return _note("No human judgement file configured (metrics.human_alignment.path).")
    return _note(
        "Mean Kendall τ over the held-out folds; hyperparameters chosen on the other folds."
    ) + "".join(parts)


def timeline_section(
    timelines: Mapping[str, pd.DataFrame],
    figs: Figures,
    profiles: Mapping[str, pd.DataFrame] | None = None,
    after: Mapping[str, pd.DataFrame] | None = None,
    cutoff: Mapping[str, pd.DataFrame] | None = None,
    calibration: Mapping[str, pd.DataFrame] | None = None,
) -> str:
    """Per timeline suite (``timeline.csv``): the curves figure, each model's cut-off row, its
    cut-off profile and calibration (``cutoff``, ``calibration``: report/profile_html.py),
    from ``profiles`` (``timeline_profile.csv``) the facts per popularity bin of every slice and,
    from ``after`` (``after_cutoff.csv``), each model's measures on the facts new after its
    declared cut-off."""
    parts = [
        _note(
            "Each point: a slice of facts new in its interval, all slices of one size and popularity "
            "profile. A model that stopped learning at some date knows the slices up to it and fewer "
            "after: the solid line is that date, fitted as one drop (shaded: its bootstrap interval); "
            "no solid line = no cut-off within the series. Dotted: the cut-off its provider declares."
        )
    ]
    for suite, table in timelines.items():
        parts.append(
            figs.suite_figure(suite, figures.timeline_curves(table, figs.dpi), "timeline", "timeline")
        )
        cols = [
            "model",
            "cutoff_status",
            "cutoff",
            "cutoff_low",
            "cutoff_high",
            "share_none",
            "declared_cutoff",
        ]
        parts.append(_table(table.drop_duplicates("model")[cols]))
        parts.append(
            profile_parts(
                suite, table, (cutoff or {}).get(suite), (calibration or {}).get(suite), figs, _table, _note
            )
        )
        profile = (profiles or {}).get(suite)
        if profile is not None:
            wide = profile.pivot_table(index="slice", columns="stratum", values="median_popularity")
            wide.columns = [f"bin {c}: median sitelinks" for c in wide.columns]
            counts = profile.groupby("slice")["n"].sum().rename("facts")
            parts.append(_note("Popularity profile per slice (the same count per bin in every slice):"))
            parts.append(_table(pd.concat([counts, wide], axis=1).reset_index()))
        own = (after or {}).get(suite)
        if own is not None and not own.empty:
            parts.append(
                _note(
                    "Each model's contamination-free suite: the facts of the slices that start on or "
                    "after its declared cut-off (empty measure: no such slice yet), with bootstrap intervals:"
                )
            )
            parts.append(_table(own))
    return "".join(parts)


def robustness_section(tables: Mapping[str, pd.DataFrame]) -> str:
    """Distractors paper §4.3 Table 4 per verbalization-pairs suite (``robustness.csv``): one row
    per measure family, per model the Kendall τ between the flawed and corrected verbalizations
    (mean over the configurations Table 3's folds chose) and the facts it is computed on."""
    parts = [
        _note(
            "Kendall τ between a measure's values on the flawed and on the corrected verbalization of "
            "the same facts, under the configuration each fold of the human-alignment table chose, "
            "mean over the folds; facts: those defined in both verbalizations under every such "
            "configuration. τ near 1: the measure ranks facts alike despite the flaws."
        )
    ]
    for suite, table in tables.items():
        if table.empty:
            parts.append(f"<h3>suite {html.escape(suite)}</h3>" + _note("No family has a Table 4 row."))
            continue
        wide = table.pivot_table(
            index="family", columns="model", values=["robustness_tau", "n_facts"], aggfunc="first"
        )
        models = sorted(set(table["model"]))
        cols = [(v, m) for m in models for v in ("robustness_tau", "n_facts")]
        wide = wide.reindex(columns=cols)
        wide.columns = [f"{m} τ" if v == "robustness_tau" else f"{m} facts" for v, m in cols]
        for m in models:  # counts as integers, "–" where the model has no row for the family
            wide[f"{m} facts"] = [str(int(x)) if pd.notna(x) else "–" for x in wide[f"{m} facts"]]
        folds = table.groupby("family")["folds"].max().reindex(wide.index)
        wide.insert(0, "folds", folds.astype(int))
        parts.append(f"<h3>suite {html.escape(suite)}</h3>{_table(wide.reset_index())}")
    return "".join(parts)


@dataclass(frozen=True)
class ReportTables:
    """What one report page shows: ``summaries`` maps suite -> summary.csv frame, ``control``
    suite -> the control model's control_check table (metrics stage), ``board`` is
    leaderboard.csv (with its bootstrap intervals), ``paired`` paired.csv, ``provenance`` what
    :mod:`factprobe.report.provenance` gathers. The optional sections, each by suite: ``human``
    (human_alignment.csv) and ``curves`` (human_alignment_curves.csv, Fig. 3 and 4),
    ``robustness`` (robustness.csv, Table 4), ``timelines`` (timeline.csv) with its ``profiles``,
    ``after`` (after_cutoff), ``cutoff`` (cutoff_profile) and ``calibration`` (slice_calibration)."""

    summaries: Mapping[str, pd.DataFrame]
    board: pd.DataFrame
    control: Mapping[str, pd.DataFrame]
    paired: pd.DataFrame | None = None
    provenance: Mapping | None = None
    human: Mapping[str, pd.DataFrame] | None = None
    curves: Mapping[str, pd.DataFrame] | None = None
    robustness: Mapping[str, pd.DataFrame] | None = None
    timelines: Mapping[str, pd.DataFrame] | None = None
    profiles: Mapping[str, pd.DataFrame] | None = None
    after: Mapping[str, pd.DataFrame] | None = None
    cutoff: Mapping[str, pd.DataFrame] | None = None
    calibration: Mapping[str, pd.DataFrame] | None = None


def build_report(tables: ReportTables, settings: Report, figs: Figures | None = None) -> str:
    """The whole page of ``tables`` (:class:`ReportTables`: an optional section shows when its
    tables are given); ``figs`` collects every figure drawn."""
    t = tables
    figs = figs or Figures(settings.dpi, settings.confidence_level)
    bodies = {
        "provenance": provenance_section(t.provenance, settings),
        "models": models_section(
            t.board,
            figs,
            t.paired,
            {str(m.get("model")): str(m.get("note") or "") for m in (t.provenance or {}).get("models") or []},
        ),
        "knowledge": knowledge_section(t.summaries, figs, t.board),
        "belief": belief_section(t.summaries, figs),
        "ranking": ranking_section(t.summaries, figs),
        "plausibility": plausibility_section(t.summaries),
        "control": control_section(t.control, settings, figs),
    }
    shown = list(SECTIONS)
    if t.human:
        bodies["human"] = human_section(t.human, t.curves, figs)
        shown.append(HUMAN_SECTION)
    if t.timelines:
        bodies["timeline"] = timeline_section(t.timelines, figs, t.profiles, t.after, t.cutoff, t.calibration)
        shown.append(TIMELINE_SECTION)
    if t.robustness:
        bodies["robustness"] = robustness_section(t.robustness)
        shown.append(ROBUSTNESS_SECTION)
    nav = "".join(f'<a href="#{key}">{html.escape(title)}</a>' for key, title in shown)
    sections = "".join(
        f'<section id="{key}"><h2>{html.escape(title)}</h2>{bodies[key]}</section>' for key, title in shown
    )
    suites = ", ".join(html.escape(s) for s in t.summaries) or "none"
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{html.escape(settings.title)}</title><style>{CSS}</style></head><body>"
        f'<h1>{html.escape(settings.title)}</h1><p class="note">Suites: {suites}. Every value is a mean over '
        "facts; ties between the correct object and a distractor count as failures. Intervals are "
        f"{settings.confidence_level:.0%} percentile bootstrap intervals over facts.</p>"
        f"<nav>{nav}</nav>{sections}</body></html>\n"
    )
