"""A loopback HTTP server that replays the dump servers' responses in tests/data/dump_sources/
(see its README for where each format was checked).

``/wikimedia/...`` answers like https://dumps.wikimedia.org/wikidatawiki/entities/ and ``/ia/...``
like https://archive.org/ (advanced search, metadata API, downloads). Dump files are served from
``PAYLOADS``; ``server.requests`` lists every path asked for.
"""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "data" / "dump_sources"
DEMO = (ROOT / "resources" / "demo" / "wikidata-20190201-sample.json.bz2").read_bytes()
#: Paths of the dump files the fixtures list with the demo sample's real checksums.
PAYLOADS = {
    "/wikimedia/20261116/wikidata-20261116-all.json.bz2": DEMO,
    "/ia/download/wikibase-wikidatawiki-20190201/wikidata-20190201-all.json.bz2": DEMO,
}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):  # keep pytest output clean
        pass

    def _send(self, status: int, body: bytes, ctype: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        url = urlsplit(self.path)
        self.server.requests.append(self.path)
        path = url.path
        if path in self.server.payloads:
            return self._send(200, self.server.payloads[path], "application/octet-stream")
        if path == "/ia/advancedsearch.php":
            query = parse_qs(url.query)
            if query.get("output") != ["json"] or "identifier" not in query.get("fl[]", []):
                return self._send(400, b"bad query", "text/plain")
            return self._send(200, (FIXTURES / "ia/advancedsearch.json").read_bytes(), "application/json")
        if path.startswith("/ia/metadata/"):
            found = FIXTURES / "ia/metadata" / f"{path.rsplit('/', 1)[1]}.json"
            return self._send(200, found.read_bytes() if found.is_file() else b"{}", "application/json")
        if path.startswith("/wikimedia/"):
            local = FIXTURES / path.lstrip("/")
            if path.endswith("/") and (local / "index.html").is_file():
                return self._send(200, (local / "index.html").read_bytes(), "text/html")
            if local.is_file():
                return self._send(200, local.read_bytes(), "text/plain")
        self._send(404, b"<html><body>404 Not Found</body></html>", "text/html")


class DumpServer:
    """Context manager: the server in a thread; ``env`` holds the base-URL variables."""

    def __enter__(self) -> DumpServer:
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.requests = self.requests = []
        self.httpd.payloads = self.payloads = dict(PAYLOADS)
        base = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.wikimedia, self.archive = f"{base}/wikimedia/", f"{base}/ia/"
        self.env = {"FACTPROBE_WIKIMEDIA_DUMPS_URL": self.wikimedia, "FACTPROBE_ARCHIVE_URL": self.archive}
        self.thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
