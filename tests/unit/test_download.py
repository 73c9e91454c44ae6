"""Resumable, verified download (factprobe.wikidata.download) against a local HTTP server.

The server is http.server on 127.0.0.1 in a thread, serving the real 2019 demo dump with Range
support; it can cut the connection after N bytes to simulate a dropped transfer.
"""

import hashlib
import re
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from conftest import DEMO_NEW
from factprobe.wikidata.download import Checksum, ChecksumError, DownloadError, Retry, download

PAYLOAD = DEMO_NEW.read_bytes()
SHA1 = hashlib.sha1(PAYLOAD).hexdigest()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):  # keep pytest output clean
        pass

    def do_GET(self):
        server = self.server
        server.requests.append(self.headers.get("Range"))
        if server.statuses:
            self.send_error(server.statuses.pop(0))
            return
        if self.path != "/wikidata.json.bz2":
            self.send_error(404)
            return
        start = 0
        match = re.fullmatch(r"bytes=(\d+)-", self.headers.get("Range") or "")
        if match and server.ranges:
            start = int(match.group(1))
            if start >= len(PAYLOAD):
                self.send_response(416)
                self.send_header("Content-Range", f"bytes */{len(PAYLOAD)}")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{len(PAYLOAD) - 1}/{len(PAYLOAD)}")
        else:
            self.send_response(200)
        body = PAYLOAD[start:]
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        cut = server.cut_after.pop(0) if server.cut_after else None
        if cut is not None:
            # Announce the full length, send part of it, then drop the connection.
            self.wfile.write(body[:cut])
            self.wfile.flush()
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        self.wfile.write(body)


@pytest.fixture
def server():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.requests = []
    httpd.cut_after = []
    httpd.statuses = []  # error statuses answered before serving
    httpd.ranges = True
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    httpd.url = f"http://127.0.0.1:{httpd.server_address[1]}/wikidata.json.bz2"
    yield httpd
    httpd.shutdown()
    httpd.server_close()


def fast(retries: int = 8) -> dict:
    """No waiting between attempts, short timeouts, no progress bar, and small reads: a cut loses
    at most one read buffer, so the resume point is near the cut."""
    return {
        "retry": Retry(retries=retries, backoff=0.0, timeout=(5, 5), chunk_size=1 << 14),
        "progress": False,
    }


def test_full_download_with_checksum(server, tmp_path):
    dest = tmp_path / "d" / "wikidata-20190201.json.bz2"
    download(server.url, dest, f"sha1:{SHA1}", **fast())
    assert dest.read_bytes() == PAYLOAD
    assert not dest.with_name(dest.name + ".part").exists()
    assert server.requests == [None]


def test_cut_transfer_resumes_with_range(server, tmp_path):
    half = len(PAYLOAD) // 2
    server.cut_after = [half]
    dest = tmp_path / "wikidata.json.bz2"
    download(server.url, dest, f"md5:{hashlib.md5(PAYLOAD).hexdigest()}", **fast(2))
    assert dest.read_bytes() == PAYLOAD
    # The second request asked only for what the first one did not deliver.
    assert server.requests[0] is None
    assert len(server.requests) == 2
    resumed_from = int(re.fullmatch(r"bytes=(\d+)-", server.requests[1]).group(1))
    assert 0 < resumed_from <= half


def test_part_file_from_an_earlier_process_is_resumed(server, tmp_path):
    dest = tmp_path / "wikidata.json.bz2"
    part = tmp_path / "wikidata.json.bz2.part"
    part.write_bytes(PAYLOAD[:1000])
    download(server.url, dest, f"sha256:{hashlib.sha256(PAYLOAD).hexdigest()}", **fast())
    assert dest.read_bytes() == PAYLOAD and server.requests == ["bytes=1000-"]


def test_complete_part_file_gets_416_and_is_verified(server, tmp_path):
    dest = tmp_path / "wikidata.json.bz2"
    (tmp_path / "wikidata.json.bz2.part").write_bytes(PAYLOAD)
    download(server.url, dest, f"sha1:{SHA1}", **fast())
    assert dest.read_bytes() == PAYLOAD and server.requests == [f"bytes={len(PAYLOAD)}-"]


def test_server_without_range_support_restarts_from_zero(server, tmp_path):
    server.ranges = False
    server.cut_after = [5000]
    dest = tmp_path / "wikidata.json.bz2"
    download(server.url, dest, f"sha1:{SHA1}", **fast(2))
    assert dest.read_bytes() == PAYLOAD


def test_checksum_mismatch_leaves_no_file(server, tmp_path):
    dest = tmp_path / "wikidata.json.bz2"
    wrong = "0" * 40
    with pytest.raises(ChecksumError, match=f"{SHA1}.*says {wrong}") as err:
        download(server.url, dest, f"sha1:{wrong}", **fast())
    assert server.url in str(err.value)
    assert list(tmp_path.iterdir()) == []


def test_unreachable_host_names_the_url(tmp_path):
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()  # nothing listens there now: connection refused
    url = f"http://127.0.0.1:{port}/latest-all.json.gz"
    with pytest.raises(DownloadError, match=re.escape(url) + r": cannot connect \(3 attempts\)"):
        download(url, tmp_path / "x.json.gz", None, **fast(8))
    assert not (tmp_path / "x.json.gz").exists()
    with pytest.raises(DownloadError, match=re.escape(url) + r": download failed after 2 attempts"):
        download(url, tmp_path / "x.json.gz", None, **fast(1))


def test_transient_503_is_retried(server, tmp_path):
    server.statuses = [503, 503]
    dest = tmp_path / "wikidata.json.bz2"
    download(server.url, dest, f"sha1:{SHA1}", **fast(2))
    assert dest.read_bytes() == PAYLOAD and len(server.requests) == 3


def test_http_404_fails_at_once(server, tmp_path):
    url = server.url.replace("wikidata.json.bz2", "gone.json.bz2")
    with pytest.raises(DownloadError, match="HTTP 404"):
        download(url, tmp_path / "x.json.bz2", None, **fast(5))
    assert len(server.requests) == 1


@pytest.mark.parametrize("text", ["sha1", "crc32:abcd", "sha1:xyz", "md5:" + "0" * 31])
def test_bad_checksum_spec(text):
    with pytest.raises(ValueError):
        Checksum.parse(text)


# --- permanent errors are not retried by Snakemake either -------------------

ROOT = DEMO_NEW.parents[2]


def scratch_workflow(tmp_path, url, checksum):
    """A copy of the workflow whose dumps.tsv adds a ``url`` row (dump 20200101) served by ``url``."""
    import shutil

    for name in ("workflow", "config", "environment.yml"):
        src = ROOT / name
        (shutil.copytree if src.is_dir() else shutil.copy)(src, tmp_path / name)
    (tmp_path / "resources").mkdir()
    for name in ("demo", "templates", "properties"):
        (tmp_path / "resources" / name).symlink_to(ROOT / "resources" / name)
    with open(tmp_path / "config" / "dumps.tsv", "a") as fh:
        fh.write(f"20200101\tfalse\t\t{url}\t{checksum}\n")
    return "resources/dumps/20200101/wikidata-20200101.json.bz2"


@pytest.mark.parametrize("case", ["checksum", "404"])
def test_permanent_error_is_submitted_once(server, tmp_path, case):
    import subprocess
    import sys

    url = server.url if case == "checksum" else server.url.replace("wikidata.json", "gone.json")
    target = scratch_workflow(tmp_path, url, "sha1:" + "0" * 40)
    # --retries 3 on the command line: the rule's own `retries: 0` must win over it.
    proc = subprocess.run(
        [sys.executable, "-m", "snakemake", "--cores", "1", "--retries", "3", target],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    log = (tmp_path / "logs" / "download_dump" / "20200101.json.bz2.log").read_text()
    assert proc.returncode != 0
    assert len(server.requests) == 1, (server.requests, proc.stderr[-2000:])
    expected = "ChecksumError" if case == "checksum" else "HTTP 404"
    assert expected in log, log
    assert not (tmp_path / target).exists()
    assert not (tmp_path / (target + ".part")).exists()


# --- local dumps: verified once, remembered by size + mtime -----------------------------------


def test_local_dump_is_hashed_once_then_remembered(tmp_path, monkeypatch):
    from factprobe.wikidata import download as dl

    dump = tmp_path / "wikidata.json.bz2"
    dump.write_bytes(PAYLOAD)
    stamp = tmp_path / "stamps" / "20190201.json"
    assert dl.verify_local(dump, f"sha1:{SHA1}", stamp) is True
    assert stamp.exists()
    calls = []
    real = dl.file_digest
    monkeypatch.setattr(dl, "file_digest", lambda *a, **k: calls.append(a) or real(*a, **k))
    assert dl.verify_local(dump, f"sha1:{SHA1}", stamp) is False
    assert calls == []
    # A changed file (new mtime) is hashed again; so is a changed checksum column.
    st = dump.stat()
    import os

    os.utime(dump, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    assert dl.verify_local(dump, f"sha1:{SHA1}", stamp) is True
    assert dl.verify_local(dump, f"md5:{hashlib.md5(PAYLOAD).hexdigest()}", stamp) is True
    assert len(calls) == 2


def test_local_dump_mismatch_names_file_and_digests(tmp_path):
    from factprobe.wikidata.download import verify_local

    dump = tmp_path / "wikidata.json.bz2"
    dump.write_bytes(PAYLOAD[:-1] + b"x")
    stamp = tmp_path / "20190201.json"
    wrong = hashlib.sha1(dump.read_bytes()).hexdigest()
    with pytest.raises(ChecksumError) as err:
        verify_local(dump, f"sha1:{SHA1}", stamp, "config/dumps.tsv: line 3 (dump 20190201)")
    msg = str(err.value)
    assert str(dump) in msg and wrong in msg and SHA1 in msg and "line 3 (dump 20190201)" in msg
    assert not stamp.exists()


def test_local_dump_without_checksum_is_not_read(tmp_path):
    from factprobe.wikidata.download import verify_local_dumps

    rows = [{"dump": "20190201", "enabled": True, "path": str(tmp_path / "absent.json.bz2"), "_line": 2}]
    assert verify_local_dumps(rows, "config/dumps.tsv", tmp_path) == []
    assert list(tmp_path.iterdir()) == []


def test_demo_rows_carry_correct_checksums():
    import csv

    with open(ROOT / "config" / "dumps.tsv", newline="") as fh:
        rows = [r for r in csv.DictReader(fh, delimiter="\t") if r["path"]]
    assert rows
    for row in rows:
        algo, _, digest = row["checksum"].partition(":")
        assert digest == hashlib.new(algo, (ROOT / row["path"]).read_bytes()).hexdigest(), row


def test_wrong_local_checksum_fails_the_extraction_job_not_the_dry_run(tmp_path):
    """Dumps are hashed by the first job that reads them: a dry run reads none."""
    import subprocess
    import sys

    scratch_workflow(tmp_path, "http://127.0.0.1:9/x.json.bz2", "")
    tsv = tmp_path / "config" / "dumps.tsv"
    tsv.write_text(tsv.read_text().replace("d14a7864de5e19ad1d5fc02640af80b91c51320b", "1" * 40))

    def snakemake(*args):
        cmd = [sys.executable, "-m", "snakemake", "--cores", "1", *args]
        return subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=300)

    dry = snakemake("-n")
    assert dry.returncode == 0, dry.stderr[-2000:]
    assert not (tmp_path / "results").exists()
    targets = [f"results/wikidata/{d}/entities.parquet" for d in ("20141201", "20190201")]
    proc = snakemake("--keep-going", *targets)
    assert proc.returncode != 0
    log = (tmp_path / "logs/extract_dump/20190201.log").read_text()
    assert "wikidata-20190201-sample.json.bz2: sha1 is d14a7864de5e19ad1d5fc02640af80b91c51320b" in log, log[
        -2000:
    ]
    assert "config/dumps.tsv (dump 20190201)" in log and "fix (or empty) the row's checksum" in log
    assert not (tmp_path / targets[1]).exists() and (tmp_path / targets[0]).exists()
    # The good row was remembered, the bad one not.
    assert sorted(p.name for p in (tmp_path / "results/cache/checksums").iterdir()) == ["20141201.json"]
