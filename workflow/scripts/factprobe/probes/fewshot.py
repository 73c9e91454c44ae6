"""BELIEF-ICL few-shot contexts (belief-myriadlama §3.1, Appendix E).

Settings: ``none`` (no context at all), ``zero-shot`` (the instruction line only),
``{k}-random`` (k facts of any relation), ``{k}-relation`` (k facts of the target's relation)
and ``{k}-template`` (k facts of the target's relation, written with the target's template).
In ``random`` and ``relation`` each demonstration is written with a hash-chosen template of its
own relation, of any style: §3.1 "X-relation samples X facts from the same relation but with
random templates", and App. E.2/E.3 show question templates ("What group is pharmacy a part of?
[MASK].") before a statement target ("[MASK] consists of environmental factors."). Demonstrations are
whole sentences with the object filled in, one per line, after the instruction line; the
target prompt follows on the next line, so the scored text is ``context + text``.

Demonstrations are drawn by ``stable_hash`` of the prompt key and never repeat the target
fact nor its (subject, relation) pair (§3.1: "the target fact is excluded in the examples").
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import NamedTuple

import pandas as pd

from factprobe.hashing import stable_hash

from .layouts import demo_text
from .templates import Template

SETTING_RE = re.compile(r"^(none|zero-shot|([1-9][0-9]*)-(random|relation|template))$")
# Above this many candidates, draw by hashed index instead of sorting the whole pool.
SORT_LIMIT = 64


@dataclass(frozen=True)
class Demo:
    """One demonstration: the fact and the template it is written with."""

    fact_id: str
    template: Template
    text: str


def parse_setting(setting: str) -> tuple[str, int]:
    """``"4-relation"`` -> ``("relation", 4)``; ``"zero-shot"`` -> ``("zero-shot", 0)``."""
    match = SETTING_RE.match(setting)
    if not match:
        raise ValueError(f"few-shot setting {setting!r}: use none, zero-shot or <k>-random|relation|template")
    if match.group(2):
        return match.group(3), int(match.group(2))
    return setting, 0


class PoolRow(NamedTuple):
    """One fact of a demonstration pool."""

    fact_id: str
    subject: str
    property: str
    object: str


class Unfetched(LookupError):
    """A draw reached a pool position that a :class:`FetchedPool` has not loaded yet."""


def probe_positions(size: int, key: tuple, count: int) -> list[int]:
    """The first ``count`` positions a draw of ``key`` probes in a pool of ``size`` facts above
    :data:`SORT_LIMIT` (``stable_hash(*key, n) % size``, n = 0, 1, ...; at most 64 × SORT_LIMIT)."""
    return [stable_hash(*key, n) % size for n in range(min(count, 64 * SORT_LIMIT))]


class DemoPool:
    """Facts demonstrations are drawn from, with their label sentences per language.

    ``facts`` has ``fact_id, subject, property, object``; ``labels`` maps ``(entity, lang)`` to
    the label; ``templates`` maps ``(lang, relation, style)`` to usable templates. Demonstrations
    of ``random`` and ``relation`` choose among every style's templates of their relation
    (``by_lang_relation``, in template id order).

    A draw sees a pool (every fact for ``random``, the target's relation else) as its facts in
    ``fact_id`` order: :meth:`size` and :meth:`row` at a position are all it reads, so a pool
    that loads only the positions draws reach (:class:`FetchedPool`) draws the same demonstrations.
    """

    def __init__(
        self,
        facts: pd.DataFrame,
        labels: dict[tuple[str, str], str],
        templates: dict[tuple[str, str, str], list[Template]],
    ):
        self.labels = labels
        self.templates = templates
        by_lang_relation: dict[tuple[str, str], list[Template]] = {}
        for (lang, relation, _style), options in sorted(templates.items()):
            by_lang_relation.setdefault((lang, relation), []).extend(options)
        self.by_lang_relation = {
            key: sorted(options, key=lambda t: t.id) for key, options in by_lang_relation.items()
        }
        facts = facts.sort_values("fact_id").reset_index(drop=True)
        self.rows = [
            PoolRow(*r) for r in facts[["fact_id", "subject", "property", "object"]].itertuples(index=False)
        ]
        self.by_relation = {p: g.index.to_list() for p, g in facts.groupby("property")}

    def size(self, relation: str | None) -> int:
        """Facts in the pool of ``relation`` (``None``: every relation)."""
        return len(self.rows) if relation is None else len(self.by_relation.get(relation, []))

    def row(self, relation: str | None, position: int) -> PoolRow:
        """The fact at ``position`` in ``fact_id`` order of the pool of ``relation`` (``None``: all)."""
        return self.rows[position if relation is None else self.by_relation[relation][position]]

    def _order(self, relation: str | None, key: tuple) -> Iterator[int]:
        """Positions in a hash order of ``key``: a full sort for small pools, lazy hashed probes else."""
        size = self.size(relation)
        if size <= SORT_LIMIT:
            yield from sorted(range(size), key=lambda i: stable_hash(*key, self.row(relation, i).fact_id))
            return
        # Duplicates are skipped by the caller; the probe count bounds the work for odd pools.
        for n in range(64 * SORT_LIMIT):
            yield stable_hash(*key, n) % size

    def draw(
        self,
        setting: str,
        k: int,
        target: Template,
        subject: str,
        relation: str,
        lang: str,
        key: tuple,
        layout: str = "cloze",
        mask: str = "[MASK]",
    ) -> list[Demo]:
        """Up to ``k`` demonstrations for one target prompt (fewer only if the pool runs out),
        written in the suite's ``layout`` (:mod:`factprobe.probes.layouts`)."""
        scope = None if setting == "random" else relation
        chosen: list[Demo] = []
        used: set[int] = set()
        for i in self._order(scope, ("shot", *key)):
            if len(chosen) == k:
                break
            if i in used:
                continue
            used.add(i)
            row = self.row(scope, i)
            if row.subject == subject and row.property == relation:
                continue
            s_label = self.labels.get((row.subject, lang))
            o_label = self.labels.get((row.object, lang))
            if s_label is None or o_label is None:
                continue
            if setting == "template":
                template = target
            else:
                options = self.by_lang_relation.get((lang, row.property), [])
                if not options:
                    continue
                template = options[stable_hash("shot-template", *key, row.fact_id) % len(options)]
            chosen.append(Demo(row.fact_id, template, demo_text(template, s_label, o_label, layout, mask)))
        return chosen


class FetchedPool(DemoPool):
    """A :class:`DemoPool` that holds only the positions draws reach.

    ``sizes`` gives every pool's size (``None``: all relations); rows come in through
    :meth:`add_rows` with the labels of their entities; :meth:`row` of a position not loaded raises
    :class:`Unfetched`, which tells the filler (:func:`factprobe.probes.demopool.fill`) to probe further.
    """

    def __init__(self, sizes: dict[str | None, int], templates: dict[tuple[str, str, str], list[Template]]):
        super().__init__(pd.DataFrame(columns=list(PoolRow._fields)), {}, templates)
        self.sizes = dict(sizes)
        self.loaded: dict[tuple[str | None, int], PoolRow] = {}

    def size(self, relation: str | None) -> int:
        return self.sizes.get(relation, 0)

    def row(self, relation: str | None, position: int) -> PoolRow:
        try:
            return self.loaded[relation, position]
        except KeyError:
            raise Unfetched(relation, position) from None

    def add_rows(
        self, rows: dict[tuple[str | None, int], PoolRow], labels: dict[tuple[str, str], str]
    ) -> None:
        """Add rows by (pool, position) and the labels of their entities."""
        self.loaded.update(rows)
        self.labels.update(labels)

    def wanted(self, setting: str, relation: str, key: tuple, probes: int) -> set[tuple[str | None, int]]:
        """The (pool, position) pairs not yet loaded among the first ``probes`` a draw of ``key``
        reaches (every position of a pool up to :data:`SORT_LIMIT`, which a draw sorts whole)."""
        scope = None if setting == "random" else relation
        size = self.size(scope)
        positions = range(size) if size <= SORT_LIMIT else probe_positions(size, ("shot", *key), probes)
        return {(scope, p) for p in positions} - self.loaded.keys()


def context(instruction: str, demos: list[Demo], setting: str) -> str:
    """The prefix of a prompt: "" for ``none``, else the instruction and demonstrations, each on a line."""
    if setting == "none":
        return ""
    return "\n".join([instruction, *(d.text for d in demos)]) + "\n"
