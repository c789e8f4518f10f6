"""Scrapy scheduler backed by the Redis frontier (SCHEDULER = this class).

Scrapy's scheduler API only. The engine calls enqueue_request and next_request
synchronously and often, so neither touches Redis: admissions and download outcomes
are batched and flushed in the background (batching.py), and next_request hands out
requests from a local buffer that a background lease refills, with a timer that
wakes the engine when the ready heap's top comes due (leasing.py, DESIGN invariant
5). The collaborators are built together at open() (session.py).

Components that need the scheduler (the downloader middleware, metrics) find it
with frontier_scheduler(crawler), not through the engine's private slot.
"""

from __future__ import annotations

import time
import weakref
from typing import TYPE_CHECKING

from scrapy.utils.defer import deferred_from_coro

from extensions.admission.filters import host_of
from extensions.admission.patterns import number_of, split_url, url_patterns
from extensions.admission.records import CANONICAL_META
from extensions.frontier.core import DownloadEvent
from extensions.frontier.session import SchedulerSetup, open_session

if TYPE_CHECKING:
    from collections.abc import Callable

    from scrapy import Request, Spider
    from scrapy.core.engine import ExecutionEngine
    from scrapy.crawler import Crawler
    from twisted.internet.defer import Deferred

    from extensions.frontier.core import Frontier
    from extensions.frontier.session import FrontierSession
    from extensions.frontier.sharded import ShardedFrontier

# Schedulers whose open() succeeded, until they close.
_open_schedulers: weakref.WeakKeyDictionary[Crawler, FrontierScheduler] = (
    weakref.WeakKeyDictionary()
)


def frontier_scheduler(crawler: Crawler) -> FrontierScheduler | None:
    """The crawler's FrontierScheduler while it is open; None before open, after
    close, when open() failed, or when SCHEDULER is another class."""
    return _open_schedulers.get(crawler)


class FrontierScheduler:
    """Scrapy's scheduler API over extensions.frontier.core.Frontier."""

    def __init__(self, crawler: Crawler, clock: Callable[[], float] = time.time) -> None:
        self.crawler = crawler
        self.stats = crawler.stats
        self.clock = clock  # epoch seconds; tests pass a virtual clock
        self.setup = SchedulerSetup.from_crawler(crawler)  # NotConfigured on a bad setting
        self.session: FrontierSession  # built by open(), which precedes every other call

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> FrontierScheduler:
        return cls(crawler)

    @property
    def frontier(self) -> Frontier | ShardedFrontier:
        return self.session.frontier

    # ---- Scrapy scheduler API ---------------------------------------------------

    def open(self, spider: Spider) -> Deferred[None]:
        return deferred_from_coro(self._open(spider))

    async def _open(self, spider: Spider) -> None:
        engine = self.crawler.engine
        self.session = await open_session(engine, spider, self.setup, self.clock)
        self._hook_engine(engine)
        _open_schedulers[self.crawler] = self
        self.session.leasing.kick()

    def close(self, reason: str) -> Deferred[None]:
        return deferred_from_coro(self._close(reason))

    async def _close(self, reason: str) -> None:
        # Not registered when open() failed: then nothing was started.
        if _open_schedulers.pop(self.crawler, None) is not None:
            await self.session.close(reason)

    def has_pending_requests(self) -> bool:
        # Called on every engine tick: answered from local state only.
        session = self.session
        ending = session.ending
        if session.book.buffer or session.batches.pending or session.parked.resolving:
            return True
        if session.batches.flushing is not None or ending.remaining is None:
            return True
        if session.feeding.keeps_running() or ending.remaining > 0:
            return True
        return not ending.confirmed()

    def enqueue_request(self, request: Request) -> bool:
        return self.session.batches.enqueue(request)

    def next_request(self) -> Request | None:
        request = self.session.book.hand_out()
        if request is not None:
            self.stats.inc_value("frontier/dispatched")
            return request
        self.session.leasing.kick()
        return None

    # ---- download outcomes (from FrontierDownloaderMiddleware and the engine) --------

    def download_done(
        self,
        request: Request,
        status: int = 0,
        retry_after: float | None = None,
        timeout: bool = False,
        failed: bool = False,
    ) -> None:
        lease_id = request.meta.get("frontier_lease")
        if (
            lease_id is None
            or "frontier_robots" in request.meta
            or not self.session.book.end_fetch(lease_id)
        ):
            return  # robots.txt fetches report their own outcome (after redirect hops)
        request.meta["frontier_status"] = status  # the page's outcome at its ack
        latency = request.meta.get("download_latency")
        self.session.batches.report(
            DownloadEvent(
                "done",
                lease_id,
                self.clock(),
                status,
                retry_after,
                timeout,
                latency,
                host=host_of(request.url),
                failed=failed,
            )
        )

    def request_finished(self, request: Request) -> None:
        """The engine is done with `request`: response parsed and its outlinks queued
        (or a redirect/retry queued, or the request dropped). Ack its lease."""
        lease_id = request.meta.get("frontier_lease")
        if "frontier_robots" in request.meta:
            return  # the page behind a robots.txt fetch is released, not acked
        if lease_id is None or not self.session.book.finish(lease_id):
            return
        if request.meta.get("frontier_release"):
            # A component could not finish the page (its body could not be stored):
            # it goes back to the frontier instead of being acked, so nothing is lost.
            self.stats.inc_value("frontier/released/unfinished")
            self.session.batches.report(DownloadEvent("release", lease_id, self.clock()))
        else:
            # Queued after the outlinks already batched: the flush admits first.
            self.session.batches.report(page_ack(request, lease_id, self.clock()))

    def _hook_engine(self, engine: ExecutionEngine) -> None:
        # The engine has no signal for "request fully processed"; its slot's
        # remove_request is exactly that moment, for responses, failures and drops.
        slot = engine._slot
        if slot is None:
            raise RuntimeError("FrontierScheduler.open() runs inside the engine's open_spider")
        original = slot.remove_request

        def remove_request(request: Request) -> None:
            original(request)
            self.request_finished(request)

        slot.remove_request = remove_request  # type: ignore[method-assign]


# Statuses whose page is a dead link: a pattern of them is not worth fetching.
NOT_FOUND = frozenset({404, 410})


def page_ack(request: Request, lease_id: str, at: float) -> DownloadEvent:
    """The ack of a processed page, with its outcome for trap feedback: the spider's
    meta["frontier_outcome"] (new, duplicate, soft_404, unchanged; a redirect's
    redirect_walk or soft_404: middleware.py), or not_found."""
    status = request.meta.get("frontier_status", 0)
    outcome = "not_found" if status in NOT_FOUND else request.meta.get("frontier_outcome")
    if outcome is None or request.dont_filter:
        return DownloadEvent("ack", lease_id, at)
    # The document's canonical URL where it went out under another spelling (admit.py).
    parts = split_url(request.meta.get(CANONICAL_META) or request.url)
    p = url_patterns(parts)
    return DownloadEvent(
        "ack",
        lease_id,
        at,
        host=parts.host,  # host_of's, from the split already made
        outcome=outcome,
        patterns=(p.fine, p.coarse, p.host_wide, p.path_key, p.family),
        number=number_of(parts),
    )
