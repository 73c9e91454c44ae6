"""Composition of a Wikidata JSON dump, parsed independently (plain ``json``, not factprobe's
parser), against the targets of ``benchmarks/scale_dumps.py``.

    python benchmarks/check_scale_dumps.py DIR            # the pair scale_dumps.py wrote in DIR
    python benchmarks/check_scale_dumps.py --sample FILE  # any dump, e.g. tests/data/short_stream.json.bz2

For a pair it also checks the edits: every entity of the newer dump equals the older one but for
edited items, each of which differs in exactly one item value of one statement. Exits 1 when a
figure is outside its range.
"""

from __future__ import annotations

import argparse
import bz2
import gzip
import json
import sys
from collections import Counter
from pathlib import Path

# (figure, low, high) for dumps of at least 200 k items; ``targets(n)`` scales the class count.
TARGETS = (
    ("statements_per_item", 12.0, 16.0),
    ("item_statements_per_item", 6.0, 7.0),
    ("label_languages_per_item", 3.5, 6.0),
    ("en_label_share", 0.7, 0.9),
    ("mul_label_share", 0.05, 0.15),
    ("aliases_per_item", 0.7, 1.3),
    ("alias_p99", 5, 1e9),  # heavy tail: the top 1 % carry 5 or more
    ("no_alias_share", 0.5, 0.9),
    ("referenced_statement_share", 0.4, 0.55),
    ("reference_byte_share", 0.3, 0.5),
    ("qualifiers_per_item", 1.5, 4.0),
    ("bytes_per_entity", 10_000, 14_000),
    ("largest_class_share", 0.30, 0.45),
    ("second_class_share", 0.08, 0.15),
)
# Classes of the hubs scale_dumps.py writes whatever N (countries, continents) and items without
# P31 (the classes themselves): left out of the per-item figures with ``hubs=False``.
HUB_CLASSES = ("Q6256", "Q5107")


def targets(n_items: int) -> list[tuple[str, float, float]]:
    """TARGETS plus the long tail: at least N / 200 classes with a member (1,000 at 200 k)."""
    return [*TARGETS, ("classes", n_items / 200, 1e12)]


def entity_lines(path: Path):
    """``(line, entity)`` for every entity of a dump in the array layout (.json.gz / .json.bz2)."""
    opener = bz2.open if path.suffix == ".bz2" else gzip.open
    with opener(path, "rt", encoding="utf-8") as f:
        for line in f:
            line = line.strip().rstrip(",")
            if line in ("[", "]", ""):
                continue
            yield line, json.loads(line)


def _q(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))] if values else 0.0


def composition(path: Path, hubs: bool = True) -> dict:
    """Per-item figures of the items of ``path`` (all, or without hubs: countries, continents and
    items without P31)."""
    stmts, item_stmts, langs, aliases, quals, size = [], [], [], [], [], []
    en = mul = referenced = n_statements = ref_bytes = total_bytes = properties = 0
    classes: Counter[str] = Counter()
    for line, ent in entity_lines(path):
        if ent.get("type") != "item":
            properties += 1
            continue
        claims = ent.get("claims", {})
        p31 = [s["mainsnak"].get("datavalue", {}).get("value", {}).get("id") for s in claims.get("P31", [])]
        if not hubs and (not p31 or any(c in HUB_CLASSES for c in p31)):
            continue
        for c in set(p31):
            classes[c] += 1
        all_st = [s for v in claims.values() for s in v]
        stmts.append(len(all_st))
        item_stmts.append(sum(1 for s in all_st if s["mainsnak"].get("datatype") == "wikibase-item"))
        n_statements += len(all_st)
        for s in all_st:
            if s.get("references"):
                referenced += 1
                ref_bytes += len(json.dumps(s["references"], separators=(",", ":")))
        quals.append(sum(len(q) for s in all_st for q in s.get("qualifiers", {}).values()))
        langs.append(len(ent.get("labels", {})))
        en += "en" in ent.get("labels", {})
        mul += "mul" in ent.get("labels", {})
        aliases.append(sum(len(v) for v in ent.get("aliases", {}).values()))
        size.append(len(line.encode()))
        total_bytes += len(line.encode())
    n = len(stmts)
    ranked = classes.most_common(2) + [("-", 0)] * 2
    return {
        "items": n,
        "properties": properties,
        "statements_per_item": sum(stmts) / n,
        "statements_p99": _q(stmts, 0.99),
        "statements_max": max(stmts),
        "item_statements_per_item": sum(item_stmts) / n,
        "item_statements_p99": _q(item_stmts, 0.99),
        "label_languages_per_item": sum(langs) / n,
        "label_languages_median": _q(langs, 0.5),
        "label_languages_p99": _q(langs, 0.99),
        "en_label_share": en / n,
        "mul_label_share": mul / n,
        "aliases_per_item": sum(aliases) / n,
        "alias_p99": _q(aliases, 0.99),
        "alias_max": max(aliases),
        "no_alias_share": sum(1 for a in aliases if a == 0) / n,
        "referenced_statement_share": referenced / max(n_statements, 1),
        "reference_byte_share": ref_bytes / max(total_bytes, 1),
        "qualifiers_per_item": sum(quals) / n,
        "bytes_per_entity": total_bytes / n,
        "largest_class": ranked[0][0],
        "largest_class_share": ranked[0][1] / n,
        "second_class": ranked[1][0],
        "second_class_share": ranked[1][1] / n,
        "classes": len(classes),
        "classes_with_10_or_fewer": sum(1 for c in classes.values() if c <= 10),
    }


def _item_values(ent: dict) -> list[tuple[str, int, str]]:
    """(property, position, item id) of every item-valued mainsnak."""
    out = []
    for prop, statements in ent.get("claims", {}).items():
        for k, s in enumerate(statements):
            value = s["mainsnak"].get("datavalue", {}).get("value")
            if isinstance(value, dict) and value.get("entity-type") == "item":
                out.append((prop, k, value["id"]))
    return out


def check_edits(old: Path, new: Path) -> dict:
    """Entities of the two dumps in the same order; edited = differing items, each of which must
    differ in exactly one item value (and nothing else). Returns the counts."""
    edited = bad = n = 0
    for (line_a, a), (line_b, b) in zip(entity_lines(old), entity_lines(new), strict=True):
        n += 1
        if line_a == line_b:
            continue
        edited += 1
        va, vb = _item_values(a), _item_values(b)
        diff = [(x, y) for x, y in zip(va, vb, strict=False) if x != y]
        same_rest = a["id"] == b["id"] and len(va) == len(vb) and a.get("labels") == b.get("labels")
        if (
            len(diff) != 1
            or not same_rest
            or diff[0][0][:2] != diff[0][1][:2]
            or diff[0][0][0] in ("P31", "P279")
        ):
            bad += 1
    return {"entities": n, "edited": edited, "edited_share": edited / n, "bad_edits": bad}


def check(comp: dict, n_items: int) -> list[tuple[str, float, float, float, bool]]:
    """(figure, value, low, high, within) for every target."""
    return [(k, comp[k], lo, hi, lo <= comp[k] <= hi) for k, lo, hi in targets(n_items)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "dir", type=Path, nargs="?", help="directory with wikidata-{20141201,20190201}-scale.json.gz"
    )
    ap.add_argument("--sample", type=Path, help="print the composition of this dump only (no targets)")
    args = ap.parse_args()
    if args.sample:
        print(json.dumps(composition(args.sample), indent=1))
        return
    old, new = (args.dir / f"wikidata-{d}-scale.json.gz" for d in ("20141201", "20190201"))
    comp = composition(old)
    print(f"{old}: {comp['items']:,} items, {comp['properties']:,} properties")
    print("| figure | value | target |\n|---|---|---|")
    rows = check(comp, comp["items"])
    for name, value, lo, hi, ok in rows:
        target = f">= {lo:g}" if hi >= 1e9 else f"{lo:g}-{hi:g}"
        print(f"| {name} | {value:,.3f} | {target} {'ok' if ok else 'OUT OF RANGE'} |")
    for key in (
        "statements_p99",
        "statements_max",
        "item_statements_p99",
        "label_languages_median",
        "label_languages_p99",
        "alias_max",
        "largest_class",
        "second_class",
        "classes_with_10_or_fewer",
    ):
        print(f"| {key} | {comp[key]} | |")
    edits = check_edits(old, new)
    print(f"edits: {edits}")
    sys.exit(0 if all(r[-1] for r in rows) and edits["bad_edits"] == 0 and edits["edited"] else 1)


if __name__ == "__main__":
    main()
