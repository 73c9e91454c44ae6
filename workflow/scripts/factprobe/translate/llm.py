"""Whole-sentence translation by a causal LM prompted with few-shot examples and forced labels.

Fluent-mLAMA §3.2, verbalization 3 ("ChatGPT"; docs/references.md): the model is given the filled
English sentence and the Wikidata translations of its subject and object, and asked to translate
the full sentence using those names (inflecting them where the grammar needs it). The prompt is
the paper's Appendix A layout: an instruction, then few-shot blocks

    Source sentence: <English sentence>
    Subject translation: <subject label>
    Object translation: <object label>
    Translation: <target sentence>

separated by blank lines, and the query block ending in ``Translation:``. Decoding is greedy; the
answer is the first generated line (``HFCausalLM.generate`` stops there), cleaned by
:func:`parse_translation`. The paper used GPT-4o-mini with 20 examples per language and relation;
here the LM is any ``models.tsv`` row, loaded from its prepared folder through ``factprobe.lm``,
and the examples come from ``translate.few_shot`` (per language; an example with a ``relation``
is used only for that relation).

The authors' own 20-shot prompts (``chatgpt_prompts/translation20/{lang}_{relation}.txt`` of the
release: their instruction and 20 example blocks per language and relation) are read with
``translate.prompt_dir`` (:func:`read_prompt_file`); they then replace ``few_shot`` and
``llm_instruction`` for the languages and relations they cover, and a request whose file is missing
is an error naming it. The authors sent that file as the *system* message of a chat model and the
query block as the next message; with ``translate.chat_template: auto`` a model whose tokenizer has
a chat template gets the same: the instruction and examples as the system turn, the query block
as the user turn (local chat templates expect a user turn before the answer; a template without
a system role gets both in one user turn), then the template's generation prompt. ``never`` keeps
the raw Appendix-A text (base models).

Outputs are cached like the seq2seq backend's (``mt.TranslationCache``), keyed by the model's
identity, the decoding settings and the whole prompt.
"""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from factprobe.hashing import stable_hash
from factprobe.settings import Translate

from .mt import LANGUAGES, Request, TranslationCache

log = logging.getLogger(__name__)

# English names of the languages the project's papers use (the instruction names the pair).
LANGUAGE_NAMES = {lang: name for lang, (name, _) in LANGUAGES.items()}

FIELDS = ("source", "subject", "object", "translation")
# A model that repeats the field name or quotes its answer: the sentence is what is inside.
LEADING_FIELD_RE = re.compile(r"^\s*translation\s*:\s*", re.IGNORECASE)
QUOTES = {'"': '"', "“": "”", "„": "“", "«": "»", "'": "'"}


@dataclass(frozen=True)
class Example:
    """One few-shot example: an English sentence, its forced labels and the reference translation."""

    source: str
    subject: str
    object: str
    translation: str
    relation: str = ""


def language_name(lang: str, names: Mapping[str, str] | None = None) -> str:
    """English name of ``lang`` for the instruction (``translate.language_names`` first)."""
    if names and lang in names:
        return names[lang]
    if lang in LANGUAGE_NAMES:
        return LANGUAGE_NAMES[lang]
    raise ValueError(f"no English name for language {lang!r}; add it to translate.language_names in config")


def examples_for(
    few_shot: Mapping[str, Sequence[Mapping[str, str]]], lang: str, relation: str = ""
) -> list[Example]:
    """The configured examples of ``lang`` usable for ``relation`` (those without a relation, or
    with this one), in config order; a malformed example raises naming ``translate.few_shot``."""
    out = []
    for i, raw in enumerate(few_shot.get(lang, [])):
        missing = [k for k in FIELDS if not str(raw.get(k) or "").strip()]
        if missing:
            raise ValueError(
                f"translate.few_shot.{lang}[{i}]: missing {missing}; each example needs {FIELDS}"
            )
        example = Example(**{k: str(raw[k]) for k in (*FIELDS, "relation") if k in raw})
        if not example.relation or not relation or example.relation == relation:
            out.append(example)
    return out


def block(source: str, subject: str, obj: str, translation: str | None = None) -> str:
    """One Appendix-A block; without ``translation`` it ends in ``Translation:`` (the query)."""
    lines = [f"Source sentence: {source}", f"Subject translation: {subject}", f"Object translation: {obj}"]
    lines.append("Translation:" if translation is None else f"Translation: {translation}")
    return "\n".join(lines)


def build_prompt(
    request: Request, examples: Sequence[Example], instruction: str, names: Mapping[str, str] | None = None
) -> str:
    """The full prompt of one request: instruction, example blocks, query block (Appendix A)."""
    head = instruction.format(
        source=language_name(request.src_lang, names), target=language_name(request.tgt_lang, names)
    )
    parts = [head] + [block(e.source, e.subject, e.object, e.translation) for e in examples]
    parts.append(block(request.text, request.subject, request.object))
    return "\n\n".join(parts)


PROMPT_FIELDS = {
    "Source sentence:": "source",
    "Subject translation:": "subject",
    "Object translation:": "object",
    "Translation:": "translation",
}


def read_prompt_file(path: str | Path, relation: str = "") -> tuple[str, list[Example]]:
    """``(instruction, examples)`` of one of the authors' few-shot prompt files: the instruction is
    the text before the first ``Source sentence:`` (lines stripped of the indentation, joined by
    newlines), the examples its four-field blocks in file order, each for ``relation``."""
    path = Path(path)
    head: list[str] = []
    examples: list[Example] = []
    block: dict[str, str] = {}
    for lineno, raw in enumerate(path.read_text(encoding="utf-8-sig").splitlines(), start=1):
        line = raw.strip()
        key = next((k for k in PROMPT_FIELDS if line.startswith(k)), None)
        if key is None:
            if line and not examples and not block:
                head.append(line)
            elif line:
                raise ValueError(
                    f"{path}: line {lineno}: expected one of {list(PROMPT_FIELDS)}, got {line!r}"
                )
            continue
        name = PROMPT_FIELDS[key]
        if name != list(PROMPT_FIELDS.values())[len(block)]:
            raise ValueError(
                f"{path}: line {lineno}: {key} out of order; each example is {list(PROMPT_FIELDS)}"
            )
        block[name] = line[len(key) :].strip()
        if name == "translation":
            examples.append(Example(**block, relation=relation))
            block = {}
    if block or not examples:
        raise ValueError(
            f"{path}: an unfinished example or none at all; is this a translation20 prompt file?"
        )
    return "\n".join(head), examples


@functools.cache
def prompt_file(folder: str, lang: str, relation: str) -> tuple[str, tuple[Example, ...]]:
    """The authors' prompt of ``lang`` and ``relation`` in ``folder`` (``{lang}_{relation}.txt``)."""
    path = Path(folder) / f"{lang}_{relation}.txt"
    if not path.is_file():
        raise ValueError(
            f"{path}: no few-shot prompt file for language {lang!r} and relation {relation!r}; "
            "add it or fix translate.prompt_dir"
        )
    head, examples = read_prompt_file(path, relation)
    return head, tuple(examples)


def chat_prompt(tokenizer, system: str, user: str) -> str:
    """``system`` and ``user`` turns through the tokenizer's chat template, with its generation
    prompt; a template without a system role gets one user turn. The tokenizer's BOS text is
    dropped from the front: the LM adds BOS itself when it encodes a context."""
    from jinja2 import TemplateError

    turns = [{"role": "system", "content": system}, {"role": "user", "content": user}]
    try:
        text = tokenizer.apply_chat_template(turns, tokenize=False, add_generation_prompt=True)
    except TemplateError:
        merged = [{"role": "user", "content": f"{system}\n\n{user}"}]
        text = tokenizer.apply_chat_template(merged, tokenize=False, add_generation_prompt=True)
    bos = getattr(tokenizer, "bos_token", None)
    return text[len(bos) :] if bos and text.startswith(bos) else text


def has_chat_template(lm: object) -> bool:
    """Whether ``lm`` (an ``HFCausalLM``) has a tokenizer with a chat template."""
    return bool(getattr(getattr(lm, "tokenizer", None), "chat_template", None))


def parse_translation(text: str) -> str:
    """The translated sentence in a generated first line: a repeated ``Translation:`` field name
    and quotes around the whole sentence are removed, surrounding whitespace stripped."""
    text = LEADING_FIELD_RE.sub("", text.split("\n", 1)[0]).strip()
    if len(text) >= 2 and QUOTES.get(text[0]) == text[-1]:
        text = text[1:-1].strip()
    return text


@dataclass
class LLMTranslator:
    """A causal LM (``factprobe.lm.HFCausalLM`` or any ``LM`` with ``generate``) as translator.

    ``translate`` has the seq2seq ``Translator.translate`` signature, so the sentence pipeline
    does not care which backend it runs; requests must carry ``subject``/``object`` labels.
    """

    name: str
    lm: object
    settings: Translate = field(default_factory=Translate)
    cache: TranslationCache = field(default_factory=lambda: TranslationCache(None))

    def prompt(self, request: Request) -> str:
        """The text the LM continues: the instruction and examples (the authors' file for the
        language and relation with ``prompt_dir``, else ``few_shot``), then the query block;
        through the model's chat template when ``chat_template: auto`` finds one."""
        query = block(request.text, request.subject, request.object)
        if self.settings.prompt_dir:
            head, examples = prompt_file(self.settings.prompt_dir, request.tgt_lang, request.relation)
            system = "\n\n".join(
                [head] + [block(e.source, e.subject, e.object, e.translation) for e in examples]
            )
        else:
            examples = examples_for(self.settings.few_shot, request.tgt_lang, request.relation)
            whole = build_prompt(
                request, examples, self.settings.llm_instruction, self.settings.language_names
            )
            system = whole[: -len(query)].rstrip("\n")
        if self.settings.chat_template == "auto" and has_chat_template(self.lm):
            return chat_prompt(self.lm.tokenizer, system, query)
        return f"{system}\n\n{query}"

    def key(self, prompt: str) -> str:
        identity = getattr(self.lm, "identity", (self.name,))
        return f"{stable_hash('llm', *identity, self.settings.max_new_tokens, prompt):016x}"

    def translate(self, requests: Sequence[Request], progress: bool = False) -> list[str]:
        """Greedy translations of ``requests`` in order; cached prompts are not regenerated."""
        from factprobe.lm.api import GenerateRequest

        prompts = [self.prompt(r) for r in requests]
        keys = [self.key(p) for p in prompts]
        todo: dict[str, tuple[Request, str]] = {}
        for key, req, prompt in zip(keys, requests, prompts, strict=True):
            if self.cache.get(key) is None and key not in todo:
                todo[key] = (req, prompt)
        log.info("%d requests, %d distinct uncached", len(requests), len(todo))
        if todo:
            asks = [GenerateRequest(p, max_new_tokens=self.settings.max_new_tokens) for _, p in todo.values()]
            answers = self.lm.generate(asks, progress=progress)
            rows = [
                dict(
                    key=key,
                    model=self.name,
                    src_lang=req.src_lang,
                    tgt_lang=req.tgt_lang,
                    text=prompt,
                    prefix="",
                    translation=parse_translation(answer[0].text),
                )
                for (key, (req, prompt)), answer in zip(todo.items(), answers, strict=True)
            ]
            self.cache.save(rows)
        return [self.cache.get(k) for k in keys]
