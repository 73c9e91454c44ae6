"""Prompt layouts: how a template becomes the scored text and its few-shot demonstrations.

* ``cloze`` (default; distractors-knowledge-measure §3.1): the sentence is cut right before the
  object; demonstrations are whole sentences, one per line. Only object-final templates.
* ``mask`` (belief-myriadlama §2, BELIEF for a masked LM such as BERT): the whole sentence with
  [Y] written as the mask token ("[MASK] and Tokyo are twin cities."); the backend ``masked``
  predicts the mask (:mod:`factprobe.lm.masked`). Any template asking for [Y] works.
* ``mask_qa`` (belief-myriadlama §3.1 and App. E, BELIEF-ICL's mask-prediction style): each
  line pair is ``Q: <sentence with [Y] written as the mask token>`` / ``A: <object>.``; the
  target ends with ``A:`` so the answer is the continuation. Any template asking for [Y]
  works, wherever [Y] stands ("Q: [MASK] consists of LAUPT.").
* ``qa`` (belief-myriadlama App. D, QA-style ICL): question templates ("Who developed [X]? [Y].")
  become ``Q: Who developed X?`` / ``A: <object>.``; object-final templates only.

The instruction line (``few_shot.instruction``, e.g. "Predict the [MASK] in each sentence in
one word.") opens the context as before.
"""

from __future__ import annotations

from .templates import Template
from .verbalize import prompt_text, sentence

LAYOUTS = ("cloze", "mask", "mask_qa", "qa")


def check_layout(layout: str, where: str = "layout") -> None:
    """Raise ValueError naming ``where`` for an unknown layout."""
    if layout not in LAYOUTS:
        raise ValueError(f"{where}: {layout!r} is not one of {list(LAYOUTS)}")


def usable(template: Template, layout: str) -> bool:
    """Whether ``template`` can be asked in ``layout`` (the answer must be the object)."""
    if template.answer != "object":
        return False
    return True if layout in ("mask", "mask_qa") else template.object_final


def _masked(template: Template, subject: str, mask: str) -> str:
    return sentence(template, subject, mask)


def target_text(template: Template, subject: str, layout: str = "cloze", mask: str = "[MASK]") -> str:
    """The scored text of one prompt; the continuation is " " + a form of the object."""
    check_layout(layout)
    if layout == "cloze":
        return prompt_text(template, subject)
    if layout == "mask":
        return _masked(template, subject, mask)
    if layout == "mask_qa":
        return f"Q: {_masked(template, subject, mask)}\nA:"
    return f"Q: {prompt_text(template, subject)}\nA:"


def demo_text(template: Template, subject: str, obj: str, layout: str = "cloze", mask: str = "[MASK]") -> str:
    """One demonstration with the answer filled in (App. E: ``A: Nanjing.``)."""
    check_layout(layout)
    if layout in ("cloze", "mask"):
        return sentence(template, subject, obj)
    question = _masked(template, subject, mask) if layout == "mask_qa" else prompt_text(template, subject)
    return f"Q: {question}\nA: {obj}."
