"""The build_probes job holds what its suite uses, not its relations' candidates.

* the demonstration pool on disk (probes/demopool.py) loads only the positions draws reach and
  gives the demonstrations of a naive draw over the whole pool, written here from the fewshot.py
  docstring (both branches: a pool sorted whole and, above SORT_LIMIT, hashed probes);
* ``RelationStrata`` fed a relation in parts draws ``select.sample_facts``' rows;
* ``scan.scan_truthy_parts`` streams ``scan.scan_valid`` with labels and sitelinks, never
  splitting a (property, subject).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from factprobe import contracts, scan
from factprobe.hashing import stable_hash
from factprobe.probes import demopool, fewshot
from factprobe.probes.templates import Template

T1 = Template("P1.en.s1", "P1", "en", "statement", "[X] likes [Y].")
Q1 = Template("P1.en.q1", "P1", "en", "question", "Whom does [X] like? [Y].")
T2 = Template("P2.en.s1", "P2", "en", "statement", "[X] has [Y].")
T3 = Template("P3.en.s1", "P3", "en", "statement", "[X] sees [Y].")
TEMPLATES = {("en", "P1", "statement"): [T1], ("en", "P1", "question"): [Q1], ("en", "P2", "statement"): [T2]}
# P3 has no English template: ``random`` skips its facts.
TEMPLATES[("de", "P3", "statement")] = [Template("P3.de.s1", "P3", "de", "statement", "[X] sieht [Y].")]


def pool_table() -> pd.DataFrame:
    """Three relations of 9 / 150 / 30 facts; subject Q7 has a fact in each relation."""
    rows = []
    for prop, n in (("P1", 150), ("P2", 9), ("P3", 30)):
        for i in range(n):
            s, o = f"Q{(i * 7) % 200}", f"Q{1000 + (i * 13 + len(prop)) % 400}"
            rows.append((f"{s}|{prop}|{o}", s, prop, o))
    return pd.DataFrame(rows, columns=["fact_id", "subject", "property", "object"]).drop_duplicates("fact_id")


def labels_table(facts: pd.DataFrame) -> pd.DataFrame:
    """English labels of most entities; every other object has only an alias (no label first),
    so draws skip facts and need more probes than 2k + 4."""
    entities = sorted(set(facts["subject"]) | set(facts["object"]), key=lambda e: int(e[1:]))
    rows = []
    for e in entities:
        if int(e[1:]) >= 1000 and int(e[1:]) % 2 == 0:
            rows.append((e, "en", f"alias {e}", "alias"))
        else:
            rows.append((e, "en", f"name {e}", "label"))
    return pd.DataFrame(rows, columns=["entity", "lang", "form", "source"])


def naive_draw(
    facts, labels, setting, k, target, subject, relation, lang, key, limit
) -> list[tuple[str, str]]:
    """The draw of fewshot.py's docstring over the whole pool, as (fact_id, text)."""
    from factprobe.probes.layouts import demo_text

    ordered = facts.sort_values("fact_id")
    pool = ordered if setting == "random" else ordered[ordered["property"] == relation]
    pool = list(pool.itertuples(index=False))
    hkey = ("shot", *key)
    if len(pool) <= limit:
        sequence = sorted(pool, key=lambda r: stable_hash(*hkey, r.fact_id))
    else:
        sequence = [pool[stable_hash(*hkey, n) % len(pool)] for n in range(64 * limit)]
    by_relation = {}
    for (lg, rel, _), options in sorted(TEMPLATES.items()):
        by_relation.setdefault((lg, rel), []).extend(options)
    out, seen = [], set()
    for row in sequence:
        if len(out) == k:
            break
        if row.fact_id in seen:
            continue
        seen.add(row.fact_id)
        if row.subject == subject and row.property == relation:
            continue
        s_label, o_label = labels.get((row.subject, lang)), labels.get((row.object, lang))
        if s_label is None or o_label is None:
            continue
        options = sorted(by_relation.get((lang, row.property), []), key=lambda t: t.id)
        if setting == "template":
            template = target
        elif not options:
            continue
        else:
            template = options[stable_hash("shot-template", *key, row.fact_id) % len(options)]
        out.append((row.fact_id, demo_text(template, s_label, o_label, "cloze", "[MASK]")))
    return out


@pytest.mark.parametrize("limit", [64, 16])
def test_the_pool_on_disk_draws_the_whole_pools_demonstrations(tmp_path, monkeypatch, limit):
    monkeypatch.setattr(fewshot, "SORT_LIMIT", limit)
    facts = pool_table()
    forms = labels_table(facts)
    forms_path = tmp_path / "entity_forms.parquet"
    contracts.write("entity_forms", forms, forms_path)
    labels = {(e, lg): f for e, lg, f, src in forms.itertuples(index=False) if src == "label"}
    requests = []
    for target in facts.iloc[::5].itertuples(index=False):
        template = T2 if target.property == "P2" else T1
        for setting, k in (("random", 3), ("relation", 2), ("template", 4), ("relation", 60)):
            key = ("seed", target.fact_id, template.id, "en", f"{k}-{setting}")
            requests.append((setting, k, template, target.subject, target.property, "en", key))
    con = scan.connect()
    calls = []
    with demopool.SpilledPool(con) as spilled:
        for _, part in facts.groupby("property", sort=False):  # parts in any order
            spilled.add(part.sample(frac=1, random_state=1))
        rows_at = spilled.rows_at
        monkeypatch.setattr(spilled, "rows_at", lambda wanted: calls.append(len(wanted)) or rows_at(wanted))
        fetched = demopool.fill(spilled, requests, TEMPLATES, str(forms_path), con)
    whole = fewshot.DemoPool(facts, labels, TEMPLATES)
    for request in requests:
        want = naive_draw(facts, labels, *request, limit)
        assert [(d.fact_id, d.text) for d in fetched.draw(*request)] == want
        assert [(d.fact_id, d.text) for d in whole.draw(*request)] == want
    assert any(len(naive_draw(facts, labels, *r, limit)) == r[1] for r in requests)
    assert len(calls) > 1  # some draws needed a second round of probes
    if limit == 16:
        # Above the limit only probed positions are loaded: less than the pools hold.
        assert len(fetched.loaded) < 2 * len(facts)
        assert fetched.size(None) == len(facts) and fetched.size("P2") == 9


def test_relation_strata_in_parts_draws_sample_facts_rows(tmp_path):
    from factprobe.probes.sample import RelationStrata
    from factprobe.probes.select import sample_facts

    rng = np.random.default_rng(3)
    frames = []
    for prop, n in (("P1", 500), ("P2", 37)):
        subjects = np.sort(rng.choice(5000, n, replace=False))
        frames.append(
            pd.DataFrame(
                {
                    "fact_id": [f"Q{s}|{prop}|Q{s + 1}" for s in subjects],
                    "subject": [f"Q{s}" for s in subjects],
                    "property": prop,
                    "object": [f"Q{s + 1}" for s in subjects],
                    "objects": [[f"Q{s + 1}"] for s in subjects],
                    "popularity": rng.integers(0, 6, n),  # many ties: fact_id breaks them
                }
            )
        )
    for n_facts, strata in ((100, 3), (10, 4), (None, 2)):
        sampler = RelationStrata(n_facts, strata, "s", scan.connect())
        for frame in frames:
            for cut in np.array_split(np.arange(len(frame)), 4):
                sampler.add(frame.iloc[cut].reset_index(drop=True))
        got = pd.concat(sampler.finish(), ignore_index=True).sort_values("fact_id").reset_index(drop=True)
        want = pd.concat([sample_facts(f, n_facts, strata, "s") for f in frames]).sort_values("fact_id")
        want = want.reset_index(drop=True)
        assert got.drop(columns="objects").equals(want.drop(columns="objects"))
        assert [list(o) for o in got["objects"]] == list(want["objects"])


def test_truthy_parts_stream_scan_valid_with_labels_and_sitelinks(tmp_path):
    """``scan.scan_truthy_parts`` = ``scan_valid`` (truthy) in order, never splitting a
    (property, subject), each row flagged by ``labelled_ids`` and given ``sitelinks_of``."""
    rng = np.random.default_rng(5)
    n = 3000
    claims = pd.DataFrame(
        {
            "subject": rng.integers(1, 400, n),
            "property": rng.choice([31, 17], n),
            "object": rng.integers(1, 50, n),
            "rank": rng.choice([0, 1, 1, 1, 2], n).astype("int8"),
            "start": pd.array([None] * n, dtype="Int32"),
            "end": pd.array([None] * n, dtype="Int32"),
            "point_in_time": pd.array([None] * n, dtype="Int32"),
        }
    )
    claims.to_parquet(tmp_path / "claims.parquet", index=False)
    # Labels: English for ids not divisible by 3, German for odd ids (an alias does not count).
    forms = [(f"Q{i}", "en", f"e{i}", "label") for i in range(1, 400) if i % 3]
    forms += [(f"Q{i}", "de", f"d{i}", "label" if i % 2 else "alias") for i in range(1, 400)]
    contracts.write(
        "entity_forms",
        pd.DataFrame(forms, columns=["entity", "lang", "form", "source"]),
        tmp_path / "f.parquet",
    )
    ids = np.arange(1, 400, 2)  # items with sitelinks: odd ids; id 5 twice (its first row counts)
    entities = pd.DataFrame(
        {
            "id": np.concatenate([ids, [5]]),
            "kind": "item",
            "sitelinks": np.concatenate([ids % 17, [99]]).astype(np.int32),
            "modified": "",
            "created": 0,
        }
    )
    contracts.write("entities", entities, tmp_path / "e.parquet")
    con = scan.connect()
    paths = [str(tmp_path / name) for name in ("claims.parquet", "f.parquet", "e.parquet")]
    whole = scan.scan_valid(paths[0], 20200101, "truthy", [31, 17], None, con)
    whole = whole.sort_values(["property", "subject", "object"]).reset_index(drop=True)
    args = (paths[0], 20200101, [31, 17], paths[1], ["en", "de"], paths[2], con, 100)
    parts = list(scan.scan_truthy_parts(*args))
    assert len(parts) > 5
    got = pd.concat(parts, ignore_index=True)
    assert got[["subject", "property", "object"]].equals(whole)
    labelled = set(scan.labelled_ids(paths[1], ["en", "de"], range(1, 400), con))
    assert labelled == {i for i in range(1, 400) if i % 3 and i % 2}
    assert got["s_labelled"].tolist() == [s in labelled for s in whole["subject"]]
    assert got["o_labelled"].tolist() == [o in labelled for o in whole["object"]]
    links = scan.sitelinks_of(paths[2], range(1, 400), con)
    assert links[5] == 5 and 4 not in links.index
    want = [links.get(s) for s in whole["subject"]]
    assert [None if pd.isna(v) else int(v) for v in got["sitelinks"]] == want
    # The objects' sitelinks come from the same query (popularity_bins reads them per part).
    want = [links.get(o) for o in whole["object"]]
    assert [None if pd.isna(v) else int(v) for v in got["o_sitelinks"]] == want
    assert got["o_sitelinks"].notna().any() and got["o_sitelinks"].isna().any()
    keys = [set(zip(p["property"], p["subject"], strict=True)) for p in parts]
    assert all(not (a & b) for i, a in enumerate(keys) for b in keys[i + 1 :])
    assert all(80 <= len(p) <= 120 for p in parts[:-1])  # about part_rows: cut at a subject's end
