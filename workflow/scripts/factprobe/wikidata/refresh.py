"""One command when a new dump lands (``snakemake refresh`` or ``make refresh``): register it and
say what the next run does.

Rule ``refresh`` (workflow/rules/download.smk), or ``python -m factprobe.wikidata.refresh`` (with
``workflow/scripts`` on ``PYTHONPATH``):

1. reads the dump registry named by the config's ``dumps`` key (config/dumps.tsv) and its latest
   date;
2. lists Wikimedia's dump server (``<base>/``, the base from ``FACTPROBE_WIKIMEDIA_DUMPS_URL`` as
   for downloads, :class:`~factprobe.wikidata.resolve.Sources`) and takes the newest dated
   directory after that date whose ``wikidata-<date>-all.<format>`` is listed together with its
   checksum in ``wikidata-<date>-sha1sums.txt`` (else ``-md5sums.txt``); a directory still being
   written (no checksum yet) is passed over for the next older one;
3. appends one row (date, ``enabled`` true, ``source`` auto, the format, the published checksum),
   writing the registry atomically; columns the file lacks (``source``, ``format``) are added,
   empty for the older rows (an empty cell is an absent value: their jobs do not change);
4. prints the jobs the next run plans (a Snakemake dry run of the default target), per rule.

The row names the dump by date with ``source: auto``: Wikimedia keeps a dump for a few months,
then the Internet Archive serves it; the checksum pins the bytes either way
(:mod:`factprobe.wikidata.resolve`). Offline (the server does not answer) it prints one line and
changes nothing; with no newer dump it says so. Exit status: 0 (a row added, or none newer), 1
(the server unreachable or the registry unreadable).
"""

from __future__ import annotations

import argparse
import csv
import io
import re
import subprocess
import sys
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import requests

from factprobe.io import atomic_path
from factprobe.wikidata.download import DownloadError
from factprobe.wikidata.resolve import DEFAULT_FORMAT, PREFERRED, Resolution, Sources, _get, dated_dirs
from factprobe.wikidata.resolve import from_wikimedia as resolve_on_wikimedia

#: The row's source: Wikimedia while it keeps the dump, then the Internet Archive.
ROW_SOURCE = "auto"
#: Columns a refreshed row fills, in the order they are added to a registry that lacks them.
ADDED_COLUMNS = ("source", "format")


@dataclass
class Found:
    """The newest dump after the registry's, or why there is none (``reasons``)."""

    resolution: Resolution | None
    reasons: list[str]


def registry_dates(path: Path) -> list[str]:
    """The ``dump`` dates of a registry TSV, in file order."""
    with open(path, newline="", encoding="utf-8-sig") as fh:
        reader = csv.DictReader(fh, delimiter="\t")
        if "dump" not in (reader.fieldnames or []):
            raise ValueError(f"{path}: no 'dump' column in its header line")
        return [row["dump"] for row in reader if row.get("dump")]


def newest_after(after: str, fmt: str, sources: Sources, http: requests.Session) -> Found:
    """The newest dump on Wikimedia's server dated after ``after`` that has its file and checksum.
    Raises :class:`DownloadError` when the server does not answer (one attempt, no retries)."""
    root = _get(http, sources.wikimedia, retries=0)
    if root is None:
        raise DownloadError(f"{sources.wikimedia}: HTTP 404 (no dump listing there)")
    reasons = []
    for date in sorted((d for d in dated_dirs(root.text) if d > after), reverse=True):
        found = resolve_on_wikimedia(date, fmt, sources.wikimedia, http)
        if isinstance(found, Resolution):
            return Found(found, reasons)
        reasons.append(found)
    return Found(None, reasons)


def new_row(found: Resolution, fmt: str) -> dict[str, str]:
    """The registry row of ``found``: its date, enabled, ``source`` auto, format and checksum."""
    algo = next(a for a in PREFERRED if a in found.published)
    return {
        "dump": found.dump,
        "enabled": "true",
        "source": ROW_SOURCE,
        "format": fmt,
        "checksum": f"{algo}:{found.published[algo]}",
    }


def append_row(path: Path, row: Mapping[str, str]) -> None:
    """Append ``row`` to the registry TSV at ``path`` atomically. The existing lines stay as they
    are; a column the header lacks is added at its end, empty on the older lines."""
    text = path.read_text(encoding="utf-8-sig")
    lines = text.splitlines()
    header = lines[0].split("\t")
    unknown = [k for k in row if k not in header and k not in ADDED_COLUMNS]
    if unknown:
        raise ValueError(f"{path}: the new row's column(s) {unknown} are not in its header")
    added = [k for k in ADDED_COLUMNS if k in row and k not in header]
    if added:
        lines = [lines[0] + "".join("\t" + k for k in added)] + [
            line + "\t" * len(added) if line.strip() else line for line in lines[1:]
        ]
        header += added
    while lines and not lines[-1].strip():
        lines.pop()
    out = io.StringIO()
    csv.writer(out, delimiter="\t", lineterminator="\n").writerow([row.get(k, "") for k in header])
    with atomic_path(path) as tmp:
        tmp.write_text("\n".join(lines) + "\n" + out.getvalue(), encoding="utf-8")


_JOB = re.compile(r"^(?:local)?rule (\w+):", re.M)
_WILDCARDS = re.compile(r"^\s+wildcards: (.*)$", re.M)


def planned_jobs(dry_run_log: str) -> list[tuple[str, str]]:
    """(rule, wildcards) of every job a Snakemake dry run lists, in its order."""
    jobs = []
    for block in re.split(r"\n(?=\[[^\]]+\]\n(?:local)?rule )", dry_run_log):
        m = _JOB.search(block)
        if m:
            w = _WILDCARDS.search(block)
            jobs.append((m.group(1), w.group(1).strip() if w else ""))
    return jobs


def dry_run(snakemake_args: Sequence[str], cwd: Path) -> list[tuple[str, str]]:
    """The jobs Snakemake plans with ``snakemake_args`` (a dry run; nothing is written)."""
    cmd = [sys.executable, "-m", "snakemake", "--dry-run", "--nolock", *snakemake_args]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd)
    if proc.returncode:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    return planned_jobs(proc.stdout + proc.stderr)


def plan_lines(jobs: Sequence[tuple[str, str]], dump: str) -> list[str]:
    """What the next run does: jobs per rule, and each job whose wildcards name ``dump``."""
    if not jobs:
        return ["the next run has nothing to do"]
    counts = Counter(rule for rule, _ in jobs)
    lines = [f"the next run plans {len(jobs)} job(s): " + ", ".join(f"{r} {n}" for r, n in counts.items())]
    lines += [f"  {rule} ({wildcards})" for rule, wildcards in jobs if dump in wildcards]
    return lines


def refresh(
    registry: Path,
    fmt: str = DEFAULT_FORMAT,
    sources: Sources | None = None,
    http: requests.Session | None = None,
) -> tuple[int, str, dict[str, str] | None]:
    """Look for a newer dump and register it: (exit status, the message, the row added or None)."""
    sources = sources or Sources.from_env()
    try:
        dates = registry_dates(registry)
    except (OSError, ValueError) as exc:
        return 1, f"refresh: cannot read the dump registry: {exc}", None
    last = max(dates, default="00000000")
    try:
        found = newest_after(last, fmt, sources, http or requests.Session())
    except DownloadError as exc:
        # one line: a DNS or connection error nests several messages; its cause's name is enough
        text = str(exc)
        cause = re.search(r"Caused by (\w+)", text)
        reason = "no answer" + (f": {cause.group(1)}" if cause else f" ({text.split(';')[0][:120]})")
        return 1, f"refresh: {sources.wikimedia} unreachable ({reason}); {registry} unchanged", None
    if found.resolution is None:
        why = f" ({'; '.join(found.reasons)})" if found.reasons else ""
        return (
            0,
            f"refresh: no dump newer than {last} on {sources.wikimedia}{why}; {registry} unchanged",
            None,
        )
    row = new_row(found.resolution, fmt)
    append_row(registry, row)
    return (
        0,
        f"refresh: added dump {row['dump']} ({row['checksum']} from {found.resolution.published_from[row['checksum'].split(':')[0]]}) to {registry}",
        row,
    )


def refresh_and_plan(
    registry: Path,
    fmt: str,
    snakefile: Path,
    configfiles: Sequence[Path],
    directory: Path,
    targets: Sequence[str] = (),
) -> tuple[int, list[str]]:
    """:func:`refresh`, then, when a row was added, the jobs the next run plans (a dry run of
    ``snakefile`` with ``configfiles`` in ``directory``): the exit status and the lines to print."""
    status, message, row = refresh(registry, fmt)
    if row is None:
        return status, [message]
    # --configfile takes several values: the options after it keep the targets apart.
    snakemake_args = [
        *("-s", str(snakefile)),
        *(arg for path in configfiles for arg in ("--configfile", str(Path(path).resolve()))),
        *("--cores", "1", "--directory", str(directory.resolve()), *targets),
    ]
    return status, [message, *plan_lines(dry_run(snakemake_args, directory), row["dump"])]


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--configfile", type=Path, default=Path("config/config.yaml"))
    ap.add_argument("--directory", type=Path, default=Path("."), help="the run's working directory")
    ap.add_argument("--format", choices=("json.gz", "json.bz2"), default=DEFAULT_FORMAT)
    ap.add_argument("--snakefile", type=Path, help="default: workflow/Snakefile beside this library")
    ap.add_argument("targets", nargs="*", help="targets of the planned run (default: the workflow's own)")
    args = ap.parse_args(argv)
    import yaml

    config = yaml.safe_load(args.configfile.read_text()) or {}
    registry = args.directory / config.get("dumps", "config/dumps.tsv")
    snakefile = args.snakefile or Path(__file__).resolve().parents[3] / "Snakefile"
    status, lines = refresh_and_plan(
        registry, args.format, snakefile, [args.configfile], args.directory, args.targets
    )
    print("\n".join(lines))
    return status


if __name__ == "__main__":
    sys.exit(main())
