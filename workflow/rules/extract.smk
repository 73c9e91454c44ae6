rule extract_dump:
    input:
        dump=dump_file,
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
    resources:
        mem_mb=2000,
    params:
        languages=config["extract"]["languages"],
        max_bad_fraction=config["extract"].get("max_bad_fraction", 0.01),
    script:
        "../scripts/extract_dump.py"
