"""A one-host web of near-duplicate pages, for crawls that must see duplicates.

The shared test web (scripts/testweb) renders distinct prose on every page.
Until it grows near-duplicate pages, this small server (a thread of the test
process, on its own 127.x address) serves one article of the furniture corpus
(tests/corpus/furniture_corpus.py) in four versions, an unrelated article of
the other corpus and a text document:

    /doc          the article (corpus base page, a blog layout)
    /doc-updated  another "updated" date           (near duplicate)
    /doc-all      date, ad, footer, counters and ~2% words edited (near duplicate)
    /doc-copy     /doc with different whitespace (exact duplicate: same content_hash)
    /other        an unrelated article of the corpus
    /notes.txt    plain text
The corpus pages link to /ref and /lib, which answer the same 404 body
(an exact duplicate pair too). Every request is logged.
"""

from __future__ import annotations

import functools
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.corpus import furniture_corpus
from tests.corpus.neardup_corpus import build_corpus

HOST = "twins.test"
ADDRESS = "127.0.31.1"
GROUP = ("/doc", "/doc-updated", "/doc-all", "/doc-copy")
ROBOTS = b"User-agent: *\nAllow: /\n"


@functools.cache
def pages() -> dict[str, tuple[str, bytes]]:
    """path -> (content type, body)."""
    article = {p.variant: p.html for p in furniture_corpus.build_corpus() if p.base == 0}
    other = next(p.html for p in build_corpus() if p.base == 0 and p.variant == "base")
    root = "".join(f'<li><a href="{path}">{path}</a></li>' for path in [*GROUP, "/other"])
    html = "text/html; charset=utf-8"
    notes = " ".join(f"Note {i}: the crawler keeps plain text documents too." for i in range(40))
    return {
        "/": (html, f"<html><body><ul>{root}<li><a href=/notes.txt>notes</a></li></ul>".encode()),
        "/doc": (html, article["base"].encode()),
        "/doc-updated": (html, article["timestamp"].encode()),
        "/doc-all": (html, article["all"].encode()),
        "/doc-copy": (html, article["base"].replace(" ", " \n ").encode()),
        "/other": (html, other.encode()),
        "/notes.txt": ("text/plain; charset=utf-8", notes.encode()),
    }


class TwinWeb:
    """ThreadingHTTPServer on ADDRESS:<free port>; use as a context manager."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self._server: ThreadingHTTPServer | None = None

    def __enter__(self) -> TwinWeb:
        log, content = self.requests, pages()

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                path = self.path.split("?", 1)[0]
                if path == "/robots.txt":
                    found: tuple[str, bytes] | None = ("text/plain", ROBOTS)
                else:
                    found = content.get(path)
                kind, body = found or ("text/plain", b"not found\n")
                self.send_response(200 if found else 404)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                log.append({"path": self.path, "t": time.time()})

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer((ADDRESS, 0), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    @property
    def port(self) -> int:
        assert self._server is not None
        return int(self._server.server_address[1])

    def url(self, path: str = "/") -> str:
        return f"http://{HOST}:{self.port}{path}"
