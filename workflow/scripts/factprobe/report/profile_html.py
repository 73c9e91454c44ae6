"""The cut-off profile part of the report's timeline section (``cutoff_profile.csv``,
``slice_calibration.csv``): the figure a reader understands on its own, the profile per model
beside its declared cut-off, and the calibration before/after the measured cut-off."""

from __future__ import annotations

import pandas as pd

from factprobe.report import figures

#: Columns of the profile table on the page, in reading order.
PROFILE_SHOWN = [
    "model",
    "curve",
    "shape",
    "cutoff",
    "cutoff_low",
    "cutoff_high",
    "declared_cutoff",
    "decay_slices",
    "decay_slices_low",
    "decay_slices_high",
    "decay_days",
    "n_facts",
    "n_known_subject",
    "reason",
]
CALIBRATION_SHOWN = [
    "model",
    "part",
    "n_facts",
    "accuracy",
    "mean_confidence",
    "brier",
    "ece",
    "confidently_wrong",
    "ar_0",
    "ar_50",
    "ar_90",
]


def profile_parts(
    suite: str,
    timeline: pd.DataFrame,
    profile: pd.DataFrame | None,
    calibration: pd.DataFrame | None,
    figs,
    table,
    note,
) -> str:
    """HTML of one suite's profile: figure, profile table, calibration table (``table`` and
    ``note`` are the page's table and note helpers)."""
    if profile is None or profile.empty:
        return ""
    parts = [
        note(
            "Cut-off profile: the measured cut-off, how wide the fall is (10 % to 90 % of the way from "
            "the level before it to the floor, in slices and days) and its shape: sharp (within one "
            "slice), gradual, none (no drop in the series), not monotone (a later slice known better "
            "than an earlier one: no single date) or insufficient (too few slices or facts). Fitted on "
            "the facts about subjects the model knows (it passes their older facts) when there are "
            "enough, else on all facts (column curve)."
        ),
        figs.img(
            figures.cutoff_profile_figure(timeline, profile, calibration, figs.dpi),
            f"cut-off profile, suite {suite}",
            f"cutoff_profile-{suite}",
        ),
        table(profile[PROFILE_SHOWN]),
    ]
    if calibration is not None and not calibration.empty:
        parts.append(
            note(
                "Calibration per slice (the model's probability over the object and the distractors "
                "the measure compares): accuracy, mean confidence in its answer, Brier score, ECE over "
                "20 equal-count bins, the share answered wrongly with high confidence, and the accuracy "
                "after setting aside the least confident 0 %, 50 %, 90 % (ar_*). Before / after: the "
                "dated slices up to / after the measured cut-off."
            )
        )
        parts.append(table(calibration[CALIBRATION_SHOWN]))
    return "".join(parts)
