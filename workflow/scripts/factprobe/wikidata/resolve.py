"""Which file to download for a dump date, and its checksum.

Wikimedia keeps the Wikidata entity dumps for a few months only; older ones live on the
Internet Archive, one item per dump. A ``dumps.tsv`` row may therefore name its dump by date and
``source`` instead of a URL:

- ``wikimedia``: the dated directory ``<base>/<date>/`` of the dump server (an nginx listing)
  holds ``wikidata-<date>-all.json.gz`` / ``.json.bz2`` and the checksum files
  ``wikidata-<date>-sha1sums.txt`` / ``-md5sums.txt`` (lines ``<hex>  <file name>``).
- ``archive``: the Internet Archive item (``item`` column, else found with the archive's advanced
  search among the items titled "Wikidata entity dumps (JSON and TTL) of all Wikibase entries for
  Wikidata generated on …", the date read from the identifier's ``-YYYYMMDD`` tail, as
  WikiFactDiff's index builder does); its metadata API lists each file with ``size``, ``md5``
  and ``sha1``, so the checksum comes from the archive itself.
- ``auto``: Wikimedia first, then the archive.

The answer is written once, atomically, as a JSON *resolution record* next to the dump
(:func:`write_record`); a rerun with the same request reuses it without asking the network, so
a resumed or repeated download fetches the same URL and verifies the same checksum. The base
URLs come from the environment (:data:`ENV_WIKIMEDIA`, :data:`ENV_ARCHIVE`): tests point them at
a loopback server.
"""

from __future__ import annotations

import datetime
import json
import logging
import os
import re
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path

import requests

from factprobe.wikidata.download import TRANSIENT, DownloadError

log = logging.getLogger(__name__)

WIKIMEDIA = "https://dumps.wikimedia.org/wikidatawiki/entities/"
ARCHIVE = "https://archive.org/"
ENV_WIKIMEDIA = "FACTPROBE_WIKIMEDIA_DUMPS_URL"
ENV_ARCHIVE = "FACTPROBE_ARCHIVE_URL"
#: Title shared by the archive's Wikidata entity-dump items (the date follows it).
ARCHIVE_TITLE = "Wikidata entity dumps (JSON and TTL) of all Wikibase entries for Wikidata generated on"
DEFAULT_FORMAT = "json.gz"  # isal reads gzip ~20x faster than bz2 (config/README.md)
RECORD_VERSION = 1
#: Checksums a source publishes, in order of preference.
PREFERRED = ("sha1", "md5")


class ResolveError(DownloadError):
    """No source serves the dump a row asks for, or the sources disagree with the row."""


@dataclass(frozen=True)
class Sources:
    """Base URLs of the two dump servers (each ending in ``/``)."""

    wikimedia: str = WIKIMEDIA
    archive: str = ARCHIVE

    @classmethod
    def from_env(cls, environ: Mapping[str, str] = os.environ) -> Sources:
        """Defaults overridden by ``FACTPROBE_WIKIMEDIA_DUMPS_URL`` / ``FACTPROBE_ARCHIVE_URL``."""

        def base(name: str, default: str) -> str:
            value = environ.get(name) or default
            return value if value.endswith("/") else value + "/"

        return cls(base(ENV_WIKIMEDIA, WIKIMEDIA), base(ENV_ARCHIVE, ARCHIVE))


@dataclass
class Resolution:
    """Where a dump is downloaded from and the checksum its bytes must have."""

    dump: str
    request: dict  # the row's source/item/format/url/checksum: a changed row resolves again
    source: str  # wikimedia | archive | url
    url: str
    checksum: str  # "<algorithm>:<hex>" verified by the download; "" = not verified
    checksum_from: str  # where that checksum was read (a URL, or the dumps.tsv row)
    file: str = ""
    item: str = ""
    size: int | None = None
    published: dict = field(default_factory=dict)  # {algorithm: hex} the source lists for the file
    published_from: dict = field(default_factory=dict)  # {algorithm: URL it was read from}
    resolved_at: str = ""
    version: int = RECORD_VERSION


def request_of(row: Mapping) -> dict:
    """The parts of a dumps.tsv row that decide the resolution."""
    return {
        "source": str(row.get("source") or ("url" if row.get("url") else "")),
        "item": str(row.get("item") or ""),
        "format": str(row.get("format") or (DEFAULT_FORMAT if row.get("source") else "")),
        "url": str(row.get("url") or ""),
        "checksum": str(row.get("checksum") or ""),
    }


# --- HTTP ------------------------------------------------------------------------------------


def _get(
    http: requests.Session, url: str, params: dict | None = None, retries: int = 3, backoff: float = 2.0
) -> requests.Response | None:
    """GET ``url``; None on 404; retries connection errors and transient statuses."""
    last: BaseException | str = ""
    for attempt in range(retries + 1):
        if attempt:
            time.sleep(backoff * 2 ** (attempt - 1))
        try:
            resp = http.get(url, params=params, timeout=(15, 120))
        except (requests.ConnectionError, requests.Timeout) as exc:
            last = exc
            continue
        if resp.status_code == 404:
            return None
        if resp.status_code in TRANSIENT:
            last = f"HTTP {resp.status_code} {resp.reason}"
            continue
        if resp.status_code >= 400:
            raise DownloadError(f"{resp.url}: HTTP {resp.status_code} {resp.reason}")
        return resp
    raise DownloadError(
        f"{url}: no answer after {retries + 1} attempts ({last}); check the network, or the base URL "
        f"({ENV_WIKIMEDIA} / {ENV_ARCHIVE})"
    )


# --- Wikimedia's dump server -----------------------------------------------------------------

_HREF = re.compile(r'<a href="([^"]+)">[^<]*</a>[ \t]*([^\n]*)')


def parse_listing(html: str) -> dict[str, int | None]:
    """An nginx autoindex page -> {href: size in bytes, None for directories and unknown}."""
    out: dict[str, int | None] = {}
    for href, rest in _HREF.findall(html):
        if href == "../":
            continue
        size = rest.split()[-1] if rest.split() else ""
        out[href] = int(size) if size.isdigit() else None
    return out


def parse_sums(text: str) -> dict[str, str]:
    """``sha1sum``/``md5sum`` output (``<hex>  <name>`` or ``<hex> *<name>``) -> {name: hex}."""
    out = {}
    for line in text.splitlines():
        digest, _, name = line.strip().partition(" ")
        name = name.strip().lstrip("*")
        if digest and name and all(c in "0123456789abcdefABCDEF" for c in digest):
            out[name] = digest.lower()
    return out


def dated_dirs(html: str) -> list[str]:
    """Dump dates (``YYYYMMDD/`` entries) of the dump server's root listing."""
    return sorted(h[:-1] for h in parse_listing(html) if re.fullmatch(r"\d{8}/", h))


def from_wikimedia(date: str, fmt: str, base: str, http: requests.Session) -> Resolution | str:
    """The dump of ``date`` on Wikimedia's server, or why not (a sentence)."""
    folder = f"{base}{date}/"
    resp = _get(http, folder)
    if resp is None:
        return f"{base} has no directory {date}/"
    listing = parse_listing(resp.text)
    name = f"wikidata-{date}-all.{fmt}"
    if name not in listing:
        found = sorted(h for h in listing if ".json" in h) or ["no JSON dump"]
        return f"{folder} has no {name} (it holds {', '.join(found)}; set the row's format, or wait)"
    published, published_from = {}, {}
    for algo in PREFERRED:
        sums = f"wikidata-{date}-{algo}sums.txt"
        if sums in listing and (got := _get(http, folder + sums)) is not None:
            digest = parse_sums(got.text).get(name)
            if digest:
                published[algo], published_from[algo] = digest, folder + sums
    if not published:
        return f"{folder} lists no checksum for {name} yet (the dump is still being written)"
    return Resolution(
        dump=date,
        request={},
        source="wikimedia",
        url=folder + name,
        checksum="",
        checksum_from="",
        file=name,
        size=listing[name],
        published=published,
        published_from=published_from,
    )


# --- the Internet Archive --------------------------------------------------------------------


def archive_items(base: str, http: requests.Session) -> dict[str, list[str]]:
    """{date: identifiers} of the archive's Wikidata entity-dump items (advanced search)."""
    params = {"q": f'title:("{ARCHIVE_TITLE}")', "fl[]": ["identifier", "title"]}
    params.update(rows="10000", page="1", output="json")
    resp = _get(http, f"{base}advancedsearch.php", params)
    docs = (resp.json().get("response") or {}).get("docs") or [] if resp is not None else []
    out: dict[str, list[str]] = {}
    for doc in docs:
        ident = str(doc.get("identifier", ""))
        match = re.search(r"(\d{8})$", ident)
        if match:
            out.setdefault(match.group(1), []).append(ident)
    return {d: sorted(ids) for d, ids in sorted(out.items())}


def from_archive_item(date: str, fmt: str, ident: str, base: str, http: requests.Session) -> Resolution | str:
    """The dump file of ``date`` in archive item ``ident``, or why not."""
    resp = _get(http, f"{base}metadata/{ident}")
    meta = resp.json() if resp is not None else {}
    files = meta.get("files") or []
    if not files:  # the metadata API answers {} for an identifier it does not know
        return f"the Internet Archive has no item {ident}"
    name = f"wikidata-{date}-all.{fmt}"
    entry = next((f for f in files if f.get("name") == name), None)
    if entry is None:
        found = sorted(f.get("name", "") for f in files if ".json" in f.get("name", "")) or ["no JSON dump"]
        return f"archive item {ident} has no {name} (it holds {', '.join(found)})"
    published = {a: str(entry[a]).lower() for a in PREFERRED if entry.get(a)}
    if not published:
        return f"archive item {ident} lists no md5 or sha1 for {name}"
    size = str(entry.get("size", ""))
    return Resolution(
        dump=date,
        request={},
        source="archive",
        url=f"{base}download/{ident}/{name}",
        checksum="",
        checksum_from="",
        file=name,
        item=ident,
        size=int(size) if size.isdigit() else None,
        published=published,
        published_from={a: f"{base}metadata/{ident}" for a in published},
    )


def from_archive(
    date: str, fmt: str, item: str, base: str, http: requests.Session
) -> tuple[Resolution | str, list[str]]:
    """The dump of ``date`` on the archive (in ``item`` when given), or why not; plus the dates
    the archive's search found (for the error's hint)."""
    if item:
        return from_archive_item(date, fmt, item, base, http), []
    items = archive_items(base, http)
    reasons = []
    for ident in items.get(date, []):
        found = from_archive_item(date, fmt, ident, base, http)
        if isinstance(found, Resolution):
            return found, list(items)
        reasons.append(found)
    why = "; ".join(reasons) or f"the Internet Archive ({base}) has no Wikidata entity-dump item of {date}"
    return why, list(items)


# --- one row ---------------------------------------------------------------------------------


def nearest(date: str, dates: list[str], n: int = 3) -> list[str]:
    """The ``n`` dates of ``dates`` closest to ``date``, in date order."""

    def days(d: str) -> int:
        return abs(
            (datetime.datetime.strptime(d, "%Y%m%d") - datetime.datetime.strptime(date, "%Y%m%d")).days
        )

    return sorted(sorted(set(dates), key=days)[:n])


def resolve_row(
    row: Mapping, where: str, sources: Sources, http: requests.Session | None = None
) -> Resolution:
    """Ask the row's source(s) for its dump; raises :class:`ResolveError` naming ``where``
    (the dumps.tsv file, line and dump), what was asked and the nearest dates served."""
    req = request_of(row)
    date = str(row["dump"])
    if req["url"]:
        return Resolution(date, req, "url", req["url"], req["checksum"], where if req["checksum"] else "")
    http = http or requests.Session()
    fmt = req["format"]
    reasons, hints = [], []
    if req["source"] in ("wikimedia", "auto"):
        found = from_wikimedia(date, fmt, sources.wikimedia, http)
        if isinstance(found, Resolution):
            return _pin(found, req, where)
        reasons.append(found)
    if req["source"] in ("archive", "auto"):
        found, served = from_archive(date, fmt, req["item"], sources.archive, http)
        if isinstance(found, Resolution):
            return _pin(found, req, where)
        reasons.append(found)
        if served:
            hints.append(f"the Internet Archive holds {', '.join(nearest(date, served))}")
    if req["source"] in ("wikimedia", "auto"):
        root = _get(http, sources.wikimedia)
        served = dated_dirs(root.text) if root is not None else []
        if served:
            hints.insert(0, f"Wikimedia serves {', '.join(nearest(date, served))}")
    near = f" Nearest dates: {'; '.join(hints)}." if hints else ""
    raise ResolveError(
        f"{where}: no {fmt} dump of {date} from source {req['source']}: {'; '.join(reasons)}.{near} "
        "Change the row's date to one that is served (and every suite that names it), its source "
        "(wikimedia, archive or auto), its item or format, or give the dump's url or a local path."
    )


def _pin(found: Resolution, req: dict, where: str) -> Resolution:
    """``found`` answering request ``req``, with the checksum the download verifies: the row's own
    when given (it must agree with what the source publishes), else the source's sha1 (md5)."""
    found.request = req
    if not found.resolved_at:
        found.resolved_at = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    if req["checksum"]:
        algo, _, digest = req["checksum"].partition(":")
        published = found.published.get(algo.lower())
        if published and published != digest.lower():
            raise ResolveError(
                f"{where}: the row's checksum is {req['checksum']} but {found.published_from[algo.lower()]} "
                f"gives {algo}:{published} for {found.url}. Fix or empty the row's checksum, or pick "
                "another source."
            )
        found.checksum, found.checksum_from = req["checksum"], where
    else:
        algo = next(a for a in PREFERRED if a in found.published)
        found.checksum = f"{algo}:{found.published[algo]}"
        found.checksum_from = found.published_from[algo]
    return found


# --- the resolution record -------------------------------------------------------------------


def record_path(dest: str | Path) -> Path:
    """The resolution record beside dump file ``dest``: ``<dest>.resolved.json``."""
    dest = Path(dest)
    return dest.with_name(dest.name + ".resolved.json")


def record_paths(rows: Mapping[str, Mapping], pattern: str) -> dict[str, str]:
    """{dump: resolution record} of the registry ``rows`` named by date, the download path being
    ``pattern`` (``{dump}``, ``{ext}``) formatted with the row's format."""
    return {
        dump: str(record_path(pattern.format(dump=dump, ext=row["format"])))
        for dump, row in rows.items()
        if row.get("source")
    }


def read_record(path: str | Path) -> Resolution | None:
    """The record at ``path``; None when absent or unreadable (then the dump resolves again)."""
    try:
        data = json.loads(Path(path).read_text())
        return Resolution(**data) if data.get("version") == RECORD_VERSION else None
    except (OSError, ValueError, TypeError):
        return None


def write_record(res: Resolution, path: str | Path) -> None:
    """Write ``res`` to ``path`` atomically (a temporary sibling renamed onto it)."""
    from factprobe.io import atomic_path

    with atomic_path(path) as tmp:
        tmp.write_text(json.dumps(asdict(res), indent=1, sort_keys=True) + "\n")


def resolve(
    row: Mapping,
    dest: str | Path,
    where: str,
    sources: Sources | None = None,
    http: requests.Session | None = None,
) -> Resolution:
    """The resolution of ``row`` for dump file ``dest``: its record when one exists for the same
    request (no network), else a fresh one, recorded before any byte is downloaded. URL rows
    are returned as given and leave no record."""
    req = request_of(row)
    if req["url"]:
        return resolve_row(row, where, sources or Sources())
    path = record_path(dest)
    known = read_record(path)
    if known is not None and known.dump == str(row["dump"]) and _same(known.request, req):
        # A checksum copied into the row afterwards pins the record, it does not re-resolve.
        log.info("%s: %s from the record %s (%s)", where, known.url, path, known.resolved_at)
        if req["checksum"] != known.request.get("checksum"):
            known = _pin(known, req, where)
            write_record(known, path)
        return known
    if known is not None:
        log.warning("%s: the row changed since %s was written; resolving again", where, path)
    res = resolve_row(row, where, sources or Sources.from_env(), http)
    write_record(res, path)
    log.info("%s: %s, %s from %s; recorded in %s", where, res.url, res.checksum, res.checksum_from, path)
    return res


def _same(recorded: Mapping, req: Mapping) -> bool:
    """Whether a record answers request ``req`` (the row's checksum aside)."""
    return {k: v for k, v in recorded.items() if k != "checksum"} == {
        k: v for k, v in req.items() if k != "checksum"
    }


def registry_where(registry: str | Path, dump: str) -> str:
    """``<registry>: line N (dump D)`` for error messages (the line found by reading the TSV)."""
    try:
        with open(registry) as fh:
            for lineno, line in enumerate(fh, start=1):
                if line.split("\t", 1)[0].strip() == dump:
                    return f"{registry}: line {lineno} (dump {dump})"
    except OSError:
        pass
    return f"{registry} (dump {dump})"
