# extract stage: see docs/contracts.md and factprobe/wikidata/reader.py (how work is split).


include: "functions/extract.smk"


rule extract_dump:
    input:
        dump=dump_file,
        lib=library("extract_dump.py"),
    output:
        entities="results/wikidata/{dump}/entities.parquet",
        labels="results/wikidata/{dump}/labels.parquet",
        claims="results/wikidata/{dump}/claims.parquet",
        types="results/wikidata/{dump}/types.parquet",
        properties="results/wikidata/{dump}/properties.parquet",
        # lines read and malformed lines skipped (the report's provenance shows them)
        stats="results/wikidata/{dump}/extract_stats.json",
    log:
        "logs/extract_dump/{dump}.log",
    benchmark:
        "benchmarks/extract_dump/{dump}.tsv"
    conda:
        "../../environment.yml"
    # parse worker processes; one more thread decompresses (see reader.py)
    threads: 2
    resources:
        # an excluded class keeps its ids (about 45 M scholarly items in a whole dump: 360 MB,
        # twice that while they are sorted together)
        mem_mb=1500 + 1024 * len(CFG.extract.exclude),
        disk_mb=input_size_mb(1.0),
    params:
        # only when set: an empty list adds no param, so existing extractions do not rerun
        **extract_exclude_params(),
        languages=CFG.extract.languages,
        max_bad_fraction=CFG.extract.max_bad_fraction,
        chunk_mb=CFG.extract.chunk_mb,
        # A dump used in place is hashed here, by the first job that reads it (then remembered
        # in results/cache/checksums/ by size and mtime); a download was verified as it arrived.
        checksum=local_dump_checksum,
    script:
        "../scripts/extract_dump.py"
