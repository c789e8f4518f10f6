"""`scrapy crawl web` on a site whose pages link files that are not pages (issue #12).

A documentation site behind nginx, as a new user crawled it: 27% of all requests went
to non-page files. Here one HTML page links an image and a Sphinx-style source listing
(skipped at admission by their extension: never requested), and two extensionless URLs
that answer with a PDF and a large plain-text dump (requested, then cut at the headers
by ContentTypeFilter: the body never downloads, yet each gets its metadata row).
"""

from __future__ import annotations

import gzip
import re
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from scripts.crawlrun import CrawlResult, run_crawl, write_seeds

HOST = "files.test"
ADDRESS = "127.0.31.4"
# Larger than loopback socket buffers hold (so the server sees the cut), below the
# crawl's DOWNLOAD_MAXSIZE (so only its type can stop it).
BIG_BYTES = 32 * 1024 * 1024
CHUNK_BYTES = 64 * 1024
INDEX = b"""<html><head><title>Manual</title></head><body><h1>Manual</h1>
<p>Read the <a href="/guide">guide</a>.</p>
<img src="/_images/logo.png"><a href="/_images/logo.png">logo</a>
<a href="/_sources/index.rst.txt">Show source</a>
<a href="/report">The report (PDF)</a> <a href="/dump">All messages</a>
<a href="/notes">Notes</a></body></html>"""
GUIDE = b"<html><body><h1>Guide</h1><p>Back to the <a href='/'>index</a>.</p></body></html>"
# path -> (Content-Type, Content-Encoding or "", body)
ROUTES: dict[str, tuple[str, str, bytes]] = {
    "/": ("text/html; charset=utf-8", "", INDEX),
    "/guide": ("text/html", "", GUIDE),
    "/robots.txt": ("text/plain", "", b"User-agent: *\nAllow: /\n"),
    "/_images/logo.png": ("image/png", "", b"\x89PNG\r\n\x1a\n" + b"\0" * 1024),
    "/_sources/index.rst.txt": ("text/plain", "", b"Manual\n======\n"),
    "/report": ("application/pdf", "", b"%PDF-1.4\n" + b"0" * (2 * 1024 * 1024)),
    "/dump": ("text/plain; charset=utf-8", "", b"message\n" * (BIG_BYTES // 8)),
    # nginx compresses text/plain: the empty cut body must get through decompression.
    "/notes": ("text/plain", "gzip", gzip.compress(b"a note\n" * 1000)),
}


class FilesSite:
    """ROUTES on ADDRESS; logs each request before its body is sent (a cut download
    breaks the write), and the bytes of body each one managed to send."""

    def __init__(self) -> None:
        self.requests: list[str] = []
        self.sent: dict[str, int] = {}
        self._server = ThreadingHTTPServer((ADDRESS, 0), self._handler())

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        site = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                site.requests.append(self.path)
                kind, encoding, body = ROUTES.get(self.path, ("text/html", "", b"<p>no</p>"))
                self.send_response(200 if self.path in ROUTES else 404)
                self.send_header("Content-Type", kind)
                if encoding:
                    self.send_header("Content-Encoding", encoding)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                site.sent[self.path] = site.sent.get(self.path, 0)
                for start in range(0, len(body), CHUNK_BYTES):
                    try:
                        self.wfile.write(body[start : start + CHUNK_BYTES])
                    except OSError:  # the crawler closed the connection
                        self.close_connection = True
                        return
                    site.sent[self.path] += min(CHUNK_BYTES, len(body) - start)

            def log_message(self, *args: Any) -> None:
                pass

        return Handler

    def url(self, path: str) -> str:
        return f"http://{HOST}:{self._server.server_address[1]}{path}"

    def __enter__(self) -> FilesSite:
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


def stat(result: CrawlResult, name: str) -> int:
    """A counter from the stats Scrapy dumps at close (0 when absent)."""
    found = re.search(rf"'{re.escape(name)}': (\d+)", result.log)
    return int(found.group(1)) if found else 0


@pytest.fixture(scope="module")
def crawled(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[FilesSite, CrawlResult]]:
    tmp: Path = tmp_path_factory.mktemp("types")
    with FilesSite() as site:
        seeds = write_seeds(tmp / "seeds.txt", [site.url("/")])
        settings = {
            "DNS_HOSTS_MAP": {HOST: ADDRESS},
            "FRONTIER_DELAY": 0,
            "DOWNLOAD_MAXSIZE": 2 * BIG_BYTES,
            # Its soft-404 probe would be one more request: not this test's subject.
            "SOFT404_ENABLED": False,
        }
        result = run_crawl(seeds, tmp / "data", settings, timeout=120)
        yield site, result


def test_extension_links_are_never_requested(crawled: tuple[FilesSite, CrawlResult]) -> None:
    site, result = crawled
    assert result.returncode == 0, result.log[-3000:]
    assert "/_images/logo.png" not in site.requests
    assert "/_sources/index.rst.txt" not in site.requests
    # Two links each (img src is not followed, a href is): one rejection per link seen.
    assert stat(result, "frontier/rejected/filter/extension") == 2


def test_unwanted_types_are_cut_at_the_headers(crawled: tuple[FilesSite, CrawlResult]) -> None:
    site, result = crawled
    # Requested once each: the frontier took the cut fetch as complete (acked, no re-delivery).
    assert sorted(site.requests) == sorted(
        ["/robots.txt", "/", "/guide", "/report", "/dump", "/notes"]
    )
    assert stat(result, "fetch/content_type/aborted/application/pdf") == 1
    assert stat(result, "fetch/content_type/aborted/text/plain") == 2
    assert stat(result, "fetch/content_type/kept") == 3  # robots.txt, /, /guide
    # What the crawler took in: the pages and headers, not 34 MB of bodies.
    assert stat(result, "downloader/response_bytes") < 64 * 1024
    assert site.sent["/dump"] < BIG_BYTES  # the server could not push it all


def test_every_document_keeps_its_row(crawled: tuple[FilesSite, CrawlResult]) -> None:
    site, result = crawled
    rows = {row["url"]: row for row in result.items}
    assert set(rows) == {site.url(p) for p in ("/", "/guide", "/report", "/dump", "/notes")}
    page = rows[site.url("/")]
    assert page["status"] == 200 and page["content_type"] == "text/html"
    assert page["length"] == len(INDEX) and page["content_ref"]
    for path, kind in (
        ("/report", "application/pdf"),
        ("/dump", "text/plain"),
        ("/notes", "text/plain"),
    ):
        row = rows[site.url(path)]
        assert (row["status"], row["content_type"], row["length"]) == (200, kind, 0), path
        assert row["content_ref"] is None, path
    assert stat(result, "crawlproj/pages/not_html") == 3
