# download stage: see docs/contracts.md. Registry rows with `path` never reach this rule
# (common.smk's dump_file uses the file in place).


rule download_dump:
    input:
        lib=library("download_dump.py"),
    output:
        dump=protected("resources/dumps/{dump}/wikidata-{dump}.{ext}"),
    log:
        "logs/download_dump/{dump}.{ext}.log",
    wildcard_constraints:
        ext=r"json(\.gz|\.bz2)?",
    retries: 2
    localrule: True
    conda:
        "../../environment.yml"
    resources:
        mem_mb=500,
    params:
        url=lookup(dpath="{dump}/url", within=DUMP_ROWS),
        checksum=lookup(dpath="{dump}/checksum", within=DUMP_ROWS, default=""),
    script:
        "../scripts/download_dump.py"
