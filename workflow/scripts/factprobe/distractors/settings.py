"""Effective distractor settings per suite, resolved once from the config at workflow start.

Precedence (config/README.md, section distractors): ``suites.<s>.distractors`` over
``distractors.by_kind.<kind>`` over the ``distractors`` section defaults.
"""

from __future__ import annotations


def suite_distractors(config: dict, suite: str) -> dict:
    """Strategies, n, pool size, search method, languages and dump of one suite."""
    section = config.get("distractors", {}) or {}
    block = config["suites"][suite]
    kind = section.get("by_kind", {}).get(block["kind"], {})
    own = block.get("distractors", {})
    merged = {
        key: own.get(key, kind.get(key, section.get(key, default)))
        for key, default in (
            ("strategies", ["random", "sem", "temp+sem"]),
            ("n", 10),
            ("pool_size", 50),
            ("search", section.get("sem", {}).get("search", "exact")),
        )
    }
    merged["languages"] = block.get("languages", ["en"])
    merged["dump"] = block["dump"]
    return merged


def retrieve_settings(config: dict, suite: str) -> dict:
    """Every setting the retrieve_distractors job of ``suite`` reads (a change reruns only it)."""
    section = config.get("distractors", {}) or {}
    cooccur = section.get("cooccur", {})
    return {
        **suite_distractors(config, suite),
        "cooccur_n": cooccur.get("n", 10),
        "cooccur_sides": cooccur.get("sides", ["object", "subject"]),
        "form_threshold": section.get("form_threshold", 90),
        "valid_ranks": section.get("valid_ranks", "non_deprecated"),
        "ef_search": section.get("sem", {}).get("hnsw", {}).get("ef_search", 200),
        # Objects merely absent from this dump are temporal distractors only on request (§3.3).
        "temporal_earlier_dump": section.get("temporal", {}).get("earlier_dump", False),
    }


def appropt_settings(config: dict, suite: str, model_row: dict) -> dict:
    """ApprOpt settings of ``suite`` for one models.tsv row (distractors paper §3.3)."""
    section = config.get("distractors", {}) or {}
    settings = suite_distractors(config, suite)
    appropt = section.get("appropt", {})
    return {
        "n": appropt.get("n", settings["n"]),
        "width": appropt.get("width"),
        "lang": appropt.get("lang", settings["languages"][0]),
        "styles": appropt.get("styles", ["completion", "statement", "question"]),
        "form_threshold": section.get("form_threshold", 90),
        "valid_ranks": section.get("valid_ranks", "non_deprecated"),
        "dump": settings["dump"],
        "model": {k: v for k, v in model_row.items() if not k.startswith("_")},
    }


def sem_index_settings(config: dict) -> dict:
    """Semantic index settings (``distractors.sem``)."""
    sem = (config.get("distractors", {}) or {}).get("sem", {})
    hnsw = sem.get("hnsw", {})
    return {
        "weighting": sem.get("weighting", "tfidf"),
        "reverse": sem.get("reverse_features", True),
        "bm25_k1": sem.get("bm25_k1", 1.2),
        "bm25_b": sem.get("bm25_b", 0.75),
        "hnsw_m": hnsw.get("M", 32),
        "ef_construction": hnsw.get("ef_construction", 200),
        "ef_search": hnsw.get("ef_search", 200),
        "post": hnsw.get("post", 2),
        "recall_queries": sem.get("recall_queries", 1000),
        "recall_k": sem.get("recall_k", 50),
    }
