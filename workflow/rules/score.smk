# score stage: results/scores/{suite}/{model}.parquet (+ .generations.parquet), docs/contracts.md
import re  # noqa: E402

SCORING = config.get("scoring", {})
SCORE_SHARDS = SCORING.get("shards", 1)
MODEL_ROWS = {row["name"]: row for row in MODELS}
SCORE_MODELS = SCORING.get("models") or sorted(MODEL_ROWS)
# Helper modules are not tracked by Snakemake's code trigger; as inputs, an edit reruns scoring.
SCORING_LIB = sorted(
    str(p.relative_to(workflow.basedir))
    for p in (Path(workflow.basedir) / "workflow/scripts/factprobe/scoring").glob(
        "*.py"
    )
)


def suite_uses_appropt(suite):
    """ApprOpt distractors are per model; precedence as in docs/config/distractors.md."""
    block = config.get("suites", {}).get(suite, {})
    stage = config.get("distractors", {})
    for level in (
        block.get("distractors", {}),
        stage.get("by_kind", {}).get(block.get("kind"), {}),
        stage,
    ):
        if "strategies" in level:
            return "appropt" in level["strategies"]
    return False


def score_inputs(wildcards):
    """Probe tables of the suite (+ translations, + per-model ApprOpt), the model, the library."""
    suite = config["suites"][wildcards.suite]
    probes = f"results/probes/{wildcards.suite}"
    files = {
        "prompts": f"{probes}/prompts.parquet",
        "candidates": f"{probes}/candidates.parquet",
        "forms": f"{probes}/forms.parquet",
        "lib": SCORING_LIB,
    }
    if suite.get("kind") == "multilingual" and SCORING.get("include_translated", True):
        files["translated_prompts"] = f"{probes}/translated_prompts.parquet"
        files["translated_forms"] = f"{probes}/translated_forms.parquet"
    if suite_uses_appropt(wildcards.suite):
        files["appropt"] = f"{probes}/appropt/{wildcards.model}.parquet"
        files["appropt_forms"] = f"{probes}/appropt/{wildcards.model}.forms.parquet"
    if MODEL_ROWS[wildcards.model]["source"] == "builtin:control":
        files["control"] = "results/models/control"
    return files


def generate_inputs(wildcards):
    """Prompts of the suite and the model (generation needs no candidates)."""
    files = {
        "prompts": f"results/probes/{wildcards.suite}/prompts.parquet",
        "lib": SCORING_LIB,
    }
    if MODEL_ROWS[wildcards.model]["source"] == "builtin:control":
        files["control"] = "results/models/control"
    return files


def score_model_row(wildcards):
    """The models.tsv row of the job's model (a change to it reruns that model only)."""
    return MODEL_ROWS[wildcards.model]


def score_shard_files(wildcards):
    """Every shard of one (suite, model) (scores and top-k tables), gathered by score_suite."""
    return {
        kind: expand(
            "results/scores/{suite}/shards/{model}/{shard}" + ext,
            suite=wildcards.suite,
            model=wildcards.model,
            shard=range(SCORE_SHARDS),
        )
        for kind, ext in (("shards", ".parquet"), ("topk_shards", ".topk.parquet"))
    }


def score_targets():
    """Score tables of every configured (suite, model), and generations for `generate: true` suites."""
    suites = config.get("suites", {})
    files = expand(
        "results/scores/{suite}/{model}.parquet",
        suite=sorted(suites),
        model=SCORE_MODELS,
    )
    for name, suite in sorted(suites.items()):
        if suite.get("generate"):
            files += expand(
                "results/scores/{suite}/{model}.generations.parquet",
                suite=name,
                model=SCORE_MODELS,
            )
    return files


rule score_shard:
    input:
        unpack(score_inputs),
    output:
        scores=temp("results/scores/{suite}/shards/{model}/{shard}.parquet"),
        topk=temp("results/scores/{suite}/shards/{model}/{shard}.topk.parquet"),
    log:
        "logs/score_shard/{suite}/{model}/{shard}.log",
    benchmark:
        "benchmarks/score_shard/{suite}/{model}/{shard}.tsv"
    wildcard_constraints:
        model="|".join(re.escape(m) for m in MODEL_ROWS),
        shard=r"\d+",
    conda:
        "../../environment.yml"
    threads: 2
    resources:
        gpu=1,
        mem_mb=8000,
        runtime=120,
    params:
        model=score_model_row,
        shard="{shard}",
        shards=SCORE_SHARDS,
        end_marker=SCORING.get("end_marker", "eos"),
        token_budget=SCORING.get("token_budget", 4096),
        no_space_languages=SCORING.get(
            "no_space_languages", ["zh", "ja", "th", "lo", "km", "my", "bo"]
        ),
        cache="results/cache/scores/{model}",
        topk=SCORING.get("topk", 10),
    script:
        "../scripts/score_shard.py"


rule score_suite:
    input:
        unpack(score_shard_files),
    output:
        scores="results/scores/{suite}/{model}.parquet",
        topk="results/scores/{suite}/{model}.topk.parquet",
    log:
        "logs/score_suite/{suite}/{model}.log",
    wildcard_constraints:
        model="|".join(re.escape(m) for m in MODEL_ROWS),
    conda:
        "../../environment.yml"
    resources:
        mem_mb=4000,
    script:
        "../scripts/score_suite.py"


rule generate_suite:
    input:
        unpack(generate_inputs),
    output:
        generations="results/scores/{suite}/{model}.generations.parquet",
    log:
        "logs/generate_suite/{suite}/{model}.log",
    benchmark:
        "benchmarks/generate_suite/{suite}/{model}.tsv"
    wildcard_constraints:
        model="|".join(re.escape(m) for m in MODEL_ROWS),
    conda:
        "../../environment.yml"
    threads: 2
    resources:
        gpu=1,
        mem_mb=8000,
        runtime=120,
    params:
        model=score_model_row,
        samples=SCORING.get("samples", 10),
        max_new_tokens=SCORING.get("max_new_tokens", 12),
        batch_size=SCORING.get("generation_batch_size", 16),
    script:
        "../scripts/generate_suite.py"
