# diff stage (docs/contracts.md): WikiFactDiff-style changes between consecutive enabled dumps
# and a temporal view per dump. Helpers first; DIFF_TARGETS (for `rule all`) at the end.

#: "{old}_{new}" for each consecutive pair of enabled dumps (ENABLED is sorted by date).
DIFF_PAIRS = [f"{old}_{new}" for old, new in zip(ENABLED[:-1], ENABLED[1:])]


def _extract_path(name, dump):
    """Path of extraction table ``name`` of ``dump``; the dump must be registered."""
    if dump not in DUMP_ROWS:
        raise ValueError(
            f"{config['dumps']}: dump {dump} is not registered; add a row or fix the target"
        )
    return getattr(rules.extract_dump.output, name).format(dump=dump)


def diff_inputs(wildcards):
    """Both dumps' claims, entities and properties tables, plus the bundled single-value list."""
    if int(wildcards.old) >= int(wildcards.new):
        raise ValueError(
            f"diff {wildcards.old}_{wildcards.new}: the old dump must be the earlier one"
        )
    files = {
        f"{side}_{name}": _extract_path(name, getattr(wildcards, side))
        for side in ("old", "new")
        for name in ("claims", "entities", "properties")
    }
    if config["diff"]["single_value"] in ("list", "both"):
        files["single_value_list"] = config["diff"]["single_value_list"]
    return files


def temporal_earlier(wildcards):
    """Claims of every enabled dump before this one (objects present only there are "past")."""
    return [_extract_path("claims", d) for d in ENABLED if d < wildcards.dump]


rule diff_dumps:
    input:
        unpack(diff_inputs),
    output:
        changes="results/diff/{old}_{new}/changes.parquet",
        stats="results/diff/{old}_{new}/stats.tsv",
    log:
        "logs/diff_dumps/{old}_{new}.log",
    benchmark:
        "benchmarks/diff_dumps/{old}_{new}.tsv"
    conda:
        "../../environment.yml"
    threads: 2
    resources:
        mem_mb=6000,
    params:
        single_value=config["diff"]["single_value"],
    script:
        "../scripts/diff_dumps.py"


rule temporal_view:
    input:
        claims=rules.extract_dump.output.claims,
        entities=rules.extract_dump.output.entities,
        earlier=temporal_earlier,
    output:
        temporal="results/temporal/{dump}/temporal.parquet",
    log:
        "logs/temporal_view/{dump}.log",
    benchmark:
        "benchmarks/temporal_view/{dump}.tsv"
    conda:
        "../../environment.yml"
    threads: 2
    resources:
        mem_mb=6000,
    script:
        "../scripts/temporal_view.py"


#: Every diff and temporal view of the enabled dumps, for `rule all`.
DIFF_TARGETS = (
    expand(rules.diff_dumps.output.changes, zip, old=ENABLED[:-1], new=ENABLED[1:])
    + expand(rules.diff_dumps.output.stats, zip, old=ENABLED[:-1], new=ENABLED[1:])
    + expand(rules.temporal_view.output.temporal, dump=ENABLED)
)
