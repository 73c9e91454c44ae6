"""The registry of measures: what the summary, leaderboard, paired comparison and report read of
a measure (its family, paper section, direction, chance level, label, whether it heads the
leaderboard). Standard library only, like :mod:`factprobe.registries`, and a
:class:`factprobe.registry.Registry` like theirs: a measure registered twice fails unless it says ``override=True`` (logged). A plugin
adds one :func:`register_measure` line per measure its family writes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from factprobe.registry import Registry, RegistryError


@dataclass(frozen=True)
class Measure:
    """One measure of the summary: how to read it and how models are ranked on it.

    ``higher_is_better``: False for measures where lower is better; ``zero_is_best``: the best
    value is 0 and the sign does not matter (``|value|`` lower is better, e.g. Ovconf).
    ``chance``: a random ranker's value, a number, or the name of the per-fact measure that
    holds it row by row (K: it depends on the distractors actually used, ``n_used``).
    ``headline``: a leaderboard column; ``fact_level``: a mean over facts (bootstrap intervals
    and paired comparisons over facts); ``bounded``: the value lies in [0, 1].
    """

    name: str
    family: str
    section: str
    label: str
    unit: str = "value"
    higher_is_better: bool = True
    zero_is_best: bool = False
    chance: float | str | None = None
    headline: bool = False
    fact_level: bool = False
    bounded: bool = True

    @property
    def direction(self) -> str:
        """Which direction is better, in words."""
        if self.zero_is_best:
            return "closer to 0 is better"
        return "higher is better" if self.higher_is_better else "lower is better"

    def better_key(self, value: float) -> float:
        """A key that is larger for a better value (the leaderboard ranks on it)."""
        if self.zero_is_best:
            return -abs(value)
        return value if self.higher_is_better else -value

    def a_better(self, diff: float) -> bool:
        """Whether a difference a - b of this measure favours model a."""
        return diff > 0 if self.higher_is_better else diff < 0


#: measure name -> :class:`Measure` (in registration order: the leaderboard's and intervals' order).
MEASURES: Registry[Measure] = Registry("measure")


def register_measure(
    name: str, family: str, section: str, label: str, override: bool = False, **fields: Any
) -> Measure:
    """Add measure ``name``; ``fields`` are :class:`Measure` fields."""
    source = f"{section or 'no section'}, family {family}"
    return MEASURES.add(name, Measure(name, family, section, label, **fields), source, override)


def measure_of(name: str) -> Measure:
    """The entry of ``name``. An unregistered name fails: its direction is unknown, and reading
    it as higher-is-better would call the worse model better."""
    if name not in MEASURES:
        raise RegistryError(
            f"unknown measure {name!r}: no family registers it; registered: {list(MEASURES)}. A plugin's "
            "measure needs its module in FACTPROBE_PLUGINS when the report is rendered too"
        )
    return MEASURES[name]


def headline() -> list[str]:
    """The leaderboard's measures, in registry order."""
    return [m.name for m in MEASURES.values() if m.headline]


def fact_headline() -> list[str]:
    """Leaderboard measures that are means over facts (bootstrap intervals, paired tests)."""
    return [m.name for m in MEASURES.values() if m.headline and m.fact_level]


def chance_measures() -> dict[str, str]:
    """Measures whose chance level is a per-fact measure: ``{measure: its chance measure}``."""
    return {m.name: m.chance for m in MEASURES.values() if isinstance(m.chance, str)}


_SHARE = "share of facts, 0–1"
# One line per measure the summary, leaderboard and report name (their order: the leaderboard's).
register_measure(
    "k_min",
    "knowledge",
    "distractors §3.2 eq. 2",
    "Min@n",
    unit=_SHARE,
    chance="k_min_chance",
    headline=True,
    fact_level=True,
)
register_measure(
    "k_avg",
    "knowledge",
    "distractors §3.2 eq. 2",
    "Avg@n",
    unit="share of distractors ranked below the object, 0–1",
    chance="k_avg_chance",
    headline=True,
    fact_level=True,
)
register_measure(
    "probability",
    "knowledge",
    "distractors Table 2",
    "Probability",
    unit="mean P(object | prompt), 0–1",
    headline=True,
    fact_level=True,
)
register_measure(
    "recall",
    "ranking",
    "fluent-mLAMA §3.3",
    "R@n",
    unit="share of facts with the object in the top n, 0–1",
    headline=True,
    fact_level=True,
)
register_measure(
    "mean_rank",
    "ranking",
    "fluent-mLAMA §3.3",
    "mean rank",
    unit="rank of the object among the candidates, 1 = first",
    higher_is_better=False,
    headline=True,
    fact_level=True,
    bounded=False,
)
register_measure(
    "plausibility",
    "plausibility",
    "PROBELM §4.2",
    "PLAUSIBILITY",
    unit="mean of Acc., MRR and NDCG, 0–1",
    headline=True,
)
register_measure(
    "belief_acc_mean",
    "belief",
    "BELIEF §2.2",
    "BELIEF Acc@1 mean",
    unit="share of prompts, 0–1",
    headline=True,
)
register_measure(
    "belief_consist",
    "belief",
    "BELIEF §2.3 eq. 1",
    "BELIEF Consist",
    unit="share of agreeing prompt pairs, 0–1",
    headline=True,
)
register_measure(
    "belief_ovconf",
    "belief",
    "BELIEF §2.4 eq. 2",
    "BELIEF Ovconf",
    unit="mean confidence − accuracy",
    zero_is_best=True,
    headline=True,
    bounded=False,
)
register_measure(
    "belief_icl_acc_mean",
    "belief_icl",
    "BELIEF §3.2 (ICL)",
    "BELIEF-ICL Acc@1 mean",
    unit="share of prompts, 0–1",
    headline=True,
)
register_measure(
    "rouge_l",
    "overlap",
    "distractors Table 2 (§4.2)",
    "ROUGE-L",
    unit="max over the object's names of ROUGE-L F with the greedy continuation, 0–1",
    headline=True,
    fact_level=True,
)
register_measure(
    "bertscore",
    "overlap",
    "distractors Table 2 (§4.2)",
    "BERTScore",
    unit="max over the object's names of BERTScore F with the greedy continuation (cosine, not rescaled)",
    headline=True,
    fact_level=True,
    bounded=False,
)
register_measure("precision", "knowledge", "distractors Table 2", "Precision@n", unit=_SHARE)
# PROBELM §4.2 per fact and prompt style (PLAUSIBILITY averages the first three; metrics/plausibility.py).
_GROUPS = "share of scenario groups, 0–1"
register_measure("plaus_acc", "plausibility", "PROBELM §4.2", "Acc.", unit=_GROUPS, fact_level=True)
register_measure(
    "plaus_rr",
    "plausibility",
    "PROBELM §4.2",
    "MRR",
    unit="mean 1 / rank of the most plausible scenario, 0–1",
    chance="plaus_rr_chance",
    fact_level=True,
)
register_measure(
    "plaus_ndcg",
    "plausibility",
    "PROBELM §4.2; Järvelin & Kekäläinen 2002",
    "NDCG",
    unit="DCG / ideal DCG, linear gain = released grade, 0–1",
    chance="plaus_ndcg_chance",
    fact_level=True,
)
register_measure(
    "plaus_ndcg_minmax",
    "plausibility",
    "PROBELM §4.2 (adaptation: convention unstated)",
    "NDCG (2^g−1, min-max)",
    unit="(DCG − worst) / (ideal − worst), 0–1",
    chance="plaus_ndcg_minmax_chance",
    fact_level=True,
)
