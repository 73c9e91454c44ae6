"""A suite's ``prompts`` table: each sampled fact verbalized with its usable templates, subject
forms and few-shot demonstrations (:class:`.suite_plan.SuitePlan`)."""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterator

import pandas as pd
from tqdm import tqdm

from factprobe import contracts

from .fewshot import DemoPool, context
from .layouts import target_text
from .suite_plan import SuitePlan
from .verbalize import ending, subject_forms

log = logging.getLogger(__name__)


def demo_requests(plan: SuitePlan, facts: pd.DataFrame) -> Iterator[tuple]:
    """The arguments of every demonstration draw the suite's prompts make
    (:meth:`fewshot.DemoPool.draw`, in :func:`fact_prompt_rows`' key)."""
    suite = plan.suite
    for fact in facts[["fact_id", "subject", "property"]].itertuples(index=False):
        for lang in plan.languages:
            for template in plan.by_lang_rel.get((lang, fact.property), []):
                for shots, mode, k in plan.shots:
                    if k:
                        key = (suite.seed, fact.fact_id, template.id, lang, shots)
                        args = (mode, k, template, fact.subject, fact.property, lang, key)
                        yield (*args, suite.layout, suite.mask_token)


def suite_prompts(plan: SuitePlan, facts: pd.DataFrame, pool: DemoPool | None, index: dict) -> pd.DataFrame:
    """The ``prompts`` table: every fact × language × template × few-shot setting × subject form.

    ``pool`` (with demonstrations) is the pool the demonstrations are drawn from;
    ``index`` the forms of the entities prompts name (:func:`verbalize.forms_index`).
    """
    rows, short = [], Counter()
    for fact in tqdm(
        facts.itertuples(index=False), total=len(facts), desc=f"prompts {plan.name}", mininterval=5
    ):
        for lang in plan.languages:
            rows += fact_prompt_rows(plan, fact, lang, index, pool, short)
    if short:
        log.warning(
            "suite %s: fewer demonstrations than asked (pool too small) for %s prompts",
            plan.name,
            dict(short),
        )
    prompts = pd.DataFrame(rows, columns=contracts.columns("prompts"))
    prompts["subject_form_index"] = prompts["subject_form_index"].astype("int32")
    if plan.suite.kind == "plausibility":
        prompts["ending"] = scenario_endings(plan, prompts)
    log.info(
        "suite %s: %d prompts (%s)",
        plan.name,
        len(prompts),
        prompts.groupby(["lang", "style", "shots"]).size().to_dict(),
    )
    return prompts


def scenario_endings(plan: SuitePlan, prompts: pd.DataFrame) -> pd.Series:
    """Per prompt, its template's text after ``[Y]`` (e.g. "."): a plausibility suite's scored
    sentence is prompt + object form + this ending (probelm-plausibility §4.1; docs/contracts.md)."""
    by_id = {
        (t.lang, t.id): ending(t, plan.suite.layout)
        for templates in plan.by_lang_rel.values()
        for t in templates
    }
    keys = zip(prompts["lang"], prompts["template_id"], strict=True)
    return pd.Series([by_id[key] for key in keys], index=prompts.index, dtype=object)


def fact_prompt_rows(plan: SuitePlan, fact, lang: str, index: dict, pool, short: Counter) -> list[tuple]:
    """The prompt rows of one fact in one language (``short`` counts settings the pool could not fill)."""
    suite = plan.suite
    layout, mask, seed = suite.layout, suite.mask_token, suite.seed
    forms = subject_forms(index, fact.subject, lang, suite.subject_aliases)
    rows = []
    for template in plan.by_lang_rel.get((lang, fact.property), []):
        for shots, mode, k in plan.shots:
            key = (seed, fact.fact_id, template.id, lang, shots)
            demos = (
                pool.draw(mode, k, template, fact.subject, fact.property, lang, key, layout, mask)
                if k
                else []
            )
            if len(demos) < k:
                short[shots] += 1
            ctx = context(plan.instructions[lang], demos, mode)
            demo_ids = [d.fact_id for d in demos]
            for i, form in enumerate(forms):
                text = target_text(template, form, layout, mask)
                prompt_id = f"{fact.fact_id}|{template.id}|{lang}|{i}|{shots}"
                rows.append(
                    (prompt_id, fact.fact_id, lang, template.id, template.style, form, text, ctx)
                    + ("template", shots, i, fact.property, demo_ids)
                )
    return rows
