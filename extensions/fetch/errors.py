"""Fetch outcomes by cause, counted where they happen: on the wire.

`FetchErrorsMiddleware` sits next to the downloader (DOWNLOADER_MIDDLEWARES order
940, just outside the frontier's 950), so it sees every attempt before the retry
and redirect middlewares act on it: a 503 retried twice counts three times, as the
server saw it. Scrapy's own `downloader/exception_type_count/*` names exception
classes only; the cause an operator acts on (DNS, connect, timeout, TLS) often sits
inside a wrapper (Scrapy 2.19 re-raises Twisted errors `from` the original, and
`ResponseFailed.reasons` carries the TLS failure), so the chain is walked here.

Stats (one counter per branch; the metrics and report extensions read them):
    fetch/errors/dns         name did not resolve at fetch time
    fetch/errors/connect     TCP connection refused / unreachable
    fetch/errors/timeout     connect or download timeout
    fetch/errors/tls         handshake or certificate failure
    fetch/errors/dropped     connection lost or reset mid-exchange, truncated body
    fetch/errors/other       anything else (the class name is logged at DEBUG)
    fetch/errors/http_4xx    response status 400-499
    fetch/errors/http_5xx    response status 500-599
"""

from __future__ import annotations

import logging
import socket
import ssl
from collections.abc import Iterator
from typing import TYPE_CHECKING

from scrapy.exceptions import (
    CannotResolveHostError,
    DownloadConnectionRefusedError,
    DownloadFailedError,
    DownloadTimeoutError,
    ResponseDataLossError,
)
from twisted.internet import error as txerror
from twisted.web.client import ResponseFailed

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from scrapy.statscollectors import StatsCollector

logger = logging.getLogger(__name__)

STAT_PREFIX = "fetch/errors/"
# Every cause this module can report, in display order (bounded label set).
CAUSES = ("dns", "connect", "timeout", "tls", "dropped", "other", "http_4xx", "http_5xx")

_TIMEOUT = (DownloadTimeoutError, txerror.TimeoutError, txerror.TCPTimedOutError, TimeoutError)
_DNS = (CannotResolveHostError, txerror.DNSLookupError, socket.gaierror)
_CONNECT = (
    DownloadConnectionRefusedError,
    txerror.ConnectError,
    txerror.ConnectingCancelledError,
    ConnectionRefusedError,
)
_DROPPED = (
    txerror.ConnectionLost,
    txerror.ConnectionDone,
    ConnectionResetError,
    ResponseDataLossError,
    ResponseFailed,
    DownloadFailedError,
)
# TLS errors come from pyOpenSSL, service_identity or the stdlib, depending on the stack.
_TLS_PACKAGES = ("OpenSSL", "service_identity")
_TLS_MODULE = "twisted.internet._sslverify"


def _chain(exc: BaseException, depth: int = 0) -> Iterator[BaseException]:
    """The exception, what it was raised from, and the reasons a ResponseFailed wraps."""
    if depth > 8:  # wrappers nest a few levels; a cycle must not loop forever
        return
    yield exc
    if isinstance(exc, ResponseFailed):
        for reason in exc.reasons:
            value = getattr(reason, "value", None)
            if isinstance(value, BaseException):
                yield from _chain(value, depth + 1)
    inner = exc.__cause__ or exc.__context__
    if inner is not None:
        yield from _chain(inner, depth + 1)


def _is_tls(exc: BaseException) -> bool:
    if isinstance(exc, ssl.SSLError):
        return True
    module = type(exc).__module__ or ""
    return module.split(".")[0] in _TLS_PACKAGES or module == _TLS_MODULE


def classify(exc: BaseException) -> str:
    """The cause of a failed fetch: one of CAUSES (never http_*)."""
    chain = list(_chain(exc))
    # Most specific first: a TCP connect timeout is a ConnectError too, and a
    # TLS failure arrives wrapped in ResponseNeverReceived (a "dropped" type).
    if any(isinstance(e, _TIMEOUT) for e in chain):
        return "timeout"
    if any(_is_tls(e) for e in chain):
        return "tls"
    if any(isinstance(e, _DNS) for e in chain):
        return "dns"
    if any(isinstance(e, _CONNECT) for e in chain):
        return "connect"
    if any(isinstance(e, _DROPPED) for e in chain):
        return "dropped"
    return "other"


def status_cause(status: int) -> str | None:
    """http_4xx / http_5xx for error statuses, None otherwise."""
    if 400 <= status < 500:
        return "http_4xx"
    if 500 <= status < 600:
        return "http_5xx"
    return None


class FetchErrorsMiddleware:
    """Counts every failed fetch attempt by cause in `fetch/errors/<cause>`."""

    def __init__(self, stats: StatsCollector) -> None:
        self.stats = stats

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> FetchErrorsMiddleware:
        assert crawler.stats is not None
        return cls(crawler.stats)

    def process_response(self, request: Request, response: Response) -> Response:
        cause = status_cause(response.status)
        if cause is not None:
            self.stats.inc_value(STAT_PREFIX + cause)
        return response

    def process_exception(self, request: Request, exception: Exception) -> None:
        cause = classify(exception)
        if cause == "other":
            logger.debug("Unclassified fetch error %s for %s", type(exception).__name__, request)
        self.stats.inc_value(STAT_PREFIX + cause)
        return None  # observe only: retry and the errback still see the exception
