"""Out-of-core Ω loading answers as the whole-table pandas version.

Hand-made claims/types/entity_forms tables in Parquet: the DuckDB scans of
``factprobe.scan`` must return exactly the rows of the in-memory functions
(``omega.load_types``, ``omega.valid_objects``, a whole read) restricted to what Ω asks about, and
Ω built from them must give the same distractors, for every fact, as Ω built from the whole
tables (``omega.suite_omega``, kept as the reference), with both validity rank modes and with the
subject-side co-occurrence that needs other subjects' statements.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from factprobe import contracts, scan
from factprobe.distractors.cooccur import Cooccurrence
from factprobe.distractors.omega import Omega, load_types, suite_omega, valid_objects
from factprobe.distractors.random import random_distractors
from factprobe.distractors.retrieval_inputs import load_suite_omega
from factprobe.hashing import stable_hash

NA = None
# subject, property, object, rank, start, end, point_in_time
CLAIMS = [
    (1, 36, 10, 1, NA, NA, NA),  # current capital
    (1, 36, 11, 1, 19000000, 19500000, NA),  # ended: not valid in 2014
    (1, 36, 12, 2, NA, NA, NA),  # preferred: the only truthy one of (1, 36)
    (1, 36, 13, 0, NA, NA, NA),  # deprecated
    (2, 36, 14, 1, NA, NA, NA),
    (2, 36, 15, 1, NA, NA, 20200101),  # point in time after the dump: not yet valid
    (3, 36, 16, 1, NA, NA, NA),
    (4, 36, 10, 1, NA, NA, NA),  # another subject with capital 10 (co-occurrence subject side)
    (5, 36, 11, 1, NA, NA, NA),
    (1, 47, 2, 1, NA, NA, NA),  # a relation no fact asks about
    (2, 47, 3, 1, NA, NA, NA),
    (6, 31, 100, 1, NA, NA, NA),
]
# id, type: two dumps; the newer one wins per entity (entity 12 is retyped, 18 only in the old one)
TYPES_OLD = [(10, 500), (11, 500), (12, 500), (13, 500), (14, 500), (15, 500), (16, 500), (18, 500), (1, 600)]
TYPES_NEW = [(10, 500), (11, 500), (12, 501), (14, 500), (16, 500), (17, 500), (1, 600), (2, 600), (3, 600)]
TYPES_NEW += [(4, 600), (5, 600), (20, 700), (21, 700), (22, 701), (23, 702)]
FORMS = [
    ("Q10", "en", "Alpha", "label"),
    ("Q11", "en", "Beta", "label"),
    ("Q11", "en", "beta", "alias"),  # same key case-insensitively: kept once, first first
    ("Q12", "en", "Gamma", "label"),
    ("Q13", "en", "Delta", "label"),
    ("Q14", "en", "Alphaa", "label"),  # fuzzy-equal to Alpha (ratio >= 90)
    ("Q15", "en", "Epsilon", "label"),
    ("Q16", "en", "Zeta", "label"),
    ("Q17", "en", "Eta", "label"),
    ("Q18", "en", "Theta", "label"),
    ("Q1", "en", "Land One", "label"),
    ("Q2", "en", "Land Two", "label"),
    ("Q3", "en", "Land Three", "label"),
    ("Q4", "en", "Land Four", "label"),
    ("Q5", "en", "Country Five", "label"),
    ("Q20", "en", "Unrelated", "label"),
    ("Q22", "de", "Fremd", "label"),
]
FACTS = [
    ("f1", "Q1", "P36", "Q10", ["Q12"]),
    ("f2", "Q2", "P36", "Q14", None),
    ("f3", "Q3", "P36", "Q16", None),
]


@pytest.fixture(scope="module")
def tables(tmp_path_factory):
    root = tmp_path_factory.mktemp("scan")
    claims = pd.DataFrame(
        CLAIMS, columns=["subject", "property", "object", "rank", "start", "end", "point_in_time"]
    )
    for col in ("start", "end", "point_in_time"):
        claims[col] = claims[col].astype("Int64")
    claims["rank"] = claims["rank"].astype("int8")
    paths = {"claims": root / "claims.parquet", "types": []}
    contracts.write("claims", claims, paths["claims"])
    for dump, rows in (("20141201", TYPES_OLD), ("20190201", TYPES_NEW)):
        (root / dump).mkdir()
        t = pd.DataFrame(rows, columns=["id", "type"]).assign(via="P31")
        contracts.write("types", t, root / dump / "types.parquet")
        paths["types"].append(str(root / dump / "types.parquet"))
    contracts.write(
        "entity_forms", pd.DataFrame(FORMS, columns=contracts.columns("entity_forms")), root / "ef.parquet"
    )
    paths["entity_forms"] = root / "ef.parquet"
    facts = pd.DataFrame(FACTS, columns=["fact_id", "subject", "property", "object", "objects"])
    for col, value in (("popularity", 1), ("stratum", 0), ("split", "test"), ("dump", "20141201")):
        facts[col] = value
    contracts.write("facts", facts, root / "facts.parquet")
    paths["facts"] = root / "facts.parquet"
    return paths


def test_scan_types_is_load_types_restricted_to_anchors_and_their_types(tables):
    whole = load_types(tables["types"])
    anchors = np.array([1, 10], dtype=np.int64)
    got = scan.scan_types(tables["types"], anchors)
    # Anchor types: 1 -> {600}, 10 -> {500}; entity 12 is retyped 501 by the newer dump and
    # 18 keeps its old type 500 (no newer typing): both as in load_types.
    want = whole[whole["id"].isin(anchors) | whole["type"].isin([500, 600])].reset_index(drop=True)
    pd.testing.assert_frame_equal(got, want)
    assert 12 not in set(got["id"]) and 18 in set(got["id"]) and 20 not in set(got["id"])


@pytest.mark.parametrize("ranks", ["non_deprecated", "truthy"])
def test_scan_valid_is_valid_objects_restricted(tables, ranks):
    claims = contracts.read("claims", tables["claims"])
    whole = valid_objects(claims, 20141201, ranks)
    key = ["subject", "property", "object"]
    got = scan.scan_valid(tables["claims"], 20141201, ranks, [36]).sort_values(key).reset_index(drop=True)
    want = whole[whole["property"] == 36].sort_values(key).reset_index(drop=True)
    pd.testing.assert_frame_equal(got, want)
    by_hand = {(1, 36, 10), (1, 36, 12), (2, 36, 14), (3, 36, 16), (4, 36, 10), (5, 36, 11)}
    if ranks == "truthy":
        by_hand -= {(1, 36, 10)}
    assert set(map(tuple, got[key].to_numpy().tolist())) == by_hand
    some = scan.scan_valid(tables["claims"], 20141201, ranks, [36], subjects=[2])
    assert set(map(tuple, some[key].to_numpy().tolist())) == {(2, 36, 14)}


def test_scan_forms_keeps_file_order_of_the_wanted_entities(tables):
    whole = contracts.read("entity_forms", tables["entity_forms"])
    got = scan.scan_forms(tables["entity_forms"], [11, 2, 22])
    want = whole[whole["entity"].isin(["Q11", "Q2", "Q22"])].reset_index(drop=True)
    pd.testing.assert_frame_equal(got, want)
    assert got["form"].tolist() == ["Beta", "beta", "Land Two", "Fremd"]


def test_scan_forms_table_is_scan_forms_sorted_by_entity_in_file_order(tables):
    ids = [11, 2, 22, 1, 14]
    got = scan.scan_forms_table(tables["entity_forms"], ids)
    assert got.schema.field("lang").type == pa.dictionary(pa.int32(), pa.string())
    frame = scan.scan_forms(tables["entity_forms"], ids)
    want = (
        frame.assign(_id=contracts.id_ints(frame["entity"]))
        .sort_values("_id", kind="stable")
        .drop(columns="_id")
        .reset_index(drop=True)
    )
    pd.testing.assert_frame_equal(scan.forms_frame(got), want)
    assert got["id"].to_pylist() == sorted(got["id"].to_pylist())
    # Q2 before Q11 (by id, not by string), and Q11's two forms in file order.
    assert scan.forms_frame(got)["form"].tolist()[:1] == want["form"].tolist()[:1]


@pytest.mark.parametrize("ranks", ["non_deprecated", "truthy"])
@pytest.mark.parametrize("strategies", [["random"], ["cooccur"]])
def test_out_of_core_omega_decides_as_the_whole_table_omega(tables, ranks, strategies):
    settings = {
        "dump": "20141201",
        "valid_ranks": ranks,
        "form_threshold": 90,
        "strategies": strategies,
    }
    inputs = SimpleNamespace(
        facts=tables["facts"],
        entity_forms=tables["entity_forms"],
        claims=tables["claims"],
        types=tables["types"],
    )
    facts, forms, statements, new = load_suite_omega(inputs, settings)
    claims = contracts.read("claims", tables["claims"])
    whole_forms = contracts.read("entity_forms", tables["entity_forms"])
    old = suite_omega(facts, whole_forms, claims, tables["types"], "20141201", ranks, 90)
    everyone = list(range(0, 30))
    for fid, s, r, o in zip(
        facts["fact_id"], facts["subject"], facts["property"], facts["object"], strict=True
    ):
        s, r, o = int(s[1:]), int(r[1:]), int(o[1:])
        assert new.filter(s, r, o, everyone) == old.filter(s, r, o, everyone)
        assert random_distractors(new, fid, s, r, o, 5) == random_distractors(old, fid, s, r, o, 5)
        if strategies != ["cooccur"]:
            # Other subjects' statements are read only when co-occurrence fills the subject slot.
            continue
        assert new.filter_subjects(s, r, o, everyone) == old.filter_subjects(s, r, o, everyone)
        for side in ("object", "subject"):
            assert Cooccurrence(statements).alternatives(new, fid, s, r, o, 5, side) == Cooccurrence(
                claims[claims["rank"] >= 1]
            ).alternatives(old, fid, s, r, o, 5, side)
    # By hand for f1 = (Q1, P36, Q10): type 500 members, minus valid 10/12 (12 also retyped),
    # minus 14 (Alphaa ~ Alpha), minus 13? no: deprecated is not valid, 13 has a form -> kept.
    assert new.filter(1, 36, 10, everyone) == [11, 13, 15, 16, 17, 18]
    # Forms read: anchors and entities of the anchors' types only (Q20/Q22 are of other types).
    assert set(forms["id"].to_pylist()) == {1, 2, 3, 4, 5, 10, 11, 13, 14, 15, 16, 17, 18}


def test_exact_sem_inside_types_equals_the_search_against_every_entity(tmp_path):
    """Sem with ``search: exact`` ranks only the entities sharing a type with o;
    the widened global search (the old path, still used for HNSW) must give the same lists."""
    from factprobe.distractors.omega import Omega
    from factprobe.distractors.semantic.index import build_index, load_index
    from factprobe.distractors.semantic.search import sem_distractors

    rng = np.random.default_rng(7)
    n_ent = 400
    subj = rng.integers(1, 200, 1500)
    prop = rng.choice([17, 19, 27, 36, 47], 1500)
    obj = rng.choice(np.arange(1, 60), 1500, p=np.r_[np.full(10, 0.06), np.full(49, 0.4 / 49)])
    claims = pd.DataFrame({"subject": subj, "property": prop, "object": obj, "rank": np.int8(1)})
    # Subjects 60..199 again as 260..399 with the same statements: equal cosines, ties by id.
    twins = claims[claims["subject"] >= 60].assign(subject=lambda c: c["subject"] + 200)
    claims = pd.concat([claims, twins], ignore_index=True)
    build_index(claims, tmp_path / "idx", hnsw=False)
    index = load_index(tmp_path / "idx", "exact")
    assert index.hnsw is None and json_meta(tmp_path / "idx")["hnsw"] is None
    types = pd.DataFrame({"id": np.arange(1, n_ent), "type": 900 + np.arange(1, n_ent) % 4})
    types = pd.concat([types, pd.DataFrame({"id": np.arange(1, 40), "type": 950})], ignore_index=True)
    forms = pd.DataFrame({"entity": np.arange(1, n_ent), "form": [f"name {i}" for i in range(1, n_ent)]})
    valid = claims[["subject", "property", "object"]].drop_duplicates()
    omega = Omega(types, forms, valid, form_threshold=None)
    facts = [(int(s), int(p), int(o)) for s, p, o in valid.head(30).itertuples(index=False)]
    # Queries that are subjects with a twin: their neighbours come in tied pairs.
    facts += [(1, 99, e) for e in range(60, 90)]
    per_type = sem_distractors(index, omega, facts, 10, "exact")
    every = sem_distractors(index, omega, facts, 10, "hnsw")  # no graph: widened exact search
    assert per_type == every
    assert sum(len(x) for x in per_type) > 300  # the lists are not trivially empty


def json_meta(folder):
    import json

    return json.loads((folder / "meta.json").read_text())


def test_properties_in_and_truthy_statements_are_the_whole_read_restricted(tables, demo_tables):
    from factprobe.probes.select import truthy_claims

    assert scan.properties_in(tables["claims"]) == {31, 36, 47}
    # Probe building's truthy statements (scan_valid "truthy") are truthy_claims of its relations.
    for path, date, rels in (
        (tables["claims"], 20141201, [36, 99]),
        (demo_tables["20190201"] / "claims.parquet", 20190201, [17, 36, 47, 530]),
    ):
        claims = contracts.read("claims", path)
        want = truthy_claims(claims[claims["property"].isin(rels)], date).astype("int64")
        got = scan.scan_valid(path, date, "truthy", rels).sort_values(["property", "subject", "object"])
        assert len(want) > 0
        pd.testing.assert_frame_equal(got.reset_index(drop=True), want)


@pytest.mark.parametrize("weighting", ["tfidf", "bm25"])
@pytest.mark.parametrize(
    ("reverse", "bag", "namespace"),
    [
        (True, "counts", "tagged"),
        (False, "counts", "tagged"),
        (True, "sets", "shared"),
        (False, "sets", "shared"),
    ],
)
def test_bags_counted_in_duckdb_equal_the_in_memory_bags_bit_for_bit(
    tmp_path, weighting, reverse, bag, namespace
):
    """Sem features counted by DuckDB: the same entities, features, idf and
    matrix floats as feature_codes + weight_matrix on the distinct non-deprecated triples."""
    from factprobe.distractors.semantic.bags import bags_from_parquet, feature_codes
    from factprobe.distractors.semantic.weighting import weigh, weight_matrix

    rng = np.random.default_rng(11)
    claims = pd.DataFrame(
        {
            "subject": rng.integers(1, 300, 4000),
            "property": rng.choice([17, 31, 36, 47, 150], 4000),
            "object": rng.integers(1, 80, 4000),
            "rank": rng.choice(np.array([0, 1, 2], np.int8), 4000),
            "start": pd.array([None] * 4000, dtype="Int64"),
            "end": pd.array([None] * 4000, dtype="Int64"),
            "point_in_time": pd.array([None] * 4000, dtype="Int64"),
        }
    )
    contracts.write("claims", claims, tmp_path / "claims.parquet")
    c = claims[claims["rank"] >= 1][["subject", "property", "object"]].drop_duplicates()
    rows, codes = feature_codes(c["subject"], c["property"], c["object"], reverse, namespace)
    ents, feats, X, idf = weight_matrix(rows, codes, weighting, bag=bag)
    ents2, feats2, counts, corpus = bags_from_parquet(
        tmp_path / "claims.parquet", reverse, memory_mb=256, bag=bag, namespace=namespace
    )
    X2, idf2 = weigh(counts, weighting)
    assert np.array_equal(ents, ents2) and np.array_equal(feats, feats2) and np.array_equal(idf, idf2)
    for part in ("indptr", "indices", "data"):
        assert np.array_equal(getattr(X, part), getattr(X2, part)), part
    assert X.nnz > 6_000
    # Candidate rows only: each kept row has the floats of the whole index,
    # its columns those of the features it has, IDF still counted over every entity.
    keep = ents[::3][5:]
    ents3, feats3, counts3, corpus3 = bags_from_parquet(
        tmp_path / "claims.parquet", reverse, rows=keep, bag=bag, namespace=namespace
    )
    X3, idf3 = weigh(counts3, weighting, corpus=corpus3)
    assert corpus3[0] == corpus[0] == len(ents) and np.array_equal(ents3, keep)
    at = np.searchsorted(feats, feats3)
    assert np.array_equal(feats[at], feats3) and np.array_equal(idf3, idf[at])
    whole = X[np.searchsorted(ents, keep)][:, at]
    assert len(feats3) < len(feats) and whole.nnz == X3.nnz
    for part in ("indptr", "indices", "data"):
        assert np.array_equal(getattr(whole, part), getattr(X3, part)), part


@pytest.mark.parametrize("strategies", [["random"], ["cooccur"], ["pool"]])
def test_retrieval_shards_gather_to_the_one_job_table(tables, strategies):
    """One relation cut over shards by subject hash, each shard loading its own
    slice, gathered in fact order, gives the rows of one job (pools still see every fact of the
    relation)."""
    from factprobe.distractors.retrieve import forms_of_candidates, gather_shards, retrieve, shard_plan
    from factprobe.settings import Retrieve

    settings = {
        "dump": "20141201",
        "valid_ranks": "non_deprecated",
        "form_threshold": 90,
        "strategies": strategies,
    }
    inputs = SimpleNamespace(
        facts=tables["facts"],
        entity_forms=tables["entity_forms"],
        claims=tables["claims"],
        types=tables["types"],
    )
    facts, forms, statements, omega = load_suite_omega(inputs, settings)
    resolved = Retrieve(
        strategies=strategies,
        n=3,
        pool_size=5,
        search="exact",
        languages=["en"],
        dump="20141201",
        form_threshold=90,
        valid_ranks="non_deprecated",
        ef_search=200,
        strategy_settings={"cooccur": {"n": 3, "sides": ["object", "subject"]}},
    )
    co = Cooccurrence(statements) if strategies == ["cooccur"] else None
    whole = retrieve(facts, omega, resolved, {"cooccur": co, "entity_forms": forms})
    assert (whole["role"] == "distractor").sum() > 0
    shard = shard_plan(facts, 3)
    # One relation cut by subject hash; each shard loads its own slice.
    assert shard.tolist() == [stable_hash(s, "retrieve-shard") % 3 for s in facts["subject"]]
    assert len(set(shard.tolist())) > 1
    parts, part_forms = [], []
    for s in (0, 1, 2):
        only = facts["fact_id"][shard == s].tolist()
        f, ef, st, om = load_suite_omega(inputs, settings, only=only)
        got = retrieve(
            f, om, resolved, {"cooccur": Cooccurrence(st) if co else None, "entity_forms": ef}, only
        )
        parts.append(got)
        part_forms.append(forms_of_candidates(got, ef))
    cand, got_forms = gather_shards(facts, parts, part_forms)
    pd.testing.assert_frame_equal(cand, whole, check_dtype=False)  # an empty shard is object-typed
    pd.testing.assert_frame_equal(got_forms, forms_of_candidates(whole, forms))


def test_sem_candidates_are_the_members_of_the_objects_types_in_any_dump(tables):
    """The index rows are the entities sharing a declared type (in any typing
    dump) with an object of a searched relation: a superset of what Ω admits for those objects."""
    got = scan.sem_candidates(tables["claims"], tables["types"], [36])
    # Objects of P36: 10..16, types 500 and 501 (12 is retyped in the newer dump); 17 and 18 declare
    # 500 in one dump only; nothing of type 600/700/701/702 can be a P36 candidate.
    assert got.tolist() == [10, 11, 12, 13, 14, 15, 16, 17, 18]
    whole = load_types(tables["types"])
    omega = Omega(
        whole,
        pd.DataFrame({"entity": [], "form": []}),
        pd.DataFrame(columns=["subject", "property", "object"]),
    )
    for o in range(10, 17):
        assert set(omega.members(omega.types_of(o)).tolist()) <= set(got.tolist())
    assert scan.sem_candidates(tables["claims"], tables["types"], [47]).tolist() == [1, 2, 3, 4, 5]
    assert scan.sem_candidates(tables["claims"], tables["types"], [31]).tolist() == []  # untyped object


# --- probe building out of core -----------------------------------------------------------------

LABELS_OLD = [
    (2, "en", "Two", False),
    (2, "en", "Deux", True),
    (10, "en", "Ten old", False),  # (10, en) is in the newer dump too: the newer forms win
    (10, "de", "Zehn", False),  # (10, de) only here: kept
    (3, "fr", "Trois", False),  # a language not asked for
]
LABELS_NEW = [
    (10, "en", "Ten-ish", True),  # an alias listed before its label: labels sort first
    (10, "en", "Ten", False),
    (10, "en", "Ten", True),  # the label's own text as an alias: one row, the label
    (10, "en", "Ten-ish", True),  # a repeated alias: one row
    (7, "en", "Seven", True),  # only an alias: a form, but not labelled
    (2, "de", "Zwei", False),
]


def write_labels(root, rows, dump):
    path = root / dump / "labels.parquet"
    path.parent.mkdir(parents=True, exist_ok=True)
    frame = pd.DataFrame(rows, columns=["id", "lang", "text", "is_alias"])
    contracts.write("labels", frame, path)
    return path


def test_entity_forms_stream_the_label_tables_rows_in_order(tmp_path, demo_tables):
    from factprobe.probes.select import labelled_entities
    from factprobe.wikidata.labels import label_table

    files = [write_labels(tmp_path, LABELS_NEW, "20190201"), write_labels(tmp_path, LABELS_OLD, "20141201")]
    out = tmp_path / "forms.parquet"
    assert scan.write_entity_forms(files, ["en", "de"], out, batch_rows=2) == 7
    got = contracts.read("entity_forms", out)
    want = [
        ("Q10", "de", "Zehn", "label"),
        ("Q10", "en", "Ten", "label"),
        ("Q10", "en", "Ten-ish", "alias"),
        ("Q2", "de", "Zwei", "label"),
        ("Q2", "en", "Two", "label"),
        ("Q2", "en", "Deux", "alias"),
        ("Q7", "en", "Seven", "alias"),
    ]
    assert list(got.itertuples(index=False, name=None)) == want
    pd.testing.assert_frame_equal(got, label_table(files, ["en", "de"]))
    assert scan.labelled_ids(out, ["en", "de"], [2, 7, 10, 11]).tolist() == [2, 10]
    assert scan.labelled_ids(out, ["en"], [2, 7]).tolist() == [2]
    # The real demo labels of both dumps, five languages: the pandas table row for row.
    langs = ["en", "de", "fr", "ru", "cs"]
    real = [demo_tables[d] / "labels.parquet" for d in sorted(demo_tables)]
    assert scan.write_entity_forms(real, langs, out) > 3_000
    forms = contracts.read("entity_forms", out)
    pd.testing.assert_frame_equal(forms, label_table(real, langs))
    ids = contracts.id_ints(forms["entity"].unique())
    for chosen in (langs, ["en", "de"]):
        want_ids = sorted(contracts.id_ints(labelled_entities(forms, chosen)).tolist())
        assert scan.labelled_ids(out, chosen, ids).tolist() == want_ids


def test_entity_forms_are_the_same_bytes_on_any_number_of_duckdb_threads(tmp_path):
    """build_probes runs DuckDB on its threads: the entity forms' row groups hold exactly
    batch_rows rows (DuckDB's threads hand out batches of other sizes on a large sort), so the
    file is the same bytes on 1 and 4 threads."""
    import pyarrow.parquet as pq

    n = 300_005  # a last group of 5 rows, from batches cut differently on each thread count
    rng = np.random.default_rng(0)
    labels = pd.DataFrame(
        {
            "id": rng.integers(1, 10**6, n),
            "lang": rng.choice(["en", "de"], n),
            "text": [f"t{i}" for i in range(n)],
            "is_alias": rng.random(n) < 0.3,
        }
    )
    (tmp_path / "20200101").mkdir()
    labels.to_parquet(tmp_path / "20200101" / "labels.parquet", row_group_size=20_000)
    files = {}
    for threads in (1, 4):
        files[threads] = tmp_path / f"forms-{threads}.parquet"
        con = scan.connect(threads=threads)
        scan.write_entity_forms(
            [tmp_path / "20200101" / "labels.parquet"], ["en", "de"], files[threads], con, 10_000
        )
    assert files[1].read_bytes() == files[4].read_bytes()
    meta = pq.ParquetFile(files[4]).metadata
    sizes = [meta.row_group(i).num_rows for i in range(meta.num_row_groups)]
    assert len(sizes) == 31 and set(sizes[:-1]) == {10_000} and sizes[-1] < 10_000


def test_sitelinks_changes_and_temporal_rows_of_the_suites_relations(tmp_path, demo_tables):
    from factprobe.probes.select import item_sitelinks

    newest = demo_tables["20190201"]
    entities = contracts.read("entities", newest / "entities.parquet", ["id", "kind", "sitelinks"])
    whole = item_sitelinks(entities)
    some = whole.index.to_numpy()[::7]
    got = scan.sitelinks_of(newest / "entities.parquet", np.append(some, [-5]))
    pd.testing.assert_series_equal(got, whole.loc[np.sort(some)], check_names=False)
    claims = contracts.read("claims", newest / "claims.parquet")
    temporal = claims.assign(status="current", source="qualifier", truthy=True, last_seen="20190201")
    temporal.loc[temporal.index % 3 == 0, "status"] = "past"
    path = tmp_path / "temporal.parquet"
    contracts.write("temporal", temporal[contracts.columns("temporal")], path)
    cols = contracts.columns("temporal")
    whole_t = contracts.read("temporal", path)
    got_t = scan.table_of_relations("temporal", path, [36, 47], cols)
    want_t = whole_t[whole_t["property"].isin([36, 47])].reset_index(drop=True)
    assert len(want_t) > 100
    pd.testing.assert_frame_equal(got_t, want_t)
    # Past rows of some subjects (retrieval's read of the temporal view); no value at all: none.
    subjects = want_t["subject"].unique()[::2]
    got_p = scan.table_of_relations(
        "temporal", path, [36, 47], cols, subjects=subjects, any_of={"status": ["past"]}
    )
    want_p = want_t[want_t["subject"].isin(subjects) & (want_t["status"] == "past")].reset_index(drop=True)
    assert 0 < len(want_p) < len(want_t)
    pd.testing.assert_frame_equal(got_p, want_p)
    assert scan.table_of_relations("temporal", path, [36], cols, any_of={"status": []}).empty


def test_one_duckdb_connection_helper_and_share(tmp_path):
    """scan.connect is the library's only DuckDB connection (one home, one memory share)."""
    import re
    from pathlib import Path

    import factprobe
    from factprobe import scan

    lib = Path(factprobe.__file__).parent
    callers = sorted(
        str(p.relative_to(lib)) for p in lib.rglob("*.py") if re.search(r"duckdb\.connect\(", p.read_text())
    )
    assert callers == ["scan.py"]
    assert scan.duckdb_mb(6000) == 1500
    con = scan.connect(2, scan.duckdb_mb(2000), tmp_path / "spill", keep_order=False)
    limit = con.execute("SELECT current_setting('memory_limit')").fetchone()[0]
    assert limit.replace(" ", "") in {"500.0MB", "476.8MiB", "500MB"}, limit
    assert con.execute("SELECT current_setting('preserve_insertion_order')").fetchone()[0] is False
    assert Path(con.execute("SELECT current_setting('temp_directory')").fetchone()[0]) == tmp_path / "spill"
