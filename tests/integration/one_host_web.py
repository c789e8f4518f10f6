"""A one-host web served by a thread of the test process (twin_web, edit_web).

Subclasses say what a path answers (``answer``, or the whole ``respond``); this class
runs the ThreadingHTTPServer on the subclass's 127.x ADDRESS and a free port, serves
robots.txt (allow all), logs every request (path, time, status), and stops with the
``with`` block.
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
        self._handler: type[BaseHTTPRequestHandler] | None = None

    @property
    def host(self) -> str:
        return self.HOST

    @property
    def address(self) -> str:
        return self.ADDRESS

    def answer(self, path: str) -> tuple[str, bytes] | None:
        """(content type, body) of a path, or None for a 404."""
        raise NotImplementedError

    def respond(self, path: str) -> tuple[int, tuple[tuple[str, str], ...], bytes]:
        """(status, headers, body) of a request path: robots.txt, else `answer` of the
        path without its query. A web that redirects or keeps state in paths overrides it."""
        path = path.split("?", 1)[0]
        found = ("text/plain", ROBOTS) if path == "/robots.txt" else self.answer(path)
        kind, body = found or NOT_FOUND
        return (200 if found else 404), (("Content-Type", kind),), body

    def __enter__(self) -> Self:
        web = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                status, headers, body = web.respond(self.path)
                self.send_response(status)
                for name, value in headers:
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                web.requests.append({"path": self.path, "t": time.time(), "status": status})

            def log_message(self, *args: Any) -> None:
                pass

        self._handler = Handler
        self._listen(0)
        return self

    def _listen(self, port: int) -> None:
        """Serve on `port` (0: a free one); a web that comes back after an outage calls it
        again with its old port."""
        assert self._handler is not None
        self._server = ThreadingHTTPServer((self.address, port), self._handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def __exit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    @property
    def port(self) -> int:
        assert self._server is not None
        return int(self._server.server_address[1])

    def url(self, path: str = "/") -> str:
        return f"http://{self.host}:{self.port}{path}"
