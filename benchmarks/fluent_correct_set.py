"""The project's Fluent-mLAMA correct set per (fact, language) against the authors' own.

The authors' per-fact results (``stats/stats.zip``, ``stats_wide/stats_wide.zip`` of
ZurichNLP/Fluent-mLAMA) hold, per row, the rank of every correct completion: its keys are the
correct set their loader used. This script imports the release (Table 1's languages and
relations), keeps, as the metrics stage does (:func:`factprobe.metrics.common.correct_form_scores`),
the object forms that count as correct for each row, and counts the rows whose set differs from
the authors' (their string ``ERROR``, an unsplittable ChatGPT sentence, left out).

    PYTHONPATH=workflow/scripts .venv/bin/python benchmarks/fluent_correct_set.py [--release DIR]
"""

from __future__ import annotations

import argparse
import ast
import csv
import io
import re
import zipfile
from pathlib import Path

import pandas as pd
from factprobe.metrics.common import correct_entities, correct_form_scores, own_form_table
from factprobe.probes.fluent import import_fluent_mlama

LANGS = ["ru", "cs", "uk", "hr"]
RELATIONS = "P101 P103 P108 P127 P1376 P159 P19 P20 P36 P364 P407 P449 P463 P495 P740".split()


def authors_sets(stats_zip: Path) -> dict[tuple[str, str], set[str]]:
    """``{(fact_id, lang): correct strings}`` of the authors' results (``template_true_ranks`` keys)."""
    out = {}
    with zipfile.ZipFile(stats_zip) as archive:
        for name in archive.namelist():
            match = re.search(r"(?:^|/)([a-z]+)_(P\d+)_template_gt_chatgpt\.tsv$", name)
            if (
                not match
                or "__MACOSX" in name
                or match.group(1) not in LANGS
                or match.group(2) not in RELATIONS
            ):
                continue
            lang, rel = match.groups()
            for rec in csv.DictReader(io.StringIO(archive.read(name).decode("utf-8")), delimiter="\t"):
                keys = ast.literal_eval(rec["template_true_ranks"]).keys()
                out[(f"{rec['sub_uri']}|{rel}|{rec['obj_uri']}", lang)] = {
                    k.strip() for k in keys if k != "ERROR"
                }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--release", type=Path, default=Path("../shared/data/fluent-mlama"))
    args = parser.parse_args()
    facts, _, forms = import_fluent_mlama(args.release / "fixed_data" / "fixed_data.zip", LANGS, RELATIONS)
    objects = dict(zip(facts["fact_id"], facts["object"], strict=True))
    by_object = forms.groupby(["entity", "lang"])["form"].agg(list).to_dict()
    correct = correct_entities(facts)
    for correct_set, stats in (("table1", "stats/stats.zip"), ("wide", "stats_wide/stats_wide.zip")):
        theirs = {k: v for k, v in authors_sets(args.release / stats).items() if k[0] in objects}
        rows = [
            (f, objects[f], lang, form)
            for f, lang in theirs
            for form in by_object.get((objects[f], lang), [])
        ]
        scores = pd.DataFrame(rows, columns=["fact_id", "entity", "lang", "form"])
        for label, own in (("pooled", None), ("per row", own_form_table(facts))):
            kept = correct_form_scores(scores, correct, forms, correct_set, own)
            ours = kept.groupby(["fact_id", "lang"])["form"].agg(set).to_dict()
            differ = sum(ours.get(k, set()) != v for k, v in theirs.items())
            larger = sum(ours.get(k, set()) > v for k, v in theirs.items())
            print(
                f"{correct_set:6s} {label:8s} rows {len(theirs)}: differ {differ} ({differ / len(theirs):.1%}), "
                f"ours a strict superset {larger}"
            )


if __name__ == "__main__":
    main()
