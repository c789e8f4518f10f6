"""Downloader middleware that tells the frontier when a fetch ends, and how.

It sits innermost (FRONTIER_DOWNLOADER_MIDDLEWARE order 950, past HttpCache at
900), so it sees the raw outcome first: the status and Retry-After for backoff and
the throttle, timeouts and connection failures for the failure backoff and quarantine,
before retry or redirect middlewares act on them.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from extensions.fetch.errors import classify
from extensions.fetch.http_dates import http_time
from extensions.frontier.scheduler import frontier_scheduler

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response

# Failures besides timeouts that count against the IP (fetch/errors.py's causes): the
# server refused or dropped the connection. A DNS or TLS failure, or an unknown one,
# says nothing about the server's load.
_IP_FAILURES = frozenset({"connect", "dropped"})


def retry_after_seconds(value: bytes | None, now: float | None = None) -> float | None:
    """Retry-After as seconds from now: delta-seconds or an HTTP-date (RFC 9110 10.2.3)."""
    if not value:
        return None
    text = value.decode("latin-1").strip()
    if text.isdigit():
        return float(text)
    when = http_time(text)
    if when is None:
        return None
    return max(0.0, when - (time.time() if now is None else now))


class FrontierDownloaderMiddleware:
    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> FrontierDownloaderMiddleware:
        return cls(crawler)

    def process_response(self, request: Request, response: Response) -> Response:
        scheduler = frontier_scheduler(self.crawler)
        if scheduler is not None:
            retry_after = retry_after_seconds(response.headers.get(b"Retry-After"))
            scheduler.download_done(request, response.status, retry_after)
        return response

    def process_exception(self, request: Request, exception: Exception) -> None:
        scheduler = frontier_scheduler(self.crawler)
        if scheduler is not None:
            cause = classify(exception)
            scheduler.download_done(
                request, timeout=cause == "timeout", failed=cause in _IP_FAILURES
            )
