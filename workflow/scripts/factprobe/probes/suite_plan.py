"""What a suite's settings and templates decide before any table is read (:class:`SuitePlan`):
its languages, few-shot settings and the usable templates of each relation; a misnamed
template file fails here, first."""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from factprobe.registries import template_entry
from factprobe.settings import Suite, SuiteTemplates, TemplateSet

from .fewshot import parse_setting
from .importers import import_lama, import_mpararel, import_myriadlama, import_pararel, import_xfactr
from .layouts import check_layout
from .layouts import usable as layout_usable
from .templates import Template, TemplateError, check_unique, load_templates

log = logging.getLogger(__name__)


def load_template_set(name: str, set_cfg: TemplateSet, languages: list[str]) -> list[Template]:
    """Templates of one configured set (``templates.sets.<name>``) in ``languages``: its format's
    loader (``factprobe.registries.TEMPLATE_FORMATS``)."""
    return template_entry(set_cfg.format, f"templates.sets.{name}").code()(name, set_cfg, languages)


def yaml_set(name: str, set_cfg: TemplateSet, languages: list[str]) -> list[Template]:
    """Format ``yaml``: the team's ``<lang>.yaml`` files (docs/templates-format.md)."""
    out = []
    for lang in languages:
        out.extend(load_templates(Path(set_cfg.path) / f"{lang}.yaml"))
    return out


def xfactr_set(name: str, set_cfg: TemplateSet, languages: list[str]) -> list[Template]:
    """Format ``xfactr``: X-FACTR's TREx_prompts.csv, one column per language."""
    found, skipped = import_xfactr(set_cfg.path, list(languages), set_cfg.gender, set_cfg.functions)
    for line in skipped:
        log.info("template set %s: skipped %s", name, line)
    return found


def mpararel_set(name: str, set_cfg: TemplateSet, languages: list[str]) -> list[Template]:
    """Format ``mpararel``: mParaRel / mLAMA patterns, ``<lang>/P<id>.jsonl``."""
    return import_mpararel(set_cfg.path, languages, set_cfg.checked_only)


def _one_language(read: Callable[[str, str], list[Template]]) -> Callable[..., list[Template]]:
    def loader(name: str, set_cfg: TemplateSet, languages: list[str]) -> list[Template]:
        return read(set_cfg.path, set_cfg.language) if set_cfg.language in languages else []

    loader.__doc__ = f"A single-language set read by {read.__name__}: none unless its language is probed."
    return loader


pararel_set = _one_language(import_pararel)
lama_set = _one_language(import_lama)
myriadlama_set = _one_language(import_myriadlama)


def select_templates(templates: list[Template], spec: SuiteTemplates, relations: list[str]) -> list[Template]:
    """Filter one set by relation, ``styles`` and ``ids``; keep its first ``max_per_relation`` per (lang, relation, style)."""
    styles, ids, cap = spec.styles, set(spec.ids or []), spec.max_per_relation
    out, counts = [], Counter()
    for t in templates:
        if t.relation not in relations or (styles and t.style not in styles) or (ids and t.id not in ids):
            continue
        key = (t.lang, t.relation, t.style)
        if cap is not None and counts[key] >= cap:
            continue
        counts[key] += 1
        out.append(t)
    return out


@dataclass(frozen=True)
class SuitePlan:
    """What a suite's settings and templates decide before any table is read."""

    name: str
    suite: Suite
    languages: list[str]
    instructions: dict[str, str]
    #: ``(setting, mode, k)`` of each few-shot setting (:func:`fewshot.parse_setting`).
    shots: list[tuple[str, str, int]]
    #: Usable templates by ``(lang, relation, style)`` (demonstrations) and ``(lang, relation)``.
    by_key: dict[tuple[str, str, str], list[Template]]
    by_lang_rel: dict[tuple[str, str], list[Template]]
    #: Relations with a usable template in every language.
    covered: list[str]

    @property
    def with_demos(self) -> bool:
        return any(k for _, _, k in self.shots)


def plan_suite(name: str, suite: Suite, sets: dict[str, TemplateSet]) -> SuitePlan:
    """The suite's layout checked, its instructions per language and its usable templates.

    Prompt layout (probes/layouts.py): cloze, mask_qa (BELIEF-ICL App. E) or qa (App. D).
    """
    languages, relations = list(suite.languages), list(suite.relations)
    check_layout(suite.layout, f"suites.{name}.layout")
    instruction = suite.few_shot.instruction
    if isinstance(instruction, str):
        instructions = dict.fromkeys(languages, instruction)
    else:
        missing = [lang for lang in languages if lang not in instruction]
        if missing:
            raise ValueError(f"suites.{name}.few_shot.instruction: no instruction for language(s) {missing}")
        instructions = dict(instruction)
    usable = usable_templates(name, suite, sets)
    by_key: dict[tuple[str, str, str], list[Template]] = {}
    by_lang_rel: dict[tuple[str, str], list[Template]] = {}
    for t in usable:
        by_key.setdefault((t.lang, t.relation, t.style), []).append(t)
        by_lang_rel.setdefault((t.lang, t.relation), []).append(t)
    covered = [r for r in relations if all((lang, r) in by_lang_rel for lang in languages)]
    if len(covered) < len(relations):
        log.warning(
            "suite %s: relations without a usable template in every language %s are dropped: %s",
            name,
            languages,
            sorted(set(relations) - set(covered)),
        )
    if not covered:
        raise TemplateError(
            f"suites.{name}: no relation of {relations} has a usable template in every "
            f"language {languages}; add templates or change relations/styles/ids"
        )
    shots = [(s, *parse_setting(s)) for s in suite.few_shot.settings]
    return SuitePlan(name, suite, languages, instructions, shots, by_key, by_lang_rel, covered)


def usable_templates(name: str, suite: Suite, sets: dict[str, TemplateSet]) -> list[Template]:
    """The templates ``suites.<name>.templates`` selects from its sets that the layout can use."""
    spec, languages, relations = suite.templates, list(suite.languages), list(suite.relations)
    chosen: list[Template] = []
    for set_name in spec.sets:
        if set_name not in sets:
            raise TemplateError(
                f"suites.{name}.templates.sets: {set_name!r} is not in templates.sets ({sorted(sets)})"
            )
        chosen.extend(
            select_templates(load_template_set(set_name, sets[set_name], languages), spec, relations)
        )
    check_unique(chosen)
    usable = [t for t in chosen if layout_usable(t, suite.layout)]
    skipped = [t for t in chosen if not layout_usable(t, suite.layout)]
    log.info(
        "suite %s: %d templates selected, %d usable in layout %s, %d skipped: %s",
        name,
        len(chosen),
        len(usable),
        suite.layout,
        len(skipped),
        [t.id for t in skipped],
    )
    return usable
