"""Format and writing rules of the team's hand-written probing templates (resources/templates/).

The files are read with plain ``yaml.safe_load`` on purpose: this test checks the data against
the format of resources/templates/README.md independently of the loader in
factprobe/probes/templates.py. Object-final follows the format definition: ``[Y]`` followed only
by optional final punctuation (``.``, ``?``, ``!``, ``。``); the scored prompt is the text before
``[Y]``, right-stripped, and the continuation is " " + the object's form
(distractors paper §3.1, PROBELM Appendix D; docs/references.md).
"""

import functools
import itertools
import re
from collections import Counter, defaultdict
from pathlib import Path

import pytest
import yaml

TEMPLATES = Path(__file__).resolve().parents[2] / "resources" / "templates"
LANGUAGES = ["en", "de", "fr", "ru", "cs"]

# The LAMA T-REx relation list plus the country-level relations the suites use.
RELATIONS = {
    "P17",
    "P19",
    "P20",
    "P27",
    "P30",
    "P31",
    "P36",
    "P37",
    "P39",
    "P47",
    "P101",
    "P103",
    "P106",
    "P108",
    "P127",
    "P131",
    "P136",
    "P138",
    "P140",
    "P159",
    "P176",
    "P178",
    "P190",
    "P264",
    "P276",
    "P279",
    "P361",
    "P364",
    "P407",
    "P413",
    "P449",
    "P463",
    "P495",
    "P527",
    "P530",
    "P740",
    "P937",
    "P1001",
    "P1303",
    "P1376",
    "P1412",
    "P6",
    "P35",
    "P150",
    "P38",
    "P122",
}
# English only: the relations of the distractors paper's judged triples (§4.2, 24 of its 213 facts)
# that the LAMA list lacks; the suite that probes them is English.
JUDGED_RELATIONS = {"P54", "P69", "P102", "P166", "P1923"}
STYLES = {"statement": "s", "completion": "c", "question": "q"}
REQUIRED_KEYS = {"id", "relation", "style", "text"}
OPTIONAL_KEYS = {"answer", "object_final"}
# Minimum counts per relation: (object-final statements, completions, questions).
MINIMUM = {"en": (5, 3, 3), "de": (3, 1, 1), "fr": (3, 1, 1), "ru": (3, 1, 1), "cs": (3, 1, 1)}
FINAL = re.compile(r"\[Y\][.?!。]?$")


def is_object_final(text: str) -> bool:
    """True when [Y] is followed only by optional final punctuation."""
    return bool(FINAL.search(text.rstrip()))


@functools.cache
def load(lang: str) -> dict:
    with open(TEMPLATES / f"{lang}.yaml", encoding="utf-8") as handle:
        return yaml.safe_load(handle)


def templates(lang: str) -> list[dict]:
    return load(lang)["templates"]


def relations(lang: str) -> set[str]:
    return RELATIONS | JUDGED_RELATIONS if lang == "en" else RELATIONS


def words(text: str) -> set[str]:
    return set(re.findall(r"\[[XY]\]|\w+", text.casefold()))


def test_object_final_definition_on_hand_examples():
    assert is_object_final("The capital of [X] is the city of [Y].")
    assert is_object_final("Question: Which city is the capital of [X]? Answer: [Y]")
    assert is_object_final("[X] — столица: [Y]")
    assert not is_object_final("[X] hatte das Amt [Y] inne.")
    assert not is_object_final("[Y] is the capital of [X].")
    assert not is_object_final("[X] lies in [Y] and beyond.")


@pytest.mark.parametrize("lang", LANGUAGES)
def test_file_shape(lang):
    data = load(lang)
    assert set(data) == {"language", "templates"}, f"{lang}.yaml: top-level keys {set(data)}"
    assert data["language"] == lang
    assert isinstance(data["templates"], list) and data["templates"]
    for entry in data["templates"]:
        assert isinstance(entry, dict), entry
        keys = set(entry)
        assert REQUIRED_KEYS <= keys, f"{lang}.yaml {entry}: missing {REQUIRED_KEYS - keys}"
        assert keys <= REQUIRED_KEYS | OPTIONAL_KEYS, f"{lang}.yaml {entry['id']}: {keys}"
        assert all(isinstance(entry[k], str) for k in REQUIRED_KEYS), entry
        assert entry["style"] in STYLES, entry
        if "answer" in entry:
            assert entry["answer"] in {"object", "subject"}, entry
        if "object_final" in entry:
            assert entry["object_final"] is is_object_final(entry["text"]), entry


@pytest.mark.parametrize("lang", LANGUAGES)
def test_ids_unique_and_consistent(lang):
    entries = templates(lang)
    ids = [t["id"] for t in entries]
    assert len(ids) == len(set(ids)), [i for i, n in Counter(ids).items() if n > 1]
    numbers = defaultdict(list)
    for entry in entries:
        match = re.fullmatch(r"(P\d+)\.([a-z]+)\.([scq])(\d+)", entry["id"])
        assert match, f"{lang}.yaml: malformed id {entry['id']!r}"
        relation, id_lang, letter, number = match.groups()
        assert relation == entry["relation"], entry
        assert id_lang == lang, entry
        assert letter == STYLES[entry["style"]], entry
        numbers[relation, letter].append(int(number))
    # numbered 1..n per relation and style, so a reader can count at a glance
    for key, found in numbers.items():
        assert sorted(found) == list(range(1, len(found) + 1)), (lang, key, found)


@pytest.mark.parametrize("lang", LANGUAGES)
def test_every_relation_covered(lang):
    assert {t["relation"] for t in templates(lang)} == relations(lang)


@pytest.mark.parametrize("lang", LANGUAGES)
def test_slots(lang):
    for entry in templates(lang):
        text = entry["text"]
        assert text.count("[X]") == 1 and text.count("[Y]") == 1, entry
        # no other slot-like tokens, no X-FACTR morphology markup such as [Y.Loc]
        assert re.findall(r"\[[^\]]*\]", text) in (["[X]", "[Y]"], ["[Y]", "[X]"]), entry
        blanks = text.count("___")
        assert blanks == (1 if entry["style"] == "completion" else 0), entry


@pytest.mark.parametrize("lang", LANGUAGES)
def test_counts_per_relation_and_style(lang):
    need_final, need_c, need_q = MINIMUM[lang]
    final = Counter()
    styles = Counter()
    for entry in templates(lang):
        styles[entry["relation"], entry["style"]] += 1
        if entry["style"] == "statement" and is_object_final(entry["text"]):
            final[entry["relation"]] += 1
    for relation in relations(lang):
        assert final[relation] >= need_final, (lang, relation, final[relation])
        assert styles[relation, "completion"] >= need_c, (lang, relation)
        assert styles[relation, "question"] >= need_q, (lang, relation)


@pytest.mark.parametrize("lang", LANGUAGES)
def test_completions_and_questions_end_with_the_answer_cue(lang):
    for entry in templates(lang):
        if entry["style"] == "statement":
            continue
        text = entry["text"]
        assert text.endswith(" [Y]"), entry
        prompt = text[: text.index("[Y]")].rstrip()
        assert prompt.endswith(":"), entry  # "Answer: [Y]", "A: [Y]", "Réponse : [Y]" ...
        if entry["style"] == "completion":
            assert "___" in prompt and "[X]" in prompt, entry
        else:
            assert "?" in prompt and prompt.index("[X]") < prompt.rindex("?"), entry


@pytest.mark.parametrize("lang", LANGUAGES)
def test_spacing_and_punctuation(lang):
    for entry in templates(lang):
        text = entry["text"]
        assert text == text.strip() and "  " not in text and "\n" not in text, entry
        # the continuation " " + form supplies the space, so [Y] must follow a space
        assert text[text.index("[Y]") - 1] == " ", entry
        after_x = text[text.index("[X]") + 3 : text.index("[X]") + 4]
        assert after_x in {"", " ", ",", ".", ":", "?", "'", "!", ";"}, entry
        if entry["style"] == "statement":
            assert text[-1] in ".!?", entry
            assert text[0].isupper() or text.startswith("[X]"), entry


@pytest.mark.parametrize("lang", LANGUAGES)
def test_no_duplicate_texts(lang):
    normalised = Counter(" ".join(re.findall(r"\[[XY]\]|\w+", t["text"].casefold())) for t in templates(lang))
    assert [text for text, n in normalised.items() if n > 1] == []


@pytest.mark.parametrize("lang", LANGUAGES)
def test_statements_of_a_relation_are_not_near_copies(lang):
    by_relation = defaultdict(list)
    for entry in templates(lang):
        if entry["style"] == "statement":
            by_relation[entry["relation"]].append(entry["text"])
    for relation, texts in by_relation.items():
        for a, b in itertools.combinations(texts, 2):
            overlap = len(words(a) & words(b)) / len(words(a) | words(b))
            assert overlap < 0.85, (lang, relation, a, b, round(overlap, 2))


def test_english_statements_vary_in_wording():
    # the object-final statements of a relation start in at least 4 different ways and reach the
    # object through at least 3 different two-word cues (not one frame with synonyms swapped in)
    by_relation = defaultdict(list)
    for entry in templates("en"):
        if entry["style"] == "statement" and is_object_final(entry["text"]):
            by_relation[entry["relation"]].append(entry["text"])
    for relation, texts in by_relation.items():
        openings = {" ".join(t.split()[:2]) for t in texts}
        cues = {" ".join(t[: t.index("[Y]")].split()[-2:]) for t in texts}
        assert len(openings) >= 4 and len(cues) >= 3, (relation, openings, cues)


def test_relation_direction_on_hand_checked_examples():
    # [X] is the subject, [Y] the value: capital of (P1376) puts the city first, capital (P36)
    # asks for the city; contains (P150) has the larger territory as subject.
    by_id = {t["id"]: t["text"] for t in templates("en")}
    assert by_id["P1376.en.s3"] == "[X] serves as the capital of [Y]."
    assert by_id["P36.en.s1"] == "The capital of [X] is the city of [Y]."
    assert by_id["P150.en.s2"] == "One of the administrative divisions of [X] is [Y]."
    assert by_id["P279.en.s2"] == "[X] is a type of [Y]."
    assert by_id["P527.en.s1"] == "One of the parts of [X] is [Y]."
    assert by_id["P361.en.s3"] == "[X] is a component of [Y]."


# The relations of the 213 triples of DistFactAssessLM's wikidata_triples_to_human_scores.json
# (the distractors paper's §4.2 human scores), listed by hand from that file.
JUDGED_FILE_RELATIONS = {
    *"P17 P19 P20 P27 P30 P31 P36 P37 P39 P47 P54 P69 P101 P102 P103 P106 P108 P127 P131".split(),
    *"P136 P138 P140 P159 P166 P176 P178 P190 P264 P276 P279 P361 P364 P407 P413 P449".split(),
    *"P463 P495 P527 P530 P740 P937 P1001 P1303 P1376 P1412 P1923".split(),
}


def test_every_judged_relation_has_five_english_statements():
    """§4.2: 5 cloze sentences per judged fact, so each relation needs 5 object-final statements."""
    final = Counter(
        t["relation"] for t in templates("en") if t["style"] == "statement" and is_object_final(t["text"])
    )
    assert len(JUDGED_FILE_RELATIONS) == 46
    assert {r: final[r] for r in JUDGED_FILE_RELATIONS if final[r] < 5} == {}
