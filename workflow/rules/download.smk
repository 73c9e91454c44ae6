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
    # Transient errors are retried inside the script (backoff, HTTP Range resume); a checksum
    # mismatch or an HTTP 404 would fail again, and a rerun re-downloads 100 GB. 0, not unset:
    # an unset value inherits a profile's `retries`.
    retries: 0
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
