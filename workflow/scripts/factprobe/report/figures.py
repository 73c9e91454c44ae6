"""Figures of the HTML report, drawn with matplotlib's Agg backend and returned as PNG data URIs.

Each function takes a tidy table (summary / per-fact rows) and returns a ``data:image/png``
URI, or None when the table holds nothing to draw, so the page stays self-contained.
"""

from __future__ import annotations

import base64
import io

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from factprobe.measures import MEASURES, measure_of  # noqa: E402

DPI = 90


def measure_axis(measure: str) -> tuple[str, str, str]:
    """(name, unit, direction) of a measure, from its :data:`factprobe.measures.MEASURES` entry;
    unregistered measures keep their own name."""
    if measure not in MEASURES:
        return (measure, "value", "see the table")
    entry = MEASURES[measure]
    return (entry.label, entry.unit, entry.direction)


def fmt(value: float, digits: int = 3) -> str:
    """A number for people: ``digits`` decimals from 0.01 up, ``digits`` significant digits below
    (scientific from 1e-4 down), so a small value never prints as 0.000; "–" for a missing one."""
    if value is None or not np.isfinite(value):
        return "–"
    if value == 0:
        return "0"
    if abs(value) >= 0.01:
        return f"{value:.{digits}f}"
    return f"{value:.{digits}g}"


def to_data_uri(fig, dpi: int = DPI) -> str:
    """Encode a figure as a base64 PNG data URI and close it."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight")
    plt.close(fig)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def k_versus_n(
    summary: pd.DataFrame,
    dpi: int = DPI,
    chance: pd.DataFrame | None = None,
    intervals: pd.DataFrame | None = None,
    level: float = 0.95,
) -> str | None:
    """Min@n and Avg@n against n, one line per strategy, one column per model (distractors paper
    Fig. 1), with the random-ranker level (``chance`` rows ``k_min_chance``/``k_avg_chance``) dotted
    and, from ``intervals`` (leaderboard rows with ``ci_low``/``ci_high``/``n_facts``), the bootstrap
    interval over facts shaded around each line.

    ``summary`` rows of measures ``k_min`` / ``k_avg`` (pooled over prompt groups by the caller).
    """
    data = summary[summary["measure"].isin(["k_min", "k_avg"])]
    if data.empty:
        return None
    models = sorted(data["model"].unique())
    fig, axes = plt.subplots(
        2,
        len(models),
        figsize=(3.8 * len(models) + 0.8, 6.0),
        squeeze=False,
        sharey=True,
        layout="constrained",
    )
    for col, model in enumerate(models):
        for row, measure in enumerate(("k_min", "k_avg")):
            label, unit, direction = measure_axis(measure)
            ax = axes[row][col]
            part = data[(data["model"] == model) & (data["measure"] == measure)]
            facts = _n_facts(intervals, model, measure)
            for strategy, line in part.groupby("strategy", sort=True):
                line = line.sort_values("n")
                drawn = ax.plot(line["n"], line["value"], marker="o", label=strategy)
                band = _band(intervals, model, measure, strategy)
                if band is not None and not band.empty:
                    ax.fill_between(
                        band["n"], band["ci_low"], band["ci_high"], color=drawn[0].get_color(), alpha=0.15
                    )
            if chance is not None and not chance.empty:
                level_rows = chance[(chance["model"] == model) & (chance["measure"] == f"{measure}_chance")]
                line = level_rows.groupby("n")["value"].mean()
                ax.plot(line.index, line.to_numpy(), color="grey", linestyle=":", label="random ranker")
            _log_n_axis(ax, data["n"])
            ax.set_ylim(-0.02, 1.02)
            ax.set_xlabel("n (distractors per fact, log scale)")
            ax.set_ylabel(f"{label}\n({unit})", fontsize=8)
            ax.set_title(f"{model}: {label}, {facts}; {direction}", fontsize=9)
            ax.grid(alpha=0.3)
            if row == 0 and col == len(models) - 1:
                ax.legend(title=f"strategy (band: {level:.0%} CI)", fontsize=7, title_fontsize=7, loc="best")
    return to_data_uri(fig, dpi)


def _log_n_axis(ax, ns: pd.Series) -> None:
    """Log-scaled x axis ticked at the n values themselves (1, 2, 5, 10), not at powers of 10."""
    ax.set_xscale("log")
    ticks = sorted({int(n) for n in ns})
    ax.set_xticks(ticks, [str(t) for t in ticks])
    ax.minorticks_off()


def _band(intervals: pd.DataFrame | None, model: str, measure: str, strategy: str) -> pd.DataFrame | None:
    if intervals is None or intervals.empty:
        return None
    rows = intervals[
        (intervals["model"] == model)
        & (intervals["measure"] == measure)
        & (intervals["strategy"] == strategy)
    ]
    rows = rows.astype({"ci_low": float, "ci_high": float})
    return rows.dropna(subset=["ci_low", "ci_high"]).sort_values("n")


def _n_facts(intervals: pd.DataFrame | None, model: str, measure: str) -> str:
    """ "n = X facts" of a model's rows (a range when strategies or n differ)."""
    if intervals is None or intervals.empty:
        return "n facts unknown"
    rows = intervals[(intervals["model"] == model) & (intervals["measure"] == measure)]
    counts = pd.to_numeric(rows["n_facts"], errors="coerce").dropna().astype(int)
    counts = counts[counts > 0]
    if counts.empty:
        return "n facts unknown"
    low, high = counts.min(), counts.max()
    return f"n = {low} facts" if low == high else f"n = {low}–{high} facts"


def model_bars(board: pd.DataFrame, dpi: int = DPI, level: float = 0.95) -> str | None:
    """Headline measures, one small panel per suite × measure (its own axis, unit and direction),
    the models side by side as bars with their bootstrap interval over facts as error bars and the
    number of facts under each bar."""
    if board.empty:
        return None
    board = headline_rows(board)
    # One strategy per suite keeps the chart readable (random, the paper's lower bound, if present).
    strategies = (
        board[board["strategy"] != ""]
        .groupby("suite")["strategy"]
        .agg(lambda s: "random" if "random" in set(s) else sorted(set(s))[0])
    )
    chosen = board["suite"].map(strategies).fillna("")
    board = board[(board["strategy"] == "") | (board["strategy"] == chosen)].copy()
    if board.empty:
        return None
    panels = list(board.groupby(["suite", "measure", "strategy", "n"], sort=True))
    ncols = min(4, len(panels))
    nrows = -(-len(panels) // ncols)
    # A fixed grid (no constrained layout: it dominates the drawing time at 20+ panels).
    fig, axes = plt.subplots(nrows, ncols, figsize=(3.4 * ncols, 3.1 * nrows), squeeze=False)
    fig.subplots_adjust(hspace=0.75, wspace=0.55, top=1 - 0.35 / nrows)
    for ax in axes.ravel()[len(panels) :]:
        ax.set_visible(False)
    for ax, ((suite, measure, strategy, n), part) in zip(axes.ravel(), panels, strict=False):
        part = part.sort_values("model")
        name, unit, direction = measure_axis(measure)
        values = part["value"].to_numpy(float)
        low = part["ci_low"].to_numpy(float)
        high = part["ci_high"].to_numpy(float)
        has_ci = np.isfinite(low) & np.isfinite(high)
        err = np.vstack([np.where(has_ci, values - low, 0), np.where(has_ci, high - values, 0)])
        x = np.arange(len(part))
        ax.bar(x, values, color=[f"C{i}" for i in range(len(part))], width=0.6)
        if has_ci.any():
            ax.errorbar(x[has_ci], values[has_ci], yerr=err[:, has_ci], fmt="none", ecolor="black", capsize=4)
        facts = pd.to_numeric(part["n_facts"], errors="coerce").astype(float)
        facts = facts.where(facts > 0)  # 0 / empty: a suite-level measure
        ticks = [
            f"{m}\nn = {int(f)} facts" if np.isfinite(f) else f"{m}\n(suite-level)"
            for m, f in zip(part["model"], facts, strict=True)
        ]
        ax.set_xticks(x, ticks, fontsize=7)
        ax.set_ylabel(f"{name}\n({unit})", fontsize=7)
        entry = measure_of(measure)
        if entry.bounded:
            ax.set_ylim(0, 1.02)
        elif entry.zero_is_best:
            ax.axhline(0, color="grey", linewidth=1)
        at = _suffix({"strategy": strategy, "n": n}).strip()
        ax.set_title(f"{suite}: {name} {at}\n{direction}", fontsize=8)
        ax.grid(axis="y", alpha=0.3)
    fig.suptitle(f"bars: value; whiskers: {level:.0%} bootstrap interval over facts", fontsize=8)
    return to_data_uri(fig, dpi)


def headline_rows(board: pd.DataFrame) -> pd.DataFrame:
    """One row per measure and strategy: the largest n of K and Precision@n, R@1 of R@n."""
    largest = board.groupby(["suite", "measure", "strategy"])["n"].transform("max")
    recall = board["measure"] == "recall"
    return board[((board["n"] == largest) & ~recall) | (recall & (board["n"] == 1))]


def _suffix(row) -> str:
    """ " strategy @n" of a row (Series or dict); "" when neither applies."""
    parts = []
    if row["strategy"]:
        parts.append(str(row["strategy"]))
    if int(row["n"]):
        parts.append(f"@{int(row['n'])}")
    return " " + " ".join(parts) if parts else ""


def calibration(summary: pd.DataFrame, dpi: int = DPI) -> str | None:
    """BELIEF reliability diagram: accuracy against confidence per equal-size bin (§2.4)."""
    rows = summary[summary["measure"].str.endswith(("_calib_conf", "_calib_acc"))]
    if rows.empty:
        return None
    rows = rows.assign(
        mode=rows["measure"].str.replace(r"_calib_(conf|acc)$", "", regex=True),
        axis=rows["measure"].str.extract(r"_calib_(conf|acc)$")[0],
    )
    keys = ["model", "mode", "lang", "verbalization", "style", "shots", "bin"]
    wide = rows.pivot_table(index=keys, columns="axis", values="value", aggfunc="mean").reset_index()
    bins = int(wide["bin"].nunique())
    facts = summary[summary["measure"].str.startswith("belief") & (summary.get("level", "fact") == "fact")]
    counts = pd.to_numeric(facts.get("n_facts", pd.Series(dtype=float)), errors="coerce")
    n_text = (
        f"n = {int(counts.max())} facts" if counts.notna().any() and counts.max() > 0 else "n facts unknown"
    )
    fig, ax = plt.subplots(figsize=(5.4, 4.8))
    ax.plot([0, 1], [0, 1], color="grey", linestyle="--", linewidth=1, label="perfect calibration")
    for (model, mode, shots), curve in wide.groupby(["model", "mode", "shots"], sort=True):
        curve = curve.groupby("bin")[["conf", "acc"]].mean().sort_values("conf")
        label = f"{model} ({mode}{', ' + shots if shots else ''})"
        ax.plot(curve["conf"], curve["acc"], marker="o", label=label)
    ax.set_xlim(0, 1.02)
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel("mean confidence of the bin (probability, 0–1)")
    ax.set_ylabel("Acc@1 of the bin (share of prompts, 0–1)")
    ax.set_title(f"{bins} equal-size bins, {n_text}; closer to the diagonal is better", fontsize=8)
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3)
    return to_data_uri(fig, dpi)


def recall_curves(summary: pd.DataFrame, dpi: int = DPI) -> str | None:
    """R@n for n = 1..5 per language × verbalization, one panel per model (Fluent-mLAMA §3.3)."""
    data = summary[summary["measure"] == "recall"]
    if data.empty:
        return None
    facts = pd.to_numeric(data.get("n_facts", pd.Series(0, index=data.index)), errors="coerce")
    facts = facts.groupby(data["model"]).max()
    data = data.groupby(["model", "lang", "verbalization", "n"])["value"].mean().reset_index()
    models = sorted(data["model"].unique())
    fig, axes = plt.subplots(
        1, len(models), figsize=(4.4 * len(models) + 0.8, 4.0), squeeze=False, sharey=True
    )
    name, unit, direction = measure_axis("recall")
    for col, model in enumerate(models):
        ax = axes[0][col]
        for (lang, verb), line in data[data["model"] == model].groupby(["lang", "verbalization"], sort=True):
            line = line.sort_values("n")
            ax.plot(line["n"], line["value"], marker="o", label=f"{lang} / {verb}")
        ax.set_ylim(-0.02, 1.02)
        ax.set_xlabel("n (top positions counted)")
        ax.set_xticks(sorted(data["n"].unique()))
        ax.set_ylabel(f"{name}\n({unit})", fontsize=8)
        count = facts.get(model, 0)
        n_text = f"n = {int(count)} facts" if count and np.isfinite(count) else "n facts unknown"
        ax.set_title(f"{model}, {n_text}; {direction}", fontsize=9)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, title="lang / verbalization")
    return to_data_uri(fig, dpi)


def control_panel(check: pd.DataFrame, dpi: int = DPI) -> str | None:
    """Control model: Avg@n and Min@n against n for taught vs untaught facts, per strategy.

    ``check`` is a control_check table: its curve rows are drawn, with the random-ranker level
    dotted, the taught target as a line and the tolerated band around chance shaded (verdict rows).
    """
    curves = check[check["verdict"].fillna("") == ""]
    verdict = check[check["verdict"].isin(["pass", "FAIL"])].set_index("split")
    if curves.empty:
        return None
    fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharey=True, layout="constrained")
    styles = {"taught": "-", "untaught": "--"}
    for ax, (measure, label) in zip(axes, (("k_avg", "Avg@n"), ("k_min", "Min@n")), strict=True):
        if measure == "k_avg" and "untaught" in verdict.index:
            row = verdict.loc["untaught"]
            ax.axhspan(row["low"], row["high"], color="grey", alpha=0.15, label="chance ± band")
        if measure == "k_avg" and "taught" in verdict.index:
            ax.axhline(
                verdict.loc["taught", "low"], color="green", linewidth=1, linestyle=":", label="taught target"
            )
        part = curves[curves["measure"] == measure]
        level = part.groupby("n")["chance"].mean()
        ax.plot(
            level.index, level.to_numpy(), color="grey", linewidth=1, linestyle=":", label="random ranker"
        )
        for (strategy, split), line in part.groupby(["strategy", "split"], sort=True):
            line = line.sort_values("n")
            facts = int(line["facts"].max())
            drawn = ax.plot(
                line["n"],
                line["value"],
                marker="o",
                linestyle=styles[split],
                label=f"{strategy}, {split} (n = {facts} facts)",
            )
            if line["ci_low"].notna().any():
                ax.fill_between(
                    line["n"], line["ci_low"], line["ci_high"], color=drawn[0].get_color(), alpha=0.12
                )
        _log_n_axis(ax, curves["n"])
        ax.set_ylim(-0.02, 1.02)
        ax.set_xlabel("n (distractors per fact, log scale)")
        counts = part.groupby("split")["facts"].max()
        facts = " / ".join(f"{int(c)} {split}" for split, c in counts.items())
        ax.set_title(
            f"control: {label}, n = {facts} facts\ntaught: higher is better, untaught: near chance (bands: CI)",
            fontsize=8,
        )
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("mean over facts (0–1)")
    # One legend for both panels: the band and the target are drawn on the Avg@n panel only.
    entries = {}
    for ax in axes:
        for handle, text in zip(*ax.get_legend_handles_labels(), strict=True):
            entries.setdefault(text, handle)
    axes[1].legend(
        list(entries.values()), list(entries), fontsize=7, loc="center left", bbox_to_anchor=(1.02, 0.5)
    )
    return to_data_uri(fig, dpi)


#: x-axis label and title of each §5.1 curve (``metrics.meta.alignment_curves`` axes).
CURVE_AXES = {
    "distractors": ("number of distractors", "Fig. 3: τ with human judgement vs number of distractors"),
    "cloze_sentences": (
        "number of cloze sentences",
        "Fig. 4: τ with human judgement vs number of cloze sentences",
    ),
}


def alignment_curve(curves: pd.DataFrame, axis: str, dpi: int = DPI) -> str | None:
    """Mean held-out Kendall τ with human scores (fold -1 rows of ``human_alignment_curves.csv``)
    against the number of distractors (distractors paper Fig. 3, one line per strategy) or of
    cloze sentences (Fig. 4, one line per measure family); one panel per model."""
    data = curves[(curves["axis"] == axis) & (curves["fold"].astype(int) == -1)]
    data = data[np.isfinite(pd.to_numeric(data["test_tau"], errors="coerce"))]
    if data.empty:
        return None
    xlabel, title = CURVE_AXES[axis]
    models = sorted(data["model"].unique())
    fig, axes = plt.subplots(
        1, len(models), figsize=(4.6 * len(models) + 0.8, 3.8), squeeze=False, sharey=True
    )
    for col, model in enumerate(models):
        ax = axes[0][col]
        for family, line in data[data["model"] == model].groupby("family", sort=True):
            line = line.sort_values("x")
            ax.plot(line["x"], line["test_tau"].astype(float), marker="o", markersize=3, label=family)
        ax.axhline(0.0, color="grey", linewidth=0.8, linestyle=":")
        ax.set_xlabel(xlabel)
        if axis == "cloze_sentences":
            ax.set_xticks(sorted(int(x) for x in data["x"].unique()))
        ax.set_ylabel("mean Kendall τ (held-out folds)\nhigher is better", fontsize=8)
        ax.set_title(f"{model}", fontsize=9)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle(title, fontsize=10)
    return to_data_uri(fig, dpi)


def _day(value) -> pd.Timestamp:
    """A YYYYMMDD date (integer or text) as a date (month/day ``00`` read as the first)."""
    v = int(value)
    return pd.Timestamp(year=v // 10000, month=max(v // 100 % 100, 1), day=max(v % 100, 1))


def timeline_curves(table: pd.DataFrame, dpi: int = DPI) -> str | None:
    """Measure against slice date per model (``timeline.csv``): each dated slice's mean at its end
    date with its bootstrap interval, the static slice as a dashed level, the effective cut-off as
    a solid vertical line with its interval shaded, the declared cut-off dotted."""
    if table.empty:
        return None
    fig, ax = plt.subplots(figsize=(8, 4), layout="constrained")
    dated_all = table[table["slice"] != "static"]
    last = _day(dated_all["slice_end"].astype(int).max())
    for model, rows in table.groupby("model", sort=True):
        dated = rows[rows["slice"] != "static"].sort_values("slice_end", key=lambda s: s.astype(int))
        x = [_day(v) for v in dated["slice_end"]]
        y = dated["value"].to_numpy(dtype=float)
        err = np.vstack([y - dated["ci_low"].to_numpy(float), dated["ci_high"].to_numpy(float) - y])
        line = ax.errorbar(x, y, yerr=np.clip(err, 0, None), marker="o", capsize=3, label=model)
        color = line[0].get_color()
        static = rows[rows["slice"] == "static"]
        if not static.empty:
            ax.axhline(float(static["value"].iloc[0]), color=color, linestyle="--", linewidth=1, alpha=0.7)
        head = rows.iloc[0]
        # an empty interval end is "none within the series": the last slice's end
        lo = _day(head["cutoff_low"]) if str(head["cutoff_low"]) else last
        hi = _day(head["cutoff_high"]) if str(head["cutoff_high"]) else last
        if head["cutoff_status"] == "within":
            ax.axvline(_day(head["cutoff"]), color=color, linewidth=2)
        ax.axvspan(lo, hi, color=color, alpha=0.12)
        if str(head["declared_cutoff"] or ""):
            ax.axvline(_day(head["declared_cutoff"]), color=color, linestyle=":", linewidth=1.5)
    measure = table["measure"].iloc[0]
    ax.set_xlabel("slice (facts new up to this date)")
    ax.set_ylabel(f"{measure}, mean over the slice's facts")
    ax.set_title(
        "timeline: dashed = static slice; solid line = effective cut-off (shaded: its interval);"
        " dotted = declared cut-off",
        fontsize=8,
    )
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    return to_data_uri(fig, dpi)


def _ramp_points(row: pd.Series, first: pd.Timestamp, last: pd.Timestamp) -> tuple[list, list] | None:
    """The fitted ramp of a ``cutoff_profile.csv`` row as (dates, levels): flat at
    ``level_before`` up to its knot a, down to ``level_after`` at b, flat after. The 10 % and 90 %
    points lie at a + 0.1 (b - a) and a + 0.9 (b - a), so b - a = (end - start) / 0.8."""
    if not str(row.get("decay_start", "")) or not np.isfinite(row.get("level_before", np.nan)):
        return None
    start, end = _day(row["decay_start"]), _day(row["decay_end"])
    pad = (end - start) / 8
    a, b = start - pad, end + pad
    levels = [row["level_before"], row["level_before"], row["level_after"], row["level_after"]]
    return [min(first, a), a, b, max(last, b)], levels


def _iso(value) -> str:
    """YYYYMMDD text as YYYY-MM-DD (empty: "after the series")."""
    v = str(value or "")
    return f"{v[:4]}-{v[4:6]}-{v[6:]}" if v else "after the series"


def _profile_title(row: pd.Series) -> str:
    """Two lines a reader needs: the shape, the date with its interval, the width, the curve."""
    shape, model = row["shape"], row["model"]
    if shape == "insufficient":
        return f"{model}: not enough data, no cut-off\n{row['reason']}"
    if shape == "not monotone":
        return f"{model}: NOT MONOTONE, no single cut-off\na later slice is known better than an earlier one"
    if shape == "none":
        return f"{model}: no drop within the series\nits cut-off is after the last slice, or it does not depend on time"
    on = "facts about subjects it knows" if row["curve"] == "known_subject" else "all facts"
    return (
        f"{model}: {shape} drop; last known slice ends {_iso(row['cutoff'])} "
        f"(95 % interval {_iso(row['cutoff_low'])} to {_iso(row['cutoff_high'])})\n"
        f"falls 10 % to 90 % of the way in {row['decay_slices']:.1f} slices = {row['decay_days']:.0f} days "
        f"(interval {row['decay_slices_low']:.1f} to {row['decay_slices_high']:.1f} slices)\nfitted on {on}"
    )


def cutoff_profile_figure(
    timeline: pd.DataFrame, profiles: pd.DataFrame, calibration: pd.DataFrame | None = None, dpi: int = DPI
) -> str | None:
    """Per model a row of two panels (``timeline.csv``, ``cutoff_profile.csv``,
    ``slice_calibration.csv``). Left: what it knows per slice, all facts and the facts about
    subjects it knows (bootstrap intervals), the fitted ramp, the cut-off with its interval and
    the declared cut-off. Right: per slice the accuracy of its answers, its mean confidence and
    the share answered wrongly with high confidence."""
    if timeline.empty or profiles.empty:
        return None
    models = sorted(set(profiles["model"]))
    fig, axes = plt.subplots(
        len(models),
        2,
        figsize=(12, 3.6 * len(models)),
        squeeze=False,
        width_ratios=[3, 2],
        layout="constrained",
    )
    for (left, right), model in zip(axes, models, strict=True):
        rows = timeline[timeline["model"] == model]
        dated = rows[rows["slice"] != "static"].sort_values("slice_end", key=lambda s: s.astype(int))
        x = [_day(v) for v in dated["slice_end"]]
        row = profiles[profiles["model"] == model].iloc[0]
        for prefix, label, color, count in (
            ("", "all facts", "0.55", "n_facts"),
            ("known_", "facts about subjects it knows", "C0", "known_n_facts"),
        ):
            y = dated[f"{prefix}value"].to_numpy(dtype=float)
            if not np.isfinite(y).any():
                continue
            lo, hi = dated[f"{prefix}ci_low"].to_numpy(float), dated[f"{prefix}ci_high"].to_numpy(float)
            err = np.clip(np.vstack([y - lo, hi - y]), 0, None)
            n = dated[count].astype(int)
            left.errorbar(
                x,
                y,
                yerr=err,
                marker="o",
                capsize=3,
                color=color,
                label=f"{label} ({n.min()}-{n.max()} a slice)",
            )
        static = rows[rows["slice"] == "static"]
        if not static.empty and np.isfinite(float(static["value"].iloc[0])):
            left.axhline(
                float(static["value"].iloc[0]),
                color="0.55",
                linestyle="--",
                linewidth=1,
                label="old facts (static slice)",
            )
        ramp = _ramp_points(row, x[0], x[-1]) if x else None
        if ramp is not None:
            left.plot(ramp[0], ramp[1], color="C3", linewidth=2.5, alpha=0.8, label="fitted profile")
        if row["cutoff_status"] == "within":
            left.axvline(_day(row["cutoff"]), color="C3", linewidth=1.5)
            lo = _day(row["cutoff_low"]) if row["cutoff_low"] else x[-1]
            hi = _day(row["cutoff_high"]) if row["cutoff_high"] else x[-1]
            left.axvspan(lo, hi, color="C3", alpha=0.12, label="measured cut-off (shaded: 95 % interval)")
        if str(row["declared_cutoff"] or ""):
            left.axvline(
                _day(row["declared_cutoff"]),
                color="k",
                linestyle=":",
                linewidth=1.5,
                label="cut-off the provider declares",
            )
        left.set_ylabel(f"{row['measure']} (higher = knows more)", fontsize=8)
        left.set_title(_profile_title(row), fontsize=8, loc="left")
        left.grid(alpha=0.3)
        left.legend(fontsize=7, loc="best")
        left.set_xlabel("slice: facts that became true up to this date", fontsize=8)
        cal = None if calibration is None else calibration[calibration["model"] == model]
        if cal is None or cal.empty:
            right.set_axis_off()
            continue
        sl = cal[~cal["part"].isin(["static", "before", "after"])].sort_values("slice_end")
        xs = [_day(v) for v in sl["slice_end"]]
        width = (xs[1] - xs[0]) * 0.6 if len(xs) > 1 else pd.Timedelta(days=20)
        right.bar(
            xs,
            sl["confidently_wrong"],
            width=width,
            color="C1",
            alpha=0.5,
            label="wrong, yet confident (share; timeline.confident)",
        )
        right.plot(xs, sl["accuracy"], marker="o", color="C2", label="right answers (share)")
        right.plot(xs, sl["mean_confidence"], marker="s", color="C4", label="mean confidence in its answer")
        if row["cutoff_status"] == "within":
            right.axvline(_day(row["cutoff"]), color="C3", linewidth=1.5)
        after = cal[cal["part"] == "after"]
        note = ""
        if not after.empty:
            a = after.iloc[0]
            note = f"after the cut-off: ECE {fmt(a['ece'], 2)}, Brier {fmt(a['brier'], 2)}, {a['confidently_wrong']:.0%} confidently wrong"
        right.set_title("how sure it is, per slice" + (f"\n{note}" if note else ""), fontsize=8, loc="left")
        right.set_ylim(0, 1.05)
        right.grid(alpha=0.3)
        right.legend(fontsize=7, loc="best")
        right.tick_params(axis="x", labelrotation=30, labelsize=7)
    fig.suptitle(
        "Cut-off profile: where each model stops knowing, how sharply, and how sure it is after", fontsize=10
    )
    return to_data_uri(fig, dpi)
