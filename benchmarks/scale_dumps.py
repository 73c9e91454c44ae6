"""Replicated demo dumps at a chosen number of entities, for ``benchmarks/scale.py`` (issue 15 item 1).

The two real demo dumps (``resources/demo/wikidata-{20141201,20190201}-sample.json.bz2``) are
grown by copying their *non-hub* items: copy ``c`` of item ``Qi`` gets a fresh id (``BASE + c·K +
rank(i)``, dense so ids stay far below 2**32), its item-valued statements point at the same
copy's items, and every label and alias becomes a pseudo-word of that copy (no two copies share
a form, so Ω's form clause behaves as on distinct entities). *Hubs* (classes: values of P31/P279;
countries, continents and other objects with in-degree >= ``HUB_INDEGREE``) and every property
entity exist once and are shared by all copies, as in Wikidata where a few classes and countries
are the objects of most statements.

Old dump ``20141201``: the old demo's items. New dump ``20190201``: the same entities, with the
new demo's version of an entity where it has one (its 100 items), plus ``edit_fraction`` of the
copied items edited (one item-valued statement pointed at another item of the same copy), so the
diff finds changes. References are dropped from both (the extractor ignores them; they only
inflate the file). Output: ``.json.gz`` (level 1) in the official array layout, one entity a line.

Run alone: ``python benchmarks/scale_dumps.py 20000 /tmp/scale20k`` (writes the two dumps and
prints their entity and statement counts).
"""

from __future__ import annotations

import argparse
import bz2
import gzip
import hashlib
import json
import math
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEMO = {
    "20141201": ROOT / "resources" / "demo" / "wikidata-20141201-sample.json.bz2",
    "20190201": ROOT / "resources" / "demo" / "wikidata-20190201-sample.json.bz2",
}
HUB_PROPERTIES = ("P31", "P279")
HUB_INDEGREE = 5
SYLLABLES = [c + v for c in "bdfgklmnprstvz" for v in "aeiou"]


def _h(*parts: object) -> int:
    return int.from_bytes(
        hashlib.blake2b("\x1f".join(map(str, parts)).encode(), digest_size=8).digest(), "big"
    )


def pseudo_word(*key: object) -> str:
    """A capitalised 3-4 syllable pseudo-word, deterministic in ``key`` (70**3.5 ≈ 3e6 words)."""
    h = _h(*key)
    n = 3 + h % 2
    h //= 2
    word = ""
    for _ in range(n):
        word += SYLLABLES[h % len(SYLLABLES)]
        h //= len(SYLLABLES)
    return word.capitalize() + SYLLABLES[h % len(SYLLABLES)]


def read_demo(path: Path) -> list[dict]:
    """Entities of a demo dump, references dropped."""
    out = []
    with bz2.open(path, "rt", encoding="utf-8") as f:
        for line in f:
            line = line.strip().rstrip(",")
            if line in ("[", "]", ""):
                continue
            ent = json.loads(line)
            for statements in ent.get("claims", {}).values():
                for st in statements:
                    st.pop("references", None)
                    st.pop("id", None)
            out.append(ent)
    return out


def _item_values(ent: dict):
    """Every item-valued snak value dict of an entity (mainsnaks and qualifiers)."""
    for statements in ent.get("claims", {}).values():
        for st in statements:
            snaks = [st.get("mainsnak", {})]
            for quals in st.get("qualifiers", {}).values():
                snaks.extend(quals)
            for snak in snaks:
                value = snak.get("datavalue", {}).get("value")
                if isinstance(value, dict) and value.get("entity-type") == "item":
                    yield snak.get("property"), value


def hubs_of(entities: list[dict]) -> set[int]:
    """Numeric ids of hub items: values of P31/P279 and objects with in-degree >= HUB_INDEGREE."""
    indegree: Counter[int] = Counter()
    hubs: set[int] = set()
    for ent in entities:
        for prop, value in _item_values(ent):
            indegree[value["numeric-id"]] += 1
            if prop in HUB_PROPERTIES:
                hubs.add(value["numeric-id"])
    hubs.update(i for i, n in indegree.items() if n >= HUB_INDEGREE)
    return hubs


def _relabel(ent: dict, copy: int) -> None:
    num = ent["id"]
    # One pseudo-word per entity and copy in every language, like a proper name.
    for entry in ent.get("labels", {}).values():
        entry["value"] = pseudo_word(num, copy, "label")
    for lang, entries in ent.get("aliases", {}).items():
        for j, entry in enumerate(entries):
            entry["value"] = pseudo_word(num, copy, "alias", lang, j)
    ent.pop("descriptions", None)
    ent["sitelinks"] = {}


class Layout:
    """Id layout of the copies: hubs and properties once, copy c of a non-hub item at a fresh id."""

    def __init__(self, base_items: list[int], hubs: set[int], max_id: int) -> None:
        self.hubs = hubs
        self.copied = sorted(i for i in base_items if i not in hubs)
        self.rank = {i: r for r, i in enumerate(self.copied)}
        self.base = max_id + 1

    def new_id(self, num: int, copy: int) -> int:
        if copy == 0 or num not in self.rank:
            return num
        return self.base + (copy - 1) * len(self.copied) + self.rank[num]


def _copy_entity(ent: dict, layout: Layout, copy: int) -> dict:
    ent = json.loads(json.dumps(ent)) if copy else ent
    num = int(ent["id"][1:])
    new = layout.new_id(num, copy)
    ent["id"] = f"Q{new}"
    for _, value in _item_values(ent):
        v = layout.new_id(value["numeric-id"], copy)
        value["numeric-id"] = v
        if "id" in value:
            value["id"] = f"Q{v}"
    if copy:
        _relabel(ent, copy)
    return ent


def _edit(ent: dict, layout: Layout, copy: int, fraction: float) -> bool:
    """Point one item-valued statement of ``ent`` at another item of its copy (``fraction`` of items)."""
    if _h(ent["id"], "edit") % 10_000 >= fraction * 10_000:
        return False
    values = [v for p, v in _item_values(ent) if p not in HUB_PROPERTIES]
    if not values:
        return False
    value = values[_h(ent["id"], "which") % len(values)]
    target = layout.copied[_h(ent["id"], "to") % len(layout.copied)]
    v = layout.new_id(target, copy)
    value["numeric-id"] = v
    if "id" in value:
        value["id"] = f"Q{v}"
    return True


def write_dumps(n_items: int, outdir: Path, edit_fraction: float = 0.03) -> dict:
    """Write ``wikidata-{20141201,20190201}-scale.json.gz`` under ``outdir`` with ~``n_items`` items each.

    Returns counts per dump (items, properties, item-valued statements, edited items) and paths.
    """
    outdir.mkdir(parents=True, exist_ok=True)
    old = read_demo(DEMO["20141201"])
    newer = {e["id"]: e for e in read_demo(DEMO["20190201"])}
    items = [e for e in old if e["type"] == "item"]
    props = [e for e in old if e["type"] != "item"]
    only_new = [e for i, e in newer.items() if i not in {x["id"] for x in items}]
    hubs = hubs_of(items + list(newer.values()))
    base_ids = [int(e["id"][1:]) for e in items + only_new]
    max_id = max(base_ids + [v["numeric-id"] for e in items + only_new for _, v in _item_values(e)])
    layout = Layout(base_ids, hubs, max_id)
    n_hub_items = sum(1 for i in base_ids if i in hubs)
    per_copy = len(layout.copied)
    copies = max(1, math.ceil((n_items - n_hub_items) / per_copy))
    stats = {}
    for dump in ("20141201", "20190201"):
        path = outdir / f"wikidata-{dump}-scale.json.gz"
        n_item = n_prop = n_statements = n_edit = 0
        sources = items if dump == "20141201" else [newer.get(e["id"], e) for e in items] + only_new
        with gzip.open(path.with_suffix(".tmp"), "wt", encoding="utf-8", compresslevel=1) as out:
            out.write("[\n")
            first = True
            for copy in range(copies):
                budget = n_items - n_hub_items - copy * per_copy if copy else None
                emitted = 0
                for ent in sources:
                    num = int(ent["id"][1:])
                    if copy and num in hubs:
                        continue
                    if copy and emitted >= budget:
                        break
                    e = _copy_entity(ent, layout, copy)
                    if dump == "20190201" and num not in hubs and _edit(e, layout, copy, edit_fraction):
                        n_edit += 1
                    n_statements += sum(1 for _ in _item_values(e))
                    out.write(("" if first else ",\n") + json.dumps(e, ensure_ascii=False))
                    first = False
                    n_item += 1
                    emitted += 0 if num in hubs else 1
            for ent in props:
                out.write(",\n" + json.dumps(ent, ensure_ascii=False))
                n_prop += 1
            out.write("\n]\n")
        path.with_suffix(".tmp").rename(path)
        stats[dump] = {
            "path": str(path),
            "items": n_item,
            "properties": n_prop,
            "item_statements": n_statements,
            "edited_items": n_edit,
            "bytes_gz": path.stat().st_size,
        }
    stats["hubs"] = n_hub_items
    stats["copied_per_copy"] = per_copy
    stats["copies"] = copies
    return stats


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("items", type=int, help="items per dump (properties come on top)")
    ap.add_argument("outdir", type=Path)
    ap.add_argument("--edit-fraction", type=float, default=0.03)
    args = ap.parse_args()
    print(json.dumps(write_dumps(args.items, args.outdir, args.edit_fraction), indent=1))


if __name__ == "__main__":
    main()
