"""Distractor settings precedence: suite block > distractors.by_kind > section defaults."""

from factprobe.distractors.settings import appropt_settings, retrieve_settings, suite_distractors

CONFIG = {
    "distractors": {
        "strategies": ["random", "sem"],
        "n": 7,
        "by_kind": {"plausibility": {"strategies": ["cooccur"]}},
        "sem": {"search": "hnsw", "hnsw": {"ef_search": 64}},
        "appropt": {"width": 12},
        "form_threshold": 85,
    },
    "suites": {
        "k": {"kind": "knowledge", "dump": "20190201"},
        "p": {"kind": "plausibility", "dump": "20190201", "languages": ["en", "de"]},
        "own": {"kind": "plausibility", "dump": "20141201", "distractors": {"strategies": ["pool"], "n": 3}},
    },
}


def test_precedence_of_suite_kind_and_defaults():
    assert suite_distractors(CONFIG, "k") == {
        "strategies": ["random", "sem"],
        "n": 7,
        "pool_size": 50,
        "search": "hnsw",
        "languages": ["en"],
        "dump": "20190201",
    }
    assert suite_distractors(CONFIG, "p")["strategies"] == ["cooccur"]
    assert suite_distractors(CONFIG, "p")["n"] == 7
    own = suite_distractors(CONFIG, "own")
    assert (own["strategies"], own["n"], own["dump"]) == (["pool"], 3, "20141201")


def test_job_settings_carry_section_values():
    retrieve = retrieve_settings(CONFIG, "p")
    assert (retrieve["form_threshold"], retrieve["ef_search"], retrieve["languages"]) == (85, 64, ["en", "de"])
    appropt = appropt_settings(CONFIG, "k", {"name": "m", "source": "x", "_line": 2})
    assert (appropt["width"], appropt["n"], appropt["lang"]) == (12, 7, "en")
    assert appropt["model"] == {"name": "m", "source": "x"}
