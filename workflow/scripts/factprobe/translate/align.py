"""Locate the (possibly inflected) object in a translated sentence and cut the prompt before it.

Fluent-mLAMA §3.2 (docs/references.md): whole-sentence translations are "split with the
help of [a tool] that searches for the (possibly inflected) object NEs in the sentences"; facts
whose translation puts the object anywhere but at the end are filtered (§3.2, §5.4 "our prompting
strategy will work for languages which are O-final"). The paper used Stanza; here the search is a
rapidfuzz alignment over word n-grams with a stem/prefix heuristic for inflection, which needs no
per-language model:

* the sentence is split into words (hyphenated compounds stay one word, an apostrophe splits);
* every n-gram of the sentence with as many words as a candidate form is compared word by word:
  an identical word scores 100, a word that keeps the candidate's stem (its first ``stem_len``
  characters) and adds at most ``MAX_SUFFIX`` characters scores 90-100 (Praha -> Praze,
  Москва -> Москве, Deutschland -> Deutschlands), any other pair scores 0.9 x rapidfuzz
  ``fuzz.ratio`` (spelling variants: Maarten -> Maerten);
* an n-gram one word shorter is compared word by word with the candidate minus one word, times
  ``DROP_PENALTY`` (a word dropped by the translation: "русский язык" -> "русский"); one word
  longer is compared as a whole string of word stems with ``fuzz.ratio`` x 0.9;
* the best n-gram over all candidate forms wins when its mean score reaches ``min_score``; ties go
  to the later position (the object of an O-final sentence is its last phrase).

Only languages written with spaces between words are supported (the contract's continuation is
" " + form).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from rapidfuzz import fuzz

# A word: letters/digits, hyphenated compounds kept whole ("Ростов-на-Дону", "Baden-Württemberg").
WORD_RE = re.compile(r"\w+(?:[-‐‑]\w+)*", re.UNICODE)
# What may follow an object-final object: closing punctuation, quotes and brackets only.
FINAL_TAIL_RE = re.compile(r"^[\s.!?…。；;:»«\"'”“’)\]]*$")
# Quotes or brackets glued around a title ("«Месники»", "„Faces“") join the form.
OPENERS = "«„“\"‘'(‹"
CLOSERS = "»“”\"’')›"
# An elided article or preposition glued to the object (fr/it "l'", "d'"): it joins the form.
ELISION_RE = re.compile(r"\w{1,3}['’]$", re.UNICODE)
# Inflectional endings added to a stem are short (Czech -ách, Russian -ами, German -s/-es).
MAX_SUFFIX = 4
# A translation that drops one word of a multi-word name ("русский язык" -> "русский") still
# matches, but below any full match.
DROP_PENALTY = 0.85

DROP_REASONS = (
    "empty_translation",
    "object_not_found",
    "object_not_final",
    "object_at_start",
    "object_glued",
)


@dataclass(frozen=True)
class Match:
    """A located form: character span ``[start, end)`` of the sentence, its text and score."""

    start: int
    end: int
    text: str
    score: float
    candidate: str
    via: str


@dataclass(frozen=True)
class Alignment:
    """Outcome for one translated sentence: ``reason`` is ``"kept"`` or one of ``DROP_REASONS``."""

    reason: str
    prompt: str = ""
    form: str = ""
    score: float = 0.0
    via: str = ""
    rest: str = ""
    subject_found: bool = False

    @property
    def kept(self) -> bool:
        return self.reason == "kept"


def normalize(word: str) -> str:
    """Casefolded word without diacritics: ё/е, Gö/Go and Athény/Atén spellings compare equal."""
    decomposed = unicodedata.normalize("NFD", word.casefold())
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def words(text: str) -> list[tuple[int, int, str]]:
    """Words of ``text`` as ``(start, end, normalized word)``."""
    return [(m.start(), m.end(), normalize(m.group(0))) for m in WORD_RE.finditer(text)]


def stem_len(n: int) -> int:
    """Characters of a word of length ``n`` that an inflected form must keep.

    Slavic and German inflection changes at most the last two or three characters of a name
    (Praha/Praze, Brno/Brně, Москва/Москве, Antverpy/Antverpách); very short words keep 2.
    """
    if n <= 2:
        return n
    if n <= 4:
        return 2
    return max(3, n - 3)


def common_prefix(a: str, b: str) -> int:
    """Length of the common prefix of ``a`` and ``b``."""
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def word_score(candidate: str, word: str) -> float:
    """Similarity (0-100) of a casefolded candidate word and a casefolded sentence word."""
    if candidate == word:
        return 100.0
    p = common_prefix(candidate, word)
    if p >= stem_len(len(candidate)) and len(word) - p <= MAX_SUFFIX:
        return 90.0 + 10.0 * p / max(len(candidate), len(word))
    return 0.9 * fuzz.ratio(candidate, word)


def _stems(ws: Sequence[str]) -> str:
    return " ".join(w[: stem_len(len(w))] for w in ws)


def locate(
    sentence: str,
    forms: Iterable[tuple[str, str]],
    min_score: float = 80.0,
    start_at: int = 0,
) -> Match | None:
    """Best occurrence of any of ``forms`` (``(form, via)`` pairs) in ``sentence``.

    Returns ``None`` when no n-gram reaches ``min_score``. Only words starting at or after the
    character offset ``start_at`` are considered.
    """
    sent = [w for w in words(sentence) if w[0] >= start_at]
    best: tuple[float, int, int] | None = None
    best_match: Match | None = None
    for form, via in forms:
        cand = [w for _, _, w in words(form)]
        if not cand or not sent:
            continue
        n = len(cand)
        for m in sorted({n, n - 1, n + 1}):
            if m < 1 or m > len(sent):
                continue
            for i in range(len(sent) - m + 1):
                gram = sent[i : i + m]
                ws = [w for _, _, w in gram]
                if m == n:
                    score = sum(word_score(c, w) for c, w in zip(cand, ws, strict=False)) / n
                elif m == n - 1:
                    score = DROP_PENALTY * max(
                        sum(word_score(c, w) for c, w in zip(cand[:k] + cand[k + 1 :], ws, strict=False)) / m
                        for k in range(n)
                    )
                else:
                    score = 0.9 * fuzz.ratio(_stems(cand), _stems(ws))
                key = (round(score, 6), gram[0][0], gram[-1][1])
                if score >= min_score and (best is None or key > best):
                    best = key
                    best_match = Match(
                        gram[0][0], gram[-1][1], sentence[gram[0][0] : gram[-1][1]], score, form, via
                    )
    return best_match


def is_object_final(rest: str) -> bool:
    """True when what follows the object is only closing punctuation, quotes or brackets (§5.4)."""
    return bool(FINAL_TAIL_RE.match(rest))


def align_sentence(
    sentence: str,
    object_forms: Sequence[tuple[str, str]],
    subject_forms: Sequence[tuple[str, str]] = (),
    min_score: float = 80.0,
    word_order: str = "strict",
) -> Alignment:
    """Find the object in a translated sentence, check its position and cut the prompt before it.

    ``word_order="strict"`` keeps a sentence only when the object ends it (``object_not_final``
    otherwise). ``"loose"`` is the paper's filter (§3.2: drop the facts whose translation "differs
    significantly in word order (e.g. an object NE in the beginning of the sentence)"): an object
    that opens the sentence or, when the subject was found, precedes it is dropped as
    ``object_at_start``; words after the object are cut off with it (kept in ``rest``).

    ``object_forms``/``subject_forms`` are ``(form, via)`` pairs, e.g. the target-language label
    (``via="label"``), its aliases and the English label (``via="source"``). When a subject form is
    found, the object is searched only after it, so a subject that contains the object's name
    (e.g. "Paris Hilton" / "Paris") is not mistaken for it. The prompt is the text before the
    object, right-stripped; an elided article glued to the object ("d'Allemagne") joins the form
    so the prompt still ends at a space.
    """
    sentence = sentence.strip()
    if not sentence:
        return Alignment("empty_translation")
    subject = locate(sentence, subject_forms, min_score) if subject_forms else None
    start_at = subject.end if subject is not None else 0
    match = locate(sentence, object_forms, min_score, start_at=start_at)
    if match is None and subject is not None:
        match = locate(sentence, object_forms, min_score)
    if match is None:
        return Alignment("object_not_found", subject_found=subject is not None)
    start, end = match.start, match.end
    elided = ELISION_RE.search(sentence[:start])
    if elided and (elided.start() == 0 or sentence[elided.start() - 1].isspace()):
        start = elided.start()
    elif start > 0 and sentence[start - 1] in OPENERS:
        start -= 1
        if end < len(sentence) and sentence[end] in CLOSERS:
            end += 1
    rest = sentence[end:]
    form = sentence[start:end]
    common = dict(form=form, score=match.score, via=match.via, rest=rest, subject_found=subject is not None)
    if start > 0 and not sentence[start - 1].isspace():
        return Alignment("object_glued", **common)
    prompt = sentence[:start].rstrip()
    if word_order == "loose":
        if not prompt or (subject is not None and match.start < subject.start):
            return Alignment("object_at_start", prompt=prompt, **common)
        return Alignment("kept", prompt=prompt, **common)
    if word_order != "strict":
        raise ValueError(f"translate.word_order must be strict or loose, not {word_order!r}")
    if not is_object_final(rest):
        return Alignment("object_not_final", prompt=prompt, **common)
    if not prompt:
        return Alignment("object_at_start", **common)
    return Alignment("kept", prompt=prompt, **common)
