"""BELIEF-ICL few-shot contexts (belief-myriadlama §3.1) on the demo dumps."""

from pathlib import Path

import pandas as pd
import pytest
from factprobe.probes.build import DumpTables, build_suite
from factprobe.probes.fewshot import context, parse_setting
from factprobe.probes.templates import load_templates

ROOT = Path(__file__).resolve().parents[2]
TEMPLATES = ROOT / "tests" / "data" / "templates"
INSTRUCTION = "Complete each sentence with the correct fact."
SUITE = {
    "kind": "multiprompt",
    "dump": "20190201",
    "relations": ["P36", "P47", "P530"],
    "n_facts": None,  # every candidate fact, so the demonstration pool is the facts table
    "templates": {"styles": ["statement", "question"]},
    "few_shot": {
        "settings": ["none", "zero-shot", "3-random", "3-relation", "3-template"],
        "instruction": INSTRUCTION,
    },
}


def make(demo_tables):
    return build_suite(
        "icl",
        SUITE,
        {"team": {"format": "yaml", "path": str(TEMPLATES)}},
        DumpTables(
            str(demo_tables["20190201"] / "claims.parquet"),
            str(demo_tables["20190201"] / "entities.parquet"),
            [str(demo_tables[d] / "labels.parquet") for d in sorted(demo_tables)],
        ),
    )


@pytest.fixture(scope="module")
def suite(demo_tables):
    return make(demo_tables)


def test_parse_setting():
    assert parse_setting("4-relation") == ("relation", 4)
    assert parse_setting("zero-shot") == ("zero-shot", 0)
    assert parse_setting("none") == ("none", 0)
    with pytest.raises(ValueError, match="few-shot setting '4-shots'"):
        parse_setting("4-shots")


def test_one_prompt_per_setting(suite):
    _, prompts, _ = suite
    counts = prompts.groupby("shots").size()
    assert counts.nunique() == 1 and set(counts.index) == {
        "none",
        "zero-shot",
        "3-random",
        "3-relation",
        "3-template",
    }


def test_contexts_shape(suite):
    facts, prompts, _ = suite
    per_relation = facts.groupby("property").size()
    none = prompts[prompts.shots == "none"]
    assert (none.context == "").all()
    zero = prompts[prompts.shots == "zero-shot"]
    assert (zero.context == INSTRUCTION + "\n").all()
    for shots in ("3-random", "3-relation", "3-template"):
        rows = prompts[prompts.shots == shots]
        for ctx, demos, prop in zip(rows.context, rows.demos, rows.property, strict=True):
            lines = ctx.split("\n")
            assert lines[0] == INSTRUCTION and lines[-1] == "" and len(lines) == 2 + len(demos)
            # random: any other fact; relation/template: the relation's facts minus the target itself
            assert len(demos) == (3 if shots == "3-random" else min(3, per_relation[prop] - 1))


def test_no_demonstration_is_the_target(suite):
    _, prompts, _ = suite
    shots = prompts[prompts.demos.map(len) > 0]
    assert len(shots) > 0
    for fact_id, demos in zip(shots.fact_id, shots.demos, strict=True):
        s, p, _ = fact_id.split("|")
        for demo in demos:
            ds, dp, _ = demo.split("|")
            assert demo != fact_id and (ds, dp) != (s, p)
        assert len(set(demos)) == len(demos)


def test_demonstrations_follow_the_setting(suite):
    facts, prompts, _ = suite
    templates = {t.id: t for t in load_templates(TEMPLATES / "en.yaml")}
    for row in prompts[prompts.shots == "3-template"].itertuples():
        template = templates[row.template_id]
        lines = row.context.split("\n")[1:-1]
        for line, demo in zip(lines, row.demos, strict=True):
            assert demo.split("|")[1] == row.property
            # the target's template, filled: starts with its text before the first slot
            assert line.startswith(template.text.split("[")[0])
            assert not line.endswith("Answer:") and "[Y]" not in line
    for row in prompts[prompts.shots == "3-relation"].itertuples():
        assert all(d.split("|")[1] == row.property for d in row.demos)
    relations = {d.split("|")[1] for ds in prompts[prompts.shots == "3-random"].demos for d in ds}
    assert len(relations) > 1  # random demonstrations span relations


def test_demonstration_sentence_by_hand(suite, demo_tables):
    _, prompts, _ = suite
    row = prompts[(prompts.shots == "3-template") & (prompts.template_id == "P36.en.s1")].iloc[0]
    # Every demo line is "The capital of <subject label> is <object label>." for its own fact.
    labels = pd.concat([pd.read_parquet(demo_tables[d] / "labels.parquet") for d in sorted(demo_tables)])
    en = labels[(labels.lang == "en") & ~labels.is_alias].drop_duplicates("id").set_index("id")["text"]
    for line, demo in zip(row.context.split("\n")[1:-1], row.demos, strict=True):
        s, _, o = demo.split("|")
        assert line == f"The capital of {en[int(s[1:])]} is {en[int(o[1:])]}."


def test_demonstrations_are_deterministic(suite, demo_tables):
    _, prompts, _ = suite
    _, again, _ = make(demo_tables)
    assert prompts.context.tolist() == again.context.tolist()
    assert prompts.demos.map(list).tolist() == again.demos.map(list).tolist()
    # different targets get different demonstrations (hash of the prompt key, not a fixed list)
    ctx = prompts[prompts.shots == "3-random"].context
    assert ctx.nunique() > 1


def test_context_helper():
    assert context("Do it.", [], "none") == ""
    assert context("Do it.", [], "zero-shot") == "Do it.\n"


def test_large_pool_uses_hashed_probes():
    from factprobe.probes.fewshot import SORT_LIMIT, DemoPool
    from factprobe.probes.templates import Template

    n = 10 * SORT_LIMIT
    facts = pd.DataFrame(
        {
            "fact_id": [f"Q{i}|P1|Q{i + n}" for i in range(n)],
            "subject": [f"Q{i}" for i in range(n)],
            "property": "P1",
            "object": [f"Q{i + n}" for i in range(n)],
        }
    )
    labels = {(f"Q{i}", "en"): f"e{i}" for i in range(2 * n)}
    template = Template("P1.en.s1", "P1", "en", "statement", "[X] likes [Y].")
    pool = DemoPool(facts, labels, {("en", "P1", "statement"): [template]})
    demos = pool.draw("relation", 8, template, "Q3", "P1", "en", ("k", "Q3|P1|Q643"))
    ids = [d.fact_id for d in demos]
    assert len(ids) == 8 == len(set(ids)) and "Q3|P1|Q643" not in ids
    s, _, o = ids[0].split("|")
    assert demos[0].text == f"E{s[1:]} likes e{o[1:]}."  # capitalised sentence start
    again = pool.draw("relation", 8, template, "Q3", "P1", "en", ("k", "Q3|P1|Q643"))
    assert [d.fact_id for d in again] == ids
    other = pool.draw("relation", 8, template, "Q4", "P1", "en", ("k", "Q4|P1|Q644"))
    assert [d.fact_id for d in other] != ids


def test_instruction_per_language(demo_tables):
    suite = dict(SUITE, languages=["en", "de"], relations=["P36"], templates={"styles": ["statement"]})
    suite["few_shot"] = {"settings": ["zero-shot"], "instruction": {"en": "Complete.", "de": "Ergänze."}}
    sets = {"team": {"format": "yaml", "path": str(TEMPLATES)}}
    args = (
        DumpTables(
            str(demo_tables["20190201"] / "claims.parquet"),
            str(demo_tables["20190201"] / "entities.parquet"),
            [str(demo_tables[d] / "labels.parquet") for d in sorted(demo_tables)],
        ),
    )
    _, prompts, _ = build_suite("icl", suite, sets, *args)
    assert set(zip(prompts.lang, prompts.context, strict=True)) == {
        ("en", "Complete.\n"),
        ("de", "Ergänze.\n"),
    }
    suite["few_shot"]["instruction"] = {"en": "Complete."}
    with pytest.raises(ValueError, match=r"no instruction for language\(s\) \['de'\]"):
        build_suite("icl", suite, sets, *args)


def test_relation_and_random_demonstrations_take_templates_of_any_style():
    """§3.1 X-relation: "the same relation but with random templates"; App. E.3 puts question
    templates ("What group is pharmacy a part of? [MASK].") before a statement target.
    Relation P1 has a statement (s1) and a question (q1) template; the target is s1.
    A demonstration's template is [q1, s1][stable_hash("shot-template", *key, fact) mod 2] (both
    styles, in id order), worked out here per demonstration; ``template`` keeps the target's."""
    from factprobe.hashing import stable_hash
    from factprobe.probes.fewshot import DemoPool
    from factprobe.probes.templates import Template

    n = 12
    facts = pd.DataFrame(
        {
            "fact_id": [f"Q{i}|P1|Q{i + n}" for i in range(n)],
            "subject": [f"Q{i}" for i in range(n)],
            "property": "P1",
            "object": [f"Q{i + n}" for i in range(n)],
        }
    )
    labels = {(f"Q{i}", "en"): f"e{i}" for i in range(2 * n)}
    s1 = Template("P1.en.s1", "P1", "en", "statement", "[X] likes [Y].")
    q1 = Template("P1.en.q1", "P1", "en", "question", "Whom does [X] like? [Y].")
    pool = DemoPool(facts, labels, {("en", "P1", "statement"): [s1], ("en", "P1", "question"): [q1]})
    styles = set()
    for setting in ("relation", "random"):
        for target in range(4):
            key = ("k", f"Q{target}|P1|Q{target + n}")
            for demo in pool.draw(setting, 3, s1, f"Q{target}", "P1", "en", key, "mask_qa"):
                want = [q1, s1][stable_hash("shot-template", *key, demo.fact_id) % 2]
                assert demo.template == want
                styles.add(demo.template.style)
    assert styles == {"statement", "question"}
    demos = pool.draw("template", 3, s1, "Q0", "P1", "en", ("k", "Q0|P1|Q12"), "mask_qa")
    assert {d.template for d in demos} == {s1}


def test_relation_demonstrations_mix_styles_on_the_demo_suite(suite):
    """On the demo suite (statement and question templates): some 3-relation statement target is
    preceded by a question demonstration ("Question: ..."), as App. E.3."""
    _, prompts, _ = suite
    rows = prompts[(prompts.shots == "3-relation") & (prompts["style"] == "statement")]
    lines = [line for ctx in rows.context for line in ctx.split("\n")[1:-1]]
    assert any(line.startswith("Question:") for line in lines)
    assert any(not line.startswith("Question:") for line in lines)
