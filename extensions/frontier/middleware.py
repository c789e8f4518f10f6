"""Downloader middleware that tells the frontier when a fetch ends, and how.

It sits innermost (FRONTIER_DOWNLOADER_MIDDLEWARE order 950, past HttpCache at
900), so it sees the raw outcome first: the status and Retry-After for backoff and
the throttle, timeouts and connection failures for the failure backoff and quarantine,
before retry or redirect middlewares act on them.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING
from urllib.parse import urljoin, urlsplit

from extensions.admission.redirect_walks import CHAIN_META, walks_in_place
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


def redirect_target(url: str, response: Response) -> str | None:
    """The absolute URL a 3xx response sends `url` to; None for any other response."""
    if not 300 <= response.status < 400:
        return None
    location = response.headers.get(b"Location")
    if not location:
        return None
    try:
        return urljoin(url, location.decode("latin-1").strip())
    except ValueError:  # a hostile Location ("http://[::1"): no target to judge
        return None


def redirects_home(url: str, location: str) -> bool:
    """A redirect (to `location`, redirect_target's) from a path other than the root to
    the same origin's root ("/", no query)."""
    source = urlsplit(url)
    target = urlsplit(location)
    if source.path in ("", "/") or (target.scheme, target.netloc) != (source.scheme, source.netloc):
        return False
    return target.path in ("", "/") and not target.query


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
            target = redirect_target(request.url, response)
            if target is None:
                return response
            if redirects_home(request.url, target):
                # Many servers answer an unknown path with a redirect to their home page:
                # a soft 404 its pattern learns from (the page behind it is the home page,
                # fetched already; the redirected request carries no outcome of its own).
                request.meta["frontier_outcome"] = "soft_404"
                self.crawler.stats.inc_value("frontier/redirected_home")
            elif walks_in_place(request.url, target, request.meta.get(CHAIN_META) or []):
                # A hop of an endless redirect chain (admission/redirect_walks.py): its
                # pattern learns it as bad, as a duplicate would teach it.
                request.meta["frontier_outcome"] = "redirect_walk"
                self.crawler.stats.inc_value("frontier/redirect_walk_hops")
        return response

    def process_exception(self, request: Request, exception: Exception) -> None:
        scheduler = frontier_scheduler(self.crawler)
        if scheduler is not None:
            cause = classify(exception)
            scheduler.download_done(
                request, timeout=cause == "timeout", failed=cause in _IP_FAILURES
            )
