"""Fluent-mLAMA importers and Table 1.

mParaRel / mLAMA templates as a template-set format, the released Fluent-mLAMA sentences as a
suite source (§3.2: template, GT and ChatGPT verbalizations; all object forms correct) and R@n /
mean rank per language × verbalization (§3.3, Table 1) on hand-made files and scores.
"""

import json
import zipfile

import pandas as pd
import pytest
from contract_frames import full
from factprobe import contracts
from factprobe.metrics.common import conform_dataset_table, correct_entities, entity_scores
from factprobe.metrics.pipeline import summarize
from factprobe.metrics.ranking import ranking_per_fact, table1
from factprobe.probes.build import DumpTables, build_suite
from factprobe.probes.fluent import FluentError, import_fluent_mlama
from factprobe.probes.importers import import_mpararel
from factprobe.probes.suite_plan import load_template_set
from factprobe.probes.templates import TemplateError
from factprobe.settings import TemplateSet

# --- mParaRel templates ------------------------------------------------------------------------


def _mpararel(root):
    (root / "cs").mkdir(parents=True)
    (root / "de").mkdir()
    (root / "cs" / "P19.jsonl").write_text(
        json.dumps({"pattern": "[X] se narodil v [Y]", "checked-by-human": True})
        + "\n"
        + json.dumps({"pattern": "[Y] je rodiště [X]", "checked-by-human": False})
        + "\n"
    )
    (root / "de" / "P36.jsonl").write_text(
        json.dumps({"pattern": "die hauptstadt von [X] ist [Y].", "checked-by-human": False}) + "\n"
    )
    return root


def test_mpararel_set_reads_per_language_folders(tmp_path):
    root = _mpararel(tmp_path / "patterns")
    got = import_mpararel(root, ["cs", "de"])
    assert [(t.id, t.lang, t.relation, t.text, t.object_final) for t in got] == [
        ("P19.cs.mpararel1", "cs", "P19", "[X] se narodil v [Y]", True),
        ("P19.cs.mpararel2", "cs", "P19", "[Y] je rodiště [X]", False),
        # lower-cased release: the sentence start is capitalised
        ("P36.de.mpararel1", "de", "P36", "Die hauptstadt von [X] ist [Y].", True),
    ]
    assert [t.id for t in import_mpararel(root, ["cs"], checked_only=True)] == ["P19.cs.mpararel1"]
    with pytest.raises(TemplateError, match="no mParaRel files.*'ru'"):
        import_mpararel(root, ["ru"])
    # the config format: Snakemake inputs are the files of the suite's languages only
    entry = TemplateSet(format="mpararel", path=str(root))
    assert entry.files(["cs"]) == [str(root / "cs" / "P19.jsonl")]
    assert [t.id for t in load_template_set("mp", entry, ["de"])] == ["P36.de.mpararel1"]


# --- the released sentences ---------------------------------------------------------------------

HEADER = [
    "sub_uri",
    "en_sub_label",
    "sub_label",
    "obj_uri",
    "en_obj_label",
    "obj_label",
    "en_template",
    "template",
    "template_prompt",
    "gt_translation",
    "chatgpt_translation",
    "gt_prompt",
    "gt_infl_object",
    "chatgpt_prompt",
    "chatgpt_infl_object",
    "aliases",
]
ROWS = [
    # object inflected in both sentences
    [
        "Q1",
        "Kafka",
        "Franz Kafka",
        "Q10",
        "Prague",
        "Praha",
        "Kafka was born in Prague .",
        "Franz Kafka se narodil v Praha.",
        "Franz Kafka se narodil v ",
        "Franz Kafka se narodil v Praze.",
        '"Subject translation: x\nTranslation: Franz Kafka se narodil v Praze."',
        "Franz Kafka se narodil v ",
        "Praze",
        "Franz Kafka se narodil v ",
        "Praze",
        "Praha|||Hlavní město Praha",
    ],
    # the ChatGPT sentence could not be split: ERROR, not imported
    [
        "Q2",
        "Havel",
        "Václav Havel",
        "Q10",
        "Prague",
        "Praha",
        "Havel was born in Prague .",
        "Václav Havel se narodil v Praha.",
        "Václav Havel se narodil v ",
        "Václav Havel se narodil v Praze.",
        "x",
        "Václav Havel se narodil v ",
        "Praze",
        "ERROR",
        "ERROR",
        "Praha",
    ],
]


def _release(tmp_path, as_zip=True):
    lines = ["\t".join(HEADER)]
    for row in ROWS:
        lines.append("\t".join(row))
    text = "\n".join(lines) + "\n"
    # a nogpt file: no chatgpt columns
    nogpt = [h for h in HEADER if not h.startswith("chatgpt")]
    keep = [HEADER.index(h) for h in nogpt]
    da = "\t".join(nogpt) + "\n" + "\t".join(ROWS[0][i] for i in keep).replace("Praha", "Prag") + "\n"
    if as_zip:
        path = tmp_path / "fixed_data.zip"
        with zipfile.ZipFile(path, "w") as z:
            z.writestr("fixed_data/cs_P19_20prompt.tsv", text)
            z.writestr("fixed_data/da_P19_nogpt.tsv", da)
            z.writestr("__MACOSX/fixed_data/._cs_P19_20prompt.tsv", "junk")
        return path
    folder = tmp_path / "fixed_data"
    folder.mkdir()
    (folder / "cs_P19_20prompt.tsv").write_text(text)
    (folder / "da_P19_nogpt.tsv").write_text(da)
    return folder


@pytest.mark.parametrize("as_zip", [True, False])
def test_release_becomes_facts_prompts_and_forms(tmp_path, as_zip):
    facts, prompts, forms = import_fluent_mlama(_release(tmp_path, as_zip), ["cs", "da"], ["P19"])
    assert list(facts["fact_id"]) == ["Q1|P19|Q10", "Q2|P19|Q10"]
    assert set(facts["dump"]) == {"fluent-mlama"} and list(facts["objects"].map(list)) == [["Q10"], ["Q10"]]
    got = {(r.fact_id, r.lang, r.verbalization): r.text for r in prompts.itertuples()}
    assert got == {
        ("Q1|P19|Q10", "cs", "template"): "Franz Kafka se narodil v",
        ("Q1|P19|Q10", "cs", "gt"): "Franz Kafka se narodil v",
        ("Q1|P19|Q10", "cs", "chatgpt"): "Franz Kafka se narodil v",
        ("Q2|P19|Q10", "cs", "template"): "Václav Havel se narodil v",
        ("Q2|P19|Q10", "cs", "gt"): "Václav Havel se narodil v",
        ("Q1|P19|Q10", "da", "template"): "Franz Kafka se narodil v",
        ("Q1|P19|Q10", "da", "gt"): "Franz Kafka se narodil v",
    }
    assert prompts["prompt_id"].is_unique
    assert set(prompts["template_id"]) >= {
        "P19.cs.fluent-template",
        "P19.cs.fluent-gt",
        "P19.cs.fluent-chatgpt",
    }
    q10 = {(r.lang, r.form): r.source for r in forms[forms["entity"] == "Q10"].itertuples()}
    assert q10 == {
        ("cs", "Praha"): "label",
        ("cs", "Praze"): "inflected",
        ("cs", "Hlavní město Praha"): "alias",
        ("da", "Prag"): "label",
        ("da", "Hlavní město Prag"): "alias",
        ("da", "Praze"): "inflected",
    }
    # every table fits its contract
    for name, table in [("facts", facts), ("prompts", prompts), ("entity_forms", forms)]:
        contracts.write(name, table, tmp_path / f"{name}.parquet")


def test_release_errors_name_the_problem(tmp_path):
    with pytest.raises(FluentError, match="source.path"):
        import_fluent_mlama(tmp_path / "nope.zip", ["cs"])
    with pytest.raises(FluentError, match=r"language\(s\) \['ru'\]"):
        import_fluent_mlama(_release(tmp_path), ["cs", "ru"])
    with pytest.raises(FluentError, match="unknown verbalization"):
        import_fluent_mlama(_release(tmp_path), ["cs"], verbalizations=["deepl"])


def test_suite_with_a_release_source_skips_the_dump(tmp_path):
    suite = {
        "kind": "multilingual",
        "dump": "20190201",
        "relations": ["P19"],
        "languages": ["cs"],
        "n_facts": 1,
        "source": {"format": "fluent-mlama", "path": str(_release(tmp_path)), "verbalizations": ["template"]},
    }
    # no dump tables exist: the release alone builds the suite
    facts, prompts, forms = build_suite(
        "fluent", suite, {}, DumpTables("missing/claims", "missing/entities", [])
    )
    assert len(facts) == 1 and list(prompts["verbalization"]) == ["template"]
    assert prompts["fact_id"].iloc[0] == facts["fact_id"].iloc[0]


# --- Table 1: R@n and mean rank per language x verbalization -------------------------------------

F1, F2 = "Q1|P36|Q10", "Q2|P36|Q20"
# best log-probability of each candidate entity per (fact, lang, verbalization)
LP = {
    (F1, "cs", "template"): {"Q10": -1.0, "Q20": -0.5, "Q30": -2.0, "Q40": -0.01},  # rank 2
    (F1, "cs", "gt"): {"Q10": -0.2, "Q20": -0.5, "Q30": -2.0, "Q40": -0.01},  # rank 1
    (F2, "cs", "template"): {"Q20": -3.0, "Q10": -1.0, "Q30": -2.0, "Q40": -0.01},  # rank 3
    (F2, "cs", "gt"): {"Q20": -1.0, "Q10": -1.0, "Q30": -2.0, "Q40": -0.01},  # tie: rank 2
    (F1, "ru", "template"): {"Q10": -1.0, "Q20": -2.0, "Q30": -3.0, "Q40": -4.0},  # rank 1
    (F1, "ru", "gt"): {"Q10": -2.0, "Q20": -1.0, "Q30": -3.0, "Q40": -4.0},  # rank 2
    (F2, "ru", "template"): {"Q20": -5.0, "Q10": -1.0, "Q30": -2.0, "Q40": -3.0},  # rank 4
    (F2, "ru", "gt"): {"Q20": -0.1, "Q10": -1.0, "Q30": -2.0, "Q40": -3.0},  # rank 1
}


def _scored():
    facts = pd.DataFrame({"fact_id": [F1, F2], "object": ["Q10", "Q20"], "objects": [["Q10"], ["Q20"]]})
    prompts, scores = [], []
    for (fact, lang, verb), lps in LP.items():
        pid = f"{fact}|{lang}|{verb}"
        prompts.append(
            dict(prompt_id=pid, fact_id=fact, lang=lang, verbalization=verb, style="statement", shots="none")
        )
        for entity, lp in lps.items():
            # a second, worse form per entity: only the best form counts
            scores += [(pid, entity, "a", lp, 2), (pid, entity, "b", lp - 5.0, 3)]
    scores = pd.DataFrame(scores, columns=["prompt_id", "entity", "form", "logprob", "n_tokens"])
    cands = []
    for fact, obj, others in [(F1, "Q10", ["Q20", "Q30"]), (F2, "Q20", ["Q10", "Q30"])]:
        cands.append(dict(fact_id=fact, entity=obj, role="object", strategy="object", rank=0, lang=None))
        for lang in ("cs", "ru"):
            cands += [
                dict(fact_id=fact, entity=e, role="distractor", strategy="pool", rank=i, lang=lang)
                for i, e in enumerate(others, 1)
            ]
        # Q40 is in the ru pool only: it must not compete in cs prompts (where it scores best)
        cands.append(dict(fact_id=fact, entity="Q40", role="distractor", strategy="pool", rank=3, lang="ru"))
    return facts, pd.DataFrame(prompts), scores, pd.DataFrame(cands)


def test_table1_recall_and_mean_rank_by_hand():
    facts, prompts, scores, cands = _scored()
    per_fact = ranking_per_fact(
        entity_scores(full("scores", scores)), prompts, cands, correct_entities(facts), recall_ns=(1, 3)
    )
    summary = summarize("m", per_fact, conform_dataset_table(pd.DataFrame()))
    table = table1(summary, ns=(1, 3), strategy="pool")
    # ranks by hand: cs template [2, 3], cs gt [1, 2], ru template [1, 4], ru gt [2, 1]
    expected = {
        ("R@1", "cs"): {"template": 0.0, "gt": 0.5},
        ("R@1", "ru"): {"template": 0.5, "gt": 0.5},
        ("R@3", "cs"): {"template": 1.0, "gt": 1.0},
        ("R@3", "ru"): {"template": 0.5, "gt": 1.0},
        ("mean rank", "cs"): {"template": 2.5, "gt": 1.5},
        ("mean rank", "ru"): {"template": 2.5, "gt": 1.5},
    }
    assert list(table.columns) == list(expected)
    for column, by_verb in expected.items():
        for verb, value in by_verb.items():
            assert table.loc[("m", verb), column] == pytest.approx(value), (column, verb)


def test_correct_set_is_the_row_own_label_and_inflections(tmp_path):
    """The authors' loader (processor.py ``_prepare_completions``) takes a row's own label and
    inflected objects as its correct set, not the forms its object got in other rows. Two rows of
    object Q10 (Praha): Kafka's sentences inflect it "Praze", Havel's "Prahou". Scores of the GT
    prompts (best first), distractor Q30 at -1.0 in both:

    Kafka: alias -0.1, Prahou -0.5, Praze -2.5, Praha -3.0. Own set {Praha, Praze}: best -2.5,
    rank 2 (pooled over both rows it would be Prahou's -0.5, rank 1); wide (+ the row's aliases):
    -0.1, rank 1.
    Havel: Praze -0.2, Prahou -1.5, Praha -3.0, alias -4.0. Own set {Praha, Prahou}: -1.5, rank 2
    (pooled: Praze's -0.2, rank 1); wide: -1.5, rank 2.
    """
    from factprobe.metrics.common import correct_form_scores, own_form_table
    from factprobe.metrics.ranking import ranking_per_prompt

    havel = list(ROWS[0])
    havel[0:3] = ["Q2", "Havel", "Václav Havel"]
    for col, text in [
        ("gt_prompt", "Václav Havel se narodil v "),
        ("chatgpt_prompt", "Václav Havel se narodil v "),
    ]:
        havel[HEADER.index(col)] = text
    havel[HEADER.index("gt_infl_object")] = havel[HEADER.index("chatgpt_infl_object")] = "Prahou"
    path = tmp_path / "fixed_data.zip"
    with zipfile.ZipFile(path, "w") as z:
        lines = ["\t".join(HEADER), "\t".join(ROWS[0]), "\t".join(havel)]
        z.writestr("fixed_data/cs_P19_20prompt.tsv", "\n".join(lines) + "\n")
    facts, prompts, forms = import_fluent_mlama(path, ["cs"], ["P19"])
    own = own_form_table(facts)
    kafka, hav = "Q1|P19|Q10", "Q2|P19|Q10"
    assert {(r.form, r.source) for r in own[own["fact_id"] == kafka].itertuples()} == {
        ("Praha", "label"),
        ("Praze", "inflected"),
        ("Hlavní město Praha", "alias"),
    }
    assert set(own[(own["fact_id"] == hav) & (own["source"] == "inflected")]["form"]) == {"Prahou"}
    # both inflections are forms of Q10 (scored as candidates for every prompt)
    assert {"Praze", "Prahou"} <= set(
        forms[(forms["entity"] == "Q10") & (forms["source"] == "inflected")]["form"]
    )
    gt = prompts[prompts["verbalization"] == "gt"].set_index("fact_id")["prompt_id"]
    lps = {
        kafka: {"Hlavní město Praha": -0.1, "Prahou": -0.5, "Praze": -2.5, "Praha": -3.0},
        hav: {"Praze": -0.2, "Prahou": -1.5, "Praha": -3.0, "Hlavní město Praha": -4.0},
    }
    rows = [(gt[f], f, "Q10", "cs", form, lp) for f, by in lps.items() for form, lp in by.items()]
    rows += [(gt[f], f, "Q30", "cs", "Brno", -1.0) for f in lps]
    scores = pd.DataFrame(rows, columns=["prompt_id", "fact_id", "entity", "lang", "form", "logprob"])
    scores["n_tokens"] = 1
    cands = pd.DataFrame(
        {
            "fact_id": [kafka, hav],
            "entity": "Q30",
            "role": "distractor",
            "strategy": "pool",
            "rank": 1,
            "lang": "cs",
        }
    )
    correct = correct_entities(facts)
    form_rows = pd.concat(
        [forms, pd.DataFrame({"entity": ["Q30"], "lang": ["cs"], "form": ["Brno"], "source": ["label"]})]
    )
    form_rows = full("forms", form_rows)

    def ranks(correct_set, own_rows):
        kept = correct_form_scores(scores, correct, form_rows, correct_set, own_rows)
        got = ranking_per_prompt(entity_scores(full("scores", kept)), prompts, cands, correct)
        return dict(zip(got["fact_id"], got["rank"], strict=True))

    assert ranks("table1", own) == {kafka: 2, hav: 2}
    assert ranks("wide", own) == {kafka: 1, hav: 2}
    # the pooled set (no per-row forms): every row's inflections count, both rank 1
    assert ranks("table1", None) == {kafka: 1, hav: 1}
