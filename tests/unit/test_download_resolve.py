"""Dumps named by date (factprobe.wikidata.resolve), against a loopback server
replaying the Wikimedia dump server's and the Internet Archive's responses (tests/dump_server.py;
formats and where they were checked: tests/data/dump_sources/README.md)."""

import hashlib
import json
from pathlib import Path

import pytest
from dump_server import DEMO, DumpServer
from factprobe.config_check import ConfigError, check_dumps, read_registry
from factprobe.wikidata import resolve as R
from factprobe.wikidata.download import ChecksumError, Retry, download

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = ROOT / "workflow" / "schemas" / "dumps.schema.yaml"
SHA1 = hashlib.sha1(DEMO).hexdigest()
MD5 = hashlib.md5(DEMO).hexdigest()
WHERE = "config/papers/x.dumps.tsv: line 3 (dump {})"


def fast(retries: int = 8) -> dict:
    """No waiting between attempts, short timeouts, no progress bar."""
    return {"retry": Retry(retries=retries, backoff=0.0, timeout=(5, 5)), "progress": False}


@pytest.fixture
def server():
    with DumpServer() as srv:
        srv.sources = R.Sources(srv.wikimedia, srv.archive)
        yield srv


def row(dump, source="auto", fmt="json.bz2", **extra):
    return {"dump": dump, "source": source, "format": fmt, **extra}


def test_sources_from_env_default_and_override():
    assert R.Sources.from_env({}) == R.Sources(R.WIKIMEDIA, R.ARCHIVE)
    env = {R.ENV_WIKIMEDIA: "http://127.0.0.1:1/wm", R.ENV_ARCHIVE: "http://127.0.0.1:1/ia/"}
    assert R.Sources.from_env(env) == R.Sources("http://127.0.0.1:1/wm/", "http://127.0.0.1:1/ia/")


def test_recent_date_resolves_to_wikimedia_with_its_sha1sums(server):
    res = R.resolve_row(row("20261116"), WHERE.format("20261116"), server.sources)
    folder = server.wikimedia + "20261116/"
    assert (res.source, res.url) == ("wikimedia", folder + "wikidata-20261116-all.json.bz2")
    assert res.checksum == f"sha1:{SHA1}" and res.checksum_from == folder + "wikidata-20261116-sha1sums.txt"
    assert res.published == {"sha1": SHA1, "md5": MD5} and res.size == len(DEMO)
    assert not any(p.startswith("/ia/") for p in server.requests)  # found first on Wikimedia
    # The default format, json.gz, is the other line of the same sums file.
    gz = R.resolve_row({"dump": "20261116", "source": "wikimedia"}, "w", server.sources)
    assert gz.url.endswith("wikidata-20261116-all.json.gz") and gz.checksum != res.checksum


def test_old_date_resolves_to_the_archive_item_with_its_metadata_checksum(server, tmp_path):
    res = R.resolve_row(row("20190201"), WHERE.format("20190201"), server.sources)
    item = "wikibase-wikidatawiki-20190201"
    assert (res.source, res.item) == ("archive", item)
    assert res.url == f"{server.archive}download/{item}/wikidata-20190201-all.json.bz2"
    assert res.checksum == f"sha1:{SHA1}" and res.checksum_from == f"{server.archive}metadata/{item}"
    assert res.size == len(DEMO) and res.published["md5"] == MD5
    # Wikimedia was asked first (no 20190201/ there), then the archive's search and metadata.
    assert server.requests[0] == "/wikimedia/20190201/"
    assert server.requests[1].startswith("/ia/advancedsearch.php?q=title")
    assert server.requests[2:] == [f"/ia/metadata/{item}"]
    dest = download(res.url, tmp_path / "d.json.bz2", res.checksum, checksum_from=res.checksum_from, **fast())
    assert dest.read_bytes() == DEMO
    # A known item is read directly, without the search.
    server.requests.clear()
    again = R.resolve_row(row("20190201", "archive", item=item), "w", server.sources)
    assert again.url == res.url and server.requests == [f"/ia/metadata/{item}"]


def test_missing_date_names_the_row_what_was_asked_and_the_nearest_dates(server):
    where = WHERE.format("20200601")
    with pytest.raises(R.ResolveError) as err:
        R.resolve_row(row("20200601"), where, server.sources)
    msg = str(err.value)
    assert msg.startswith(where + ": no json.bz2 dump of 20200601 from source auto")
    assert f"{server.wikimedia} has no directory 20200601/" in msg
    assert "has no Wikidata entity-dump item of 20200601" in msg
    assert "Wikimedia serves 20261019, 20261021, 20261026" in msg
    assert "the Internet Archive holds 20200113, 20201005, 20201026" in msg
    assert "Change the row's date" in msg and "give the dump's url or a local path" in msg


@pytest.mark.parametrize(
    ("asked", "expected"),
    [
        (
            row("20190201", "archive", "json.gz"),
            "has no wikidata-20190201-all.json.gz (it holds wikidata-20190201-all.json.bz2)",
        ),
        (row("20261118", "wikimedia", "json.gz"), "lists no checksum for wikidata-20261118-all.json.gz yet"),
        (
            row("20201005", "archive", item="wikibase-wikidatawiki-20201006"),
            "has no item wikibase-wikidatawiki-20201006",
        ),
        (row("20190201", "wikimedia"), "has no directory 20190201/"),
    ],
)
def test_unserved_requests_say_why(server, asked, expected):
    with pytest.raises(R.ResolveError, match="line 3") as err:
        R.resolve_row(asked, WHERE.format(asked["dump"]), server.sources)
    assert expected in str(err.value)


def test_checksum_mismatch_is_caught(server, tmp_path):
    res = R.resolve_row(row("20190201"), "w", server.sources)
    # The archive serves other bytes than its metadata describes: the download fails, no file.
    path = "/ia/download/wikibase-wikidatawiki-20190201/wikidata-20190201-all.json.bz2"
    server.payloads[path] = DEMO[:-1] + b"x"
    with pytest.raises(ChecksumError, match=f"but {res.checksum_from} says {SHA1}"):
        download(res.url, tmp_path / "d.json.bz2", res.checksum, checksum_from=res.checksum_from, **fast())
    assert list(tmp_path.iterdir()) == []
    # A row whose own checksum contradicts the published one fails before any download.
    wrong = row("20190201", checksum="sha1:" + "1" * 40)
    with pytest.raises(R.ResolveError, match=r"line 3 \(dump 20190201\): the row's checksum is sha1:1+ but"):
        R.resolve_row(wrong, WHERE.format("20190201"), server.sources)
    # A row checksum the source does not publish (sha256) is the one verified.
    pinned = R.resolve_row(row("20190201", checksum="sha256:" + "2" * 64), "w", server.sources)
    assert (pinned.checksum, pinned.checksum_from) == ("sha256:" + "2" * 64, "w")


def test_record_is_written_atomically_and_reused(server, tmp_path, monkeypatch):
    dest = tmp_path / "20190201" / "wikidata-20190201.json.bz2"
    first = R.resolve(row("20190201"), dest, "w", server.sources)
    record = R.record_path(dest)
    assert record == dest.with_name("wikidata-20190201.json.bz2.resolved.json")
    saved = json.loads(record.read_text())
    assert saved["url"] == first.url and saved["checksum"] == f"sha1:{SHA1}"
    assert saved["request"] == {"source": "auto", "item": "", "format": "json.bz2", "url": "", "checksum": ""}
    assert saved["resolved_at"].endswith("Z") and saved["version"] == R.RECORD_VERSION
    assert sorted(p.name for p in record.parent.iterdir()) == [record.name]  # no temporary left
    # Reused: no request at all, even with the servers gone.
    n = len(server.requests)
    dead = R.Sources("http://127.0.0.1:9/", "http://127.0.0.1:9/")
    assert R.resolve(row("20190201"), dest, "w", dead) == first and len(server.requests) == n
    # Pinning the checksum in the row afterwards updates the record without the network.
    pinned = R.resolve(row("20190201", checksum=f"md5:{MD5}"), dest, "w", dead)
    assert pinned.url == first.url and pinned.checksum == f"md5:{MD5}" and len(server.requests) == n
    # A failing write leaves the previous record whole and no temporary file.
    before = record.read_text()
    monkeypatch.setattr(R.json, "dumps", lambda *a, **k: (_ for _ in ()).throw(OSError("disk full")))
    with pytest.raises(OSError, match="disk full"):
        R.write_record(first, record)
    assert record.read_text() == before and sorted(p.name for p in record.parent.iterdir()) == [record.name]
    monkeypatch.undo()
    # Another request (the format) resolves again and replaces the record.
    with pytest.raises(R.ResolveError):
        R.resolve(row("20190201", "archive", "json.gz"), dest, "w", server.sources)
    assert json.loads(record.read_text())["request"]["format"] == "json.bz2"  # the failure wrote nothing


def test_url_rows_are_used_as_given_without_network_or_record(tmp_path):
    url_row = {"dump": "20200101", "url": "https://example.org/x.json.gz", "checksum": "sha1:" + "a" * 40}
    res = R.resolve(
        url_row, tmp_path / "x.json.gz", "w", R.Sources("http://127.0.0.1:9/", "http://127.0.0.1:9/")
    )
    assert (res.source, res.url, res.checksum, res.checksum_from) == (
        "url",
        url_row["url"],
        url_row["checksum"],
        "w",
    )
    assert list(tmp_path.iterdir()) == []


def test_registry_accepts_date_rows_and_rejects_mixed_ones(tmp_path):
    path = tmp_path / "dumps.tsv"
    path.write_text(
        "dump\tenabled\tpath\turl\tchecksum\tsource\titem\tformat\n"
        "20210104\ttrue\t\t\t\tarchive\twikibase-wikidatawiki-20210104\t\n"
        "20201005\ttrue\t\t\t\tauto\t\tjson.bz2\n"
    )
    rows = check_dumps(read_registry(path, SCHEMA, "dump"), path)
    assert [(r["dump"], r["source"], r["format"]) for r in rows] == [
        ("20201005", "auto", "json.bz2"),
        ("20210104", "archive", "json.gz"),
    ]
    bad = {
        "20210104\ttrue\t\thttps://h/a.json.gz\t\tarchive\t\t\n": "exactly one of 'path' or 'url' or 'source'",
        "20210104\ttrue\t\thttps://h/a.json.gz\t\t\t\tjson.gz\n": "format only go with 'source'",
        "20210104\ttrue\t\t\t\twikimedia\twikibase-wikidatawiki-20210104\t\n": "use source archive or auto",
        "20210104\ttrue\t\t\t\tarchive\t\tjson.xz\n": "column format",
        "20210104\ttrue\t\t\t\tmirror\t\t\n": "column source",
    }
    for line, message in bad.items():
        path.write_text("dump\tenabled\tpath\turl\tchecksum\tsource\titem\tformat\n" + line)
        with pytest.raises(ConfigError, match=message):
            check_dumps(read_registry(path, SCHEMA, "dump"), path)


def test_report_shows_the_recorded_url_and_checksum(server, tmp_path):
    from factprobe.report.provenance import dump_records, with_resolutions

    rows = {"20190201": row("20190201"), "20141201": {"path": "a.json.bz2"}}
    paths = R.record_paths(rows, str(tmp_path / "{dump}" / "wikidata-{dump}.{ext}"))
    dest = tmp_path / "20190201" / "wikidata-20190201.json.bz2"
    assert paths == {"20190201": str(R.record_path(dest))}
    records = dump_records(rows, ["20190201", "20141201"], [], paths)
    assert with_resolutions(records)[1]["source"] == "auto by date (not resolved yet)"
    res = R.resolve(rows["20190201"], dest, "w", server.sources)
    shown = with_resolutions(records)
    assert shown[0] == {"dump": "20141201", "date": "2014-12-01", "source": "a.json.bz2", "checksum": ""}
    assert shown[1]["source"] == res.url
    assert shown[1]["checksum"] == f"sha1:{SHA1} (from {res.checksum_from})"
    assert "resolution" not in shown[1]


def test_registry_where_finds_the_line(tmp_path):
    path = tmp_path / "d.tsv"
    path.write_text("dump\tenabled\n20201005\ttrue\n20201102\ttrue\n")
    assert R.registry_where(path, "20201102") == f"{path}: line 3 (dump 20201102)"
    assert R.registry_where(tmp_path / "gone.tsv", "1") == f"{tmp_path / 'gone.tsv'} (dump 1)"


PAPERS = sorted((ROOT / "config" / "papers").glob("*.dumps.tsv"))


@pytest.mark.parametrize("tsv", PAPERS, ids=[p.name for p in PAPERS])
def test_every_paper_config_resolves_offline(server, tsv):
    """Each paper's dumps are named by date and resolve to an archive file with the checksum its
    metadata lists (the fixture's digests for these dates are placeholders: README there)."""
    rows = check_dumps(read_registry(tsv, SCHEMA, "dump"), tsv, ROOT)
    enabled = [r for r in rows if r["enabled"]]
    assert enabled
    for r in enabled:
        assert "url" not in r and "path" not in r, f"{tsv.name}: {r['dump']} is not named by date"
        res = R.resolve_row(r, R.registry_where(tsv, r["dump"]), server.sources)
        item = f"wikibase-wikidatawiki-{r['dump']}"
        assert res.url == f"{server.archive}download/{item}/wikidata-{r['dump']}-all.{r['format']}"
        meta = json.loads((ROOT / f"tests/data/dump_sources/ia/metadata/{item}.json").read_text())
        listed = next(f for f in meta["files"] if f["name"] == res.file)
        assert res.checksum == f"sha1:{listed['sha1']}"


def test_listing_and_sums_parsers_read_every_entry():
    fixtures = ROOT / "tests" / "data" / "dump_sources" / "wikimedia"
    dates = R.dated_dirs((fixtures / "index.html").read_text())
    assert dates[0] == "20261019" and dates[-1] == "20261118" and len(dates) == 10
    listing = R.parse_listing((fixtures / "20261116" / "index.html").read_text())
    assert listing["wikidata-20261116-all.json.bz2"] == len(DEMO) and len(listing) == 8
    sums = R.parse_sums((fixtures / "20261116" / "wikidata-20261116-sha1sums.txt").read_text())
    assert len(sums) == 6 and sums["wikidata-20261116-all.json.bz2"] == SHA1
    assert R.parse_sums(f"{SHA1.upper()} *a.json.gz\nnot a line\n") == {"a.json.gz": SHA1}


def test_download_rule_resolves_a_date_row_through_the_environment(server, tmp_path):
    """The rule end to end: a `source` row is resolved against the base URLs of the environment,
    recorded beside the dump and downloaded with the recorded checksum."""
    import os
    import shutil
    import subprocess
    import sys

    for name in ("workflow", "config", "environment.yml"):
        src = ROOT / name
        (shutil.copytree if src.is_dir() else shutil.copy)(src, tmp_path / name)
    (tmp_path / "resources").mkdir()
    for name in ("demo", "templates", "properties"):
        (tmp_path / "resources" / name).symlink_to(ROOT / "resources" / name)
    tsv = tmp_path / "config" / "dumps.tsv"
    lines = tsv.read_text().splitlines()
    lines = [lines[0] + "\tsource\titem\tformat"] + [line + "\t\t\t" for line in lines[1:]]
    extra = ["20200601\tfalse\t\t\t\tauto\t\t", "20261116\tfalse\t\t\t\tauto\t\tjson.bz2"]
    tsv.write_text("\n".join([*lines, *extra, ""]))
    target = "resources/dumps/20261116/wikidata-20261116.json.bz2"
    env = {**os.environ, **server.env, "PYTHONPATH": str(ROOT / "workflow" / "scripts")}

    def snakemake(target):
        cmd = [sys.executable, "-m", "snakemake", "--cores", "1", target]
        return subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=300, env=env)

    proc = snakemake(target)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (tmp_path / target).read_bytes() == DEMO
    record = json.loads((tmp_path / (target + ".resolved.json")).read_text())
    assert record["url"] == server.wikimedia + "20261116/wikidata-20261116-all.json.bz2"
    assert record["checksum"] == f"sha1:{SHA1}"
    log = (tmp_path / "logs" / "download_dump" / "20261116.json.bz2.log").read_text()
    assert "config/dumps.tsv: line 5 (dump 20261116)" in log and "recorded in" in log
    # A date neither server has: the job fails with the row and the nearest dates, writes nothing.
    missing = "resources/dumps/20200601/wikidata-20200601.json.gz"
    proc = snakemake(missing)
    assert proc.returncode != 0
    log = (tmp_path / "logs" / "download_dump" / "20200601.json.gz.log").read_text()
    assert "config/dumps.tsv: line 4 (dump 20200601): no json.gz dump of 20200601 from source auto" in log
    assert "Nearest dates: Wikimedia serves" in log
    assert not (tmp_path / missing).parent.exists() or not any((tmp_path / missing).parent.iterdir())
