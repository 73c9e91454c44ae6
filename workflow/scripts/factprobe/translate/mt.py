"""Whole-sentence machine translation with entity forcing, batched and cached.

Fluent-mLAMA §3.2 (docs/references.md) verbalizations 2-3: the English template is filled
with English names and translated as a whole sentence; in the controlled variant the translator is
given the subject and object names from Wikidata. Here a local ``transformers`` seq2seq model
(Marian / NLLB / M2M100 style) plays the translator, and the Wikidata labels are imposed by:

* **subject: forced decoder prefix** (``subject="prefix"``): when the English sentence starts with
  the subject, the target-language subject label is forced as the first output tokens through a
  logits processor (``ForcedPrefix``) and the model continues freely, so the subject appears
  exactly as labelled and the rest of the sentence agrees with it. (``force_words_ids`` /
  constrained beam search left the ``transformers`` core in v5 and needs the hub, so it is not
  used.)
* **object: placeholder substitution** (``object="substitute"``): the English object name in the
  source is replaced by its target-language label, so the model copies and inflects that name
  rather than choosing its own translation; the (possibly inflected) result is then located by
  ``align.py``. Forcing the exact label tokens would forbid the inflection the paper mines (§4.1).
* a subject that is not sentence-initial is substituted like the object.

Translations are cached in Parquet shards keyed by ``stable_hash(model, src, tgt, text, prefix,
generation settings)``; a call translates only what the cache lacks.
"""

from __future__ import annotations

import json
import logging
import os
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from factprobe.hashing import stable_hash
from factprobe.io import write_frame
from factprobe.settings import Translate

log = logging.getLogger(__name__)

#: The languages the project's papers use: ISO 639-1 -> (English name, NLLB-200 (FLORES) code). The
#: one list of them: the seq2seq backend reads the code, the LLM backend's instruction the name.
LANGUAGES = {
    "en": ("English", "eng_Latn"),
    "de": ("German", "deu_Latn"),
    "fr": ("French", "fra_Latn"),
    "ru": ("Russian", "rus_Cyrl"),
    "cs": ("Czech", "ces_Latn"),
    "uk": ("Ukrainian", "ukr_Cyrl"),
    "hr": ("Croatian", "hrv_Latn"),
    "es": ("Spanish", "spa_Latn"),
    "da": ("Danish", "dan_Latn"),
    "vi": ("Vietnamese", "vie_Latn"),
    "id": ("Indonesian", "ind_Latn"),
    "zh": ("Chinese", "zho_Hans"),
    "pl": ("Polish", "pol_Latn"),
    "it": ("Italian", "ita_Latn"),
    "pt": ("Portuguese", "por_Latn"),
    "nl": ("Dutch", "nld_Latn"),
    "sk": ("Slovak", "slk_Latn"),
    "bg": ("Bulgarian", "bul_Cyrl"),
    "sr": ("Serbian", "srp_Cyrl"),
    "sl": ("Slovenian", "slv_Latn"),
}
NLLB_CODES = {lang: code for lang, (_, code) in LANGUAGES.items()}
# ISO 639-1 -> ISO 639-3, the ">>xxx<<" target tokens of multi-target Marian (opus-mt-en-mul ...).
ISO3 = {
    "de": "deu",
    "fr": "fra",
    "ru": "rus",
    "cs": "ces",
    "uk": "ukr",
    "hr": "hrv",
    "es": "spa",
    "da": "dan",
    "vi": "vie",
    "id": "ind",
    "zh": "zho",
    "pl": "pol",
    "it": "ita",
    "pt": "por",
    "nl": "nld",
    "sk": "slk",
    "bg": "bul",
    "sr": "srp",
    "sl": "slv",
}

CACHE_COLUMNS = ["key", "model", "src_lang", "tgt_lang", "text", "prefix", "translation"]


@dataclass(frozen=True)
class Request:
    """One sentence to translate; ``prefix`` is forced as the start of the translation.

    ``subject``/``object`` are the target-language labels the LLM backend is told to use
    (``llm.py``) and ``relation`` picks its few-shot examples; the seq2seq backend ignores them.
    """

    text: str
    src_lang: str
    tgt_lang: str
    prefix: str = ""
    subject: str = ""
    object: str = ""
    relation: str = ""


class TranslationCache:
    """Parquet cache of translations: a folder of shards, one new shard per ``save``.

    Shards instead of one rewritten file, so two jobs sharing the cache never lose each
    other's entries (each shard is written atomically).
    """

    def __init__(self, folder: str | os.PathLike | None):
        self.folder = Path(folder) if folder else None
        self.entries: dict[str, str] = {}
        if self.folder is not None and self.folder.exists():
            shards = sorted(self.folder.glob("*.parquet"))
            if shards:
                frame = pd.concat([pd.read_parquet(p, columns=["key", "translation"]) for p in shards])
                self.entries = dict(zip(frame["key"], frame["translation"], strict=False))
            log.info(
                "translation cache %s: %d entries in %d shards", self.folder, len(self.entries), len(shards)
            )

    def get(self, key: str) -> str | None:
        return self.entries.get(key)

    def save(self, rows: list[dict]) -> None:
        """Add ``rows`` (``CACHE_COLUMNS`` dicts) in memory and, with a folder, as a new shard."""
        if not rows:
            return
        for row in rows:
            self.entries[row["key"]] = row["translation"]
        if self.folder is not None:
            write_frame(
                pd.DataFrame(rows, columns=CACHE_COLUMNS), self.folder / f"{uuid.uuid4().hex}.parquet"
            )


def cache_key(model: str, settings: Translate, req: Request) -> str:
    """Hex key of a translation request under ``model`` and ``settings``."""
    return f"{stable_hash(model, settings.generation_key(), req.src_lang, req.tgt_lang, req.text, req.prefix):016x}"


def model_kind(model, tokenizer) -> str:
    """``nllb``, ``m2m100`` or ``marian`` (also any other seq2seq model without language tokens)."""
    vocab = tokenizer.get_vocab()
    if "eng_Latn" in vocab:
        return "nllb"
    if "__en__" in vocab:
        return "m2m100"
    return "marian"


class ForcedPrefix:
    """Logits processor forcing each row's output to start with its own token sequence.

    ``forced[b]`` is the token list for batch item ``b``; beams of the same item share it. At
    decoding step ``t`` (``t`` = tokens generated so far, the decoder start token excluded) a row
    with ``t < len(forced[b])`` may only emit ``forced[b][t]``; afterwards decoding is free.
    """

    def __init__(self, forced: Sequence[Sequence[int]], num_beams: int):
        self.forced = [list(f) for f in forced]
        self.num_beams = num_beams
        self.longest = max((len(f) for f in self.forced), default=0)

    def __call__(self, input_ids, scores):
        step = input_ids.shape[1] - 1
        if step >= self.longest:
            return scores
        for row in range(scores.shape[0]):
            seq = self.forced[row // self.num_beams]
            if step < len(seq):
                keep = scores[row, seq[step]].clone()
                scores[row, :] = float("-inf")
                scores[row, seq[step]] = keep if keep > float("-inf") else 0.0
        return scores


@dataclass
class Translator:
    """A loaded seq2seq translation model; ``translate`` is batched, sorted by length and cached."""

    name: str
    model: object
    tokenizer: object
    kind: str
    device: str
    settings: Translate = field(default_factory=Translate)
    cache: TranslationCache = field(default_factory=lambda: TranslationCache(None))
    lang_codes: dict[str, str] = field(default_factory=dict)
    # What the cache keys on: the name, plus the prepared folder's fingerprint when there is one
    # (a models.tsv row whose source or revision changed must not reuse old translations).
    identity: str = ""

    def code(self, lang: str) -> str:
        """The model's code for ``lang`` (config ``lang_codes`` first, then the built-in tables)."""
        if lang in self.lang_codes:
            return self.lang_codes[lang]
        if self.kind == "nllb":
            if lang not in NLLB_CODES:
                raise ValueError(
                    f"no NLLB code for language {lang!r}; add it to translate.lang_codes in config"
                )
            return NLLB_CODES[lang]
        return lang

    def _source_prefix(self, lang: str) -> str:
        """``>>xxx<< `` for multi-target Marian models whose vocabulary has such tokens."""
        if self.kind != "marian":
            return ""
        vocab = self.tokenizer.get_vocab()
        for code in (self.lang_codes.get(lang), ISO3.get(lang), lang):
            if code and f">>{code}<<" in vocab:
                return f">>{code}<< "
        return ""

    def forced_ids(self, text: str) -> list[int]:
        """Token ids of ``text`` as the start of a target sentence, no special tokens.

        Empty when the target vocabulary cannot spell ``text`` (an unknown token would be forced
        and decoded as nothing): the prefix is then not forced and the model translates freely.
        """
        if not text:
            return []
        ids = list(self.tokenizer(text_target=text, add_special_tokens=False)["input_ids"])
        if self.tokenizer.unk_token_id is not None and self.tokenizer.unk_token_id in ids:
            log.warning("prefix %r has characters the target vocabulary lacks; not forced", text)
            return []
        return ids

    def translate(self, requests: Sequence[Request], progress: bool = False) -> list[str]:
        """Translations of ``requests`` in order; cached ones are not recomputed."""
        keys = [cache_key(self.identity or self.name, self.settings, r) for r in requests]
        todo: dict[str, Request] = {}
        for key, req in zip(keys, requests, strict=False):
            if self.cache.get(key) is None and key not in todo:
                todo[key] = req
        log.info("%d requests, %d distinct uncached", len(requests), len(todo))
        if todo:
            new = self._generate(list(todo.items()), progress)
            self.cache.save(new)
        return [self.cache.get(k) for k in keys]

    def _generate(self, items: list[tuple[str, Request]], progress: bool) -> list[dict]:
        import torch
        from tqdm.auto import tqdm
        from transformers import LogitsProcessorList

        tok = self.tokenizer
        rows: list[dict] = []
        by_lang: dict[tuple[str, str], list[tuple[str, Request]]] = {}
        for key, req in items:
            by_lang.setdefault((req.src_lang, req.tgt_lang), []).append((key, req))
        bar = tqdm(total=len(items), desc="translate", unit="sent", disable=not progress)
        for (src, tgt), group in sorted(by_lang.items()):
            lead: list[int] = []
            if self.kind in ("nllb", "m2m100"):
                tok.src_lang = self.code(src)
                tok.tgt_lang = self.code(tgt)
                lang_tok = self.code(tgt) if self.kind == "nllb" else f"__{self.code(tgt)}__"
                lead = [tok.convert_tokens_to_ids(lang_tok)]
            src_prefix = self._source_prefix(tgt)
            # Length-sorted batches waste little padding.
            group = sorted(group, key=lambda kr: len(kr[1].text))
            for i in range(0, len(group), self.settings.batch_size):
                batch = group[i : i + self.settings.batch_size]
                enc = tok(
                    [src_prefix + r.text for _, r in batch],
                    return_tensors="pt",
                    padding=True,
                    truncation=True,
                )
                enc = {k: v.to(self.device) for k, v in enc.items()}
                forced = [lead + self.forced_ids(r.prefix) for _, r in batch]
                processor = ForcedPrefix(forced, self.settings.num_beams)
                with torch.inference_mode():
                    out = self.model.generate(
                        **enc,
                        num_beams=self.settings.num_beams,
                        max_new_tokens=self.settings.max_new_tokens + max(len(f) for f in forced),
                        logits_processor=LogitsProcessorList([processor]),
                        do_sample=False,
                    )
                texts = tok.batch_decode(out, skip_special_tokens=True)
                for (key, req), text in zip(batch, texts, strict=False):
                    rows.append(
                        dict(
                            key=key,
                            model=self.name,
                            src_lang=src,
                            tgt_lang=tgt,
                            text=req.text,
                            prefix=req.prefix,
                            translation=text.strip(),
                        )
                    )
                bar.update(len(batch))
        bar.close()
        return rows


def _folder_identity(name: str, folder: str | os.PathLike | None) -> str:
    """``name@fingerprint`` of a prepared folder (its manifest.json), else ``name``."""
    manifest = Path(folder) / "manifest.json" if folder else None
    if manifest is None or not manifest.exists():
        return name
    return f"{name}@{json.loads(manifest.read_text())['fingerprint']}"


def load_translator(
    name: str,
    device: str = "auto",
    dtype: str = "float32",
    settings: Translate | None = None,
    cache_dir: str | os.PathLike | None = None,
    lang_codes: dict[str, str] | None = None,
    folder: str | os.PathLike | None = None,
) -> Translator:
    """Load a seq2seq translation model ``name``: from ``folder`` when given (the prepared folder
    of a models.tsv row, rule prepare_model), else ``name`` itself as a local directory (offline).

    Raises a ``RuntimeError`` naming the model and the fix when it cannot be loaded.
    """
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    from factprobe.lm.load import DTYPES, resolve_device

    device = str(resolve_device(device))
    if device == "cpu" and dtype != "float32":
        # Half precision on CPU is slow or unsupported for generation; the output would not differ much.
        log.warning("translate.dtype %s on CPU: using float32", dtype)
        dtype = "float32"
    torch_dtype = DTYPES[dtype]
    location = str(folder or name)
    try:
        tokenizer = AutoTokenizer.from_pretrained(location)
        model = AutoModelForSeq2SeqLM.from_pretrained(location, dtype=torch_dtype)
    except (OSError, ValueError) as exc:
        raise RuntimeError(
            f"translate.model {name!r}: cannot load a seq2seq translation model ({exc}); "
            "name a config/models.tsv row (its source, e.g. the hub id Helsinki-NLP/opus-mt-en-de "
            "or a local folder, is prepared once by rule prepare_model) or give a local model "
            "directory, or leave translate.model empty"
        ) from exc
    if tokenizer.pad_token is None:
        raise RuntimeError(f"translate.model {name!r}: the tokenizer has no pad token; batching needs one")
    model.to(device).eval()
    translator = Translator(
        name=str(name),
        model=model,
        tokenizer=tokenizer,
        kind=model_kind(model, tokenizer),
        device=device,
        settings=settings or Translate(),
        cache=TranslationCache(cache_dir),
        lang_codes=dict(lang_codes or {}),
        identity=_folder_identity(str(name), folder),
    )
    log.info("loaded %s (%s) on %s, %s", name, translator.kind, device, dtype)
    return translator
