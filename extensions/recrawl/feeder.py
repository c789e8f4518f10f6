"""The re-crawl feeder: due stored URLs -> conditional GET requests for the frontier.

The scheduler calls feed() once per RECRAWL_TICK. It claims due URLs (at most
RECRAWL_BATCH, and only while fewer than RECRAWL_MAX_QUEUED re-crawls wait in the
frontier, so a day's worth of due URLs does not flood Redis at once) and turns each
into a request that carries the stored validators, enters the front queue
RECRAWL_PRIORITY, bypasses URL-seen (a re-crawl is a second visit by design) and goes
to its IP's re-crawl back queue, where RECRAWL_SHARE applies.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy import Request

if TYPE_CHECKING:
    from scrapy import Spider

    from extensions.recrawl.state import RecrawlStore

# Answers a re-fetch handles itself: 304 (unchanged), 404/410 (gone: stop re-crawling).
RECRAWL_STATUSES = [304, 404, 410]
MIN_TICK = 0.05  # seconds between two claims at least


class RecrawlFeeder:
    def __init__(self, store: RecrawlStore, spider: Spider) -> None:
        self.store = store
        self.config = store.config
        self.spider = spider
        self.next_tick = 0.0  # when feed() should run next (the scheduler wakes for it)
        self.due: int | None = None  # URLs due now, unclaimed; None until the first tick

    def keeps_running(self) -> bool:
        """Whether the crawl must not end yet: continuous mode, or URLs due now
        (a finite crawl ends once what was due is re-fetched)."""
        return self.config.continuous or self.due is None or self.due > 0

    def due_changed(self) -> None:
        """Something made URLs due (a sitemap hint): claim at the next chance, and do
        not let the crawl end on the count of the last tick."""
        self.due = None
        self.next_tick = 0.0

    async def postpone(self, fp: str, now: float) -> None:
        """A claimed URL the frontier will not fetch now (blocked, robots.txt): due
        again after RECRAWL_INTERVAL, not every RECRAWL_CLAIM_TTL."""
        await self.store.postpone(fp, now + self.config.schedule.interval)

    async def feed(self, recrawl_queued: int, now: float) -> list[Request]:
        self.next_tick = now + self.config.tick
        room = min(self.config.batch, self.config.max_queued - recrawl_queued)
        if room <= 0:
            self.due = await self.store.due_now(now)
            return []
        claim = await self.store.claim(room, now)
        self.due = claim.due_left
        if claim.due_left == 0 and claim.next_due is not None:
            # Claim the next URL when it comes due, not up to a tick late: for pages
            # re-visited every few seconds a late claim would waste the budget. The
            # floor bounds the claims per second when due times are dense.
            self.next_tick = max(now + MIN_TICK, min(self.next_tick, claim.next_due))
        return [self.request(*row) for row in claim.rows]

    def request(
        self, fp: str, url: str, etag: str, last_modified: str, callback: str, depth: str
    ) -> Request:
        headers = {}
        if etag:
            headers["If-None-Match"] = etag
        if last_modified:
            headers["If-Modified-Since"] = last_modified
        meta = {
            "recrawl": fp,
            "frontier_priority": self.config.priority,
            "handle_httpstatus_list": RECRAWL_STATUSES,
            "depth": int(depth or 0),
        }
        return Request(
            url,
            callback=getattr(self.spider, callback or "parse"),
            errback=getattr(self.spider, "on_error", None),
            headers=headers,
            meta=meta,
            dont_filter=True,
        )
