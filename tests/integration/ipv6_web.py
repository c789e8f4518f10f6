"""A two-page site on the IPv6 loopback address (::1), for crawls of an AAAA-only name.

The test web (scripts/testweb) listens on 127.x only; this is the one IPv6 server the
tests run, and ::1 the only IPv6 address a crawl may contact (loopback, never routed):

    with Ipv6Site() as site:          # http://<name>:<site.port>/ links to /leaf
        ...
        site.requests                 # [{"path", "t", "client"}] in arrival order
"""

from __future__ import annotations

import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from socket import AF_INET6
from types import TracebackType
from typing import Any

PAGES = {
    "/": b'<html><body><p>An IPv6-only site.</p><a href="/leaf">leaf</a></body></html>',
    "/leaf": b"<html><body><p>The leaf of the IPv6-only site.</p></body></html>",
}


class _Server(ThreadingHTTPServer):
    address_family = AF_INET6
    daemon_threads = True
    requests: list[dict[str, Any]]


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def do_GET(self) -> None:
        self.server.requests.append(
            {"path": self.path, "t": time.time(), "client": self.client_address[0]}
        )
        body = PAGES.get(self.path)
        self.send_response(200 if body else 404)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body or b"")))
        self.end_headers()
        self.wfile.write(body or b"")

    def log_message(self, format: str, *args: Any) -> None:
        pass  # the request list is the log


class Ipv6Site:
    def __init__(self) -> None:
        self.server = _Server(("::1", 0), _Handler)
        self.server.requests = []
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def port(self) -> int:
        return int(self.server.server_address[1])

    @property
    def requests(self) -> list[dict[str, Any]]:
        return list(self.server.requests)

    def __enter__(self) -> Ipv6Site:
        self.thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.server.shutdown()
        self.server.server_close()
