"""Prompt layouts of BELIEF-ICL (belief-myriadlama §3.1, App. D-E) and the MyriadLAMA template import."""

import json

import pytest
from factprobe.probes.build import DumpTables, build_suite
from factprobe.probes.layouts import demo_text, target_text, usable
from factprobe.probes.templates import Template

MP = "Predict the [MASK] in each sentence in one word."  # §3.1, the mask-prediction instruction

MASKED = Template("P527.en.m1", "P527", "en", "statement", "[Y] consists of [X].", object_final=False)
QUESTION = Template("P178.en.q1", "P178", "en", "question", "Who developed [X]? [Y].")
CLOZE = Template("P36.en.s1", "P36", "en", "statement", "The capital of [X] is [Y].")


def test_app_e_mask_prediction_lines():
    """App. E.1: "Q: [MASK] consists of LAUPT." / "A:" ; E.4 demonstration "A: Wehrmacht."."""
    assert target_text(MASKED, "LAUPT", "mask_qa") == "Q: [MASK] consists of LAUPT.\nA:"
    assert demo_text(MASKED, "Panzer Division Kempf", "Wehrmacht", "mask_qa") == (
        "Q: [MASK] consists of Panzer Division Kempf.\nA: Wehrmacht."
    )
    assert target_text(MASKED, "LAUPT", "mask_qa", mask="<mask>") == "Q: <mask> consists of LAUPT.\nA:"
    assert usable(MASKED, "mask_qa") and not usable(MASKED, "cloze") and not usable(MASKED, "qa")


def test_app_d_question_answer_lines():
    """App. D.1: QA-style templates "Who developed [X]? [Y]." ask "Q: Who developed X?" / "A:"."""
    assert target_text(QUESTION, "Windows", "qa") == "Q: Who developed Windows?\nA:"
    assert demo_text(QUESTION, "Windows", "Microsoft", "qa") == "Q: Who developed Windows?\nA: Microsoft."
    assert target_text(CLOZE, "France", "cloze") == "The capital of France is"
    with pytest.raises(ValueError, match="not one of"):
        target_text(CLOZE, "France", "prose")


def test_mask_qa_suite_from_myriadlama_templates(demo_tables, tmp_path):
    """A MyriadLAMA template set (mask style, [Y] first) asked in the App. E layout on demo facts."""
    records = [
        {"uuid": "a", "rel_uri": "P36", "template": "[Y] is the capital of [X] .", "is_manual": True},
        {"uuid": "b", "rel_uri": "P36", "template": "[Y] is the capital of [X] .", "is_manual": True},
        {"uuid": "a", "rel_uri": "P36", "template": "What is the capital of [X]? [Y].", "is_manual": False},
    ]
    path = tmp_path / "myriadlama.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    suite = {
        "kind": "multiprompt",
        "dump": "20190201",
        "relations": ["P36"],
        "templates": {"sets": ["myriad"]},
        "layout": "mask_qa",
        "few_shot": {"settings": ["zero-shot", "2-template"], "instruction": MP},
    }
    _, prompts, _ = build_suite(
        "belief",
        suite,
        {"myriad": {"format": "myriadlama", "path": str(path)}},
        DumpTables(
            str(demo_tables["20190201"] / "claims.parquet"),
            str(demo_tables["20190201"] / "entities.parquet"),
            [str(demo_tables[d] / "labels.parquet") for d in sorted(demo_tables)],
        ),
    )
    mine = prompts[(prompts.fact_id == "Q45|P36|Q597") & (prompts.template_id == "P36.en.myriad1m")]
    zero = mine[mine.shots == "zero-shot"].iloc[0]
    assert zero.text == "Q: [MASK] is the capital of Portugal.\nA:"
    assert zero.context == MP + "\n"
    shot = mine[mine.shots == "2-template"].iloc[0]
    lines = shot.context.splitlines()
    assert lines[0] == MP and len(lines) == 5
    assert (
        lines[1].startswith("Q: [MASK] is the capital of ")
        and lines[2].startswith("A: ")
        and lines[2][-1] == "."
    )
    # The question template is asked too (style question), both layouts of §3.1/App. D share the suite.
    assert set(prompts.template_id) == {"P36.en.myriad1m", "P36.en.myriad2"}
