"""Dated facts a Wikidata JSON dump sample can give a ``by: statement_date`` timeline suite.

``python benchmarks/dated_facts.py DUMP.json.bz2 ...`` prints, per file, the item-valued
statements with a start (P580) or point in time (P585) qualifier, how many of them have an
object that is an entity of the same file (only those have the object label a probe needs: the
pipeline labels entities from the dump itself), and those per relation and per date bucket. Reads
the array layout (one entity a line) and JSON lines, old and new datavalue formats alike.
"""

from __future__ import annotations

import argparse
import bz2
import json
from collections import Counter

BUCKETS = [(0, 1900), (1900, 1950), (1950, 1990), (1990, 2000), (2000, 2010), (2010, 2030)]


def entities(path: str) -> list[dict]:
    out = []
    with bz2.open(path, "rt", encoding="utf-8") as f:
        for line in f:
            line = line.strip().rstrip(",")
            if line not in ("[", "]", ""):
                out.append(json.loads(line))
    return out


def object_id(value: dict) -> str:
    return value.get("id") or f"Q{value.get('numeric-id', 0)}"


def year(statement: dict) -> int | None:
    for key in ("P580", "P585"):
        for snak in (statement.get("qualifiers") or {}).get(key, []):
            time = (snak.get("datavalue") or {}).get("value", {}).get("time")
            if time:
                # "+1990-10-03T..." now, "+00000001990-10-03T..." in the 2014 format
                return int(time[1:].split("-")[0]) * (-1 if time[0] == "-" else 1)
    return None


def dated_facts(items: list[dict]) -> tuple[int, Counter, Counter]:
    """(dated item-valued statements, those with an object in the file per relation, per bucket)."""
    ids = {e.get("id") for e in items}
    total, by_relation, by_bucket = 0, Counter(), Counter()
    for e in items:
        claims = e.get("claims") or {}
        if not isinstance(claims, dict):
            continue
        for pid, statements in claims.items():
            for s in statements:
                dv = (s.get("mainsnak") or {}).get("datavalue") or {}
                y = year(s)
                if dv.get("type") != "wikibase-entityid" or y is None:
                    continue
                total += 1
                if object_id(dv["value"]) in ids:
                    by_relation[pid] += 1
                    by_bucket[next((f"{a}-{b}" for a, b in BUCKETS if a < y <= b), "other")] += 1
    return total, by_relation, by_bucket


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="+")
    for path in parser.parse_args().paths:
        items = entities(path)
        total, rel, bucket = dated_facts(items)
        print(
            f"{path}: {len(items)} entities, {total} dated item-valued statements, {sum(rel.values())} with a labelled object"
        )
        print(f"  per relation: {dict(rel.most_common())}")
        print(f"  per year bucket: {dict(sorted(bucket.items()))}")


if __name__ == "__main__":
    main()
