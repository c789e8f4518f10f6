"""A one-host web whose /drip page sends one body byte a second (issue 13's adversary).

Served by a thread of the test process on DripWeb.ADDRESS. /drip writes its headers and
then a byte a second, and between bytes watches its socket, so it notices a client that
gives up within POLL_S: that moment is the request's t_end (aborted=True), the time the
server stopped working on it. Every other page answers at once. The log has one record
per request: path, t_start, t_end, aborted.
"""

from __future__ import annotations

import select
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

ROBOTS = b"User-agent: *\nAllow: /\n"
POLL_S = 0.02
DRIP_BYTES = 60


class DripWeb:
    HOST = "drip.test"
    ADDRESS = "127.0.77.1"
    PAGES = 3

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None

    def home(self) -> bytes:
        links = "".join(f'<a href="/page/{n}">page {n}</a> ' for n in range(1, self.PAGES + 1))
        return f'<html><body><a href="/drip">drip</a> {links}</body></html>'.encode()

    def log(self, record: dict[str, Any]) -> None:
        with self._lock:
            self.requests.append(record)

    def __enter__(self) -> Self:
        web = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                record = {"path": self.path, "t_start": time.time(), "aborted": False}
                if self.path == "/drip":
                    record["aborted"] = not self._drip()
                else:
                    body = ROBOTS if self.path == "/robots.txt" else web.home()
                    self._head(len(body))
                    self.wfile.write(body)
                record["t_end"] = time.time()
                web.log(record)

            def _head(self, length: int) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(length))
                self.end_headers()
                self.wfile.flush()

            def _drip(self) -> bool:
                """False as soon as the client is gone (its FIN or RST reads as ready)."""
                self._head(DRIP_BYTES)
                for _ in range(DRIP_BYTES):
                    deadline = time.time() + 1.0
                    while time.time() < deadline:
                        ready, _, _ = select.select([self.connection], [], [], POLL_S)
                        if ready:
                            return False
                    try:
                        self.wfile.write(b"x")
                        self.wfile.flush()
                    except OSError:
                        return False
                return True

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer((self.ADDRESS, 0), Handler)
        self._server.daemon_threads = True
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
