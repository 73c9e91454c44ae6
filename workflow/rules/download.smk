# download stage: see docs/contracts.md. Registry rows with `path` never reach this rule
# (dump_file, functions/download.smk, uses the file in place).


include: "functions/download.smk"


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
    # A `url` row is downloaded as given; a `source` row (wikimedia, archive, auto) is first
    # resolved by date to a URL and a published checksum, recorded once in
    # resources/dumps/{dump}/wikidata-{dump}.{ext}.resolved.json and reused by reruns. Base URLs:
    # FACTPROBE_WIKIMEDIA_DUMPS_URL, FACTPROBE_ARCHIVE_URL (config/README.md, the dumps section).
    params:
        url=lookup(dpath="{dump}/url", within=DUMP_ROWS, default=""),
        checksum=lookup(dpath="{dump}/checksum", within=DUMP_ROWS, default=""),
        source=lookup(dpath="{dump}/source", within=DUMP_ROWS, default=""),
        item=lookup(dpath="{dump}/item", within=DUMP_ROWS, default=""),
        format=lookup(dpath="{dump}/format", within=DUMP_ROWS, default=""),
        registry=CFG.dumps,
    script:
        "../scripts/download_dump.py"


# `snakemake refresh`: register the newest Wikimedia dump after the registry's latest (its
# published checksum) and print the jobs the next run plans; offline or with nothing newer it
# says so and changes nothing. No output: it runs whenever it is asked for, never from `all`.
rule refresh:
    input:
        lib=library("refresh_dumps.py"),
    log:
        "logs/refresh.log",
    localrule: True
    conda:
        "../../environment.yml"
    params:
        registry=CFG.dumps,
        format="json.gz",
        snakefile=workflow.main_snakefile,
        configfiles=list(workflow.overwrite_configfiles) or list(workflow.configfiles),
    script:
        "../scripts/refresh_dumps.py"
