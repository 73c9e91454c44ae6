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
import pandas as pd  # noqa: E402

DPI = 90


def to_data_uri(fig, dpi: int = DPI) -> str:
    """Encode a figure as a base64 PNG data URI and close it."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight")
    plt.close(fig)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def k_versus_n(summary: pd.DataFrame, dpi: int = DPI, chance: pd.DataFrame | None = None) -> str | None:
    """Min@n and Avg@n against n, one line per strategy, one column per model (distractors paper
    Fig. 1), with the random-ranker level (``chance`` rows ``k_min_chance``/``k_avg_chance``) dotted.

    ``summary`` rows of measures ``k_min`` / ``k_avg`` (pooled over prompt groups by the caller).
    """
    data = summary[summary["measure"].isin(["k_min", "k_avg"])]
    if data.empty:
        return None
    models = sorted(data["model"].unique())
    fig, axes = plt.subplots(
        2,
        len(models),
        figsize=(3.6 * len(models) + 0.8, 5.6),
        squeeze=False,
        sharey=True,
        layout="constrained",
    )
    for col, model in enumerate(models):
        for row, (measure, label) in enumerate((("k_min", "Min@n"), ("k_avg", "Avg@n"))):
            ax = axes[row][col]
            part = data[(data["model"] == model) & (data["measure"] == measure)]
            for strategy, line in part.groupby("strategy", sort=True):
                line = line.sort_values("n")
                ax.plot(line["n"], line["value"], marker="o", label=strategy)
            if chance is not None and not chance.empty:
                level = chance[(chance["model"] == model) & (chance["measure"] == f"{measure}_chance")]
                level = level.groupby("n")["value"].mean()
                ax.plot(level.index, level.to_numpy(), color="grey", linestyle=":", label="random ranker")
            ax.set_xscale("log")
            ax.set_ylim(-0.02, 1.02)
            ax.set_xlabel("n (distractors)")
            ax.set_ylabel(label)
            ax.set_title(f"{model}: {label}", fontsize=10)
            ax.grid(alpha=0.3)
            if row == 0 and col == len(models) - 1:
                ax.legend(title="strategy", fontsize=8, loc="best")
    return to_data_uri(fig, dpi)


def model_bars(board: pd.DataFrame, dpi: int = DPI) -> str | None:
    """Headline measures of every suite, models side by side (grouped bars)."""
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
    board["label"] = board["suite"] + "\n" + board["measure"] + board.apply(_suffix, axis=1)
    # Bars on a 0..1 scale only; mean rank and Ovconf have other ranges and stay in the table.
    board = board[~board["measure"].isin(["mean_rank", "belief_ovconf"])]
    if board.empty:
        return None
    pivot = board.pivot_table(index="label", columns="model", values="value", aggfunc="mean").sort_index()
    fig, ax = plt.subplots(figsize=(max(6, 0.55 * len(pivot) * max(1, pivot.shape[1])), 4))
    pivot.plot.bar(ax=ax, width=0.8)
    ax.set_ylim(0, 1.02)
    ax.set_ylabel("value")
    ax.tick_params(axis="x", labelsize=7)
    ax.legend(title="model", fontsize=8)
    ax.grid(axis="y", alpha=0.3)
    return to_data_uri(fig, dpi)


def headline_rows(board: pd.DataFrame) -> pd.DataFrame:
    """One row per measure and strategy: the largest n of K and Precision@n, R@1 of R@n."""
    largest = board.groupby(["suite", "measure", "strategy"])["n"].transform("max")
    recall = board["measure"] == "recall"
    return board[((board["n"] == largest) & ~recall) | (recall & (board["n"] == 1))]


def _suffix(row) -> str:
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
    fig, ax = plt.subplots(figsize=(5, 4.6))
    ax.plot([0, 1], [0, 1], color="grey", linestyle="--", linewidth=1, label="perfect calibration")
    for (model, mode, shots), curve in wide.groupby(["model", "mode", "shots"], sort=True):
        curve = curve.groupby("bin")[["conf", "acc"]].mean().sort_values("conf")
        label = f"{model} ({mode}{', ' + shots if shots else ''})"
        ax.plot(curve["conf"], curve["acc"], marker="o", label=label)
    ax.set_xlim(0, 1.02)
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel("mean confidence of the bin")
    ax.set_ylabel("Acc@1 of the bin")
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3)
    return to_data_uri(fig, dpi)


def recall_curves(summary: pd.DataFrame, dpi: int = DPI) -> str | None:
    """R@n for n = 1..5 per language × verbalization, one panel per model (Fluent-mLAMA §3.3)."""
    data = summary[summary["measure"] == "recall"]
    if data.empty:
        return None
    data = data.groupby(["model", "lang", "verbalization", "n"])["value"].mean().reset_index()
    models = sorted(data["model"].unique())
    fig, axes = plt.subplots(
        1, len(models), figsize=(4.2 * len(models) + 0.8, 3.8), squeeze=False, sharey=True
    )
    for col, model in enumerate(models):
        ax = axes[0][col]
        for (lang, verb), line in data[data["model"] == model].groupby(["lang", "verbalization"], sort=True):
            line = line.sort_values("n")
            ax.plot(line["n"], line["value"], marker="o", label=f"{lang} / {verb}")
        ax.set_ylim(-0.02, 1.02)
        ax.set_xlabel("n")
        ax.set_xticks(sorted(data["n"].unique()))
        ax.set_ylabel("R@n")
        ax.set_title(model, fontsize=10)
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
            ax.plot(
                line["n"], line["value"], marker="o", linestyle=styles[split], label=f"{strategy}, {split}"
            )
        ax.set_xscale("log")
        ax.set_ylim(-0.02, 1.02)
        ax.set_xlabel("n (distractors)")
        ax.set_title(f"control: {label}", fontsize=10)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("mean over facts")
    # One legend for both panels: the band and the target are drawn on the Avg@n panel only.
    entries = {}
    for ax in axes:
        for handle, text in zip(*ax.get_legend_handles_labels(), strict=True):
            entries.setdefault(text, handle)
    axes[1].legend(
        list(entries.values()), list(entries), fontsize=7, loc="center left", bbox_to_anchor=(1.02, 0.5)
    )
    return to_data_uri(fig, dpi)
