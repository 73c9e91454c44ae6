"""Fluent-mLAMA's own distractor pool: strings of the language-relation subset.

§3.3 "50 distractors sampled from the same language-relation subset of the dataset"; the authors'
``processor.py`` takes every object label, inflected object and alias of the ``<lang>_<PID>``
file, removes the fact's own strings and keeps the first 50 by SHA-256. Checked here on hand-made
tables (SHA-256 order worked out with hashlib in the test, retrieval end to end, one form per
string, the tie rule) and against the release read independently with pandas, as the authors'
code reads it (skipped only when ``../shared`` is absent).
"""

from __future__ import annotations

import hashlib
import zipfile
from pathlib import Path

import pandas as pd
import pytest
from contract_frames import full
from factprobe.distractors.pool import string_distractors, string_entity
from factprobe.distractors.retrieve import forms_of_candidates, retrieve
from factprobe.hashing import sha256_order
from factprobe.metrics.common import correct_entities, entity_scores
from factprobe.metrics.ranking import ranking_per_prompt
from factprobe.probes.fluent import import_fluent_mlama, release_string_pools
from test_distractor_pool import _settings, omega

ROOT = Path(__file__).resolve().parents[2]


def _sha(s: str) -> int:
    return int(hashlib.sha256(s.encode("utf-8")).hexdigest(), 16)


def test_sha256_order_and_the_fact_own_strings_out():
    strings = ["Praha", "Praze", "Brno", "Brně", "Londýn", "", "Praha"]
    order = sha256_order(strings)
    assert order == sorted({"Praha", "Praze", "Brno", "Brně", "Londýn"}, key=_sha)
    picked = string_distractors(order, {"Praha", "Praze"}, n=2)
    assert picked == [s for s in order if s not in {"Praha", "Praze"}][:2]
    assert string_distractors(order, set(), n=50) == order  # fewer strings than n: all of them


# Two P19 facts in Czech: Kafka (Q1) and Havel (Q2), both born in Prague (Q10); Čapek (Q3) in
# Malé Svatoňovice (Q11). Entity forms as the importer makes them.
FACTS = pd.DataFrame(
    {
        "fact_id": ["Q1|P19|Q10", "Q2|P19|Q10", "Q3|P19|Q11"],
        "subject": ["Q1", "Q2", "Q3"],
        "property": ["P19", "P19", "P19"],
        "object": ["Q10", "Q10", "Q11"],
        "objects": [["Q10"], ["Q10"], ["Q11"]],
    }
)
FORMS = pd.DataFrame(
    [
        ("Q10", "cs", "Praha", "label"),
        ("Q10", "cs", "Praze", "inflected"),
        ("Q10", "cs", "Hlavní město Praha", "alias"),
        ("Q11", "cs", "Malé Svatoňovice", "label"),
        ("Q11", "cs", "Malých Svatoňovicích", "inflected"),
    ],
    columns=["entity", "lang", "form", "source"],
)


def test_retrieve_samples_strings_of_the_subset_with_one_form_each():
    settings = _settings("dataset", size=50)
    settings = type(settings)(**{**settings.__dict__, "languages": ["cs"]})
    cand = retrieve(FACTS, omega(), settings, {"entity_forms": FORMS})
    # A release-only suite's job has no dump tables, so no Ω: the string pool does not need one.
    pd.testing.assert_frame_equal(retrieve(FACTS, None, settings, {"entity_forms": FORMS}), cand)
    pool = cand[cand["strategy"] == "pool"]
    by_fact = {f: g.sort_values("rank")["entity"].tolist() for f, g in pool.groupby("fact_id")}
    # Kafka: the Svatoňovice strings (Prague's are his own); Čapek: Prague's three strings.
    assert by_fact["Q1|P19|Q10"] == [
        string_entity(s) for s in sorted(["Malé Svatoňovice", "Malých Svatoňovicích"], key=_sha)
    ]
    assert by_fact["Q3|P19|Q11"] == [
        string_entity(s) for s in sorted(["Praha", "Praze", "Hlavní město Praha"], key=_sha)
    ]
    assert set(pool["lang"]) == {"cs"}
    forms = forms_of_candidates(cand, FORMS)
    mine = forms[forms["entity"] == string_entity("Praze")]
    assert mine[["lang", "form", "source"]].values.tolist() == [["cs", "Praze", "pool"]]


def test_ties_go_to_the_correct_form_first_as_the_authors_sort():
    prompts = pd.DataFrame(
        {"prompt_id": ["p"], "fact_id": ["Q3|P19|Q11"], "lang": ["cs"], "verbalization": ["gt"]}
    )
    cand = pd.DataFrame(
        {
            "fact_id": ["Q3|P19|Q11"] * 3,
            "entity": ["Q11", string_entity("Praha"), string_entity("Praze")],
            "role": ["object", "distractor", "distractor"],
            "strategy": ["object", "pool", "pool"],
            "rank": [0, 1, 2],
            "lang": [None, "cs", "cs"],
        }
    )
    scores = pd.DataFrame(
        {
            "prompt_id": ["p"] * 4,
            "entity": ["Q11", "Q11", string_entity("Praha"), string_entity("Praze")],
            "form": ["Malé Svatoňovice", "Malých Svatoňovicích", "Praha", "Praze"],
            "logprob": [-9.0, -5.0, -5.0, -7.0],
            "n_tokens": [3, 3, 1, 1],
        }
    )
    ent = entity_scores(full("scores", scores))
    correct = correct_entities(FACTS)
    # Best correct -5 ties "Praha": rank 2 when ties fail, 1 with the correct form first.
    assert ranking_per_prompt(ent, prompts, cand, correct)["rank"].tolist() == [2]
    assert ranking_per_prompt(ent, prompts, cand, correct, "correct_first")["rank"].tolist() == [1]
    with pytest.raises(ValueError, match=r"ranking\.ties 'coin'"):
        ranking_per_prompt(ent, prompts, cand, correct, "coin")


# --- the release ---------------------------------------------------------------------------------


def _fixed_data() -> Path:
    for base in (ROOT.parent, ROOT.parent.parent):
        path = base / "shared" / "data" / "fluent-mlama" / "fixed_data" / "fixed_data.zip"
        if path.is_file():
            return path
    pytest.skip("the Fluent-mLAMA release is not beside the repository (../shared/data/fluent-mlama)")


def _authors_reading(path: Path, member: str, chatgpt: bool) -> tuple[list[str], dict]:
    """The pool and the facts' own strings as processor.py reads a file: pandas, the GT filter,
    label / inflected objects / aliases flattened, non-empty strings (ERROR left out here, as in
    the files their statistics were computed on)."""
    with zipfile.ZipFile(path) as archive, archive.open(member) as fh:
        df = pd.read_csv(fh, sep="\t")
    df["aliases"] = df["aliases"].apply(lambda x: x.split("|||"))
    df = df[(~df["gt_infl_object"].eq("ERROR")) & (~df["gt_prompt"].isna()) & (df["gt_prompt"] != "")]
    cols = ["obj_label", "gt_infl_object", *(["chatgpt_infl_object"] if chatgpt else []), "aliases"]
    own = {}
    for _, row in df.iterrows():
        values = [row[c] for c in cols[:-1]] + list(row["aliases"])
        own[row["sub_uri"], row["obj_uri"]] = {v for v in values if isinstance(v, str) and v and v != "ERROR"}
    pool = set().union(*own.values())
    return sorted(pool, key=_sha), own


@pytest.mark.parametrize(
    "lang, rel, kind", [("cs", "P19", "20prompt"), ("ru", "P449", "20prompt"), ("da", "P364", "nogpt")]
)
def test_release_pools_are_the_authors(lang, rel, kind):
    path = _fixed_data()
    pools, correct = release_string_pools(path, [lang], [rel])
    want, own = _authors_reading(path, f"fixed_data/{lang}_{rel}_{kind}.tsv", kind == "20prompt")
    assert pools[(rel, lang)] == want
    for (sub, obj), strings in own.items():
        mine = correct[(f"{sub}|{rel}|{obj}", lang)]
        assert mine == strings
        # the fact's 50 distractors: the pool less its own strings, SHA-256 order
        assert string_distractors(pools[(rel, lang)], mine) == [s for s in want if s not in strings][:50]
    # every imported fact of the subset has its own strings (the pool and the suite agree)
    facts, prompts, _ = import_fluent_mlama(path, [lang], [rel])
    assert {(f, lang) for f in prompts["fact_id"]} <= set(correct)
