"""Importer of the released PRobELM benchmark (probelm-plausibility §3, §4.1-4.2,
Appendix D) on hand-made files of the release's format, scored by the existing pipeline; and, when
the release is present beside the repository (it has no licence, so it is never copied in), on it.
"""

import json
import math
from pathlib import Path

import pandas as pd
import pytest
from contract_frames import full, full_inputs
from factprobe import config_rules
from factprobe import settings as S
from factprobe.distractors.swaps import subject_swaps
from factprobe.metrics.pipeline import SuiteInputs, compute_suite_metrics
from factprobe.probes.released import ReleasedDataError, build_released, read_groups, read_prompts
from factprobe.scoring.suite import build_pairs

ROOT = Path(__file__).resolve().parents[2]

PROMPTS_CSV = """\
place of death, <subject>'s place of death is <object>., Question: Where is <subject>'s place of death? Answer: <object>., <object>
conferred by, <object> is conferred by <subject>., Question: Who conferred <object>? Answer: <subject>., <subject>
country for sport, <subject> represents <object> in sports competitions., Question: Who represents <object> in sports competitions? Answer: <subject>., <subject>
"""


def scenario(s, r, o, gid, label, rank):
    return {"subject": s, "relation": r, "object": o, "id": gid, "label": label, "rank": rank}


GROUPS = [
    [
        scenario("Ada Lovelace", "place of death", "London", 7, 1, 1),
        # Subject swaps (same object): rank 3 was filtered (a gap); Babbage appears twice.
        scenario("Charles Babbage", "place of death", "London", 7, 0, 2),
        scenario("Mary Shelley", "place of death", "London", 7, 0, 4),
        scenario("Charles Babbage", "place of death", "London", 7, 0, 5),
        # Object swaps (same subject); the first repeats the plausible scenario itself.
        scenario("Ada Lovelace", "place of death", "London", 7, 0, 2),
        scenario("Ada Lovelace", "place of death", "Paris", 7, 0, 3),
        scenario("Ada Lovelace", "place of death", "Marylebone", 7, 0, 6),
    ],
    [
        scenario("Swedish Academy", "conferred by", "Nobel Prize in Literature", 9, 1, 1),
        scenario("Royal Society", "conferred by", "Nobel Prize in Literature", 9, 0, 2),
        scenario("Swedish Academy", "conferred by", "Copley Medal", 9, 0, 2),
    ],
    [
        scenario("Usain Bolt", "country for sport", "Jamaica", 11, 1, 1),
        scenario("Yohan Blake", "country for sport", "Jamaica", 11, 0, 2),
        scenario("Usain Bolt", "country for sport", "Kenya", 11, 0, 2),
    ],
]

# The dump's English labels: London is ambiguous (London, Ontario has fewer sitelinks), Babbage
# matches case-insensitively, Mary Shelley and Marylebone by an alias (Marylebone's alias points
# to Q84 too, so two released texts share a QID and both stay text-keyed).
LABELS = pd.DataFrame(
    [
        (7259, "en", "Ada Lovelace", False),
        (84, "en", "London", False),
        (92561, "en", "London", False),
        (84, "en", "Marylebone", True),
        (46633, "en", "CHARLES BABBAGE", False),
        (47152, "en", "Mary Wollstonecraft Shelley", False),
        (47152, "en", "Mary Shelley", True),
        (90, "en", "Paris", False),
        (207, "en", "Swedish Academy", False),
        (123885, "en", "Royal Society", False),
        (123885, "de", "Jamaica", False),  # another language: no match
    ],
    columns=["id", "lang", "text", "is_alias"],
)
SITELINKS = pd.Series({84: 300, 92561: 50})
PROPERTIES = pd.DataFrame({"id": [20, 1027], "label": ["place of death", "conferred by"]})


@pytest.fixture()
def release(tmp_path):
    (tmp_path / "102020.json").write_text(json.dumps(GROUPS))
    (tmp_path / "prompts.csv").write_text(PROMPTS_CSV)
    return tmp_path


@pytest.fixture()
def tables(release):
    groups = {"102020": read_groups(release / "102020.json")}
    return build_released(
        "probelm", groups, read_prompts(release / "prompts.csv"), LABELS, PROPERTIES, SITELINKS, "20201102"
    )


def test_facts_orientation_and_keys(tables):
    facts = tables["facts"].set_index("fact_id")
    assert list(facts.index) == [
        "probelm/102020/11/reversed",
        "probelm/102020/7",
        "probelm/102020/9/reversed",
    ]
    # Templates ending with <object>: the released triple; ending with <subject>: reversed.
    assert facts.loc["probelm/102020/7", ["subject", "property", "object"]].tolist() == [
        "Q7259",
        "P20",
        "text:London",
    ]
    assert facts.loc["probelm/102020/9/reversed", ["subject", "property", "object"]].tolist() == [
        "text:Nobel Prize in Literature",
        "P1027",
        "Q207",
    ]
    # No property label matches: the relation label stands in.
    assert facts.loc["probelm/102020/11/reversed", "property"] == "country for sport"
    assert set(facts["month"]) == {"102020"} and set(facts["dump"]) == {"20201102"}


def test_prompts_are_the_templates_cut_before_their_last_slot(tables):
    prompts = tables["prompts"].set_index("prompt_id")
    got = {(p.fact_id, p.style): (p.subject_form, p.text) for p in prompts.itertuples()}
    assert got == {
        ("probelm/102020/7", "statement"): ("Ada Lovelace", "Ada Lovelace's place of death is"),
        ("probelm/102020/7", "question"): (
            "Ada Lovelace",
            "Question: Where is Ada Lovelace's place of death? Answer:",
        ),
        ("probelm/102020/9/reversed", "statement"): (
            "Nobel Prize in Literature",
            "Nobel Prize in Literature is conferred by",
        ),
        ("probelm/102020/9/reversed", "question"): (
            "Nobel Prize in Literature",
            "Question: Who conferred Nobel Prize in Literature? Answer:",
        ),
        # The statement "<subject> represents <object> in sports competitions." is skipped.
        ("probelm/102020/11/reversed", "question"): (
            "Jamaica",
            "Question: Who represents Jamaica in sports competitions? Answer:",
        ),
    }


def test_candidates_carry_released_ranks_as_relevance(tables):
    c = tables["candidates"]
    g0 = c[c["fact_id"] == "probelm/102020/7"]
    rows = {(r.side, r.entity): (r.role, r.rank, r.relevance) for r in g0.itertuples()}
    assert rows == {
        ("object", "text:London"): ("object", 0, 11.0),
        # Object swaps: Paris (rank 3) and Marylebone (rank 6); the copy of the fact is dropped.
        ("object", "Q90"): ("distractor", 1, 9.0),
        ("object", "text:Marylebone"): ("distractor", 2, 6.0),
        # Subject swaps: Babbage's best rank (2), Mary Shelley's 4.
        ("subject", "Q46633"): ("distractor", 1, 10.0),
        ("subject", "Q47152"): ("distractor", 2, 8.0),
    }
    # Reversed: the released subject swaps fill the end slot (side object), the object swaps
    # the inner slot (side subject).
    g1 = c[c["fact_id"] == "probelm/102020/9/reversed"]
    assert {(r.side, r.entity, r.relevance) for r in g1.itertuples() if r.role == "distractor"} == {
        ("object", "Q123885", 10.0),
        ("subject", "text:Copley Medal", 10.0),
    }
    assert set(c.loc[c["role"] == "distractor", "strategy"]) == {"cooccur"}
    # Every entity's only form is its released text.
    forms = tables["entity_forms"].set_index("entity")["form"]
    assert forms["Q46633"] == "Charles Babbage" and forms["text:London"] == "London"


def test_label_matches_are_recorded(tables):
    m = tables["matches"]
    ent = m[m["kind"] == "entity"].set_index("text")
    assert (ent["id"] != "").sum() == 8 and len(ent) == 14
    assert ent.loc["London", ["id", "matched_by", "n_candidates"]].tolist() == ["Q84", "label", 2]
    assert ent.loc["Charles Babbage", "matched_by"] == "label_casefold"
    assert ent.loc["Mary Shelley", ["id", "matched_by"]].tolist() == ["Q47152", "alias"]
    assert ent.loc["Marylebone", "id"] == "Q84" and ent.loc["Jamaica", "id"] == ""
    rel = m[m["kind"] == "relation"].set_index("text")["id"]
    assert rel.to_dict() == {"conferred by": "P1027", "country for sport": "", "place of death": "P20"}


def test_imported_suite_is_scored_by_the_pipeline_with_released_grades(tables):
    """Scenario sentences are the release's (§4.1) and the plausibility measures grade them by
    the released ranks (§4.2: NDCG with graded relevance 12 - rank)."""
    swaps = subject_swaps(tables["prompts"], tables["candidates"], tables["forms"], tables["facts"], "all")
    pairs = build_pairs(tables["prompts"], tables["candidates"], tables["forms"], swaps=swaps)
    pid = "probelm/102020/7|probelm.statement.place_of_death|en|0|none"
    group = swaps[swaps["group_prompt_id"] == pid]
    mine = pairs[(pairs["prompt_id"] == pid) | pairs["prompt_id"].isin(group["prompt_id"])]
    sentences = {(p.prompt_id != pid, p.prompt_text + p.continuation) for p in mine.itertuples()}
    # The released templates end in ".": the prompts' ending, scored after the answer (item 7).
    assert set(tables["prompts"]["ending"]) == {"."}
    whole = build_pairs(tables["prompts"], tables["candidates"], tables["forms"], ending=True)
    assert "Ada Lovelace's place of death is London." in set(whole["prompt_text"] + whole["continuation"])
    assert sentences == {
        (False, "Ada Lovelace's place of death is London"),
        (False, "Ada Lovelace's place of death is Paris"),
        (False, "Ada Lovelace's place of death is Marylebone"),
        (True, "Ada Lovelace's place of death is London"),
        (True, "Charles Babbage's place of death is London"),
        (True, "Mary Shelley's place of death is London"),
    }
    # Per-token log-likelihoods (n_tokens 1): object side Paris > London > Marylebone, subject
    # side the true scenario first.
    lp = {"Q90": -1.0, "text:London": -2.0, "text:Marylebone": -3.0, "Q7259": -0.5}
    lp |= {"Q46633": -1.0, "Q47152": -2.0}
    scores = mine.assign(
        logprob=[lp[e] for e in mine["entity"]], n_tokens=1, first_logprob=0.0, end_logprob=0.0
    )
    prompts = tables["prompts"][tables["prompts"]["prompt_id"] == pid]
    data = full_inputs(
        SuiteInputs(
            scores=scores,
            prompts=prompts,
            candidates=tables["candidates"],
            facts=tables["facts"],
            forms=tables["forms"],
            subject_swaps=group,
        )
    )
    settings = S.Metrics(families={}, family_settings={"plausibility": {"strategies": ["cooccur"]}})
    per_fact, _ = compute_suite_metrics(data, settings, ["plausibility"])
    got = {(r.strategy, r.measure): r.value for r in per_fact.itertuples()}
    assert got[("object", "plaus_acc")] == 0.0 and got[("object", "plaus_rr")] == 0.5
    assert got[("subject", "plaus_acc")] == 1.0 and got[("subject", "plaus_ndcg")] == 1.0

    def dcg(grades):
        return sum((2.0**g - 1) / math.log2(i + 2) for i, g in enumerate(grades))

    # Ranked grades [9, 11, 6]; plaus_ndcg_minmax: min-max scaled between the worst and the ideal order.
    want = (dcg([9, 11, 6]) - dcg([6, 9, 11])) / (dcg([11, 9, 6]) - dcg([6, 9, 11]))
    assert got[("object", "plaus_ndcg_minmax")] == pytest.approx(want)
    # plaus_ndcg, standard (linear gain): (9 + 11 / log2 3 + 6 / 2) / (11 + 9 / log2 3 + 6 / 2).
    assert got[("object", "plaus_ndcg")] == pytest.approx(
        (9 + 11 / math.log2(3) + 3) / (11 + 9 / math.log2(3) + 3)
    )


def test_bad_files_name_the_file_and_group(release):
    bad = [[scenario("A", "place of death", "B", 1, 0, 1)]]
    (release / "112023.json").write_text(json.dumps(bad))
    with pytest.raises(
        ReleasedDataError, match=r"112023.json: group 0: the first scenario must be the only one"
    ):
        read_groups(release / "112023.json")
    with pytest.raises(ReleasedDataError, match="not found; fix suites"):
        read_groups(release / "122017.json")
    (release / "p.csv").write_text("place of death, <subject> died in <object>.\n")
    with pytest.raises(ReleasedDataError, match=r"p.csv: line 1: expected 4 fields"):
        read_prompts(release / "p.csv")


def test_suite_source_config(release):
    base = {
        "dumps": "d.tsv",
        "models": "m.tsv",
        "extract": {"languages": ["en"], "max_bad_fraction": 0.0, "chunk_mb": 1},
        "diff": {"single_value": "list", "single_value_list": "x.tsv"},
        "templates": {"sets": {"team": {"format": "yaml", "path": "t"}}},
    }
    source = {"format": "probelm", "path": str(release)}
    cfg = S.load_settings(
        S.Config, {**base, "suites": {"r": {"kind": "plausibility", "dump": "20201102", "source": source}}}
    )
    block = cfg.suites["r"]
    # No months: every MMYYYY.json of the folder, then prompts.csv.
    assert block.source.files() == [str(release / "102020.json"), str(release / "prompts.csv")]
    assert block.relations == [] and config_rules.suite_model_cutoff(cfg, "r", {"cutoff": "2020-03-01"}) == {}
    config_rules.check_cross_keys(cfg, ["20201102"])  # no diff_old / cutoff needed
    wrong = {"r": {"kind": "knowledge", "dump": "20201102", "source": source}}
    with pytest.raises(S.ConfigError, match="set kind: plausibility"):
        config_rules.check_cross_keys(S.load_settings(S.Config, {**base, "suites": wrong}), ["20201102"])


def _shared_release() -> Path | None:
    for base in (ROOT.parent, ROOT.parent.parent):
        folder = base / "shared" / "data" / "probelm" / "data"
        if (folder / "prompts.csv").is_file():
            return folder
    return None


def test_real_release_when_present():
    folder = _shared_release()
    if folder is None:
        pytest.skip("the PRobELM release is not beside the repository (../shared/data/probelm/data)")
    raw = json.loads((folder / "102020.json").read_text())
    templates = read_prompts(folder / "prompts.csv")
    assert len(templates) == 71
    tables = build_released(
        "probelm",
        {"102020": read_groups(folder / "102020.json")},
        templates,
        LABELS,
        PROPERTIES,
        dump="20201102",
    )
    # Independently: one prompt per (group, splittable style).
    usable = sum(1 for g in raw for t in templates[g[0]["relation"]].values() if t.last is not None)
    assert len(tables["prompts"]) == usable
    assert tables["facts"]["fact_id"].str.split("/").str[2].nunique() == len(raw)
    c = tables["candidates"]
    assert c.groupby(["fact_id", "side"]).size().max() <= 11  # the fact + 10 alternatives per list
    assert set(c["relevance"]) <= {float(12 - r) for r in range(1, 12)}


def test_standard_ndcg_on_released_grades_when_present():
    """Plaus_ndcg is the standard NDCG (Järvelin & Kekäläinen: gain = grade,
    discount 1 / log2(position + 1), over the ideal DCG of the same grades) on the release's own
    graded ranks (relevance = 12 - released rank), two groups of ../shared 102020.json, object
    side, the model's order set by hand:

    Group id 14 ("Wikidata uses data donation", ranks 1..11, grades 11..1). Model order: released
    ranks 2, 1, 3, ..., 11 (the top two swapped), grades 10, 11, 9, ..., 1.
      IDCG = sum_{p=1..11} (12 - p) / log2(p + 1) = 34.788612
      IDCG - DCG = (11 - 10) * (1 / log2 2 - 1 / log2 3) = 1 - 0.630930 = 0.369070
      NDCG = (34.788612 - 0.369070) / 34.788612 = 0.989391 (MRR 0.5)
    Group id 43 ("Abraham Lincoln elected in 1860 United States presidential election"): the
    object swaps are released at ranks 2, 3, 7, 8 with ranks 7 and 8 repeating 2 and 3's objects,
    so the group holds grades 11 (the fact), 10, 9. Model order: grades 9, 11, 10.
      DCG  = 9 + 11 / log2 3 + 10 / 2 = 9 + 6.940227 + 5 = 20.940227
      IDCG = 11 + 10 / log2 3 + 9 / 2 = 11 + 6.309298 + 4.5 = 21.809298
      NDCG = 0.960151 (MRR 0.5)
    """
    folder = _shared_release()
    if folder is None:
        pytest.skip("the PRobELM release is not beside the repository (../shared/data/probelm/data)")
    from factprobe.metrics.common import entity_scores, prompt_frame
    from factprobe.metrics.plausibility import plausibility_per_fact

    tables = build_released(
        "probelm",
        {"102020": read_groups(folder / "102020.json")},
        read_prompts(folder / "prompts.csv"),
        LABELS,
        PROPERTIES,
        dump="20201102",
    )
    # Model order by released rank: group 14 ranks 2, 1, 3..11; group 43 ranks 3, 1, 2.
    order = {"probelm/102020/14": [2, 1, *range(3, 12)], "probelm/102020/43": [3, 1, 2]}
    want = {"probelm/102020/14": 0.989391, "probelm/102020/43": 0.960151}
    for fact_id, released_order in order.items():
        prompt = tables["prompts"][
            (tables["prompts"]["fact_id"] == fact_id) & (tables["prompts"]["style"] == "statement")
        ]
        cands = tables["candidates"][tables["candidates"]["fact_id"] == fact_id]
        side = cands[cands["side"] == "object"]
        rank_of = dict(zip(side["entity"], 12 - side["relevance"].astype(int), strict=True))
        assert sorted(rank_of.values()) == sorted(released_order)  # the group's released ranks
        scores = pd.DataFrame(
            {
                "prompt_id": prompt["prompt_id"].iloc[0],
                "entity": list(rank_of),
                "form": list(rank_of),
                "logprob": [-float(released_order.index(r)) for r in rank_of.values()],
                "n_tokens": 1,
            }
        )
        per = plausibility_per_fact(
            entity_scores(full("scores", scores)),
            prompt_frame(full("prompts", prompt)),
            full("candidates", cands),
            tables["facts"],
            ["cooccur"],
        )
        got = per[per["strategy"] == "object"].set_index("measure")["value"]
        assert got["plaus_rr"] == 0.5
        assert got["plaus_ndcg"] == pytest.approx(want[fact_id], abs=1e-6), fact_id
