"""Rule script: resolve a registered dump (url, or date + source) and download it, verified."""

import sys

sys.path.insert(0, snakemake.scriptdir)  # the workflow's own library first, not an installed copy

from factprobe.plumbing.rulelog import rule_logger
from factprobe.wikidata.download import DownloadError, download
from factprobe.wikidata.resolve import record_path, registry_where, resolve

log = rule_logger(snakemake)
dump = snakemake.wildcards.dump
where = registry_where(snakemake.params.registry, dump)
row = {
    "dump": dump,
    **{k: getattr(snakemake.params, k) for k in ("url", "checksum", "source", "item", "format")},
}
res = resolve(row, snakemake.output.dump, where)
try:
    download(res.url, snakemake.output.dump, res.checksum or None, checksum_from=res.checksum_from)
except DownloadError:
    if res.source != "url":
        log.error(
            "%s: the download follows the record %s; delete it to resolve the dump again",
            where,
            record_path(snakemake.output.dump),
        )
    raise
