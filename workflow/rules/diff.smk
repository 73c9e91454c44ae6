# diff stage (docs/contracts.md): WikiFactDiff-style changes between consecutive enabled dumps
# and a temporal view per dump; input functions in functions/diff.smk.


include: "functions/diff.smk"


rule diff_dumps:
    input:
        unpack(diff_inputs),
        lib=library("diff_dumps.py"),
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
        disk_mb=input_size_mb(1.0),
    params:
        single_value=CFG.diff.single_value,
    script:
        "../scripts/diff_dumps.py"


rule temporal_view:
    input:
        claims=rules.extract_dump.output.claims,
        entities=rules.extract_dump.output.entities,
        earlier=temporal_earlier,
        lib=library("temporal_view.py"),
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
        disk_mb=input_size_mb(1.5),
    script:
        "../scripts/temporal_view.py"


#: Every diff and temporal view of the enabled dumps, for `rule all`.
DIFF_TARGETS = (
    expand(rules.diff_dumps.output.changes, zip, old=ENABLED[:-1], new=ENABLED[1:])
    + expand(rules.diff_dumps.output.stats, zip, old=ENABLED[:-1], new=ENABLED[1:])
    + expand(rules.temporal_view.output.temporal, dump=ENABLED)
)
