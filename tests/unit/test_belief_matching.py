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


def test_tokenizer_normalizer_is_the_tokenizers_own():
    """BELIEF §2.1 (vocabulary mode): two strings are one token to a model when its tokenizer
    normalizes them alike. Real WordPiece vocabularies: the uncased one lower-cases and strips
    accents (so its "sao" is "São"), the cased one keeps both; each maps a word to the token the
    normalization names (checked by tokenizing); a tokenizer without a normalizer strips only."""
    from types import SimpleNamespace

    from factprobe.lm.encoding import tokenizer_normalizer
    from transformers import BertTokenizerFast

    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "japan", "sao", "Japan", "São"]
    vocab = {w: i for i, w in enumerate(words)}
    uncased = BertTokenizerFast(vocab=vocab, do_lower_case=True)
    cased = BertTokenizerFast(vocab=vocab, do_lower_case=False)
    assert len(uncased) == len(cased) == 9
    low, keep = tokenizer_normalizer(uncased), tokenizer_normalizer(cased)
    assert low(" Japan") == low("japan") == "japan" == uncased.tokenize("Japan")[0]
    assert low("São") == "sao" == uncased.tokenize("São")[0]
    assert keep(" Japan") == "Japan" != keep("japan") and cased.tokenize("São") == ["São"]
    assert tokenizer_normalizer(SimpleNamespace(do_lower_case=True))(" Japan ") == "japan"
    assert tokenizer_normalizer(SimpleNamespace())(" Japan ") == "Japan"
