# extract stage: see docs/contracts.md and factprobe/wikidata/reader.py (how work is split).


rule extract_dump:
    input:
        dump=dump_file,
        # The library is an input so that changing the parser re-extracts (a script's imports
        # are invisible to Snakemake's code trigger).
        lib_reader=workflow.source_path("../scripts/factprobe/wikidata/reader.py"),
        lib_parse=workflow.source_path("../scripts/factprobe/wikidata/parse.py"),
    output:
        entities="results/wikidata/{dump}/entities.parquet",
        labels="results/wikidata/{dump}/labels.parquet",
        claims="results/wikidata/{dump}/claims.parquet",
        types="results/wikidata/{dump}/types.parquet",
        properties="results/wikidata/{dump}/properties.parquet",
    log:
        "logs/extract_dump/{dump}.log",
    benchmark:
        "benchmarks/extract_dump/{dump}.tsv"
    conda:
        "../../environment.yml"
    # parse worker processes; one more thread decompresses (see reader.py)
    threads: 2
    resources:
        mem_mb=1500,
        disk_mb=input_size_mb(1.0),
    params:
        languages=config["extract"]["languages"],
        max_bad_fraction=config["extract"]["max_bad_fraction"],
        chunk_mb=config["extract"]["chunk_mb"],
    script:
        "../scripts/extract_dump.py"
