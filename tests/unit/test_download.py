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
from factprobe.wikidata.download import Checksum, ChecksumError, DownloadError, download

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


# Small reads: a cut loses at most one read buffer, so the resume point is near the cut.
FAST = {"backoff": 0.0, "progress": False, "timeout": (5, 5), "chunk_size": 1 << 14}


def test_full_download_with_checksum(server, tmp_path):
    dest = tmp_path / "d" / "wikidata-20190201.json.bz2"
    download(server.url, dest, f"sha1:{SHA1}", **FAST)
    assert dest.read_bytes() == PAYLOAD
    assert not dest.with_name(dest.name + ".part").exists()
    assert server.requests == [None]


def test_cut_transfer_resumes_with_range(server, tmp_path):
    half = len(PAYLOAD) // 2
    server.cut_after = [half]
    dest = tmp_path / "wikidata.json.bz2"
    download(server.url, dest, f"md5:{hashlib.md5(PAYLOAD).hexdigest()}", retries=2, **FAST)
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
    download(server.url, dest, f"sha256:{hashlib.sha256(PAYLOAD).hexdigest()}", **FAST)
    assert dest.read_bytes() == PAYLOAD and server.requests == ["bytes=1000-"]


def test_complete_part_file_gets_416_and_is_verified(server, tmp_path):
    dest = tmp_path / "wikidata.json.bz2"
    (tmp_path / "wikidata.json.bz2.part").write_bytes(PAYLOAD)
    download(server.url, dest, f"sha1:{SHA1}", **FAST)
    assert dest.read_bytes() == PAYLOAD and server.requests == [f"bytes={len(PAYLOAD)}-"]


def test_server_without_range_support_restarts_from_zero(server, tmp_path):
    server.ranges = False
    server.cut_after = [5000]
    dest = tmp_path / "wikidata.json.bz2"
    download(server.url, dest, f"sha1:{SHA1}", retries=2, **FAST)
    assert dest.read_bytes() == PAYLOAD


def test_checksum_mismatch_leaves_no_file(server, tmp_path):
    dest = tmp_path / "wikidata.json.bz2"
    wrong = "0" * 40
    with pytest.raises(ChecksumError, match=f"{SHA1}.*says {wrong}") as err:
        download(server.url, dest, f"sha1:{wrong}", **FAST)
    assert server.url in str(err.value)
    assert list(tmp_path.iterdir()) == []


def test_unreachable_host_names_the_url(tmp_path):
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()  # nothing listens there now: connection refused
    url = f"http://127.0.0.1:{port}/latest-all.json.gz"
    with pytest.raises(DownloadError, match=re.escape(url) + r": cannot connect \(3 attempts\)"):
        download(url, tmp_path / "x.json.gz", None, retries=8, **FAST)
    assert not (tmp_path / "x.json.gz").exists()
    with pytest.raises(DownloadError, match=re.escape(url) + r": download failed after 2 attempts"):
        download(url, tmp_path / "x.json.gz", None, retries=1, **FAST)


def test_transient_503_is_retried(server, tmp_path):
    server.statuses = [503, 503]
    dest = tmp_path / "wikidata.json.bz2"
    download(server.url, dest, f"sha1:{SHA1}", retries=2, **FAST)
    assert dest.read_bytes() == PAYLOAD and len(server.requests) == 3


def test_http_404_fails_at_once(server, tmp_path):
    url = server.url.replace("wikidata.json.bz2", "gone.json.bz2")
    with pytest.raises(DownloadError, match="HTTP 404"):
        download(url, tmp_path / "x.json.bz2", None, retries=5, **FAST)
    assert len(server.requests) == 1


@pytest.mark.parametrize("text", ["sha1", "crc32:abcd", "sha1:xyz", "md5:" + "0" * 31])
def test_bad_checksum_spec(text):
    with pytest.raises(ValueError):
        Checksum.parse(text)
