"""robots.txt fetch failures by cause, counted on the wire.

Why: the robots gate (robots/gate.py) turns every failed fetch into a verdict
(`robots/fetch_failed` for a network failure, `robots/verdict/<kind>` after it), which
is what the crawl acts on, but an operator of a scaled crawl asks why robots.txt keeps
failing: timeouts, DNS, refused connections, or servers answering 5xx or 429. This
downloader middleware sits beside FetchErrorsMiddleware (inside the retry and redirect
middlewares; robots.txt fetches are never retried), sees each robots.txt attempt and
counts its cause with fetch/errors.py's classifier. The counts reach every worker's
view through G:worker_stats (shared_stats.py).

Stats (one per branch):
    robots/failed/<cause>    timeout, dns, connect, tls, dropped, other (network)
    robots/failed/http_429   Too Many Requests
    robots/failed/http_5xx   a server error (the gate treats robots.txt as unavailable)
A 4xx other than 429 is no failure: robots.txt is absent, so everything is allowed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from extensions.fetch.errors import classify
from extensions.observe.crawl_gauges import ROBOTS_FAILED_PREFIX

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from scrapy.statscollectors import StatsCollector


def is_robots(request: Request) -> bool:
    # Page URLs named robots.txt are never admitted (URL_SKIP_EXTENSIONS keeps them out).
    return urlsplit(request.url).path == "/robots.txt"


def status_failure(status: int) -> str | None:
    if status == 429:
        return "http_429"
    if 500 <= status < 600:
        return "http_5xx"
    return None


class RobotsFailuresMiddleware:
    """Counts failed robots.txt fetch attempts by cause in `robots/failed/<cause>`."""

    def __init__(self, stats: StatsCollector) -> None:
        self.stats = stats

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> RobotsFailuresMiddleware:
        assert crawler.stats is not None
        return cls(crawler.stats)

    def process_response(self, request: Request, response: Response) -> Response:
        cause = status_failure(response.status) if is_robots(request) else None
        if cause is not None:
            self.stats.inc_value(ROBOTS_FAILED_PREFIX + cause)
        return response

    def process_exception(self, request: Request, exception: Exception) -> None:
        if is_robots(request):
            self.stats.inc_value(ROBOTS_FAILED_PREFIX + classify(exception))
