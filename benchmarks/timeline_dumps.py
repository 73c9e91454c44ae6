"""A monthly series of Wikidata-shaped dumps with dated additions, for timeline suites.

``python benchmarks/timeline_dumps.py OUTDIR`` writes ``OUTDIR/wikidata-{date}-timeline.json.bz2``
for t_0 (the demo's 2019-02-01 sample, 100 items, as is) and ``--months`` month ends after it,
and ``OUTDIR/dumps.tsv`` (the registry rows, paths as given by OUTDIR). Dump t_i holds every
item of dump t_{i-1} unchanged plus ``--per-month`` new items created in (t_{i-1}, t_i]: each
one has an English label (a pseudo-word unique per item), an inception (P571, so the diff's
"physically new subject" rule labels its statements ``new``) and one P17 (country) statement
dated by a P580 start on the same day (so ``by: statement_date`` dates it too), its object a
country that the sample's own P17 statements name (weighted by how often they do). Its
sitelinks count is drawn from the sample's items: new entities are, in reality, less popular
than old ones (the confound the timeline sampler controls); drawing from the old items'
distribution keeps a common popularity support in this small series.

Rate: ``--per-month`` (default 40) is far above real Wikidata growth relative to a 100-item
sample (about 1 % new items a month); it is chosen so that each slice has enough facts for a
slice mean. Everything is drawn from ``stable_hash`` of the item number: the series is the same
on every run.
"""

from __future__ import annotations

import argparse
import bz2
import datetime as dt
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "workflow" / "scripts"))

from factprobe.hashing import stable_hash  # noqa: E402

BASE = ROOT / "resources" / "demo" / "wikidata-20190201-sample.json.bz2"
T0 = dt.date(2019, 2, 1)
FIRST_ID = 90_000_000
SYLLABLES = ["ka", "lo", "mi", "ne", "ru", "ta", "vo", "zi", "be", "do", "fu", "gra", "sel", "tor"]


def read_items(path: Path = BASE) -> list[dict]:
    """The entities of a dump in the official array layout (one entity a line)."""
    with bz2.open(path, "rt", encoding="utf-8") as f:
        return [json.loads(line.rstrip().rstrip(",")) for line in f if line.strip() not in ("[", "]")]


def month_ends(months: int, start: dt.date = T0) -> list[dt.date]:
    """t_0 = ``start`` and the first day of each following month (``months`` of them)."""
    out = [start]
    for _ in range(months):
        last = out[-1]
        out.append(dt.date(last.year + last.month // 12, last.month % 12 + 1, 1))
    return out


def pseudo_word(n: int) -> str:
    h = stable_hash("timeline-word", n)
    parts = [SYLLABLES[(h >> (4 * i)) % len(SYLLABLES)] for i in range(3)]
    return ("".join(parts) + f"{n % 1000:03d}").capitalize()


def time_value(day: dt.date) -> dict:
    return {
        "time": f"+{day.isoformat()}T00:00:00Z",
        "timezone": 0,
        "before": 0,
        "after": 0,
        "precision": 11,
        "calendarmodel": "http://www.wikidata.org/entity/Q1985727",
    }


def new_item(n: int, day: dt.date, country: str, links: int) -> dict:
    """Item ``Q{FIRST_ID + n}``, created on ``day``, located in ``country``, ``links`` sitelinks."""
    qid = f"Q{FIRST_ID + n}"
    label = pseudo_word(n)
    start = {"snaktype": "value", "property": "P580", "datavalue": {"value": time_value(day), "type": "time"}}
    start["datatype"] = "time"
    country_value = {"entity-type": "item", "numeric-id": int(country[1:]), "id": country}
    p17 = {
        "mainsnak": {
            "snaktype": "value",
            "property": "P17",
            "datavalue": {"value": country_value, "type": "wikibase-entityid"},
            "datatype": "wikibase-item",
        },
        "type": "statement",
        "qualifiers": {"P580": [start]},
        "id": f"{qid}$p17",
        "rank": "normal",
    }
    inception = {
        "mainsnak": {
            "snaktype": "value",
            "property": "P571",
            "datavalue": {"value": time_value(day), "type": "time"},
            "datatype": "time",
        },
        "type": "statement",
        "id": f"{qid}$p571",
        "rank": "normal",
    }
    return {
        "type": "item",
        "id": qid,
        "labels": {"en": {"language": "en", "value": label}},
        "descriptions": {},
        "aliases": {},
        "claims": {"P17": [p17], "P571": [inception]},
        "sitelinks": {f"x{j}wiki": {"site": f"x{j}wiki", "title": label} for j in range(links)},
    }


def series(months: int, per_month: int, base: list[dict]) -> list[tuple[dt.date, list[dict]]]:
    """Each dump date and its items (the base, then every item created up to that date)."""
    ids = {e["id"] for e in base}
    countries = [
        st["mainsnak"]["datavalue"]["value"]["id"]
        for e in base
        for st in e.get("claims", {}).get("P17", [])
        if st["mainsnak"].get("datavalue") and st["mainsnak"]["datavalue"]["value"].get("id") in ids
    ]
    links = sorted(len(e.get("sitelinks", {})) for e in base)
    ends = month_ends(months)
    out, items, n = [(ends[0], list(base))], list(base), 0
    for a, b in zip(ends, ends[1:], strict=False):
        span = (b - a).days
        for _ in range(per_month):
            h = stable_hash("timeline-item", n)
            day = a + dt.timedelta(days=1 + h % span)  # in (a, b]
            country = countries[(h >> 8) % len(countries)]
            items.append(new_item(n, day, country, links[(h >> 24) % len(links)]))
            n += 1
        out.append((b, list(items)))
    return out


def write_dump(items: list[dict], path: Path) -> None:
    with bz2.open(path, "wt", encoding="utf-8") as f:
        f.write("[\n")
        f.write(",\n".join(json.dumps(e, ensure_ascii=False) for e in items))
        f.write("\n]\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("outdir", type=Path)
    ap.add_argument("--months", type=int, default=4)
    ap.add_argument("--per-month", type=int, default=40)
    args = ap.parse_args()
    args.outdir.mkdir(parents=True, exist_ok=True)
    rows = ["dump\tenabled\tpath\turl\tchecksum"]
    for day, items in series(args.months, args.per_month, read_items()):
        date = day.strftime("%Y%m%d")
        path = args.outdir / f"wikidata-{date}-timeline.json.bz2"
        write_dump(items, path)
        rows.append(f"{date}\ttrue\t{path}\t\t")
        print(f"{date}: {len(items)} items -> {path}")
    (args.outdir / "dumps.tsv").write_text("\n".join(rows) + "\n")


if __name__ == "__main__":
    main()
