"""Twisted server for the test web: one process, one port, many 127.x addresses.

Latency is modelled with ``reactor.callLater`` so hundreds of slow requests overlap in
one thread, exactly like slow remote servers would from the crawler's point of view.
Every request is appended to a JSONL log (flushed per line) so tests can measure
per-IP concurrency and politeness gaps from the server's side.
"""

from __future__ import annotations

import ipaddress
import json
import time
from collections import Counter
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import IO, Any

from twisted.internet import reactor as _reactor
from twisted.internet.error import CannotListenError
from twisted.internet.interfaces import IListeningPort, IReactorCore, IReactorTCP, IReactorTime
from twisted.web.resource import Resource
from twisted.web.server import NOT_DONE_YET, Request
from twisted.web.server import Site as WebSite

from .routes import Response
from .sites import Site
from .spec import LOOPBACK

# The global reactor, typed for the interfaces used here (it is installed on import).
reactor: Any = _reactor
CLIENT_CLOSED = 499  # nginx convention: client went away before the response was sent


class RequestLog:
    """Append-only JSONL request log; one flushed line per request so readers never lag."""

    def __init__(self, path: str | Path | None) -> None:
        self._file: IO[str] | None = None
        if path is not None:
            self._file = open(path, "a", encoding="utf-8")  # noqa: SIM115 - lives for the process

    def write(self, record: dict[str, Any]) -> None:
        if self._file is not None:
            self._file.write(json.dumps(record, sort_keys=True) + "\n")
            self._file.flush()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


class TestWebResource(Resource):
    """Single leaf resource: dispatches on the Host header to the generated Site."""

    __test__ = False
    isLeaf = True

    def __init__(self, log: RequestLog, clock: IReactorTime | None = None) -> None:
        super().__init__()
        self.site: Site | None = None  # set once the port (part of every URL) is known
        self.log = log
        self.clock: Any = clock or reactor
        self.hits: Counter[tuple[str, str]] = Counter()

    def render(self, request: Request) -> int:  # type: ignore[override]
        assert self.site is not None, "site must be set before the reactor runs"
        t_start = time.time()
        host = (request.getRequestHostname() or b"").decode("latin-1").lower().rstrip(".")
        path = request.uri.decode("latin-1")
        local = request.getHost()
        server_ip = local.host
        hit = self.hits[(host, path)]
        self.hits[(host, path)] += 1
        response = self._answer(request, host, server_ip, path, hit)
        record = {
            "t_start": t_start,
            "server_ip": server_ip,
            "client": request.getClientAddress().host,  # type: ignore[attr-defined]
            "host": host,
            "path": path,
            "url": f"http://{host}:{local.port}{path}",
            "method": request.method.decode("latin-1"),
            "ua": (request.getHeader(b"user-agent") or b"").decode("latin-1"),
        }
        # Conditional requests and the edition served: the freshness tests and
        # benchmark replay the crawl's view of every changing page from this log.
        for field_name, header in (("inm", b"if-none-match"), ("ims", b"if-modified-since")):
            value = request.getHeader(header)
            if value is not None:
                record[field_name] = value.decode("latin-1")
        if response.version is not None:
            record["v"] = response.version
        delay = self.site.latency(host) if response.status != 421 else 0.0
        if delay <= 0:
            self._send(request, response, record)
            return NOT_DONE_YET
        call = self.clock.callLater(delay, self._send, request, response, record)

        def aborted(_failure: object) -> None:
            # Client gave up during the artificial delay: still log it, as a 499.
            if call.active():
                call.cancel()
                self._log(record, CLIENT_CLOSED, aborted=True)

        request.notifyFinish().addErrback(aborted)
        return NOT_DONE_YET

    def _answer(self, request: Request, host: str, server_ip: str, path: str, hit: int) -> Response:
        assert self.site is not None
        parent = host if host in self.site.hosts else self.site.subdomains.parent_of(host)
        expected_ip = self.site.hosts.get(parent) if parent else None
        if expected_ip is None:
            return Response(404, {"Content-Type": "text/plain"}, b"unknown host\n")
        if expected_ip != server_ip:
            # Shared-hosting realism: a vhost is only served on its own address, which
            # also catches crawlers that ignore the hostname->IP map.
            return Response(421, {"Content-Type": "text/plain"}, b"misdirected request\n")
        response = self.site.respond(host, path, hit)
        if response.status == 200 and _not_modified(request, response.headers):
            keep = {k: v for k, v in response.headers.items() if k in ("ETag", "Last-Modified")}
            return Response(304, keep, b"", response.version)
        return response

    def _send(self, request: Request, response: Response, record: dict[str, Any]) -> None:
        request.setResponseCode(response.status)
        for name, value in response.headers.items():
            request.setHeader(name, value)
        if response.status != 304:
            request.setHeader("Content-Length", str(len(response.body)))
            request.write(response.body)
        request.finish()
        self._log(record, response.status, size=len(response.body))

    def _log(self, record: dict[str, Any], status: int, **extra: Any) -> None:
        self.log.write({**record, **extra, "status": status, "t_end": time.time()})


def _not_modified(request: Request, headers: dict[str, str]) -> bool:
    etag = headers.get("ETag")
    if_none_match = request.getHeader(b"if-none-match")
    if etag and if_none_match is not None:
        tags = {t.strip() for t in if_none_match.decode("latin-1").split(",")}
        return etag in tags or "*" in tags
    since, modified = request.getHeader(b"if-modified-since"), headers.get("Last-Modified")
    if since is None or modified is None:
        return False
    try:
        return parsedate_to_datetime(since.decode("latin-1")) >= parsedate_to_datetime(modified)
    except (TypeError, ValueError):
        return False


class QuietSite(WebSite):
    """twisted.web Site without access logging (our JSONL log replaces it)."""

    def log(self, request: Request) -> None:
        return None


def listen_all(
    factory: WebSite, ips: list[str], port: int = 0, attempts: int = 20
) -> tuple[int, list[IListeningPort]]:
    """Listen on the SAME port on every address; returns (port, listening ports).

    With port 0 the kernel picks a free port for the first address only; that number
    may already be taken on another 127.x address, so on conflict everything is closed
    and a fresh port is tried.
    """
    for ip in ips:
        if ipaddress.ip_address(ip) not in LOOPBACK:
            raise ValueError(f"refusing to bind non-loopback address {ip}")
    tcp: IReactorTCP = reactor
    for _ in range(attempts):
        bound: list[IListeningPort] = []
        try:
            for ip in ips:
                chosen = bound[0].getHost().port if bound else port  # type: ignore[attr-defined]
                bound.append(tcp.listenTCP(chosen, factory, backlog=128, interface=ip))
            return bound[0].getHost().port, bound  # type: ignore[attr-defined]
        except CannotListenError:
            for listening in bound:
                listening.stopListening()
            if port != 0:
                raise
    raise CannotListenError("127.0.0.0/8", port, OSError("no port free on every address"))


def make_server(log_path: str | Path | None) -> tuple[TestWebResource, QuietSite]:
    resource = TestWebResource(RequestLog(log_path))
    factory = QuietSite(resource)
    factory.displayTracebacks = False
    return resource, factory


def stop_reactor() -> None:
    core: IReactorCore = reactor
    if core.running:
        core.stop()
