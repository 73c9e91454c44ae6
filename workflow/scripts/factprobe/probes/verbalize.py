"""Verbalization: fact × template × subject form -> the prompt text a causal LM is scored on.

distractors-knowledge-measure §3.1: the cloze C(s, r) is cut right before the object, so the
continuation is " " + a form of the object (Λ(o), §3.2); the prompt never ends in a space.
belief-myriadlama §2 / §4.1: a fact is asked through several templates and several subject
expressions (label + aliases). probelm-plausibility Appendix D: completion and question prompts
end where the answer starts ("... Answer:").
"""

from __future__ import annotations

import pandas as pd

from .templates import Template


def usable_alias(form: str) -> bool:
    """An alias worth asking with: at least 3 characters and one letter (drops "de", "🇩🇪", "PT")."""
    return len(form) >= 3 and any(ch.isalpha() for ch in form)


def forms_index(forms: pd.DataFrame) -> dict[tuple[str, str], list[tuple[str, str]]]:
    """``(entity, lang) -> [(form, source), ...]`` with the label first, aliases in table order."""
    out: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for entity, lang, form, source in zip(
        forms["entity"], forms["lang"], forms["form"], forms["source"], strict=True
    ):
        out.setdefault((entity, lang), []).append((form, source))
    return out


def subject_forms(index: dict, entity: str, lang: str, k: int) -> list[str]:
    """Label plus up to ``k`` usable aliases (belief-myriadlama §4.1 subject expressions).

    Aliases equal to an earlier form up to case are skipped. Empty if the entity has no label.
    """
    entries = index.get((entity, lang), [])
    labels = [f for f, s in entries if s == "label"]
    if not labels:
        return []
    out = [labels[0]]
    seen = {labels[0].casefold()}
    for form, source in entries:
        if len(out) > k:
            break
        if source == "alias" and usable_alias(form) and form.casefold() not in seen:
            out.append(form)
            seen.add(form.casefold())
    return out


def _fill_subject(text: str, subject: str) -> str:
    # A lower-case label that opens the sentence ("universe is ...") gets a capital, as in prose.
    if text.startswith("[X]") and subject[:1].islower():
        subject = subject[:1].upper() + subject[1:]
    return text.replace("[X]", subject)


def prompt_text(template: Template, subject: str) -> str:
    """The text before ``[Y]`` with the subject filled in, right-stripped (the continuation owns the space)."""
    if not template.object_final or template.answer != "object":
        raise ValueError(f"template {template.id}: only object-final templates asking for [Y] give prompts")
    return _fill_subject(template.text, subject).split("[Y]", 1)[0].rstrip()


def ending(template: Template, layout: str = "cloze") -> str:
    """The template's text after ``[Y]`` (e.g. ``"."``), verbatim: what follows the object form in
    the whole scenario sentence (probelm-plausibility §4.1 scores the sentence; the released
    scenarios end in "."). Only the cloze layout ends with the template; the Q/A layouts end at
    the answer cue, so their ending is empty."""
    return template.text.split("[Y]", 1)[1] if layout == "cloze" else ""


def sentence(template: Template, subject: str, obj: str) -> str:
    """The whole sentence with both slots filled (a few-shot demonstration)."""
    return _fill_subject(template.text, subject).replace("[Y]", obj)
