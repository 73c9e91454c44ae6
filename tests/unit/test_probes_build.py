"""Suite building on the real demo dumps: prompts worked out by hand, counts, determinism."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from factprobe.io import write_frame
from factprobe.probes.build import DumpTables, build_suite
from factprobe.probes.templates import TemplateError

ROOT = Path(__file__).resolve().parents[2]
SETS = {
    "team": {"format": "yaml", "path": str(ROOT / "tests" / "data" / "templates")},
    "pararel": {
        "format": "pararel",
        "path": str(ROOT / "resources" / "templates" / "external" / "pararel" / "graphs_json"),
    },
}


def build(demo_tables, suite, changes=None):
    dump = suite["dump"]
    return build_suite(
        "test",
        suite,
        SETS,
        DumpTables(
            str(demo_tables[dump] / "claims.parquet"),
            str(demo_tables[dump] / "entities.parquet"),
            [str(demo_tables[d] / "labels.parquet") for d in sorted(demo_tables)],
            changes,
        ),
    )


KNOWLEDGE = {"kind": "knowledge", "dump": "20190201", "relations": ["P36", "P47"], "subject_aliases": 2}


@pytest.fixture(scope="module")
def knowledge(demo_tables):
    return build(demo_tables, KNOWLEDGE)


def test_portugal_capital_prompts(knowledge):
    facts, prompts, forms = knowledge
    fact = facts.set_index("fact_id").loc["Q45|P36|Q597"]
    assert fact.subject == "Q45" and fact.object == "Q597" and list(fact.objects) == ["Q597"]
    assert fact.dump == "20190201" and fact.popularity == 311
    mine = prompts[prompts.fact_id == "Q45|P36|Q597"]
    # Q45 en forms: Portugal | Portuguese Republic, PT, pt, 🇵🇹 -> only one alias is usable (>= 3 chars, a letter)
    assert sorted(mine.subject_form.unique()) == ["Portugal", "Portuguese Republic"]
    # P36.en.s3 "[Y] is the capital of [X]." is not object-final: skipped; 4 usable templates x 2 forms
    assert len(mine) == 8
    got = dict(zip(mine.template_id + "/" + mine.subject_form, mine.text, strict=True))
    assert got == {
        "P36.en.s1/Portugal": "The capital of Portugal is",
        "P36.en.s1/Portuguese Republic": "The capital of Portuguese Republic is",
        "P36.en.s2/Portugal": "Portugal has its seat of government in",
        "P36.en.s2/Portuguese Republic": "Portuguese Republic has its seat of government in",
        "P36.en.c1/Portugal": "Fill in the blank: ___ is the capital city of Portugal. Answer:",
        "P36.en.c1/Portuguese Republic": "Fill in the blank: ___ is the capital city of Portuguese Republic. Answer:",
        "P36.en.q1/Portugal": "Question: Which city is the capital of Portugal? Answer:",
        "P36.en.q1/Portuguese Republic": "Question: Which city is the capital of Portuguese Republic? Answer:",
    }
    row = mine[(mine.template_id == "P36.en.s1") & (mine.subject_form == "Portugal")].iloc[0]
    assert row.prompt_id == "Q45|P36|Q597|P36.en.s1|en|0|none"
    assert row.context == "" and row.shots == "none" and row.verbalization == "template" and row.lang == "en"
    assert row.style == "statement"
    # Λ(Lisbon): its label and every alias, label first
    lisbon = forms[(forms.entity == "Q597") & (forms.lang == "en")]
    assert lisbon.iloc[0].tolist() == ["Q597", "en", "Lisbon", "label"]
    assert {"Lisboa", "Capital of Portugal", "Lisbon, Portugal"} <= set(lisbon.form)
    assert (lisbon.source.iloc[1:] == "alias").all()


def test_prompt_count_is_facts_x_templates_x_forms(knowledge):
    facts, prompts, forms = knowledge
    usable = {"P36": 4, "P47": 2}  # object-final templates per relation in tests/data/templates/en.yaml
    en = forms[forms.lang == "en"]
    expected = 0
    for fact in facts.itertuples():
        entries = en[en.entity == fact.subject]
        label = entries[entries.source == "label"].form.iloc[0]
        aliases = [
            f
            for f in entries[entries.source == "alias"].form
            if len(f) >= 3 and any(c.isalpha() for c in f) and f.casefold() != label.casefold()
        ]
        n_forms = 1 + min(2, len(dict.fromkeys(a.casefold() for a in aliases)))
        expected += usable[fact.property] * n_forms
    assert len(prompts) == expected > 0
    assert prompts.prompt_id.is_unique
    assert not prompts.text.str.endswith(" ").any()
    assert not prompts.text.str.contains(r"\[X\]|\[Y\]").any()


def test_entity_forms_cover_every_labelled_entity(knowledge, demo_tables):
    _, _, forms = knowledge
    labels = pd.concat([pd.read_parquet(demo_tables[d] / "labels.parquet") for d in demo_tables])
    en_ids = {f"Q{i}" for i in labels[(labels.lang == "en")]["id"]}
    assert set(forms[forms.lang == "en"].entity) == en_ids
    assert list(forms.columns) == ["entity", "lang", "form", "source"]


def test_same_config_gives_identical_bytes(demo_tables, tmp_path, knowledge):
    again = build(demo_tables, KNOWLEDGE)
    for name, a, b in zip(("facts", "prompts", "forms"), knowledge, again, strict=True):
        write_frame(a, tmp_path / f"a_{name}.parquet")
        write_frame(b, tmp_path / f"b_{name}.parquet")
        assert (tmp_path / f"a_{name}.parquet").read_bytes() == (tmp_path / f"b_{name}.parquet").read_bytes()


def test_multilingual_templates_per_language(demo_tables):
    suite = {"kind": "multilingual", "dump": "20190201", "languages": ["en", "de"], "relations": ["P36"]}
    facts, prompts, forms = build(demo_tables, suite)
    de = prompts[(prompts.fact_id == "Q45|P36|Q597") & (prompts.lang == "de")]
    # P36.de.s2 "[Y] ist die Hauptstadt von [X]." is not object-final
    assert de.text.tolist() == ["Die Hauptstadt von Portugal ist"]
    assert set(forms.lang) == {"en", "de"}
    assert len(prompts[prompts.lang == "en"]) == 4 * len(facts)  # 4 usable en templates, label only
    assert len(prompts[prompts.lang == "de"]) == len(facts)


def test_plausibility_keeps_new_facts_after_cutoff(demo_tables, tmp_path):
    changes = pd.DataFrame(
        {
            "subject": [45, 31, 1201],
            "property": [36, 36, 36],
            "object": [597, 239, 1724],
            "status": ["new", "new", "static"],
            "rule": ["", "", ""],
            "is_replace": [False, False, False],
            "start": [20170301.0, float("nan"), float("nan")],
            "end": [float("nan")] * 3,
            "point_in_time": [float("nan")] * 3,
        }
    )
    path = tmp_path / "changes.parquet"
    changes.to_parquet(path)
    suite = {
        "kind": "plausibility",
        "dump": "20190201",
        "diff_old": "20141201",
        "cutoff": "20160101",
        "relations": ["P36"],
        "templates": {"styles": ["statement"]},
    }
    facts, prompts, _ = build(demo_tables, suite, str(path))
    # Q31 -> Q239 (Brussels) is new but unlabelled; Q1201 -> Q1724 is static.
    assert facts.fact_id.tolist() == ["Q45|P36|Q597"]
    # Each fact carries its statement's date and diff status, so metrics need not read the diff.
    assert facts[["date", "status"]].values.tolist() == [[20170301, "new"]]
    assert prompts.text.tolist() == ["The capital of Portugal is", "Portugal has its seat of government in"]
    # Each template's rest after [Y] (both end in "[Y]."), scored after
    # the object in sentence mode.
    assert prompts.ending.tolist() == [".", "."]


def test_no_usable_template_is_a_clear_error(demo_tables):
    suite = {"kind": "knowledge", "dump": "20190201", "relations": ["P19"]}
    with pytest.raises(TemplateError, match="no relation of \\['P19'\\] has a usable template"):
        build(demo_tables, suite)


def test_pararel_set_mixes_with_team_templates(demo_tables):
    suite = {
        "kind": "multiprompt",
        "dump": "20190201",
        "relations": ["P36"],
        "templates": {"sets": ["team", "pararel"], "styles": ["statement"], "max_per_relation": 3},
    }
    _, prompts, _ = build(demo_tables, suite)
    mine = prompts[prompts.fact_id == "Q45|P36|Q597"]
    # team: s1, s2 (s3 not final); ParaRel P36 lines 1-3: line 3 "[Y] is the capital of [X]." not final
    assert mine.template_id.tolist() == ["P36.en.s1", "P36.en.s2", "P36.en.pararel1", "P36.en.pararel2"]
    assert mine.text.tolist()[2:] == ["The capital of Portugal is", "The capital city of Portugal is"]


def test_relation_at_a_time_candidates_are_the_whole_suites(demo_tables, tmp_path):
    """build_suite reads one relation at a time: the candidates of each relation,
    put together, are candidate_facts over every relation at once from whole pandas tables."""
    from factprobe import contracts, scan
    from factprobe.probes.fact_candidates import SelectionPaths, relation_candidates
    from factprobe.probes.select import candidate_facts, item_sitelinks, labelled_entities, truthy_claims

    dump, rels = "20190201", ["P17", "P36", "P47", "P530"]
    claims_path = demo_tables[dump] / "claims.parquet"
    entities_path = demo_tables[dump] / "entities.parquet"
    forms_path = tmp_path / "forms.parquet"
    scan.write_entity_forms(
        [str(demo_tables[d] / "labels.parquet") for d in sorted(demo_tables)], ["en"], forms_path
    )
    con = scan.connect()
    got = pd.concat(
        [
            relation_candidates(
                "t",
                r,
                dump,
                SelectionPaths(str(claims_path), str(entities_path), str(forms_path)),
                ["en"],
                7,
                con,
            )
            for r in rels
        ],
        ignore_index=True,
    )
    claims = contracts.read("claims", claims_path)
    truthy = truthy_claims(claims[claims["property"].isin([int(r[1:]) for r in rels])], int(dump))
    forms = contracts.read("entity_forms", forms_path)
    want = candidate_facts(
        truthy.astype("int64"),
        rels,
        labelled_entities(forms, ["en"]),
        item_sitelinks(contracts.read("entities", entities_path)),
        7,
    )
    assert len(want) > 50 and set(want["property"]) == set(rels)
    key = ["fact_id"]
    pd.testing.assert_frame_equal(
        got.sort_values(key).reset_index(drop=True), want.sort_values(key).reset_index(drop=True)
    )


def test_candidate_parts_filter_by_the_diff_and_s_prime_as_the_whole_relation(demo_tables, tmp_path):
    """The plausibility filter (``allowed``, kept as a hash index) and S′'s
    temporal pairs are built once per relation and applied to each part; in parts of ~30
    statements the candidates are those of candidate_facts and with_temporal_distractors over
    the whole relation from pandas tables."""
    from factprobe import contracts, scan
    from factprobe.diff.temporal import with_temporal_distractors
    from factprobe.probes.fact_candidates import SelectionPaths, relation_candidate_parts
    from factprobe.probes.select import candidate_facts, item_sitelinks, labelled_entities, truthy_claims

    dump, rel = "20190201", "P47"
    claims_path = str(demo_tables[dump] / "claims.parquet")
    entities_path = str(demo_tables[dump] / "entities.parquet")
    forms_path = tmp_path / "forms.parquet"
    scan.write_entity_forms(
        [str(demo_tables[d] / "labels.parquet") for d in sorted(demo_tables)], ["en"], forms_path
    )
    claims = contracts.read("claims", claims_path)
    truthy = truthy_claims(claims[claims["property"] == 47], int(dump)).astype("int64")
    labelled = labelled_entities(contracts.read("entity_forms", forms_path), ["en"])
    links = item_sitelinks(contracts.read("entities", entities_path))
    every = candidate_facts(truthy, [rel], labelled, links, 7)
    # Three facts in four are new in the diff; each (s, r) has a past object: a counted one
    # (start < end), a point (start == end) or one known only from an earlier dump (neither counts).
    allowed = pd.DataFrame({"fact_id": every["fact_id"][np.arange(len(every)) % 4 > 0]})
    subjects = contracts.id_ints(every["subject"])
    kinds = np.arange(len(subjects)) % 3
    temporal = pd.DataFrame(
        {
            "subject": subjects,
            "property": np.int32(47),
            "object": np.int64(1),
            "status": "past",
            "start": pd.array(np.where(kinds == 2, None, 20000101), dtype="Int32"),
            "end": pd.array(
                np.where(kinds == 0, 20100101, np.where(kinds == 1, 20000101, None)), dtype="Int32"
            ),
            "point_in_time": pd.array([None] * len(subjects), dtype="Int32"),
            "source": np.where(kinds == 2, "earlier_dump", "qualifier"),
            "truthy": False,
            "last_seen": dump,
        }
    )
    contracts.write("temporal", temporal, tmp_path / "temporal.parquet")
    paths = SelectionPaths(
        claims_path, entities_path, str(forms_path), temporal=str(tmp_path / "temporal.parquet")
    )
    args = ("t", rel, dump, paths, ["en"], 7, scan.connect())
    parts = list(relation_candidate_parts(*args, allowed, part_rows=30))
    got = pd.concat([p.candidates for p in parts], ignore_index=True)
    want = with_temporal_distractors(
        candidate_facts(truthy, [rel], labelled, links, 7, set(allowed["fact_id"])), temporal
    )
    assert len(parts) > 5 and 3 <= len(want) < len(every) // 2
    pd.testing.assert_frame_equal(got, want)


def _temporal_past(demo_tables, dump, path):
    """A temporal view giving every third truthy (subject, relation) of the dump a counted past
    object (start < end), so ``temporal_only`` keeps about a third of the candidates."""
    from factprobe import contracts

    claims = contracts.read("claims", demo_tables[dump] / "claims.parquet")
    pairs = claims[["subject", "property"]].drop_duplicates().iloc[::3]
    n = len(pairs)
    temporal = pd.DataFrame(
        {
            "subject": pairs["subject"].to_numpy(np.int64),
            "property": pairs["property"].to_numpy(np.int32),
            "object": np.int64(1),
            "status": "past",
            "start": pd.array([20000101] * n, dtype="Int32"),
            "end": pd.array([20100101] * n, dtype="Int32"),
            "point_in_time": pd.array([None] * n, dtype="Int32"),
            "source": "qualifier",
            "truthy": False,
            "last_seen": dump,
        }
    )
    contracts.write("temporal", temporal, path)
    return str(path)


def test_parts_in_forked_processes_give_the_one_process_suite(demo_tables, tmp_path, monkeypatch):
    """A suite's statements stream in parts, each part's candidates are selected in
    ``threads`` forked processes and taken back in order. With parts of ~20 statements (many
    parts, several holding the end of one relation and the start of the next, relations listed
    out of id order) and 3 processes, every sampler and filter gives the bytes of one process
    with the whole relation in one part: relation strata, popularity bins with S′ (temporal
    pairs), the plausibility diff filter and a demonstration pool."""
    import factprobe.probes.fact_candidates as candidates_module

    dump = "20190201"
    claims, entities = (str(demo_tables[dump] / f"{t}.parquet") for t in ("claims", "entities"))
    labels = [str(demo_tables[d] / "labels.parquet") for d in sorted(demo_tables)]
    temporal = _temporal_past(demo_tables, dump, tmp_path / "temporal.parquet")
    changes = tmp_path / "changes.parquet"
    every = build(demo_tables, {"kind": "knowledge", "dump": dump, "relations": ["P47", "P17", "P36"]})[0]
    new = every.iloc[::2]
    pd.DataFrame(
        {
            "subject": new["subject"].str[1:].astype("int64"),
            "property": new["property"].str[1:].astype("int64"),
            "object": new["object"].str[1:].astype("int64"),
            "status": "new",
            "rule": "",
            "is_replace": False,
            "start": float("nan"),
            "end": float("nan"),
            "point_in_time": float("nan"),
        }
    ).to_parquet(changes)
    suites = {
        "strata": {"kind": "knowledge", "relations": ["P47", "P17", "P36"], "n_facts": 5, "strata": 2},
        "bins": {
            "kind": "knowledge",
            "relations": ["P47", "P36", "P17"],
            "sampler": "popularity_bins",
            "n_facts": 12,
            "temporal_only": True,
        },
        "plausibility": {
            "kind": "plausibility",
            "diff_old": "20141201",
            "cutoff": "20160101",
            "relations": ["P47", "P17", "P36"],
            "n_facts": 4,
        },
        "demos": {
            "kind": "multiprompt",
            "relations": ["P47", "P36"],
            "n_facts": 3,
            "few_shot": {"settings": ["zero-shot", "2-template"]},
        },
    }

    def run(name, threads):
        suite = {"dump": dump, "templates": {"styles": ["statement"]}, **suites[name]}
        tables = DumpTables(claims, entities, labels, str(changes), temporal)
        facts, prompts, forms = build_suite(name, suite, SETS, tables, threads=threads)
        out = tmp_path / f"{name}-{threads}-{candidates_module.PART_ROWS}"
        out.mkdir()
        for table, frame in (("facts", facts), ("prompts", prompts), ("forms", forms)):
            write_frame(frame, out / f"{table}.parquet")
        return out, len(facts)

    for name in suites:
        one, n_facts = run(name, 1)
        assert n_facts >= 3, name
        monkeypatch.setattr(candidates_module, "PART_ROWS", 20)
        forked, _ = run(name, 3)
        monkeypatch.setattr(candidates_module, "PART_ROWS", 250_000)
        for table in ("facts", "prompts", "forms"):
            assert (forked / f"{table}.parquet").read_bytes() == (one / f"{table}.parquet").read_bytes(), (
                name,
                table,
            )
