"""The authors' 20-shot translation prompts as the LLM backend's examples.

``translate.prompt_dir`` names a folder of ``{lang}_{relation}.txt`` files as released in
Fluent-mLAMA's ``chatgpt_prompts/translation20`` (instruction, then example blocks, indented);
``translate.chat_template: auto`` wraps them in the model's chat template (system turn: the file;
user turn: the query block), as the authors sent the file as GPT-4o-mini's system message. Checked
on hand-written files, a tiny tokenizer with a chat template built here, and every file of the
release (read from ``../shared``; skipped only when it is absent).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from factprobe.settings import Translate
from factprobe.translate.llm import LLMTranslator, prompt_file, read_prompt_file
from factprobe.translate.mt import Request

ROOT = Path(__file__).resolve().parents[2]

FILE = """        You are a professional English-Czech translator.
        You need to translate full sentences to Czech.
        When translating, follow the examples:

        Source sentence: Karel Schwarzenberg was born in Prague .
        Subject translation: Karel Schwarzenberg
        Object translation: Praha
        Translation: Karel Schwarzenberg se narodil v Praze.

        Source sentence: Peter Mark Roget was born in London .
        Subject translation: Peter Roget
        Object translation: Londýn
        Translation: Peter Roget se narodil v Londýně.

"""
HEAD = (
    "You are a professional English-Czech translator.\n"
    "You need to translate full sentences to Czech.\n"
    "When translating, follow the examples:"
)
SHOTS = (
    "Source sentence: Karel Schwarzenberg was born in Prague .\nSubject translation: Karel Schwarzenberg\n"
    "Object translation: Praha\nTranslation: Karel Schwarzenberg se narodil v Praze.\n\n"
    "Source sentence: Peter Mark Roget was born in London .\nSubject translation: Peter Roget\n"
    "Object translation: Londýn\nTranslation: Peter Roget se narodil v Londýně."
)
QUERY = (
    "Source sentence: Franz Kafka was born in Prague .\nSubject translation: Franz Kafka\n"
    "Object translation: Praha\nTranslation:"
)
REQUEST = Request(
    "Franz Kafka was born in Prague .", "en", "cs", subject="Franz Kafka", object="Praha", relation="P19"
)


def _folder(tmp_path):
    (tmp_path / "cs_P19.txt").write_text(FILE, encoding="utf-8")
    return tmp_path


def test_prompt_file_reads_instruction_and_examples(tmp_path):
    head, examples = read_prompt_file(_folder(tmp_path) / "cs_P19.txt", "P19")
    assert head == HEAD
    got = [(e.source, e.subject, e.object, e.translation, e.relation) for e in examples]
    first = ("Karel Schwarzenberg was born in Prague .", "Karel Schwarzenberg", "Praha")
    second = ("Peter Mark Roget was born in London .", "Peter Roget", "Londýn")
    assert got == [
        (*first, "Karel Schwarzenberg se narodil v Praze.", "P19"),
        (*second, "Peter Roget se narodil v Londýně.", "P19"),
    ]


def test_malformed_or_missing_prompt_files_are_named(tmp_path):
    bad = tmp_path / "cs_P36.txt"
    bad.write_text(FILE.replace("        Object translation: Praha\n", ""), encoding="utf-8")
    with pytest.raises(ValueError, match=r"cs_P36.txt: line 7: Translation: out of order"):
        read_prompt_file(bad)
    (tmp_path / "cs_P20.txt").write_text("", encoding="utf-8")
    with pytest.raises(ValueError, match="cs_P20.txt: an unfinished example or none"):
        read_prompt_file(tmp_path / "cs_P20.txt")
    with pytest.raises(ValueError, match=r"cs_P101.txt: no few-shot prompt file .* translate.prompt_dir"):
        prompt_file(str(tmp_path), "cs", "P101")


class _LM:
    """Only what LLMTranslator.prompt reads: the tokenizer."""

    def __init__(self, tokenizer):
        self.tokenizer = tokenizer


def _tokenizer(template: str | None):
    """A tiny BPE tokenizer built here, with ``template`` as its chat template and BOS ``<s>``."""
    from factprobe.scoring.control import train_bpe_tokenizer

    tok = train_bpe_tokenizer([FILE, QUERY], 300)
    tok.bos_token = "<s>"
    tok.chat_template = template
    return tok


CHAT = (
    "{{ bos_token }}{% for m in messages %}<|{{ m['role'] }}|>\n{{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>\n{% endif %}"
)
NO_SYSTEM = (
    "{% for m in messages %}{% if m['role'] == 'system' %}{{ raise_exception('no system role') }}{% endif %}"
    "[INST] {{ m['content'] }} [/INST]{% endfor %}"
)


def test_chat_template_wraps_the_authors_prompt(tmp_path):
    folder = str(_folder(tmp_path))
    auto = Translate(backend="llm", prompt_dir=folder, chat_template="auto")
    got = LLMTranslator("m", _LM(_tokenizer(CHAT)), auto).prompt(REQUEST)
    # system turn: the file; user turn: the query; the template's BOS left to the LM's encoder
    assert got == f"<|system|>\n{HEAD}\n\n{SHOTS}\n<|user|>\n{QUERY}\n<|assistant|>\n"
    # a template without a system role: one user turn
    got = LLMTranslator("m", _LM(_tokenizer(NO_SYSTEM)), auto).prompt(REQUEST)
    assert got == f"[INST] {HEAD}\n\n{SHOTS}\n\n{QUERY} [/INST]"
    # never, or a base model without a template: the raw Appendix-A text
    raw = f"{HEAD}\n\n{SHOTS}\n\n{QUERY}"
    never = Translate(backend="llm", prompt_dir=folder, chat_template="never")
    assert LLMTranslator("m", _LM(_tokenizer(CHAT)), never).prompt(REQUEST) == raw
    assert LLMTranslator("m", _LM(_tokenizer(None)), auto).prompt(REQUEST) == raw


def _release_prompts() -> Path:
    for base in (ROOT.parent, ROOT.parent.parent):
        folder = base / "shared" / "data" / "fluent-mlama" / "chatgpt_prompts" / "translation20"
        if folder.is_dir():
            return folder
    pytest.skip("the Fluent-mLAMA release is not beside the repository (../shared/data/fluent-mlama)")


def test_every_released_prompt_of_table1_reads():
    """The 15 relations × 4 languages of Table 1: the instruction names the language pair and the
    examples are as many as the file's "Source sentence: " lines (the authors' own count)."""
    folder = _release_prompts()
    names = {"ru": "Russian", "cs": "Czech", "uk": "Ukrainian", "hr": "Croatian"}
    relations = "P101 P103 P108 P127 P1376 P159 P19 P20 P36 P364 P407 P449 P463 P495 P740".split()
    for lang, name in names.items():
        for rel in relations:
            head, examples = prompt_file(str(folder), lang, rel)
            text = (folder / f"{lang}_{rel}.txt").read_text(encoding="utf-8")
            assert head.startswith(f"You are a professional English-{name} translator."), (lang, rel)
            assert len(examples) == len(re.findall(r"Source sentence: ", text)) >= 9, (lang, rel)
            assert all(e.relation == rel and e.translation for e in examples)
