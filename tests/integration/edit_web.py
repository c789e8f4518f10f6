"""A one-host web whose pages are edited between two crawls (re-crawl change tests).

Like twin_web.py, a thread of the test process on its own 127.x address. Every
page exists in two revisions (tests/corpus/furniture_corpus.revisions); the
test flips ``revision`` between crawls. No validators (no ETag/Last-Modified),
so every re-fetch is a full 200 the content pipeline must judge:

    /sentence-<i>   the re-fetch gains one sentence in the main text (changed)
    /section-<i>    the re-fetch gains a ~300-word section          (changed)
    /furniture-<i>  new ad, footer, counters and date, same text     (unchanged)
    /none-<i>       byte-identical                                   (unchanged)

Text edits are served on all four layouts of the furniture corpus, furniture
changes on the three whose furniture is marked up as such (class names, tags):
on the "plain" layout nothing tells a byline from a sentence, and a new date
there is a change of the main text (README, "What happens to a fetched page").
"""

from __future__ import annotations

import functools
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.corpus.furniture_corpus import CHANGES, SITES, revisions

HOST = "edits.test"
ADDRESS = "127.0.31.2"
MARKED_UP = ("blog", "news", "docs")


@functools.cache
def pages() -> dict[str, tuple[bytes, bytes]]:
    """path -> (first revision, second revision)."""
    out: dict[str, tuple[bytes, bytes]] = {}
    n = 0
    for change in CHANGES:
        sites = SITES if change in ("sentence", "section") else MARKED_UP
        for i, site in enumerate(sites):
            first, second = revisions(n, change, site)
            out[f"/{change}-{i}"] = (first.encode(), second.encode())
            n += 1
    index = "".join(f'<li><a href="{path}">{path}</a></li>' for path in out)
    root = f"<html><body><h1>Edits</h1><ul>{index}</ul></body></html>".encode()
    out["/"] = (root, root)
    return out


class EditWeb:
    """ThreadingHTTPServer on ADDRESS:<free port>; ``revision`` (0 or 1) picks the version."""

    def __init__(self) -> None:
        self.revision = 0
        self._server: ThreadingHTTPServer | None = None

    def __enter__(self) -> EditWeb:
        web, content = self, pages()

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                path = self.path.split("?", 1)[0]
                if path == "/robots.txt":
                    kind, body, status = "text/plain", b"User-agent: *\nAllow: /\n", 200
                elif path in content:
                    kind, body, status = (
                        "text/html; charset=utf-8",
                        content[path][web.revision],
                        200,
                    )
                else:
                    kind, body, status = "text/plain", b"not found\n", 404
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer((ADDRESS, 0), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def url(self, path: str = "/") -> str:
        assert self._server is not None
        return f"http://{HOST}:{self._server.server_address[1]}{path}"
