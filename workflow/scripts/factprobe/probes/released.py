"""Importer of the released PRobELM benchmark (probelm-plausibility §3, Appendix D).

The release (``zhangdiey/PRobELM``, no licence stated: it is read from where the user keeps it,
``suites.<s>.source.path``, never copied into this repository) has one ``{MMYYYY}.json`` per
model cut-off and ``prompts.csv``:

* ``{MMYYYY}.json``: a list of scenario groups, each a list of ``{subject, relation, object, id,
  label, rank}`` with English labels only. The first scenario is the plausible (new) fact
  (``label 1, rank 1``); the others (``label 0``) are Algorithm 1's two lists: subject swaps (same
  object) and object swaps (same subject), graded by ``rank`` 2..11 (a filtered alternative leaves
  a gap; an alternative may appear twice with two ranks: the best rank is kept; a few alternatives
  repeat the plausible scenario itself and are dropped).
* ``prompts.csv`` (no header, 71 rows): relation label, statement template, question template and
  the answer slot, with ``<subject>`` / ``<object>`` slots. The paper's text-completion templates
  (Table 10) are not released, so the imported suite has the statement and question styles.

The groups become the plausibility suite tables (docs/contracts.md) that the score and metrics
stages already read: ``facts`` (one per group and slot orientation), ``prompts``, ``entity_forms``,
``candidates`` (the true scenario as the ``object`` row, the alternatives as strategy ``cooccur``
rows with their released rank as graded relevance ``12 - rank``, §4.2 NDCG, and ``side`` =
which prompt slot they fill) and ``forms``. Scenarios are scored as whole sentences (§4.1), the
released text of every entity being its only form, so the sentences are exactly the release's.

Slots: a prompt is the template cut before its *last* slot, scored with the entity of that slot
as the continuation (``sentence`` mode scores the whole sentence anyway). When a template ends
with ``<object>`` the fact is (subject, relation, object) and the object swaps fill the end slot;
when it ends with ``<subject>`` ("Question: Who conferred <object>? Answer: <subject>.") the fact
is oriented the other way (fact id suffix ``/reversed``): the released subject fills the end slot
and the subject swaps are its ``object``-side candidates. Templates with text after the last slot
other than the final period, or with a slot used twice, cannot be split this way and are
skipped (counted in the log); the final period is the prompt's ``ending``, scored after the
answer in sentence mode (so the scored sentence is the released one, period included; no end
marker is needed).

Wikidata ids: every entity and relation label is looked up in the suite dump's labels (English
labels, then aliases; exact, then case-insensitive; among several items the one with the most
sitelinks, then the lowest id) and property labels (case and punctuation ignored, since the CSV
drops commas: "languages spoken written or signed"). An entity matched by one released text only
is keyed by its QID; an unmatched entity, or a QID that two different released texts share, is
keyed ``text:<released text>`` so every released scenario stays its own candidate. The matches
are written to ``released_matches.csv`` (one row per distinct text) and counted in the log.
"""

from __future__ import annotations

import csv
import json
import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from factprobe import contracts

from .select import assign_split

log = logging.getLogger(__name__)

#: Scenarios per released list: the plausible fact + 10 alternatives (§3.3), ranks 1..11.
DEPTH = 11
SLOT_RE = re.compile(r"<(subject|object)>")
TEXT_KEY = "text:"
STYLES = ("statement", "question")
MATCH_COLUMNS = contracts.columns("released_matches")


class ReleasedDataError(ValueError):
    """The released files do not have the expected layout; the message names file and row."""


@dataclass(frozen=True)
class ReleasedTemplate:
    """One ``prompts.csv`` template: ``text`` with slots, ``last`` = the slot at its end."""

    relation: str
    style: str
    text: str
    answer: str
    last: str | None
    reason: str = ""
    #: Text after the last slot ("" or "."): scored after the answer (prompts column ``ending``).
    ending: str = ""


def read_prompts(path: str | Path) -> dict[str, dict[str, ReleasedTemplate]]:
    """``relation label -> style -> template`` from ``prompts.csv`` (statement and question).

    A template is usable when its last slot is followed by nothing but a period and no slot
    appears twice; otherwise ``last`` is None and ``reason`` says why (module docstring).
    """
    path = Path(path)
    if not path.is_file():
        raise ReleasedDataError(f"{path}: PRobELM prompts.csv not found; fix suites.<s>.source.path")
    out: dict[str, dict[str, ReleasedTemplate]] = {}
    with open(path, newline="", encoding="utf-8-sig") as fh:
        for lineno, row in enumerate(csv.reader(fh, skipinitialspace=True), start=1):
            if not row or not "".join(row).strip():
                continue
            if len(row) != 4:
                raise ReleasedDataError(
                    f"{path}: line {lineno}: expected 4 fields (relation, statement, question, answer slot), "
                    f"got {len(row)}"
                )
            relation, statement, question, answer = (cell.strip() for cell in row)
            answer = answer.strip("<>")
            if answer not in ("subject", "object"):
                raise ReleasedDataError(
                    f"{path}: line {lineno}: answer slot {row[3]!r} is not <subject>/<object>"
                )
            out[relation] = {
                style: _template(relation, style, text, answer)
                for style, text in (("statement", statement), ("question", question))
            }
    return out


def _template(relation: str, style: str, text: str, answer: str) -> ReleasedTemplate:
    slots = SLOT_RE.findall(text)
    if sorted(slots) != ["object", "subject"]:
        return ReleasedTemplate(relation, style, text, answer, None, f"slots {slots}, need one of each")
    last = list(SLOT_RE.finditer(text))[-1]
    tail = text[last.end() :].strip()
    if tail not in ("", "."):
        return ReleasedTemplate(relation, style, text, answer, None, f"text {tail!r} after the last slot")
    return ReleasedTemplate(relation, style, text, answer, last.group(1), ending=tail)


def read_groups(path: str | Path) -> list[list[dict]]:
    """The scenario groups of one ``{MMYYYY}.json``, checked (error names the file and group)."""
    path = Path(path)
    if not path.is_file():
        raise ReleasedDataError(f"{path}: PRobELM data file not found; fix suites.<s>.source.months/path")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ReleasedDataError(f"{path}: not JSON ({exc})") from exc
    if not isinstance(data, list):
        raise ReleasedDataError(f"{path}: expected a list of scenario groups")
    keys = {"subject", "relation", "object", "label", "rank"}
    for i, group in enumerate(data):
        where = f"{path}: group {i}"
        if not isinstance(group, list) or not group:
            raise ReleasedDataError(f"{where}: expected a non-empty list of scenarios")
        for j, item in enumerate(group):
            missing = keys - set(item) if isinstance(item, dict) else keys
            if missing:
                raise ReleasedDataError(f"{where}, scenario {j}: missing key(s) {sorted(missing)}")
        if group[0]["label"] != 1 or sum(int(x["label"]) for x in group) != 1:
            raise ReleasedDataError(f"{where}: the first scenario must be the only one with label 1")
        if not all(1 <= int(x["rank"]) <= DEPTH for x in group):
            raise ReleasedDataError(f"{where}: ranks must be 1..{DEPTH}")
    return data


def _norm_relation(text: str) -> str:
    return re.sub(r"[^0-9a-z]+", " ", text.casefold()).strip()


def match_properties(relations: Iterable[str], properties: pd.DataFrame) -> pd.DataFrame:
    """``MATCH_COLUMNS`` rows of relation labels against the dump's property labels
    (``properties`` table: id, label); case and punctuation are ignored."""
    labels = properties.dropna(subset=["label"])
    index: dict[str, list[int]] = {}
    for pid, label in zip(labels["id"].astype("int64"), labels["label"].astype(str), strict=True):
        index.setdefault(_norm_relation(label), []).append(int(pid))
    rows = []
    for rel in sorted(set(relations)):
        found = sorted(set(index.get(_norm_relation(rel), [])))
        rows.append(
            ("relation", rel, contracts.pid(found[0]) if found else "", "label" if found else "", len(found))
        )
    return pd.DataFrame(rows, columns=MATCH_COLUMNS)


def match_entities(
    texts: Iterable[str], labels: pd.DataFrame, sitelinks: pd.Series | None = None
) -> pd.DataFrame:
    """``MATCH_COLUMNS`` rows of entity texts against the dump's English ``labels`` table.

    Order of tries: label exact, label case-insensitive, alias exact, alias case-insensitive; the
    first that finds items decides, and among several items the one with the most ``sitelinks``
    (id -> count), then the lowest id, is taken (``n_candidates`` says how many there were).
    """
    texts = sorted(set(texts))
    en = labels[labels["lang"] == "en"][["id", "text", "is_alias"]]
    en = en.assign(fold=en["text"].astype(str).str.casefold())
    wanted = pd.DataFrame({"text": texts, "fold": [t.casefold() for t in texts]})
    tries = [("label", False, "text"), ("label_casefold", False, "fold"), ("alias", True, "text")]
    tries.append(("alias_casefold", True, "fold"))
    links = sitelinks if sitelinks is not None else pd.Series(dtype="int64")
    links = links.groupby(level=0).max()
    best: dict[str, tuple[str, str, int]] = {}
    for name, alias, key in tries:
        part = en[en["is_alias"] == alias][["id", key]].drop_duplicates()
        hits = wanted[~wanted["text"].isin(best)].merge(part, on=key)
        if hits.empty:
            continue
        hits = hits.assign(links=hits["id"].map(links).fillna(0).astype("int64"))
        hits = hits.sort_values(["text", "links", "id"], ascending=[True, False, True], kind="stable")
        counts = hits.groupby("text")["id"].nunique()
        for text, qid in hits.drop_duplicates("text")[["text", "id"]].itertuples(index=False):
            best[text] = (contracts.qid(qid), name, int(counts[text]))
    rows = [("entity", t, *best.get(t, ("", "", 0))) for t in texts]
    return pd.DataFrame(rows, columns=MATCH_COLUMNS)


def entity_keys(matches: pd.DataFrame) -> dict[str, str]:
    """Released text -> entity key: the QID when no other released text has it, else ``text:...``."""
    ent = matches[matches["kind"] == "entity"]
    shared = ent[ent["id"] != ""].groupby("id")["text"].nunique()
    shared = set(shared[shared > 1].index)
    return {
        text: qid if qid and qid not in shared else f"{TEXT_KEY}{text}"
        for text, qid in zip(ent["text"], ent["id"], strict=True)
    }


def _prompt_text(template: ReleasedTemplate, inner: str, inner_text: str) -> str:
    """The template cut before its last slot, with the other slot filled by ``inner_text``."""
    last = list(SLOT_RE.finditer(template.text))[-1]
    return template.text[: last.start()].replace(f"<{inner}>", inner_text).rstrip()


def build_released(
    name: str,
    groups: dict[str, list[list[dict]]],
    templates: dict[str, dict[str, ReleasedTemplate]],
    labels: pd.DataFrame,
    properties: pd.DataFrame,
    sitelinks: pd.Series | None = None,
    dump: str = "",
    relations: Iterable[str] = (),
    styles: Iterable[str] | None = None,
    seed: object = 0,
) -> dict[str, pd.DataFrame]:
    """The suite tables of the released groups (``groups``: month -> that month's groups).

    Returns ``facts``, ``prompts``, ``entity_forms``, ``candidates``, ``forms`` (contracts) and
    ``matches`` (``MATCH_COLUMNS``). ``relations`` (P ids, matched through the property labels)
    keeps those relations only; empty keeps every released relation. ``styles`` keeps those
    prompt styles (default both).
    """
    styles = list(styles or STYLES)
    bad_styles = [s for s in styles if s not in STYLES]
    if bad_styles:
        raise ReleasedDataError(f"suites.{name}: the release has styles {list(STYLES)}, not {bad_styles}")
    all_groups = [(month, i, g) for month, gs in groups.items() for i, g in enumerate(gs)]
    rel_labels = {g[0]["relation"] for _, _, g in all_groups}
    unknown = sorted(rel_labels - set(templates))
    if unknown:
        log.warning("suite %s: relations without a prompts.csv row are skipped: %s", name, unknown)
    texts = {x[k] for _, _, g in all_groups for x in g for k in ("subject", "object")}
    matches = pd.concat(
        [match_properties(rel_labels, properties), match_entities(texts, labels, sitelinks)],
        ignore_index=True,
    )
    rel_rows = matches[matches["kind"] == "relation"]
    rows = ReleasedRows(entity_keys(matches), dict(zip(rel_rows["text"], rel_rows["id"], strict=True)))
    wanted = set(relations)
    for month, i, group in all_groups:
        relation = group[0]["relation"]
        prop = rows.pid_of.get(relation) or relation
        if relation not in templates or (wanted and prop not in wanted):
            rows.counts["other_relations"] += 1
            continue
        swaps = group_swaps(month, i, group, rows.counts)
        for style in styles:
            rows.add(month, i, group, templates[relation][style], prop, swaps)
    if not rows.facts:
        raise ReleasedDataError(
            f"suites.{name}: no released group is left (relations {sorted(wanted) or 'all'}, styles {styles})"
        )
    tables = released_tables(rows, dump, seed)
    log_released(name, groups, tables, matches, rows.counts)
    return {**tables, "matches": matches}


def group_swaps(month: str, i: int, group: list[dict], counts: dict[str, int]) -> dict[str, dict[str, int]]:
    """Algorithm 1's two lists of one released group: ``side -> alternative text -> best rank``.

    ``counts`` tallies the copies of the plausible scenario dropped and the duplicates merged.
    """
    s_text, o_text = str(group[0]["subject"]), str(group[0]["object"])
    swaps: dict[str, dict[str, int]] = {"subject": {}, "object": {}}
    for alt in group[1:]:
        if str(alt["object"]) == o_text and str(alt["subject"]) == s_text:
            # The release repeats the plausible scenario as an alternative now and then
            # (label 0): the same sentence cannot be ranked against itself.
            counts["copies"] += 1
            continue
        if str(alt["object"]) == o_text and str(alt["subject"]) != s_text:
            side, text = "subject", str(alt["subject"])
        elif str(alt["subject"]) == s_text and str(alt["object"]) != o_text:
            side, text = "object", str(alt["object"])
        else:
            raise ReleasedDataError(
                f"{month}.json: group {i}: scenario {alt} swaps neither only the subject nor only the object"
            )
        if text in swaps[side]:
            counts["duplicates"] += 1
        swaps[side][text] = min(int(alt["rank"]), swaps[side].get(text, DEPTH + 1))
    return swaps


class ReleasedRows:
    """The fact, prompt and candidate rows of the released groups, one template at a time."""

    def __init__(self, keys: dict[str, str], pid_of: dict[str, str]):
        self.keys, self.pid_of = keys, pid_of
        self.facts: list[tuple] = []
        self.prompts: list[tuple] = []
        self.cands: list[tuple] = []
        self.counts = dict.fromkeys(("duplicates", "copies", "skipped_templates", "other_relations"), 0)

    def add(
        self, month: str, i: int, group: list[dict], template: ReleasedTemplate, prop: str, swaps: dict
    ) -> None:
        """Rows of one group in one template's orientation (module docstring, "Slots")."""
        if template.last is None:
            self.counts["skipped_templates"] += 1
            return
        true, keys = group[0], self.keys
        s_text, o_text = str(true["subject"]), str(true["object"])
        reversed_ = template.last == "subject"
        fact_id = f"probelm/{month}/{true.get('id', i)}" + ("/reversed" if reversed_ else "")
        end_text, inner_text = (s_text, o_text) if reversed_ else (o_text, s_text)
        inner = "object" if reversed_ else "subject"
        if not any(f[0] == fact_id for f in self.facts[-2:]):
            self.facts.append((fact_id, keys[inner_text], prop, keys[end_text], [keys[end_text]], month))
            self.cands.append(
                (fact_id, keys[end_text], "object", "object", 0, float(DEPTH + 1 - 1), "object")
            )
            # The end slot's alternatives are the object side of this orientation.
            for side in ("object", "subject"):
                released_side = {"object": "subject", "subject": "object"}[side] if reversed_ else side
                ranked = sorted(swaps[released_side].items(), key=lambda kv: (kv[1], kv[0]))
                for pos, (text, rank) in enumerate(ranked, start=1):
                    self.cands.append(
                        (fact_id, keys[text], "distractor", "cooccur", pos, float(DEPTH + 1 - rank), side)
                    )
        slug = re.sub(r"[^0-9a-z]+", "_", template.relation.casefold()).strip("_")
        template_id = f"probelm.{template.style}.{slug}"
        text = _prompt_text(template, inner, inner_text)
        self.prompts.append(
            (
                f"{fact_id}|{template_id}|en|0|none",
                fact_id,
                "en",
                template_id,
                template.style,
                inner_text,
                text,
            )
            + ("", "template", "none", 0, prop, [], template.ending)
        )


def released_tables(rows: ReleasedRows, dump: str, seed: object) -> dict[str, pd.DataFrame]:
    """``facts``, ``prompts``, ``entity_forms``, ``candidates`` and ``forms`` of the collected rows."""
    fact_table = pd.DataFrame(
        rows.facts, columns=["fact_id", "subject", "property", "object", "objects", "month"]
    )
    fact_table = fact_table.drop_duplicates("fact_id")
    fact_table["popularity"] = np.int64(0)
    fact_table["stratum"] = np.int64(0)
    fact_table["split"] = assign_split(fact_table["fact_id"], seed)
    fact_table["dump"] = dump
    cols = contracts.columns("facts")
    fact_table = fact_table[cols + ["month"]].sort_values("fact_id").reset_index(drop=True)
    prompt_table = pd.DataFrame(rows.prompts, columns=[*contracts.columns("prompts"), "ending"])
    prompt_table["subject_form_index"] = prompt_table["subject_form_index"].astype("int32")
    cand_table = pd.DataFrame(
        rows.cands, columns=["fact_id", "entity", "role", "strategy", "rank", "relevance", "side"]
    ).drop_duplicates(["fact_id", "entity", "role", "side"])
    cand_table["rank"] = cand_table["rank"].astype("int32")
    cand_table["source"] = pd.Series("probelm", index=cand_table.index, dtype="string")
    cand_table["lang"] = pd.Series(pd.NA, index=cand_table.index, dtype="string")
    cand_table["score"] = np.nan
    cand_table["side"] = cand_table["side"].astype("string")
    cand_table = cand_table[contracts.columns("candidates")].reset_index(drop=True)
    forms = pd.DataFrame(
        [(key, "en", text, "label") for text, key in sorted(rows.keys.items())],
        columns=contracts.columns("entity_forms"),
    )
    used = set(cand_table["entity"])
    cand_forms = forms[forms["entity"].isin(used)].reset_index(drop=True)
    forms = forms[forms["entity"].isin(used | set(fact_table["subject"]))].reset_index(drop=True)
    return {
        "facts": fact_table,
        "prompts": prompt_table,
        "entity_forms": forms,
        "candidates": cand_table,
        "forms": cand_forms,
    }


def log_released(
    name: str, groups: dict, tables: dict[str, pd.DataFrame], matches: pd.DataFrame, counts: dict[str, int]
) -> None:
    """What the import kept, merged, dropped and matched (the rule's log)."""
    ent = matches[matches["kind"] == "entity"]
    rel = matches[matches["kind"] == "relation"]
    log.info(
        "suite %s: %d groups (%s), %d facts, %d prompts, %d candidate rows; %d duplicate alternatives "
        "merged, %d copies of the plausible scenario dropped, %d templates skipped (not splittable "
        "before their last slot), %d groups of other relations",
        name,
        sum(len(g) for g in groups.values()),
        {m: len(g) for m, g in groups.items()},
        len(tables["facts"]),
        len(tables["prompts"]),
        len(tables["candidates"]),
        counts["duplicates"],
        counts["copies"],
        counts["skipped_templates"],
        counts["other_relations"],
    )
    log.info(
        "suite %s: Wikidata ids matched for %d of %d entity texts (%s) and %d of %d relations",
        name,
        int((ent["id"] != "").sum()),
        len(ent),
        ent.loc[ent["id"] != "", "matched_by"].value_counts().to_dict(),
        int((rel["id"] != "").sum()),
        len(rel),
    )
