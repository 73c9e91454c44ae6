# models stage: every models.tsv row except builtin:control becomes resources/models/{model}/
# (weights as safetensors + manifest.json); later jobs load only these folders, offline.


include: "functions/models.smk"


rule prepare_model:
    input:
        unpack(model_source_files),
        lib=library("prepare_model.py"),
    output:
        model=protected(directory("resources/models/{model}")),
    log:
        "logs/prepare_model/{model}.log",
    benchmark:
        "benchmarks/prepare_model/{model}.tsv"
    conda:
        "../../environment.yml"
    threads: 2
    resources:
        mem_mb=8000,
        runtime=60,
    params:
        row=lookup(dpath="{model}", within=RUN.prepare_params),
    script:
        "../scripts/prepare_model.py"
