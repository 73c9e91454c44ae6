"""Wikidata-shaped synthetic dump pairs at a chosen number of entities, for ``benchmarks/scale.py``
(composition calibrated on the targets below).

``python benchmarks/scale_dumps.py N DIR`` writes ``DIR/wikidata-{20141201,20190201}-scale.json.gz``
(the official array layout, one entity a line, gzip members written by ISA-L at level 1) with
``N`` items each plus the demo's property entities, and prints their counts. The newer dump holds
the same entities with ``edit_fraction`` (3 %) of the ordinary items edited: one item-valued
statement (not P31/P279) pointed at another item of the same kind, so the diff finds a deleted and
an added statement per edit. Entities are built from pre-serialised JSON fragments (references,
descriptions, snak values, hashes, statement ids) and numpy draws per chunk, in ``--workers``
processes (one gzip member per chunk and dump).

Targets, per item averaged over the dump, and where each comes from ("sample" = the contiguous
sample of 635 real 2019 items ``tests/data/short_stream.json.bz2``, measured by
``benchmarks/check_scale_dumps.py --sample``; "perf" = ../shared/research/performance.md; "whole" =
figures of whole Wikidata the scale targets were set from):

- statements ≈ 14 (sample 12.8; perf A.3: 15.6 in a synthetic mix calibrated on real items);
  item-valued statements 6–7 (sample 6.33; whole: "6.3 per item"); heavy tail (a
  scholarly article citing hundreds of works; sample p99 75 statements, max 163).
- labels in ≈ 4–5 languages (sample mean 3.8, median 2, p99 32; whole: ≈ 5), heavy tail;
  ``en`` on ≈ 80 % of items (sample 81 %).
- aliases ≈ 1 per item on average (whole), most items none, heavy tail (sample: 0.39 per item,
  p99 5, max 91: the sample is 43 % scholarly articles, which have none).
- references on ≈ 47 % of statements (sample 47.1 %), ≈ 40 % of the bytes (sample 40 %);
  qualifiers ≈ 2.7 per item (sample 2.72: series ordinals of authors, validity dates).
- ≈ 12 KB of JSON per entity (sample 11.8 KB; perf A.1: 12–15 KB, "110 M entities, 1.0–1.6 TB").
- ``mul`` (default) labels on ≈ 9 % of items (``MUL_SHARE``: 40 % of humans, 5 % of the other
  ordinary kinds; an assumption, no published count was found), beside their own labels.
- classes (P31): one giant class, Q13442814 scholarly article, 38 % of items (whole: 35–40 % of
  real items; perf A.3: 40 %; sample 43 %); Q5 human 11 % (whole: ≈ 11 %; perf A.3 10 %;
  perf C.3 "P31=Q5, ~10 M postings" of ~110 M); the other 51 % over a long tail of generated
  classes whose number grows with N (``n_tail_classes``: N / 100, so 2,000 at 200 k and 1.1 M at
  full size, the order of Wikidata's distinct P31 values: an assumption, no source measured it
  here), class sizes Zipf-like (rank r ~ 1 / (r + 2)), every class an item with P279 to one of a few upper classes.
  200 countries and 7 continents are hubs (P17, P27, P30 ...), as in Wikidata.

Kinds of items and their properties follow the sample's most frequent properties (P2860, P2093,
P31, P577, P1476, P1433, P50, P356, P921, P106, P21, P17, P131, P569, P625, P735 ...) and the
probing suites' relations (config/config.yaml: P17 P19 P20 P27 P30 P31 P36 P47 P131 P138 P150 P190
P361 P530 P1376), with in-degree skewed towards popular targets. Labels are pseudo-words unique
per entity (article titles ten words, names two), the same value in every label language.

Run alone: ``python benchmarks/scale_dumps.py 200000 /tmp/scale200k`` (prints the counts and the
generation rate in entities per CPU-second), ``benchmarks/check_scale_dumps.py DIR`` checks the
composition against these targets.
"""

from __future__ import annotations

import argparse
import bz2
import json
import math
import multiprocessing as mp
import os
import resource
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DEMO_OLD = ROOT / "resources" / "demo" / "wikidata-20141201-sample.json.bz2"
DUMPS = ("20141201", "20190201")
SEED = 31
CHUNK = 4000  # items per worker task and gzip member

# Class shares (module docstring for the sources).
ARTICLE_SHARE, HUMAN_SHARE = 0.38, 0.11
TAIL_CLASSES_PER_ITEM = 1 / 100
# Tail class of rank r holds a share ~ 1 / (r + 2) of the tail: at 200 k the largest 2.6 % of the
# items (taxon's ≈ 3 % in Wikidata), below the human class at every N.
TAIL_ZIPF_OFFSET = 2
PLACE_CLASS_FRACTION = 0.35  # tail classes whose items are places (P17, P131, P47 ...)
N_COUNTRIES, N_CONTINENTS, N_UPPER = 200, 7, 20
# Real ids for the named classes and values; generated entities above the real id range.
Q_ARTICLE, Q_HUMAN, Q_COUNTRY, Q_CONTINENT, Q_ENTITY = 13442814, 5, 6256, 5107, 35120
SEX = (6581097, 6581072)
GEN_BASE = 140_000_000

LANGS = (
    "en nl fr de es it sv ast ceb pl ru ca pt sl cs uk hu fi da nb ro id tr ja zh ar eu gl he ko "
    "vi sk bg hr sr el ms et lt lv eo ga cy la sq fa hy ka be"
).split()
# Share of items holding a label in each language, by rank (sample: en 81 %, nl 46 %, ast 30 %,
# fr 23 % ...): a label in rank r's language with probability 0.8 r^-0.9, plus en.
SYLLABLES = [c + v for c in "bdfgklmnprstvz" for v in "aeiou"]

# Statement specs per kind: (property, value kind, mean count, count law, qualifier kind).
# value kinds: a target group ("article", "human", "place", "thing", "country", "continent",
# "sex", "class") or a non-item datatype; law "p" = Bernoulli(mean), "lomax" = floor of a
# Lomax(shape 1.6) draw with that mean (heavy tail, capped at 500).
SPECS = {
    "article": [
        ("P2860", "article", 6.5, "lomax", None),
        ("P50", "human", 1.0, "lomax", "ordinal"),
        ("P1433", "thing", 0.95, "p", None),
        ("P921", "thing", 0.8, "lomax", None),
        ("P407", "thing", 0.3, "p", None),
        ("P2093", "string", 5.0, "lomax", "ordinal"),
        ("P1476", "monolingualtext", 1.0, "p", None),
        ("P577", "time", 1.0, "p", None),
        ("P478", "string", 0.95, "p", None),
        ("P304", "string", 0.95, "p", None),
        ("P433", "string", 0.7, "p", None),
        ("P356", "external-id", 0.75, "p", None),
        ("P698", "external-id", 0.4, "p", None),
    ],
    "human": [
        ("P21", "sex", 0.9, "p", None),
        ("P27", "country", 0.7, "p", "validity"),
        ("P19", "place", 0.45, "p", None),
        ("P20", "place", 0.2, "p", None),
        ("P106", "thing", 0.9, "lomax", "validity"),
        ("P735", "thing", 0.6, "p", None),
        ("P734", "thing", 0.35, "p", None),
        ("P69", "thing", 0.15, "p", "validity"),
        ("P569", "time", 0.75, "p", None),
        ("P570", "time", 0.35, "p", None),
        ("P214", "external-id", 5.0, "lomax", None),
        ("P18", "commonsMedia", 0.15, "p", None),
    ],
    "place": [
        ("P17", "country", 0.95, "p", "validity"),
        ("P131", "place", 0.8, "p", "validity"),
        ("P47", "place", 0.8, "lomax", None),
        ("P150", "place", 0.4, "lomax", None),
        ("P190", "place", 0.05, "p", None),
        ("P1376", "place", 0.02, "p", None),
        ("P30", "continent", 0.05, "p", None),
        ("P421", "thing", 0.3, "p", None),
        ("P625", "globe-coordinate", 0.9, "p", None),
        ("P1082", "quantity", 0.4, "p", None),
        ("P1566", "external-id", 2.5, "lomax", None),
        ("P18", "commonsMedia", 0.2, "p", None),
    ],
    "thing": [
        ("P17", "country", 0.35, "p", None),
        ("P131", "place", 0.2, "p", None),
        ("P361", "thing", 0.5, "p", "validity"),
        ("P138", "human", 0.08, "p", None),
        ("P495", "country", 0.15, "p", None),
        ("P1343", "thing", 0.3, "p", None),
        ("P571", "time", 0.3, "p", None),
        ("P625", "globe-coordinate", 0.2, "p", None),
        ("P2671", "external-id", 3.5, "lomax", None),
        ("P18", "commonsMedia", 0.15, "p", None),
    ],
    "country": [
        ("P30", "continent", 1.0, "p", None),
        ("P36", "place", 1.0, "p", "validity"),
        ("P47", "country", 5.0, "lomax", None),
        ("P530", "country", 40.0, "lomax", None),
        ("P150", "place", 15.0, "lomax", None),
        ("P37", "thing", 1.5, "lomax", None),
        ("P625", "globe-coordinate", 1.0, "p", None),
        ("P1082", "quantity", 3.0, "lomax", "validity"),
        ("P214", "external-id", 20.0, "lomax", None),
    ],
    "continent": [("P47", "continent", 2.0, "lomax", None), ("P214", "external-id", 10.0, "lomax", None)],
    "class": [("P279", "class", 1.2, "lomax", None), ("P2671", "external-id", 1.5, "lomax", None)],
}
SECOND_CLASS = 0.1  # places and things with a second P31
REF_FRACTION, RANK_DEPRECATED, RANK_PREFERRED = 0.47, 0.003, 0.001
# Mean labels per item by kind (sample: articles carry few, humans and places more).
LABEL_MEAN = {"article": 2.0, "human": 3.5, "place": 4.5, "thing": 3.5, "country": 60, "continent": 60}
EN_LABEL_SHARE = 0.8
# Items with a default (``mul``) label besides their own, by kind: ≈ 9 % of all items. An
# assumption, no count of them was found: Help:Default values for labels and aliases names person
# names as the main use (hence humans most), and places, works and titles as others.
MUL_SHARE = {"article": 0.05, "human": 0.4, "place": 0.05, "thing": 0.05}
DESC_MEAN = {"article": 40, "human": 12, "place": 10, "thing": 6, "country": 60, "continent": 60, "class": 8}
ALIAS_MEAN = {"article": 0.1, "human": 1.4, "place": 1.5, "thing": 1.1, "country": 10, "continent": 8}
ALIAS_CAP = 100  # sample: at most 91
SITELINK_MEAN = {"article": 0.02, "human": 3.0, "place": 3.0, "thing": 2.0, "country": 150, "continent": 150}
KINDS = ("article", "human", "place", "thing", "country", "continent", "class")


def lomax(rng: np.random.Generator, mean: float, size: int, shape: float = 1.6, cap: int = 500) -> np.ndarray:
    """Heavy-tailed counts: floor of a Lomax draw whose continuous mean is ``mean + 0.5``."""
    x = rng.pareto(shape, size) * (mean + 0.5) * (shape - 1)
    return np.minimum(x.astype(np.int64), cap)


def pseudo_words(rng: np.random.Generator, n: int) -> list[str]:
    """``n`` distinct capitalised 2-4 syllable pseudo-words."""
    syl = np.array(SYLLABLES)
    out: set[str] = set()
    while len(out) < n:
        k = rng.integers(2, 5)
        out.add("".join(syl[rng.integers(0, len(syl), k)]).capitalize())
    return sorted(out)


class Layout:
    """Which entity each of the ``n`` items is: index ``i`` has id ``ids[i]`` and kind ``kind[i]``
    (index into KINDS); named classes keep their real ids, the rest sit from GEN_BASE upwards.
    Order: continents, countries, upper and tail classes, then ordinary items (classes drawn)."""

    def __init__(self, n: int, seed: int = SEED) -> None:
        rng = np.random.default_rng([seed, 0])
        self.n_tail = max(20, math.ceil(n * TAIL_CLASSES_PER_ITEM))
        fixed = N_CONTINENTS + N_COUNTRIES + N_UPPER + 2 + self.n_tail
        if n < fixed + 100:
            raise SystemExit(f"scale_dumps: {n} items is too few (at least {fixed + 100} for the hubs)")
        self.n = n
        ids = GEN_BASE + np.arange(n, dtype=np.int64)
        kind = np.empty(n, dtype=np.int8)
        cls = np.full(n, -1, dtype=np.int64)  # P31 value of ordinary items, countries, continents
        a, b = N_CONTINENTS, N_CONTINENTS + N_COUNTRIES
        kind[:a], cls[:a] = KINDS.index("continent"), Q_CONTINENT
        kind[a:b], cls[a:b] = KINDS.index("country"), Q_COUNTRY
        c = b + N_UPPER + 2 + self.n_tail
        kind[b:c] = KINDS.index("class")
        ids[b + N_UPPER], ids[b + N_UPPER + 1] = Q_ARTICLE, Q_HUMAN
        self.upper = ids[b : b + N_UPPER]
        self.tail_ids = ids[b + N_UPPER + 2 : c]
        # Tail classes: Zipf (s = 1) sizes; a class's items are places or things by class.
        self.tail_place = rng.random(self.n_tail) < PLACE_CLASS_FRACTION
        rest = n - c
        u = rng.random(rest)
        weights = 1.0 / (np.arange(1, self.n_tail + 1) + TAIL_ZIPF_OFFSET)
        rank = np.searchsorted(np.cumsum(weights) / weights.sum(), rng.random(rest))
        rank = np.minimum(rank, self.n_tail - 1)
        is_article, is_human = u < ARTICLE_SHARE, (u >= ARTICLE_SHARE) & (u < ARTICLE_SHARE + HUMAN_SHARE)
        k = np.where(self.tail_place[rank], KINDS.index("place"), KINDS.index("thing"))
        k[is_article], k[is_human] = KINDS.index("article"), KINDS.index("human")
        kind[c:] = k
        cl = self.tail_ids[rank]
        cl[is_article], cl[is_human] = Q_ARTICLE, Q_HUMAN
        cls[c:] = cl
        self.first_ordinary = c
        self.ids, self.kind, self.cls = ids, kind, cls
        self.groups = {name: ids[kind == KINDS.index(name)] for name in KINDS if name != "class"}
        self.groups["place"] = np.concatenate([self.groups["place"], self.groups["country"]])
        self.groups["class"] = np.concatenate([self.upper, self.tail_ids, [Q_ARTICLE, Q_HUMAN]])
        self.groups["sex"] = np.array(SEX, dtype=np.int64)
        self.tail_place_ids = self.tail_ids[self.tail_place]
        self.tail_thing_ids = self.tail_ids[~self.tail_place]


def pick(rng: np.random.Generator, group: np.ndarray, size: int) -> np.ndarray:
    """``size`` targets from ``group``, skewed to its first members (density ~ x^-2/3: heavy in-degree)."""
    if len(group) == 0:
        return np.zeros(size, dtype=np.int64)
    return group[(len(group) * rng.random(size) ** 3).astype(np.int64)]


class Fragments:
    """Pre-serialised JSON pieces shared by all entities (pools drawn once from ``SEED``)."""

    def __init__(self, seed: int = SEED) -> None:
        rng = np.random.default_rng([seed, 1])
        hexd = np.array(list("0123456789abcdef"))
        self.hashes = ["".join(rng.choice(hexd, 40)) for _ in range(4096)]
        self.uuids = [
            "-".join("".join(rng.choice(hexd, k)).upper() for k in (8, 4, 4, 4, 12)) for _ in range(8192)
        ]
        self.words = pseudo_words(rng, 20000)
        self.refs = [self._reference(rng) for _ in range(512)]
        self.values = {dt: [self._value(rng, dt) for _ in range(1024)] for dt in VALUE_TYPES}
        ranks = np.array(LANGS)
        share = np.minimum(0.8 * np.arange(1, len(LANGS) + 1) ** -0.9 * 1.0, 1.0)
        self.label_sets: dict[str, list[list[str]]] = {}
        self.desc_blocks: dict[str, list[str]] = {}
        for kind in KINDS:
            m = LABEL_MEAN.get(kind, 4.0)
            sets = []
            for _ in range(512):
                # Heavy tail: a Lomax scale on the per-language probabilities.
                scale = float(rng.pareto(1.6) * 0.6 + 0.4) * m / 4.0
                keep = rng.random(len(LANGS)) < np.minimum(share * scale, 1.0)
                keep[0] = rng.random() < EN_LABEL_SHARE
                if not keep.any():  # every item has a label, in English or another language
                    keep[1 + rng.integers(len(LANGS) - 1)] = True
                sets.append(list(ranks[keep]))
            self.label_sets[kind] = sets
            self.desc_blocks[kind] = [self._descriptions(rng, kind) for _ in range(256)]
        # Label objects with the value left as \x00 (str.replace fills in the entity's name).
        self.label_json = {
            kind: [
                "{" + ",".join(f'"{g}":{{"language":"{g}","value":"\x00"}}' for g in langs) + "}"
                for langs in sets
            ]
            for kind, sets in self.label_sets.items()
        }
        # 256 statement templates per property of each kind (statement_template).
        self.templates: dict = {"P31": self._pool(rng, "P31", "item", None)}
        for kind, specs in SPECS.items():
            for prop, group, _, _, qual in specs:
                datatype = "item" if group in ITEM_GROUPS else group
                self.templates[(kind, prop)] = self._pool(rng, prop, datatype, qual)

    def _pool(self, rng: np.random.Generator, prop: str, datatype: str, qual: str | None) -> list[str]:
        bits = rng.integers(0, 2**62, 256, dtype=np.int64).tolist()
        return [statement_template(prop, datatype, qual, x, self) for x in bits]

    def _reference(self, rng: np.random.Generator) -> str:
        """A ``"references": [...]`` member: 1-2 references of 1-4 snaks (stated in, retrieved,
        reference URL, imported from), as in the sample."""
        refs = []
        for _ in range(1 + int(rng.random() < 0.15)):
            snaks, order = [], []
            for prop in rng.choice(
                ["P248", "P813", "P854", "P143", "P577", "P1476"], rng.integers(1, 5), False
            ):
                prop = str(prop)
                value = self._value(rng, REF_TYPES[prop])
                snaks.append(
                    f'"{prop}":[{{"snaktype":"value","property":"{prop}","hash":"{self.hashes[rng.integers(4096)]}",'
                    f'"datavalue":{value},"datatype":"{REF_TYPES[prop]}"}}]'
                )
                order.append(f'"{prop}"')
            refs.append(
                f'{{"hash":"{self.hashes[rng.integers(4096)]}","snaks":{{{",".join(snaks)}}},'
                f'"snaks-order":[{",".join(order)}]}}'
            )
        return ',"references":[' + ",".join(refs) + "]"

    def _value(self, rng: np.random.Generator, datatype: str) -> str:
        """A ``datavalue`` object of a non-item datatype."""
        w = self.words
        if datatype in ("string", "external-id"):
            v = w[rng.integers(len(w))] + (" " + w[rng.integers(len(w))] if datatype == "string" else "")
            v = v if datatype == "string" else str(rng.integers(1, 10**9))
            return json.dumps({"value": v, "type": "string"})
        if datatype == "url":
            return json.dumps(
                {"value": f"https://www.{w[rng.integers(len(w))].lower()}.org/", "type": "string"}
            )
        if datatype == "commonsMedia":
            return json.dumps({"value": f"{w[rng.integers(len(w))]}.jpg", "type": "string"})
        if datatype == "time":
            y = int(rng.integers(1700, 2019))
            t = f"+{y}-{rng.integers(1, 13):02d}-{rng.integers(1, 29):02d}T00:00:00Z"
            v = {
                "time": t,
                "timezone": 0,
                "before": 0,
                "after": 0,
                "precision": 11,
                "calendarmodel": "http://www.wikidata.org/entity/Q1985727",
            }
            return json.dumps({"value": v, "type": "time"})
        if datatype == "monolingualtext":
            text = " ".join(w[i] for i in rng.integers(0, len(w), 8))
            return json.dumps({"value": {"text": text, "language": "en"}, "type": "monolingualtext"})
        if datatype == "quantity":
            v = {"amount": f"+{rng.integers(1, 10**7)}", "unit": "1"}
            return json.dumps({"value": v, "type": "quantity"})
        if datatype == "globe-coordinate":
            v = {
                "latitude": float(rng.uniform(-80, 80)),
                "longitude": float(rng.uniform(-180, 180)),
                "altitude": None,
                "precision": 0.0001,
                "globe": "http://www.wikidata.org/entity/Q2",
            }
            return json.dumps({"value": v, "type": "globe-coordinate"})
        if datatype == "wikibase-item":
            q = int(rng.integers(1, 60_000_000))
            return json.dumps(
                {
                    "value": {"entity-type": "item", "numeric-id": q, "id": f"Q{q}"},
                    "type": "wikibase-entityid",
                }
            )
        raise ValueError(datatype)

    def _descriptions(self, rng: np.random.Generator, kind: str) -> str:
        """A ``"descriptions"`` object: Lomax-many languages, a kind-specific phrase."""
        k = int(min(len(LANGS), 1 + lomax(rng, DESC_MEAN[kind] - 1, 1)[0]))
        phrase = {"article": "scientific article published in"}.get(kind, f"{kind} described in")
        year = int(rng.integers(1900, 2019))
        return json.dumps(
            {lang: {"language": lang, "value": f"{phrase} {year}"} for lang in LANGS[:k]}, ensure_ascii=False
        )


VALUE_TYPES = (
    "string",
    "external-id",
    "time",
    "monolingualtext",
    "quantity",
    "globe-coordinate",
    "commonsMedia",
)
REF_TYPES = {
    "P248": "wikibase-item",
    "P813": "time",
    "P854": "url",
    "P143": "wikibase-item",
    "P577": "time",
    "P1476": "monolingualtext",
}
ITEM_SNAK = (
    '{"snaktype":"value","property":"%s","hash":"%s","datavalue":{"value":{"entity-type":"item",'
    '"numeric-id":%d,"id":"Q%d"},"type":"wikibase-entityid"},"datatype":"wikibase-item"}'
)
VALUE_SNAK = '{"snaktype":"value","property":"%s","hash":"%s","datavalue":%s,"datatype":"%s"}'
STATEMENT = '{"mainsnak":%s,"type":"statement",%s"id":"Q%s$%s","rank":"%s"%s}'
RANKS = ("normal", "deprecated", "preferred")

_STATE: dict = {}  # the Layout and Fragments, set before the workers fork


def _laws(rng: np.random.Generator, specs: list, size: int) -> list[np.ndarray]:
    """Per spec, the statement count of each of ``size`` items."""
    out = []
    for _, _, mean, law, _ in specs:
        out.append((rng.random(size) < mean).astype(np.int64) if law == "p" else lomax(rng, mean, size))
    return out


def _targets(rng: np.random.Generator, layout: Layout, spec: tuple, total: int, cls: int) -> list[int]:
    """Item values of ``total`` statements of ``spec`` (a class's own items for P279: its parents)."""
    group = spec[1]
    if group == "class":  # P279 of a class: the upper classes, and theirs the root
        return [Q_ENTITY] * total if cls < 0 else pick(rng, layout.upper, total).tolist()
    if group in ("article", "human", "place", "thing", "country", "continent", "sex"):
        return pick(rng, layout.groups[group], total).tolist()
    return rng.integers(0, 1024, total).tolist()  # index into a value pool


def _qualifiers(kind: str | None, x: int, frag: Fragments) -> str:
    """A statement's ``qualifiers`` members: a series ordinal for authors (``%d``: the statement's
    position), start/end dates on 3/8 of the statements that change over time (the validity the
    temporal views read)."""
    if kind == "ordinal":
        snak = VALUE_SNAK % (
            "P1545",
            frag.hashes[(x >> 50) & 4095],
            '{"value":"%d","type":"string"}',
            "string",
        )
        return f'"qualifiers":{{"P1545":[{snak}]}},"qualifiers-order":["P1545"],'
    if kind == "validity" and (x >> 54) & 7 < 3:
        times = frag.values["time"]
        start = VALUE_SNAK % ("P580", frag.hashes[(x >> 50) & 4095], times[(x >> 40) & 1023], "time")
        if (x >> 57) & 1:
            end = VALUE_SNAK % ("P582", frag.hashes[(x >> 38) & 4095], times[(x >> 28) & 1023], "time")
            return f'"qualifiers":{{"P580":[{start}],"P582":[{end}]}},"qualifiers-order":["P580","P582"],'
        return f'"qualifiers":{{"P580":[{start}]}},"qualifiers-order":["P580"],'
    return ""


def statement_template(prop: str, datatype: str, qual: str | None, x: int, frag: Fragments) -> str:
    """One statement's JSON with ``%d`` holes, in order: the item value twice (item datatypes),
    the series ordinal (``qual == "ordinal"``), the entity's number and the statement's index.
    Everything else (hash, value of other datatypes, qualifiers, rank, references) is drawn from
    the bits of ``x``."""
    h = frag.hashes[x & 4095]
    if datatype == "item":
        snak = ITEM_SNAK % (prop, h, 0, 0)
        snak = snak.replace('"numeric-id":0,"id":"Q0"', '"numeric-id":%d,"id":"Q%d"')
    else:
        snak = VALUE_SNAK % (prop, h, frag.values[datatype][(x >> 13) & 1023].replace("%", "%%"), datatype)
    ref = frag.refs[(x >> 25) & 511] if ((x >> 34) & 1023) < REF_FRACTION * 1024 else ""
    r = (x >> 44) & 1023
    rank = RANKS[0]
    if r < RANK_DEPRECATED * 1024:
        rank = RANKS[1]
    elif r < (RANK_DEPRECATED + RANK_PREFERRED) * 1024:
        rank = RANKS[2]
    ident = frag.uuids[(x >> 12) & 8191][:-4] + "%04X"
    return STATEMENT % (snak, _qualifiers(qual, x, frag), "%d", ident, rank, ref.replace("%", "%%"))


class _Rand:
    """A stream of 62-bit random integers, drawn in blocks of 65,536."""

    def __init__(self, rng: np.random.Generator) -> None:
        self.rng, self.buf, self.i = rng, [], 0

    def next(self) -> int:
        if self.i >= len(self.buf):
            self.buf, self.i = self.rng.integers(0, 2**62, 65536, dtype=np.int64).tolist(), 0
        self.i += 1
        return self.buf[self.i - 1]


def _terms(kind: str, qid: int, x: int, n_alias: int, frag: Fragments) -> tuple[str, str]:
    """``labels``, ``descriptions`` and ``aliases`` members, and the label: a pseudo-word name
    unique to the entity (ten words for an article title) in each of its label languages."""
    w = frag.words
    nw = len(w)
    n_words = 10 if kind == "article" else 2
    label = " ".join(w[(qid * 7919 + k * 104729 + (x >> k * 7)) % nw] for k in range(n_words))
    labels = frag.label_json[kind][x & 511].replace("\x00", label)
    if (x >> 40 & 1023) < MUL_SHARE.get(kind, 0.0) * 1024:
        mul = f'"mul":{{"language":"mul","value":"{label}"}}'
        labels = "{" + mul + ("," + labels[1:] if labels != "{}" else "}")
    alias_json = ""
    if n_alias:
        langs = frag.label_sets[kind][x & 511]
        aliases: dict[str, list[str]] = {}
        for a in range(n_alias):
            g = langs[a % len(langs)]
            v = w[(qid * 31 + a * 7) % nw] + " " + w[(qid * 131 + a) % nw]
            aliases.setdefault(g, []).append(f'{{"language":"{g}","value":"{v}"}}')
        alias_json = ",".join(f'"{g}":[{",".join(vs)}]' for g, vs in aliases.items())
    desc = frag.desc_blocks[kind][(x >> 9) & 255]
    return f'"labels":{labels},"descriptions":{desc},"aliases":{{{alias_json}}}', label


def _entity(
    i: int,
    p: int,
    kind: str,
    plan: list,
    n_alias: int,
    n_sites: int,
    rand: _Rand,
    edit: bool,
    rng: np.random.Generator,
) -> tuple[str, str | None, int]:
    """One item's line in the old dump, its line in the new one when edited (else None) and its
    number of item-valued statements. ``plan``: per spec (property, item group or None, ordinal?,
    templates, counts, offsets, values, template choices)."""
    layout = _STATE["layout"]
    qid = int(layout.ids[i])
    claims: list[list] = []
    editable: list[tuple[int, int, str]] = []
    n_item = j = 0
    for prop, group, ordinal, templates, counts, offsets, values, choice in plan:
        c = counts[p]
        if not c:
            continue
        o = offsets[p]
        tpls = [templates[ch] for ch in choice[o : o + c]]
        if group is None:
            if ordinal:
                block = [prop, *(t % (k + 1, qid, j + k) for k, t in enumerate(tpls))]
            else:
                block = [prop, *(t % (qid, j + k) for k, t in enumerate(tpls))]
        else:
            vs = values[o : o + c]
            if ordinal:
                block = [
                    prop,
                    *(t % (v, v, k + 1, qid, j + k) for k, (t, v) in enumerate(zip(tpls, vs, strict=True))),
                ]
            else:
                block = [
                    prop,
                    *(t % (v, v, qid, j + k) for k, (t, v) in enumerate(zip(tpls, vs, strict=True))),
                ]
            n_item += c
            if edit and prop not in ("P31", "P279") and group != "sex":
                editable += [(len(claims), k, group) for k in range(1, c + 1)]
        j += c
        claims.append(block)
    x = rand.next()
    terms, label = _terms(kind, qid, x, n_alias, _STATE["frag"])
    sites = ",".join(f'"{g}wiki":{{"site":"{g}wiki","title":"{label}","badges":[]}}' for g in LANGS[:n_sites])
    head = f'{{"type":"item","id":"Q{qid}",{terms},"claims":{{'
    tail = f'}},"sitelinks":{{{sites}}},"lastrevid":{x & 0xFFFFFFF},"modified":"2019-01-28T00:00:00Z"}}'
    old = head + ",".join(f'"{b[0]}":[{",".join(b[1:])}]' for b in claims) + tail
    if not (edit and editable):
        return old, None, n_item
    b, k, group = editable[rand.next() % len(editable)]
    current = targets_of(claims[b][k])
    target = current
    while target == current:  # another item of the same kind
        target = int(pick(rng, layout.groups[group], 1)[0])
    claims[b][k] = claims[b][k].replace(
        f'"numeric-id":{current},"id":"Q{current}"', f'"numeric-id":{target},"id":"Q{target}"', 1
    )
    return old, head + ",".join(f'"{b[0]}":[{",".join(b[1:])}]' for b in claims) + tail, n_item


def targets_of(statement: str) -> int:
    """The item id of a statement's mainsnak (the first ``numeric-id`` of its JSON)."""
    k = statement.index('"numeric-id":') + len('"numeric-id":')
    return int(statement[k : statement.index(",", k)])


ITEM_GROUPS = ("article", "human", "place", "thing", "country", "continent", "sex", "class")


def _plan(rng: np.random.Generator, kind: str, pos: np.ndarray, start: int) -> list:
    """Per statement spec of ``kind`` (P31 first), the counts of the items at ``pos`` (chunk
    offsets from ``start``), their offsets into the values and the values (item ids, or for other
    datatypes unused), with the spec's template pool."""
    layout, frag = _STATE["layout"], _STATE["frag"]
    n = len(pos)
    plan = []
    cls = layout.cls[start + pos]
    if cls[0] >= 0:  # P31: the item's class, and a second tail class for some places and things
        second = np.zeros(n, dtype=np.int64)
        if kind in ("place", "thing"):
            second = (rng.random(n) < SECOND_CLASS).astype(np.int64)
        pool = layout.tail_place_ids if kind == "place" else layout.tail_thing_ids
        counts = 1 + second
        values = np.stack([cls, pool[rng.integers(0, len(pool), n)]], axis=1)
        values = values.ravel()[np.repeat(np.arange(2 * n, step=2), counts) + _within(counts)]
        plan.append(("P31", "class", False, frag.templates["P31"], counts, values))
    for spec in SPECS[kind]:
        prop, group, mean, law, qual = spec
        counts = (rng.random(n) < mean).astype(np.int64) if law == "p" else lomax(rng, mean, n)
        total = int(counts.sum())
        if group == "class":  # P279: tail classes under the upper ones, those under the root
            upper = start + pos < layout.first_ordinary - layout.n_tail - 2
            values = np.where(np.repeat(upper, counts), Q_ENTITY, pick(rng, layout.upper, total))
        elif group in ITEM_GROUPS:
            values = pick(rng, layout.groups[group], total)
        else:
            values = np.zeros(total, dtype=np.int64)
        plan.append((prop, group, qual == "ordinal", frag.templates[(kind, prop)], counts, values))
    out = []
    for prop, group, ordinal, templates, counts, values in plan:
        offsets = np.concatenate([[0], np.cumsum(counts)[:-1]])
        item_group = group if group in ITEM_GROUPS else None
        choice = rng.integers(0, len(templates), len(values)).tolist()
        out.append(
            (prop, item_group, ordinal, templates, counts.tolist(), offsets.tolist(), values.tolist(), choice)
        )
    return out


def _within(counts: np.ndarray) -> np.ndarray:
    """0, 1, ... within each run of ``np.repeat(..., counts)``."""
    starts = np.repeat(np.cumsum(counts) - counts, counts)
    return np.arange(int(counts.sum())) - starts


def build_chunk(task: tuple[int, int, float, str | None]) -> tuple[bytes, bytes, dict]:
    """Items ``start:stop`` in each dump (each line ending ``,\\n``), gzip-compressed, and their
    counts. The lines the two dumps share are compressed once: each dump is the same gzip
    members with the edited lines' own members in between. With ``parts`` (a directory) the two
    are written to ``parts/{start}.{old,new}`` (no transfer through a pipe) and returned empty."""
    from isal import igzip

    start, stop, edit_fraction, parts = task
    layout = _STATE["layout"]
    rng = np.random.default_rng([SEED, 2, start])
    rand = _Rand(rng)
    old: list[str] = [""] * (stop - start)
    edited: dict[int, str] = {}
    counts = {"items": stop - start, "item_statements": 0, "edited_items": 0}
    kinds = layout.kind[start:stop]
    for k, kind in enumerate(KINDS):
        pos = np.flatnonzero(kinds == k)
        if not len(pos):
            continue
        plan = _plan(rng, kind, pos, start)
        n_alias = lomax(rng, ALIAS_MEAN.get(kind, 0.5), len(pos), shape=1.8, cap=ALIAS_CAP).tolist()
        n_sites = np.minimum(
            lomax(rng, SITELINK_MEAN.get(kind, 0.5), len(pos), shape=1.8), len(LANGS)
        ).tolist()
        edits = ((rng.random(len(pos)) < edit_fraction) & (start + pos >= layout.first_ordinary)).tolist()
        for p, q in enumerate(pos.tolist()):
            line, line_new, n_item = _entity(
                start + q, p, kind, plan, n_alias[p], n_sites[p], rand, edits[p], rng
            )
            old[q] = line
            counts["item_statements"] += n_item
            if line_new is not None:
                edited[q] = line_new
    counts["edited_items"] = len(edited)
    counts["bytes_json"] = sum(map(len, old)) + 2 * len(old)
    gz_old, gz_new, prev = [], [], 0
    for q in [*sorted(edited), len(old)]:
        shared = igzip.compress((",\n".join(old[prev:q]) + ",\n").encode(), 1, mtime=0) if q > prev else b""
        gz_old.append(shared)
        gz_new.append(shared)
        if q < len(old):
            gz_old.append(igzip.compress((old[q] + ",\n").encode(), 1, mtime=0))
            gz_new.append(igzip.compress((edited[q] + ",\n").encode(), 1, mtime=0))
        prev = q + 1
    if parts is None:
        return b"".join(gz_old), b"".join(gz_new), counts
    for name, members in (("old", gz_old), ("new", gz_new)):
        with open(Path(parts) / f"{start}.{name}", "wb") as f:
            f.writelines(members)
    return b"", b"", counts


def property_lines() -> list[str]:
    """The demo's property entities (real labels and datatypes), references dropped, one a line."""
    out = []
    with bz2.open(DEMO_OLD, "rt", encoding="utf-8") as f:
        for line in f:
            line = line.strip().rstrip(",")
            if not line.startswith("{"):
                continue
            ent = json.loads(line)
            if ent.get("type") == "property":
                out.append(json.dumps(ent, ensure_ascii=False, separators=(",", ":")))
    return out


def write_dumps(n_items: int, outdir: Path, edit_fraction: float = 0.03, workers: int | None = None) -> dict:
    """Write ``wikidata-{20141201,20190201}-scale.json.gz`` under ``outdir`` with ``n_items`` items each.

    Returns per dump its path, items, properties, item-valued statements, edited items and size,
    plus the generation's wall and CPU seconds (this process and its workers)."""
    from isal import igzip

    outdir.mkdir(parents=True, exist_ok=True)
    t0, cpu0 = time.perf_counter(), _cpu()
    _STATE["layout"] = Layout(n_items)
    _STATE["frag"] = Fragments()
    props = property_lines()
    parts = outdir / ".parts"
    parts.mkdir(exist_ok=True)
    tasks = [(s, min(s + CHUNK, n_items), edit_fraction, str(parts)) for s in range(0, n_items, CHUNK)]
    paths = {d: outdir / f"wikidata-{d}-scale.json.gz" for d in DUMPS}
    tmp = {d: p.with_suffix(".tmp") for d, p in paths.items()}
    totals = {d: {"items": 0, "item_statements": 0, "edited_items": 0} for d in DUMPS}
    bytes_json = 0
    workers = workers or os.cpu_count() or 1
    ctx = mp.get_context("fork")
    with open(tmp[DUMPS[0]], "wb") as f_old, open(tmp[DUMPS[1]], "wb") as f_new:
        for f in (f_old, f_new):
            f.write(igzip.compress(b"[\n", 1, mtime=0))
        with ctx.Pool(workers) as pool:
            for (start, *_), (_, _, c) in zip(tasks, pool.imap(build_chunk, tasks), strict=True):
                for f, name in ((f_old, "old"), (f_new, "new")):
                    _append(f, parts / f"{start}.{name}")
                bytes_json += c.pop("bytes_json")
                for d in DUMPS:
                    for key in ("items", "item_statements"):
                        totals[d][key] += c[key]
                totals[DUMPS[1]]["edited_items"] += c["edited_items"]
        end = (",\n".join(props) + "\n]\n").encode()
        for f in (f_old, f_new):
            f.write(igzip.compress(end, 1, mtime=0))
    for d in DUMPS:
        tmp[d].rename(paths[d])
    parts.rmdir()
    wall, cpu = time.perf_counter() - t0, _cpu() - cpu0
    stats: dict = {
        d: {**totals[d], "path": str(paths[d]), "properties": len(props), "bytes_gz": paths[d].stat().st_size}
        for d in DUMPS
    }
    stats["bytes_json_per_item"] = bytes_json / n_items
    stats["classes"] = int(_STATE["layout"].n_tail) + N_UPPER + 4
    stats["generation"] = {
        "wall_s": wall,
        "cpu_s": cpu,
        "workers": workers,
        "entities_per_cpu_s": 2 * (n_items + len(props)) / cpu,
        "entities_per_s": 2 * (n_items + len(props)) / wall,
    }
    return stats


def _append(out, part: Path) -> None:
    """Append file ``part`` to the open file ``out`` in the kernel (sendfile), then delete it."""
    out.flush()
    with open(part, "rb") as f:
        size, sent = os.fstat(f.fileno()).st_size, 0
        while sent < size:
            sent += os.sendfile(out.fileno(), f.fileno(), sent, size - sent)
    part.unlink()


def _cpu() -> float:
    """CPU seconds of this process and its reaped children (the workers)."""
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("items", type=int, help="items per dump (properties come on top)")
    ap.add_argument("outdir", type=Path)
    ap.add_argument("--edit-fraction", type=float, default=0.03)
    ap.add_argument("--workers", type=int, help="generating processes (default: the cores)")
    args = ap.parse_args()
    print(json.dumps(write_dumps(args.items, args.outdir, args.edit_fraction, args.workers), indent=1))


if __name__ == "__main__":
    main()
