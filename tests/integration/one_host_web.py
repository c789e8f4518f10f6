"""A one-host web served by a thread of the test process (twin_web, edit_web).

Subclasses say what a path answers (``answer``); this class runs the
ThreadingHTTPServer on the subclass's 127.x ADDRESS and a free port, serves
robots.txt (allow all), logs every request, and stops with the ``with`` block.
"""

from __future__ import annotations

import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar, Self

ROBOTS = b"User-agent: *\nAllow: /\n"
NOT_FOUND = ("text/plain", b"not found\n")


class OneHostWeb:
    HOST: ClassVar[str]
    ADDRESS: ClassVar[str]

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self._server: ThreadingHTTPServer | None = None

    def answer(self, path: str) -> tuple[str, bytes] | None:
        """(content type, body) of a path, or None for a 404."""
        raise NotImplementedError

    def __enter__(self) -> Self:
        web = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                path = self.path.split("?", 1)[0]
                found = ("text/plain", ROBOTS) if path == "/robots.txt" else web.answer(path)
                kind, body = found or NOT_FOUND
                self.send_response(200 if found else 404)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                web.requests.append({"path": self.path, "t": time.time()})

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer((self.ADDRESS, 0), Handler)
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
        return f"http://{self.HOST}:{self.port}{path}"
