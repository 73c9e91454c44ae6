import sys
from pathlib import Path

from snakemake.utils import min_version

min_version("9.0")

sys.path.insert(0, str(Path(workflow.basedir) / "workflow" / "scripts"))
from factprobe.registry import check_dumps, read_registry, validate_config  # noqa: E402

SCHEMAS = Path(workflow.basedir) / "workflow" / "schemas"

validate_config(config, SCHEMAS / "config.schema.yaml")
DUMPS = check_dumps(
    read_registry(config["dumps"], SCHEMAS / "dumps.schema.yaml", key="dump"),
    config["dumps"],
)
MODELS = read_registry(config["models"], SCHEMAS / "models.schema.yaml", key="name")
ENABLED = [row["dump"] for row in DUMPS if row["enabled"]]
DUMP_ROWS = {row["dump"]: row for row in DUMPS}
EXTRACT_TABLES = ["entities", "labels", "claims", "types", "properties"]


wildcard_constraints:
    dump=r"\d{8}",
    old=r"\d{8}",
    new=r"\d{8}",


def dump_file(wildcards):
    """Dump file of a registry row: its local path in place, else the downloaded copy."""
    row = DUMP_ROWS[wildcards.dump]
    if "path" in row:
        return row["path"]
    return rules.download_dump.output.dump.format(
        dump=wildcards.dump, ext=dump_ext(row["url"])
    )


def dump_ext(name):
    """Extension of a dump file name or URL: json, json.gz or json.bz2."""
    for ext in ("json.bz2", "json.gz", "json"):
        if name.split("?")[0].endswith(f".{ext}"):
            return ext
    raise ValueError(f"cannot tell the format of {name}")
