"""BELIEF §3.2 answer matching (the one matcher, factprobe.metrics.belief): the paper's examples.

Moved from the tests of the unused copy that lived in factprobe.scoring.generate.
"""

from factprobe.metrics.belief import normalize, one_way_match, two_way_match


def matches(answer: str, generated: str, lang: str = "en", bidirectional: bool = False) -> bool:
    a, g = normalize(answer, lang), normalize(generated, lang)
    return two_way_match(a, g) if bidirectional else one_way_match(g, a)


def test_normalize_tokenizes_lowercases_and_strips_plural_s():
    assert normalize("A guitar!") == ("a", "guitar")
    assert normalize("guitars") == ("guitar",)
    assert normalize("Paris") == ("paris",) == normalize("paris")  # "-is" is not a plural
    assert normalize("Gitarren", lang="de") == ("gitarren",)  # only English is lemmatised


def test_matching_paper_examples():
    # "John Lennon can play [MASK]": both "guitars" and "a guitar" are correct (§3.2)
    assert matches("guitar", "a guitar")
    assert matches("guitar", "guitars")
    assert matches("guitars", "a guitar")
    # one-directional for Acc@1: the gold must be inside the generation, not the reverse
    assert matches("United Kingdom", "the United Kingdom of Great Britain")
    assert not matches("United Kingdom of Great Britain", "United Kingdom")
    assert matches("United Kingdom of Great Britain", "United Kingdom", bidirectional=True)
    # contiguous token lists, not bags of words
    assert not matches("New York", "York New")
    assert not matches("", "anything")
