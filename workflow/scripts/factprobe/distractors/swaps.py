"""Subject swaps (PROBELM Algorithm 1's second list, §3.2): prompts whose subject is replaced.

PROBELM ranks two lists per scenario: the object swaps ("repeat with s fixed") and the subject
swaps ("repeat with o fixed"). An object swap is a candidate of the prompt's object slot; a
subject swap is another sentence, so it is a prompt of its own. The distractors stage has what
such a prompt needs (the suite's prompts, the subject-side candidates of each fact and their
forms) and writes them as ``subject_swaps`` (docs/contracts.md): one row per (prompt, subject,
subject form) with its own id (:func:`factprobe.contracts.swap_prompt_id`), the fact, template
and style of the prompt it swaps (``group_prompt_id``), the real entity id of the subject in its
text (``subject``) and the fact's object with the form that ends the sentence (``object``,
``object_form``: its label). The group of a prompt holds its true scenario too: the unswapped
prompt as a swap row whose ``subject`` is the fact's own. Scoring scores every row as one
sentence; metrics rank the rows of a ``group_prompt_id`` by perplexity.
"""

from __future__ import annotations

import logging

import pandas as pd

from factprobe import contracts
from factprobe.contracts import is_subject_side

log = logging.getLogger(__name__)

#: scoring.sentence_forms: the forms of an entity scored in a scenario sentence.
SENTENCE_FORMS = ("label", "all")


def label_forms(forms: pd.DataFrame) -> pd.DataFrame:
    """One form per (entity, lang): its label (``source == "label"``), else its first form."""
    f = forms.dropna(subset=["form"])
    f = f[f["form"].str.strip() != ""]
    rank = (f["source"] != "label").astype(int) if "source" in f.columns else pd.Series(0, index=f.index)
    return (
        f.assign(_r=rank)
        .sort_values(["entity", "lang", "_r"], kind="stable")
        .drop_duplicates(["entity", "lang"])
        .drop(columns="_r")
    )


def _slotted_prompts(prompts: pd.DataFrame) -> pd.DataFrame:
    """The prompts whose text contains their subject form (the slot a swap fills); the others
    are counted in the log."""
    p = prompts.copy()
    p["context"] = p["context"].fillna("")
    p["ending"] = p["ending"].fillna("").astype(str) if "ending" in p.columns else ""
    p["subject_form"] = p["subject_form"].fillna("").astype(str)
    slot = [bool(s) and s in text for s, text in zip(p["subject_form"], p["text"], strict=True)]
    if not all(slot):
        log.warning(
            "%d prompt(s) do not contain their subject form: no subject swaps for them", slot.count(False)
        )
    return p[slot].rename(columns={"prompt_id": "group_prompt_id"})


def subject_swaps(
    prompts: pd.DataFrame,
    candidates: pd.DataFrame,
    forms: pd.DataFrame,
    facts: pd.DataFrame,
    sentence_forms: str = "label",
) -> pd.DataFrame:
    """The ``subject_swaps`` table of a suite (module docstring).

    For every prompt and every form λ of each subject-side alternative of its fact (only the
    label with ``sentence_forms="label"``, every form with ``"all"``), the prompt's subject
    form (its first occurrence in ``text``) is replaced by λ; the fact's object follows by its
    label (a form with source ``label``, else its first form). The group's true scenario is the
    unswapped prompt, ``subject`` = the fact's subject (``facts.subject``). A fact without
    subject-side alternatives, or whose object has no form in the prompt's language, has none.
    """
    if sentence_forms not in SENTENCE_FORMS:
        raise ValueError(f"scoring.sentence_forms {sentence_forms!r}: use one of {SENTENCE_FORMS}")
    contracts.check(prompts, "prompts", "prompts", ["prompt_id", "fact_id", "lang", "text", "context"])
    contracts.check(candidates, "candidates", "candidates", ["fact_id", "entity", "role", "side"])
    contracts.check(facts, "facts", "facts", ["fact_id", "subject"])
    labels = label_forms(forms)
    usable = labels if sentence_forms == "label" else forms.dropna(subset=["form"])
    usable = usable[usable["form"].str.strip() != ""][["entity", "lang", "form"]].drop_duplicates()
    own = facts[["fact_id", "subject"]].astype(str).drop_duplicates("fact_id")
    swaps = candidates[is_subject_side(candidates)][["fact_id", "entity"]].drop_duplicates()
    swaps = swaps.merge(own, on="fact_id")
    swaps = swaps[swaps["entity"] != swaps["subject"]][["fact_id", "entity"]]
    objects = candidates[candidates["role"] == "object"][["fact_id", "entity"]].drop_duplicates("fact_id")
    if swaps.empty or objects.empty or "subject_form" not in prompts.columns:
        return contracts.empty("subject_swaps")
    p = _slotted_prompts(prompts[prompts["fact_id"].isin(set(swaps["fact_id"]))])
    p = p.merge(objects.rename(columns={"entity": "object"}), on="fact_id")
    p = p.merge(
        labels.rename(columns={"entity": "object", "form": "object_form"})[["object", "lang", "object_form"]],
        on=["object", "lang"],
    )
    true = p.merge(own, on="fact_id").assign(form=lambda x: x["subject_form"])
    swapped = p.merge(swaps.rename(columns={"entity": "subject"}), on="fact_id").merge(
        usable.rename(columns={"entity": "subject"}), on=["subject", "lang"]
    )
    rows = pd.concat([true, swapped], ignore_index=True)
    if rows.empty:
        return contracts.empty("subject_swaps")
    rows = _swapped_texts(rows)
    log.info(
        "%d subject-swap prompts of %d prompts (PROBELM Algorithm 1)",
        len(rows),
        p["group_prompt_id"].nunique(),
    )
    return rows


def _swapped_texts(rows: pd.DataFrame) -> pd.DataFrame:
    """Each row's prompt with its subject form (first occurrence) replaced by ``form``, one row
    per (group, subject, form), with its swap prompt id, in the columns of ``subject_swaps``."""
    rows["text"] = [
        text.replace(subject, form, 1)
        for text, subject, form in zip(rows["text"], rows["subject_form"], rows["form"], strict=True)
    ]
    rows["subject_form"] = rows["form"]
    rows = rows.drop_duplicates(["group_prompt_id", "subject", "subject_form"]).reset_index(drop=True)
    rows["prompt_id"] = [
        contracts.swap_prompt_id(g, s, f)
        for g, s, f in zip(rows["group_prompt_id"], rows["subject"], rows["subject_form"], strict=True)
    ]
    cols = contracts.columns("subject_swaps")
    for col in cols:
        if col not in rows.columns:
            rows[col] = None  # a prompts column the suite's prompts lack (hand-made tables)
    return rows[cols]
