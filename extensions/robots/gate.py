"""The robots.txt gate on the frontier's dispatch path (replaces RobotsTxtMiddleware).

No page request for an origin leaves before its robots verdict is known. When a
leased page meets an unknown origin, the page's lease is spent on fetching
robots.txt instead: the fetch goes to the same IP through the downloader, so it
counts against the IP's delay, and the page goes back to the head of its queue to
be leased again once the IP is due. A redirect to another host goes out on an IP
charged for that host (HopRoute: frontier/hops.py). Verdicts are shared by every
worker (Redis), Crawl-delay becomes the IP's crawl_delay, and Sitemap URLs are
queued at the lowest priority.
"""

from __future__ import annotations

import functools
import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from scrapy import Request

from extensions.fetch.errors import classify
from extensions.robots.cache import origin_of
from extensions.robots.verdicts import (
    DISALLOW_ALL,
    MAX_REDIRECTS,
    next_redirect,
    retry_after_ttl,
    verdict_from_response,
)

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from scrapy.core.engine import ExecutionEngine
    from scrapy.http import Response

    from extensions.robots.cache import RobotsCache
    from extensions.robots.failures import RobotsFailures
    from extensions.robots.rules import RobotsPolicy
    from extensions.robots.verdicts import RobotsVerdict


Answer = tuple[int, bytes, dict[str, str]]  # status (0: network failure), body, headers
# _download's status for a fetch that never reached the server: the connection refused
# (fetch/errors.py "connect") or timed out: a network failure (0) that RobotsFetch.unreached
# names. A timeout counts: a host switched off behind a firewall answers no handshake.
UNREACHED = -1
# Causes (fetch/errors.py classify) of a fetch that got no answer from the lease's IP.
UNREACHED_CAUSES = frozenset({"connect", "timeout"})


@dataclass(frozen=True)
class RobotsFetch:
    """The outcome of one robots.txt fetch, as the frontier needs it."""

    verdict: RobotsVerdict  # from the last response, wherever a redirect led
    status: int  # of the last response on the lease's IP; 0 = network failure or timeout
    ended_at: float
    retry_after: float | None = None  # its 429/503's Retry-After (s, bounded): the IP's backoff
    # The lease's IP refused the connection or never answered: the name may have another.
    unreached: bool = False


class HopRoute(Protocol):
    """Where a robots.txt redirect hop goes out (frontier/hops.py): on an IP charged for
    its host, under the lease in `meta` or a lease of its own."""

    async def fetch(
        self,
        url: str,
        meta: dict[str, Any],
        download: Callable[[dict[str, Any]], Awaitable[Answer]],
    ) -> tuple[Answer, bool]:
        """The hop's answer (status 0 when it cannot go out: unreachable), and whether
        it went out under the lease in `meta`."""
        ...


logger = logging.getLogger(__name__)


def _headers(response: Response) -> dict[str, str]:
    return {
        k.decode("latin-1"): v[0].decode("latin-1")
        for k, v in response.headers.items()
        if v  # a header without a value carries nothing to read
    }


class RobotsGate:
    def __init__(
        self,
        policy: RobotsPolicy,
        cache: RobotsCache,
        stats: Any,
        hop_delay: float,
        max_crawl_delay: float,
        failures: RobotsFailures,
    ) -> None:
        self.policy = policy
        self.cache = cache
        self.stats = stats
        self.hop_delay = hop_delay
        self.max_crawl_delay = max_crawl_delay
        self.failures = failures  # unavailable answers in a row, all workers together

    def verdict(self, origin: str) -> RobotsVerdict | None:
        return self.cache.get_local(origin)

    async def prefetch(self, origins: set[str]) -> None:
        """Load shared verdicts for these origins in one round trip, and the shared
        failure counts of those without a usable one."""
        unknown = [o for o in origins if self.cache.get_local(o) is None]
        if unknown:
            await self.cache.get_many(unknown)
        unusable = [o for o in origins if not self._usable(self.cache.get_local(o))]
        await self.failures.load(unusable)

    def allows(self, verdict: RobotsVerdict, url: str) -> bool:
        return verdict.allows(url, self.policy.user_agent_token)

    def admits(self, url: str) -> bool:
        """Admission check: False only when a cached verdict (not a temporary
        unavailability) disallows `url`, so it never takes a queue slot."""
        verdict = self.cache.get_local(origin_of(url))
        if verdict is None or self.unavailable(verdict):
            return True
        return self.allows(verdict, url)

    def unavailable(self, verdict: RobotsVerdict) -> bool:
        """5xx/429/network failure: a temporary complete disallow (RFC 9309 2.3.1.4)."""
        return verdict.kind == DISALLOW_ALL

    def _usable(self, verdict: RobotsVerdict | None) -> bool:
        return verdict is not None and not self.unavailable(verdict)

    def gave_up(self, origin: str) -> bool:
        """True once the origin's robots.txt was unavailable more than
        ROBOTS_MAX_ERROR_RETRIES times in a row, by any worker (failures.py): its pages
        are then dropped, so a finite crawl still ends. A good verdict resets it."""
        if self._usable(self.cache.get_local(origin)):
            self.failures.forget(origin)
            return False
        return self.failures.gave_up(origin)

    def crawl_delay(self, verdict: RobotsVerdict) -> float | None:
        if verdict.crawl_delay is None:
            return None
        return min(verdict.crawl_delay, self.max_crawl_delay)

    async def fetch(
        self, engine: ExecutionEngine, origin: str, url: str, meta: dict[str, Any], hops: HopRoute
    ) -> RobotsFetch:
        """Fetch robots.txt under the lease in `meta`, following up to MAX_REDIRECTS
        hops, each on an IP charged for its host (`hops`); return the verdict, for
        record() to share (a Redis error there must not lose the fetch's outcome)."""
        status, body, headers = await self._download(engine, url, meta)
        unreached, status = status == UNREACHED, max(status, 0)
        own = status, headers  # the lease's IP's last answer: what its 'done' reports
        for _ in range(MAX_REDIRECTS):
            target = next_redirect(url, status, headers) if 300 <= status < 400 else None
            if target is None:
                break
            url = target
            self.stats.inc_value("robots/redirect")
            (status, body, headers), on_lease = await hops.fetch(
                url, meta, functools.partial(self._download, engine, url)
            )
            status = max(status, 0)
            if on_lease:
                own = status, headers
        ended = time.time()
        verdict = verdict_from_response(
            status, body, headers, ended, self.policy, self.policy.user_agent_token
        )
        self.stats.inc_value(f"robots/verdict/{verdict.kind}")
        status, headers = own
        wait = retry_after_ttl(headers, ended, self.policy) if status in (429, 503) else None
        return RobotsFetch(verdict, status, ended, wait, unreached)

    async def record(self, origin: str, verdict: RobotsVerdict) -> None:
        """Share a fetched verdict and the origin's failure count with every worker;
        this worker uses the verdict even when Redis cannot take it."""
        await self.cache.put(origin, verdict)
        if self.unavailable(verdict):
            await self.failures.failed(origin)
        else:
            await self.failures.recovered(origin)

    async def _download(self, engine: ExecutionEngine, url: str, meta: dict[str, Any]) -> Answer:
        request = Request(
            url,
            meta={
                **meta,
                "dont_redirect": True,
                "dont_retry": True,
                "download_timeout": self.policy.fetch_timeout,
                # Cut far above the parse limit: a long robots.txt is read in part,
                # not treated as a failure.
                "download_maxsize": 4 * self.policy.max_bytes,
            },
            dont_filter=True,
        )
        self.stats.inc_value("robots/request_count")
        try:
            response = await engine.download_async(request)
        except Exception as exc:  # timeouts, refused connections, DNS: all "unreachable"
            logger.info("robots.txt %s failed: %s", url, exc)
            self.stats.inc_value("robots/fetch_failed")
            return (UNREACHED if classify(exc) in UNREACHED_CAUSES else 0), b"", {}
        return response.status, response.body, _headers(response)
