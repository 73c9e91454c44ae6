# distractors stage: semantic index per dump, candidates + forms per suite, ApprOpt per model
# (docs/contracts.md, docs/config/distractors.md).
import re  # noqa: E402

DISTRACTORS = config.get("distractors", {})
DISTRACTOR_MODELS = {row["name"]: row for row in MODELS}
# Model names may contain dots, so "{model}.parquet" alone would also match "x.forms.parquet".
DISTRACTOR_MODEL_NAMES = (
    "|".join(re.escape(name) for name in DISTRACTOR_MODELS) or "none"
)
# Helper modules are not tracked by Snakemake's code trigger; as inputs, an edit reruns the stage.
DISTRACTORS_LIB = sorted(
    str(p.relative_to(workflow.basedir))
    for p in (Path(workflow.basedir) / "workflow/scripts/factprobe/distractors").glob(
        "*.py"
    )
)


def distractor_settings(suite):
    """Strategies and sizes of a suite: suites.<s>.distractors > distractors.by_kind > defaults."""
    block = config["suites"][suite]
    kind = DISTRACTORS.get("by_kind", {}).get(block.get("kind"), {})
    own = block.get("distractors", {})
    merged = {
        key: own.get(key, kind.get(key, DISTRACTORS.get(key, default)))
        for key, default in (
            ("strategies", ["random", "sem", "temp"]),
            ("n", 10),
            ("pool_size", 50),
            ("search", DISTRACTORS.get("sem", {}).get("search", "exact")),
        )
    }
    merged["languages"] = block.get("languages", ["en"])
    merged["dump"] = block["dump"]
    return merged


def retrieve_settings(wildcards):
    """Every setting retrieve_distractors reads, so a change reruns only the affected suites."""
    cooccur = DISTRACTORS.get("cooccur", {})
    return {
        **distractor_settings(wildcards.suite),
        "cooccur_n": cooccur.get("n", 10),
        "cooccur_sides": cooccur.get("sides", ["object", "subject"]),
        "form_threshold": DISTRACTORS.get("form_threshold", 90),
        "valid_ranks": DISTRACTORS.get("valid_ranks", "non_deprecated"),
        "ef_search": DISTRACTORS.get("sem", {}).get("hnsw", {}).get("ef_search", 200),
    }


def omega_inputs(suite):
    """Tables Ω(f) needs: the suite's probes, types of every enabled dump, the suite's claims."""
    dump = config["suites"][suite]["dump"]
    return {
        "facts": f"results/probes/{suite}/facts.parquet",
        "entity_forms": f"results/probes/{suite}/entity_forms.parquet",
        "types": expand(rules.extract_dump.output.types, dump=ENABLED),
        "claims": f"results/wikidata/{dump}/claims.parquet",
        "lib": DISTRACTORS_LIB,
    }


def retrieve_inputs(wildcards):
    """Ω tables, plus the semantic index (sem, temp) and the temporal view (temp) when used."""
    files = omega_inputs(wildcards.suite)
    settings = distractor_settings(wildcards.suite)
    if {"sem", "temp"} & set(settings["strategies"]):
        files["index"] = f"results/distractors/index/{settings['dump']}"
    if "temp" in settings["strategies"]:
        files["temporal"] = f"results/temporal/{settings['dump']}/temporal.parquet"
    return files


def appropt_inputs(wildcards):
    """Ω tables, the suite's prompts, and the control model directory when it is the model."""
    files = omega_inputs(wildcards.suite)
    files["prompts"] = f"results/probes/{wildcards.suite}/prompts.parquet"
    if DISTRACTOR_MODELS[wildcards.model]["source"] == "builtin:control":
        files["control"] = "results/models/control"
    return files


def appropt_settings(wildcards):
    """ApprOpt settings of the suite and the models.tsv row of the model."""
    settings = distractor_settings(wildcards.suite)
    appropt = DISTRACTORS.get("appropt", {})
    row = {k: v for k, v in DISTRACTOR_MODELS[wildcards.model].items() if k != "_line"}
    return {
        "n": appropt.get("n", settings["n"]),
        "width": appropt.get("width"),
        "lang": appropt.get("lang", settings["languages"][0]),
        "styles": appropt.get("styles", ["completion", "statement", "question"]),
        "form_threshold": DISTRACTORS.get("form_threshold", 90),
        "valid_ranks": DISTRACTORS.get("valid_ranks", "non_deprecated"),
        "dump": settings["dump"],
        "model": row,
    }


def sem_index_settings(wildcards):
    """Index settings (distractors.sem)."""
    sem = DISTRACTORS.get("sem", {})
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


rule build_sem_index:
    input:
        claims=rules.extract_dump.output.claims,
        lib="workflow/scripts/factprobe/distractors/semantic.py",
    output:
        index=directory("results/distractors/index/{dump}"),
    log:
        "logs/build_sem_index/{dump}.log",
    benchmark:
        "benchmarks/build_sem_index/{dump}.tsv"
    conda:
        "../../environment.yml"
    threads: 2
    resources:
        mem_mb=4000,
    params:
        sem=sem_index_settings,
    script:
        "../scripts/build_sem_index.py"


rule retrieve_distractors:
    input:
        unpack(retrieve_inputs),
    output:
        candidates="results/probes/{suite}/candidates.parquet",
        forms="results/probes/{suite}/forms.parquet",
    log:
        "logs/retrieve_distractors/{suite}.log",
    benchmark:
        "benchmarks/retrieve_distractors/{suite}.tsv"
    conda:
        "../../environment.yml"
    resources:
        mem_mb=4000,
    params:
        settings=retrieve_settings,
    script:
        "../scripts/retrieve_distractors.py"


rule appropt_distractors:
    input:
        unpack(appropt_inputs),
    output:
        candidates="results/probes/{suite}/appropt/{model}.parquet",
        forms="results/probes/{suite}/appropt/{model}.forms.parquet",
    log:
        "logs/appropt_distractors/{suite}/{model}.log",
    benchmark:
        "benchmarks/appropt_distractors/{suite}/{model}.tsv"
    wildcard_constraints:
        model=DISTRACTOR_MODEL_NAMES,
    conda:
        "../../environment.yml"
    resources:
        mem_mb=8000,
        gpu=1,
    params:
        settings=appropt_settings,
    script:
        "../scripts/appropt_distractors.py"
