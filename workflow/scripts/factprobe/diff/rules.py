"""The WikiFactDiff decision table as one ordered list of rules, compiled to SQL.

Spec: WikiFactDiff (Orange-OpenSource/WikiFactDiff, ``build/utils/ku.py``
``classify_algorithm_full``), summarised in ``research/anchors.md`` §3.1; the changed facts feed
temporal distractors (distractors-knowledge-measure §3.3) and plausibility suites
(probelm-plausibility §3.1).

Every (subject, property, object) triple seen in either dump gets exactly one rule: the first
rule of :data:`RULES` whose condition holds. The rule name is stored with the status, so any
label can be explained by reading its row here.

Inputs of the conditions (columns of the ``triples`` relation built in :mod:`.engine`):

``flag``
    ``kept`` (non-deprecated statement with this object in both dumps), ``added`` (new dump
    only) or ``removed`` (old dump only). Deprecated statements are dropped first; for
    single-value relations only the best rank of (subject, property) in each dump is kept
    (WikiFactDiff's "fix single-value errors using preferred rank").
``s, e, p``
    start (P580), end (P582), point in time (P585) of the deciding statement: the new dump's
    version for kept/added triples, the old dump's for removed ones. Dates are ``YYYYMMDD``
    ints; validity at a date ``t`` is half-open: ``s <= t < e``.
``sv``
    the property is single-valued (single-value or single-best-value constraint).
``n_rem, n_add, n_kept, add_ok``
    for single-value groups (subject, property): counts of removed / added / kept triples not
    ignored by the validity rules, and whether the added one starts between the dumps.
``old_valid``
    the old dump has a statement of the triple valid at the old dump's date (by its own dates).
``subj_in_old, subj_in_new, subj_ph_new, obj_ph_new``
    entity presence in each dump's entities table; "physically new" = absent from the old dump
    and created (creation-like date, ``entities.created`` when the extraction provides it)
    after the old dump date.

Deviations from WikiFactDiff, all in favour of deciding more facts with the same evidence:
triples of unchanged groups are labelled too (WFD skips them: they are ``kept`` -> static);
single-value groups first drop statements that were never valid in the interval (so a list
of past heads of state does not block the one-removed/one-added replacement pattern) and
fall back to the validity rules when the pattern does not match; a start between the dumps
with an end after the new dump is ``new`` (WFD labels it keep). Date-valued relations
(WFD's P570/P4602 rule) do not occur: the claims table holds item-valued statements only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

STATUSES = ("new", "obsolete", "static", "unknown", "ignored")


@dataclass(frozen=True)
class Rule:
    """One row of the decision table: a SQL condition and the status it assigns."""

    name: str
    status: str
    condition: str
    description: str


BETWEEN_S = "(s > {t_old} AND s <= {t_new})"
BETWEEN_P = "(p > {t_old} AND p <= {t_new})"
SV_PATTERN = "(sv AND n_rem = 1 AND n_add = 1 AND n_kept = 0)"
# True at neither date by the deciding statement's dates (the three ``ignored`` rules at once).
NEITHER_DATE = (
    "(NOT coalesce(s > e, FALSE) AND (coalesce(e <= {t_old}, FALSE) OR coalesce(s > {t_new}, FALSE)"
    " OR coalesce(s > {t_old} AND e <= {t_new}, FALSE)))"
)

#: Ordered decision table; the first rule whose condition holds decides.
RULES: tuple[Rule, ...] = (
    Rule(
        "subject_new",
        "new",
        "subj_ph_new",
        "subject is physically new: absent from the old dump, created after it (WFD ph_new_entity)",
    ),
    Rule(
        "subject_gone",
        "unknown",
        "NOT subj_in_new",
        "subject absent from the new dump (deleted, or outside a sampled dump): WFD old_entity",
    ),
    Rule("start_after_end", "unknown", "s > e", "start time after end time: incoherent qualifiers"),
    Rule(
        "corrected_before_old",
        "unknown",
        f"flag = 'kept' AND old_valid AND {NEITHER_DATE}",
        "valid at the old dump by the old dump's dates, but the new dump's dates make it true at "
        "neither date (e.g. an end before the old dump added later): a retroactive correction of "
        "the record, not a change of the world between the dumps",
    ),
    Rule(
        "ended_before_old",
        "ignored",
        "e <= {t_old}",
        "ended before the old dump: true at neither date, not a change",
    ),
    Rule("starts_after_new", "ignored", "s > {t_new}", "starts after the new dump: true at neither date"),
    Rule(
        "valid_only_between",
        "ignored",
        "s > {t_old} AND e <= {t_new}",
        "started and ended between the dumps: true at neither date",
    ),
    Rule(
        "sv_added_pit_between",
        "new",
        f"{SV_PATTERN} AND flag = 'added' AND {BETWEEN_P}",
        "single-value relation, one object removed and one added; the added one's point in time "
        "is between the dumps",
    ),
    Rule(
        "sv_added_start_between",
        "new",
        f"{SV_PATTERN} AND flag = 'added' AND {BETWEEN_S} AND (e IS NULL OR e > {{t_new}})",
        "single-value relation, one removed and one added; the added one starts between the dumps "
        "and is still valid at the new dump",
    ),
    Rule(
        "sv_replaced",
        "obsolete",
        f"{SV_PATTERN} AND flag = 'removed' AND add_ok",
        "single-value relation: the removed object was replaced by the added one (WFD second pass)",
    ),
    Rule(
        "added_pit_between",
        "new",
        f"flag = 'added' AND {BETWEEN_P}",
        "added statement whose point in time is between the dumps",
    ),
    Rule(
        "removed",
        "unknown",
        "flag = 'removed'",
        "statement removed from Wikidata without evidence that it ended (may be a correction)",
    ),
    Rule(
        "start_before_old_open",
        "static",
        "s <= {t_old} AND e IS NULL",
        "started before the old dump, no end: valid at both dates",
    ),
    Rule(
        "start_between",
        "new",
        f"{BETWEEN_S} AND (e IS NULL OR e > {{t_new}})",
        "started between the dumps and still valid at the new dump",
    ),
    Rule(
        "end_between",
        "obsolete",
        "e > {t_old} AND e <= {t_new}",
        "valid at the old dump, ended between the dumps",
    ),
    Rule(
        "end_after_new",
        "static",
        "e > {t_new}",
        "valid at the old dump (start before it or unknown) and ends after the new dump",
    ),
    Rule(
        "object_new",
        "new",
        "flag = 'added' AND obj_ph_new",
        "added statement whose object is physically new (WFD obj_is_ph_new)",
    ),
    Rule(
        "subject_absent_old",
        "unknown",
        "flag = 'added' AND NOT subj_in_old",
        "added because the subject is absent from the old dump, without a creation date after it",
    ),
    Rule(
        "added_undated",
        "unknown",
        "flag = 'added'",
        "added statement without a validity qualifier that dates it",
    ),
    Rule(
        "sv_conflict",
        "unknown",
        "sv AND n_add > 0",
        "kept object of a single-value relation that also gained an object",
    ),
    Rule("kept", "static", "TRUE", "same object in both dumps, nothing says it ended"),
)

RULE_NAMES = tuple(r.name for r in RULES)
RULE_STATUSES = tuple(r.status for r in RULES)
CHANGED = ("new", "obsolete", "unknown")


def decision_sql(t_old: int, t_new: int) -> str:
    """SQL ``CASE`` giving the 0-based index in :data:`RULES` of the first rule that holds."""
    t_old, t_new = int(t_old), int(t_new)
    lines = ["CASE"]
    for i, r in enumerate(RULES):
        lines.append(f"  WHEN {r.condition.format(t_old=t_old, t_new=t_new)} THEN {i}")
    lines.append("END")
    return "\n".join(lines)


def sql_list(values: tuple[str, ...]) -> str:
    """A DuckDB list literal of strings (1-based when indexed)."""
    return "[" + ", ".join(f"'{v}'" for v in values) + "]"


def added_ok_sql(t_old: int, t_new: int) -> str:
    """Condition on one row: an added statement that the single-value pattern labels ``new``."""
    return (f"(flag = 'added' AND (({BETWEEN_P}) OR ({BETWEEN_S} AND (e IS NULL OR e > {{t_new}}))))").format(
        t_old=int(t_old), t_new=int(t_new)
    )


def ignored_sql(t_old: int, t_new: int) -> str:
    """Condition of the ``ignored`` rules (true at neither date), used to count group members."""
    return NEITHER_DATE.format(t_old=int(t_old), t_new=int(t_new))


def new_since(
    changes: pd.DataFrame, cutoff: int, statuses: tuple[str, ...] = ("new",), rules: tuple[str, ...] = ()
) -> pd.DataFrame:
    """Facts the diff marks ``new`` (or decides by one of ``rules``) not dated on or before ``cutoff``.

    probelm-plausibility §3: plausible scenarios are Wikidata edits after the model's training
    cut-off. ``rules`` admits rows by the diff's deciding rule whatever their status, e.g.
    ``added_undated`` (a statement added between the dumps without a date, status ``unknown``),
    which is what PROBELM's revision history counts as an edit. A statement whose own start or
    point in time is on or before the cut-off was only recorded late (the model may have seen
    it), so it is dropped. Returns integer ``subject, property, object``.
    """
    pick = changes["status"].isin(list(statuses))
    if rules:
        pick |= changes["rule"].isin(list(rules))
    new = changes[pick]
    dated = statement_date(new)
    new = new[~(dated.notna() & (dated <= cutoff))]
    return new[["subject", "property", "object"]].drop_duplicates()


def statement_date(changes: pd.DataFrame) -> pd.Series:
    """The date a ``changes`` row's statement carries (YYYYMMDD): its start, else its point in
    time; missing for an undated statement (probelm-plausibility §3: the edit's date)."""
    return changes["start"].where(changes["start"].notna(), changes["point_in_time"])
