"""Sentence-level verbalization: translate filled English sentences, cut them before the object.

Fluent-mLAMA §3.2 (docs/references.md) compares the MLAMA "template" verbalization
(translated templates filled with target-language labels; built by the probe builder) with whole
sentences translated from English ("GT"/"ChatGPT"; here a local MT model with the Wikidata labels
imposed, see ``mt.py``). Each translation is split before the (possibly inflected) object found by
``align.py``; translations whose object is not final are filtered and counted (§3.2, §5.4). The
inflected object forms join the object's forms (§4.1: "we consider all forms (both non-inflected
and possibly inflected) of object NEs as correct ones").

Outputs follow docs/contracts.md: prompt rows with ``verbalization="sentence"`` and form rows
with ``source="inflected"``. Only the new rows are written: the template verbalization stays in
``prompts.parquet``, so readers concatenate the two tables without duplicates.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import pandas as pd
import yaml

from factprobe import contracts
from factprobe.settings import Translate as TranslateSettings

from .align import DROP_REASONS, align_sentence, is_object_final
from .mt import Request

log = logging.getLogger(__name__)

# Reasons a sentence is not translated or not kept, in the stats column order.
REASONS = ("no_object_label",) + DROP_REASONS
#: Columns of one suite's translate_stats rows: the contract's (docs/contracts.md) but ``suite``,
#: which the rule script adds.
STATS_COLUMNS = contracts.columns("translate_stats")[1:]


Translate = Callable[[Sequence[Request]], list[str]]
#: The ``translate`` section's defaults.
_SETTINGS = TranslateSettings()


def load_template_texts(paths: Iterable[str | Path]) -> dict[str, str]:
    """``template id -> text`` from template YAML files (format: /tmp/team templates-format)."""
    out: dict[str, str] = {}
    for path in paths:
        with open(path) as fh:
            data = yaml.safe_load(fh) or {}
        for i, record in enumerate(data.get("templates", [])):
            if "id" not in record or "text" not in record:
                raise ValueError(f"{path}: template #{i + 1} lacks 'id' or 'text'; see the template format")
            out[record["id"]] = record["text"]
    return out


def _capitalize_initial(text: str, value: str, slot: str) -> str:
    # A lower-case label that opens the sentence gets a capital, as the probe builder does.
    if text.startswith(slot) and value[:1].islower():
        value = value[:1].upper() + value[1:]
    return text.replace(slot, value)


def fill(template: str, subject: str, obj: str) -> str:
    """``template`` with ``[X]`` and ``[Y]`` filled."""
    return _capitalize_initial(_capitalize_initial(template, subject, "[X]"), obj, "[Y]")


def object_final_template(template: str) -> bool:
    """True when ``[Y]`` is followed only by final punctuation (the only templates cut before [Y])."""
    _, _, tail = template.partition("[Y]")
    return "[Y]" in template and is_object_final(tail)


def _labels(forms: pd.DataFrame) -> tuple[dict, dict]:
    """``(entity, lang) -> label`` and ``(entity, lang) -> [all forms]``."""
    label: dict[tuple[str, str], str] = {}
    every: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for entity, lang, form, source in zip(
        forms["entity"], forms["lang"], forms["form"], forms["source"], strict=False
    ):
        key = (entity, lang)
        if source == "label" and key not in label:
            label[key] = form
        every.setdefault(key, []).append((form, source))
    return label, every


def english_sentences(
    prompts: pd.DataFrame,
    facts: pd.DataFrame,
    forms: pd.DataFrame,
    templates: dict[str, str],
    source_lang: str = "en",
    styles: Sequence[str] = ("statement",),
) -> pd.DataFrame:
    """Filled source-language sentences of the zero-shot, object-final prompts of ``styles``.

    Only prompts asked with the subject's label (``subject_form_index`` 0) are used.
    One row per source prompt: its ids, the template text, the subject form used and the
    object's source-language label. A template missing from ``templates`` is rebuilt as the
    prompt text + " [Y]." (statement templates end that way) and logged.
    """
    sel = prompts[(prompts["lang"] == source_lang) & prompts["style"].isin(list(styles))]
    sel = sel[sel["context"].fillna("") == ""]
    # The target subject is always its label, so English alias variants would only repeat it.
    sel = sel[sel["subject_form_index"] == 0]
    obj_of = dict(zip(facts["fact_id"], facts["object"], strict=False))
    subj_of = dict(zip(facts["fact_id"], facts["subject"], strict=False))
    label, _ = _labels(forms)
    rows, rebuilt = [], set()
    for p in sel.itertuples(index=False):
        obj = obj_of.get(p.fact_id)
        obj_label = label.get((obj, source_lang))
        if obj_label is None:
            continue
        text = templates.get(p.template_id)
        if text is None:
            rebuilt.add(p.template_id)
            text = p.text.replace(p.subject_form, "[X]", 1) + " [Y]."
        if not object_final_template(text):
            continue
        rows.append(
            dict(
                source_prompt_id=p.prompt_id,
                fact_id=p.fact_id,
                subject=subj_of.get(p.fact_id),
                object=obj,
                property=p.property,
                template_id=p.template_id,
                template=text,
                style=p.style,
                shots=p.shots,
                subject_form_index=getattr(p, "subject_form_index", 0),
                subject_source=p.subject_form,
                object_source=obj_label,
                source_text=fill(text, p.subject_form, obj_label),
            )
        )
    if rebuilt:
        log.warning("templates not in the template files, rebuilt as prompt + ' [Y].': %s", sorted(rebuilt))
    return pd.DataFrame(rows)


def _subject_slot(
    template: str, subj_label: str | None, subject_source: str, subject_mode: str
) -> tuple[str, str]:
    """``(subject in the source sentence, forced target prefix)``: with a target label and
    ``subject_mode`` prefix, a template that opens with the subject has it forced as the
    translation's prefix; otherwise the label replaces the source subject (``none``: neither)."""
    if subj_label is None or subject_mode == "none":
        return subject_source, ""
    if subject_mode == "prefix" and template.lstrip().startswith("[X]"):
        return subject_source, _capitalize_initial("[X]", subj_label, "[X]")
    return subj_label, ""


def translation_requests(
    sentences: pd.DataFrame,
    forms: pd.DataFrame,
    lang: str,
    source_lang: str = "en",
    subject_mode: str = "prefix",
    object_mode: str = "substitute",
    backend: str = "seq2seq",
) -> tuple[list[dict], list[dict]]:
    """Requests for one target language, with the Wikidata labels imposed as ``mt.py`` describes
    (``backend="seq2seq"``) or, for ``backend="llm"`` (``llm.py``), the filled source sentence
    as is with the target labels given as the forced subject and object translations.

    Returns ``(jobs, skipped)``: each job is the sentence row plus the ``Request`` and the target
    labels; sentences whose object has no ``lang`` label are skipped (``no_object_label``).
    """
    label, every = _labels(forms)
    jobs, skipped = [], []
    for s in sentences.to_dict("records"):
        obj_label = label.get((s["object"], lang))
        if obj_label is None:
            skipped.append(dict(s, lang=lang, reason="no_object_label"))
            continue
        subj_label = label.get((s["subject"], lang))
        template = s["template"]
        subject_in, prefix = _subject_slot(template, subj_label, s["subject_source"], subject_mode)
        object_in = obj_label if object_mode == "substitute" else s["object_source"]
        if backend == "llm":
            # Appendix A: the English sentence stays English; the labels are given beside it.
            request = Request(
                text=s["source_text"],
                src_lang=source_lang,
                tgt_lang=lang,
                subject=subj_label or s["subject_source"],
                object=obj_label,
                relation=s["property"],
            )
        else:
            text = fill(template, subject_in, object_in)
            request = Request(text=text, src_lang=source_lang, tgt_lang=lang, prefix=prefix)
        jobs.append(
            dict(
                s,
                lang=lang,
                request=request,
                subject_label=subj_label,
                object_label=obj_label,
                object_forms=[(obj_label, "label")]
                + [(f, "alias") for f, src in every.get((s["object"], lang), []) if src == "alias"]
                + [(s["object_source"], "source")],
                subject_forms=([(subj_label, "label")] if subj_label else [])
                + [(s["subject_source"], "source")],
            )
        )
    return jobs, skipped


def sentence_verbalization(
    prompts: pd.DataFrame,
    facts: pd.DataFrame,
    forms: pd.DataFrame,
    templates: dict[str, str],
    languages: Sequence[str],
    translate: Translate | None,
    model_name: str = "",
    settings: TranslateSettings = _SETTINGS,
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Sentence-level prompts, inflected forms and per-language stats of one suite.

    ``translate=None`` (no model configured) leaves the template verbalization as the only one:
    no sentence rows, ``status="no_model"`` in the stats. ``settings`` is the ``translate``
    section: ``source_lang``, ``styles``, the ``subject`` and ``object`` modes, ``backend``, and
    the ``min_score`` and ``word_order`` a kept translation meets. The prompts and forms frames
    match ``PROMPT_SCHEMA`` / ``FORM_SCHEMA``.
    """
    source_lang, backend = settings.source_lang, settings.backend
    sentences = english_sentences(prompts, facts, forms, templates, source_lang, settings.styles)
    log.info("%d %s sentences from %d prompts", len(sentences), source_lang, len(prompts))
    rows, new_forms, stats = [], [], []
    existing = set(zip(forms["entity"], forms["lang"], forms["form"], strict=False))
    for lang in languages:
        n_template = int((prompts["lang"] == lang).sum())
        counts: Counter = Counter()
        if translate is None or sentences.empty:
            status = "no_model" if translate is None else "no_sentences"
            stats.append(_stats_row(lang, model_name, status, len(sentences), counts, 0, 0, n_template))
            continue
        jobs, skipped = translation_requests(
            sentences, forms, lang, source_lang, settings.subject, settings.object, backend
        )
        counts.update(s["reason"] for s in skipped)
        outputs = translate([j["request"] for j in jobs])
        kept, lang_forms = _kept_translations(
            jobs, outputs, lang, model_name, (settings.min_score, settings.word_order), existing, counts
        )
        rows.extend(kept)
        new_forms.extend(
            dict(entity=e, lang=lang, form=f, source="inflected", n_sentences=n)
            for (e, f), n in lang_forms.items()
        )
        n_kept = counts["kept"]
        stats.append(
            _stats_row(
                lang, model_name, "translated", len(sentences), counts, n_kept, len(lang_forms), n_template
            )
        )
        log.info(
            "%s: %d sentences, %d kept, dropped %s",
            lang,
            len(sentences),
            n_kept,
            {r: counts[r] for r in REASONS if counts[r]},
        )
    return _verbalization_frames(rows, new_forms, stats)


def _kept_translations(
    jobs: list[dict],
    outputs: list,
    lang: str,
    model_name: str,
    alignment: tuple[float, str],
    existing: set,
    counts: Counter,
) -> tuple[list[dict], Counter]:
    """The sentence rows of the translations whose object aligns (``alignment``: min_score and
    word_order of :func:`align_sentence`), each outcome counted in ``counts``; and the
    (object, inflected form) pairs not in ``existing``, with their numbers of sentences."""
    rows: list[dict] = []
    lang_forms: Counter = Counter()
    for job, translation in zip(jobs, outputs, strict=True):
        a = align_sentence(translation or "", job["object_forms"], job["subject_forms"], *alignment)
        counts[a.reason] += 1
        if not a.kept:
            continue
        counts["subject_missing"] += not a.subject_found
        rows.append(_sentence_row(job, translation, a, lang, model_name))
        if (job["object"], lang, a.form) not in existing:
            lang_forms[(job["object"], a.form)] += 1
    return rows, lang_forms


def _verbalization_frames(
    rows: list, new_forms: list, stats: list
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """The translated prompts, inflected forms and stats as frames of their contracts' columns."""
    out_prompts = pd.DataFrame(rows, columns=contracts.columns("translated_prompts"))
    out_prompts = out_prompts.astype(
        {"subject_form_index": "int32", "object_score": "float64", "subject_found": "bool"}
    )
    out_forms = pd.DataFrame(new_forms, columns=contracts.columns("translated_forms")).astype(
        {"n_sentences": "int32"}
    )
    return out_prompts, out_forms, pd.DataFrame(stats, columns=STATS_COLUMNS)


def _sentence_row(job: dict, translation: str, a, lang: str, model_name: str) -> dict:
    """The ``translated_prompts`` row of one kept translation (``a``: its :class:`factprobe.translate.align.Alignment`)."""
    return dict(
        prompt_id=f"{job['source_prompt_id']}|sentence|{lang}",
        fact_id=job["fact_id"],
        lang=lang,
        template_id=job["template_id"],
        style=job["style"],
        subject_form=job["subject_label"] or job["subject_source"],
        text=a.prompt,
        context="",
        verbalization="sentence",
        shots=job["shots"],
        subject_form_index=job["subject_form_index"],
        property=job["property"],
        source_prompt_id=job["source_prompt_id"],
        source_text=job["source_text"],
        mt_input=job["request"].text,
        translation=translation,
        object_form=a.form,
        object_score=a.score,
        object_via=a.via,
        subject_found=a.subject_found,
        mt_model=model_name,
    )


def _stats_row(lang, model, status, n_sentences, counts, n_kept, n_forms, n_template) -> dict:
    dropped = sum(counts[r] for r in REASONS)
    row = dict(lang=lang, model=model, status=status, n_sentences=n_sentences, n_kept=n_kept)
    row.update({f"dropped_{r}": counts[r] for r in REASONS})
    share = dropped / n_sentences if status == "translated" and n_sentences else float("nan")
    row.update(
        dropped_share=share,
        subject_missing=counts["subject_missing"],
        n_inflected_forms=n_forms,
        n_template_prompts=n_template,
    )
    return row


def target_languages(
    prompts: pd.DataFrame, configured: Sequence[str] | None, source_lang: str = "en"
) -> list[str]:
    """Configured target languages, else every language of the suite's prompts but the source."""
    if configured:
        return [lang for lang in configured if lang != source_lang]
    return sorted(set(prompts["lang"]) - {source_lang})
