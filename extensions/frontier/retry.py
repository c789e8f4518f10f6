"""Scrapy's RetryMiddleware, with the frontier's politeness in mind (issue 13).

Scrapy counts a 429 or 503 against RETRY_TIMES and gives the page up after two retries,
although the frontier honoured each Retry-After: a rate-limited host's pages were lost.
Here a 429/503 is not a retry but a backoff: the page goes back to the frontier with its
own count (meta["frontier_backoffs"]), outside the retry budget, and is given up only
after FRONTIER_MAX_BACKOFFS of them, with a warning and a stat; the spider still gets
the last response, so the page has its metadata row (status 429 or 503).

A timed-out page is retried at most once (TIMEOUT_RETRIES): each attempt held the server's
only slot for the whole DOWNLOAD_TIMEOUT; its name's next answer avoids that address, so
the retry goes to another one if the name has it (a host switched off behind a firewall
completes no handshake, a hung one answers nothing: neither refuses). A connection that
never reached the server (refused, unroutable: fetch/errors.py "connect") says nothing of
the page: like a 429 it waits for its IP's backoff outside RETRY_TIMES, as many as
FRONTIER_MAX_BACKOFFS times (meta["frontier_unreached"]), and its name's next answer
avoids that address (dns/cache.py avoid: a name with another address fails over to it);
an IP that stays down is given up whole (outcome.lua, after FRONTIER_DOWN_AFTER).
RETRY_TIMES alone gave a restarting server's last pages up within ~7 s, three refused
tries in a row. Other failures keep RETRY_TIMES.

Every retry and backoff goes back through the scheduler (engine.crawl), so with the
frontier it joins its IP's back queue and starts no earlier than the IP's backoff
(outcome.lua sets blocked_until when the fetch's end is reported, before the retry is
leased). Without the frontier (another SCHEDULER) this is Scrapy's RetryMiddleware.

Stats:
    frontier/backoff_requeued    a 429/503 page sent back to wait for its IP's backoff
    frontier/backoff_gave_up     a page given up after FRONTIER_MAX_BACKOFFS backoffs
    frontier/unreached_requeued  a page whose connection was refused, sent back to wait
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from scrapy.downloadermiddlewares.retry import RetryMiddleware, get_retry_request

from extensions.admission.filters import host_of
from extensions.dns.cache import registered_resolver
from extensions.fetch.errors import classify
from extensions.frontier.config import scheduler_settings
from extensions.frontier.scheduler import frontier_scheduler

if TYPE_CHECKING:
    from typing import Self

    from scrapy import Request, Spider
    from scrapy.crawler import Crawler
    from scrapy.http import Response

logger = logging.getLogger(__name__)

RATE_LIMITED = frozenset({429, 503})
BACKOFFS_META = "frontier_backoffs"
UNREACHED_META = "frontier_unreached"
# The bound: a timeout is retried once, never more, whatever RETRY_TIMES says.
TIMEOUT_RETRIES = 1


class FrontierRetryMiddleware(RetryMiddleware):
    max_backoffs: int

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        middleware = super().from_crawler(crawler)
        middleware.max_backoffs = scheduler_settings(crawler.settings).max_backoffs
        return middleware

    def process_response(
        self, request: Request, response: Response, spider: Spider | None = None
    ) -> Request | Response:
        if (
            response.status not in RATE_LIMITED
            or request.meta.get("dont_retry", False)
            or frontier_scheduler(self.crawler) is None
        ):
            return super().process_response(request, response)
        return self._back_off(request, response)

    def process_exception(
        self, request: Request, exception: Exception, spider: Spider | None = None
    ) -> Request | Response | None:
        if not isinstance(exception, self.exceptions_to_retry) or request.meta.get(
            "dont_retry", False
        ):
            return super().process_exception(request, exception)
        cause = classify(exception)
        if cause == "connect" and frontier_scheduler(self.crawler) is not None:
            return self._unreached(request, exception)
        if cause != "timeout":
            return super().process_exception(request, exception)
        if frontier_scheduler(self.crawler) is not None:
            self._avoid(request)
        limit = request.meta.get("max_retry_times", self.max_retry_times)
        assert self.crawler.spider is not None
        return get_retry_request(
            request,
            spider=self.crawler.spider,
            reason=exception,
            max_retry_times=min(limit, TIMEOUT_RETRIES),
            priority_adjust=request.meta.get("priority_adjust", self.priority_adjust),
            give_up_log_level=request.meta.get("give_up_log_level", self.give_up_log_level),
        )

    def _unreached(self, request: Request, exception: Exception) -> Request | Response | None:
        """The page again, after its IP's failure backoff, without spending a retry; once
        FRONTIER_MAX_BACKOFFS of them ran out, Scrapy's retries as before."""
        unreached = request.meta.get(UNREACHED_META, 0) + 1
        if unreached > self.max_backoffs:
            return super().process_exception(request, exception)
        self._avoid(request)
        again = request.copy()
        again.meta[UNREACHED_META] = unreached
        again.dont_filter = True  # the same URL again: URL-seen would refuse it
        assert self.crawler.stats is not None
        self.crawler.stats.inc_value("frontier/unreached_requeued")
        return again

    @staticmethod
    def _avoid(request: Request) -> None:
        """The page's address got no answer: its name's next answer is another address,
        if it has one, so admission routes the page (and dispatch its queued siblings)
        there."""
        ip, resolver = request.meta.get("frontier_ip"), registered_resolver()
        if ip and resolver is not None:
            resolver.avoid(host_of(request.url), ip)

    def _back_off(self, request: Request, response: Response) -> Request | Response:
        """The page again, after its IP's backoff; the response once the backoffs run out."""
        stats = self.crawler.stats
        assert stats is not None
        backoffs = request.meta.get(BACKOFFS_META, 0) + 1
        if backoffs > self.max_backoffs:
            stats.inc_value("frontier/backoff_gave_up")
            logger.warning(
                "Gave up on %s: answered %d after %d backoffs (FRONTIER_MAX_BACKOFFS)",
                request.url,
                response.status,
                self.max_backoffs,
            )
            return response
        again = request.copy()
        again.meta[BACKOFFS_META] = backoffs
        again.dont_filter = True  # the same URL again: URL-seen would refuse it
        stats.inc_value("frontier/backoff_requeued")
        return again
