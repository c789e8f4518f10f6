"""Admissions and download outcomes, batched: one Redis round trip per batch.

The engine calls enqueue_request and the download hooks synchronously and often, so
they only append here; a background flush loop sends what has gathered (admits
first, so a page's outlinks are queued before its lease is acked), and keeps
flushing while more arrives during a round trip. A fetch's 'done' waits for its page's
ack (DONE_WAIT_S) to share its round trip.

Stats: frontier/done_sent_alone  a 'done' whose ack did not come within DONE_WAIT_S
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import TYPE_CHECKING

from extensions.admission.admit import Rejected
from extensions.admission.recent import count_repeat
from extensions.admission.records import RecordError
from extensions.fetch.http_dates import w3c_time
from extensions.frontier.background import REDIS_ERRORS
from extensions.frontier.core import ADMIT_CHUNK
from extensions.frontier.settled_acks import SettledAcks

# A fetch's 'done' waits this long for its page's ack, to share its round trip: the IP
# is held until the ack either way (report.lua) and the event carries its own time (the
# IP's last_end), so only the lease's expiry, extended at the 'done', comes later (by at
# most this). One round trip per page instead of two where pages are processed quicker
# than this (bench_cpu's one-site crawl: 2.0 report round trips per page before).
DONE_WAIT_S = 1.0

if TYPE_CHECKING:
    from collections.abc import Callable

    from scrapy import Request, Spider

    from extensions.admission.admit import Admission
    from extensions.admission.recent import RecentLinks
    from extensions.admission.records import AdmitItem
    from extensions.frontier.background import Background
    from extensions.frontier.core import DownloadEvent, Frontier, FrontierReply
    from extensions.frontier.parked import ParkedHosts
    from extensions.frontier.sharded import ShardedFrontier
    from extensions.recrawl.feeder import RecrawlFeeder

logger = logging.getLogger(__name__)


class Batches:
    def __init__(
        self,
        *,
        frontier: Frontier | ShardedFrontier,
        spider: Spider,
        admission: Admission,
        recent: RecentLinks,
        background: Background,
        note: Callable[[FrontierReply], None],
        parked: ParkedHosts,
        feeder: RecrawlFeeder | None,
        on_recrawl_due: Callable[[], None],
        clock: Callable[[], float],
        new_items: int,
    ) -> None:
        self.frontier = frontier
        self.spider = spider
        self.admission = admission
        self.recent = recent
        self.background = background
        self.stats = background.stats
        self.note = note
        self.parked = parked
        self.feeder = feeder  # None when RECRAWL_ENABLED is off: no lastmod hints
        self.on_recrawl_due = on_recrawl_due
        self.clock = clock
        self.admits: list[AdmitItem] = []
        self.events: list[DownloadEvent] = []
        self.lastmod_hints: list[tuple[str, float]] = []  # (seen key, sitemap <lastmod>)
        self.flushing: asyncio.Task[None] | None = None  # the flush loop, while it runs
        self._done_wait: asyncio.TimerHandle | None = None  # a 'done' waiting for its ack
        # Sprawl and listing acks, settled by their links' admits (PRIORITY_NEW_ITEMS).
        self.settling = SettledAcks(self.stats, new_items)

    @property
    def pending(self) -> bool:
        return bool(self.admits or self.events)

    def enqueue(self, request: Request) -> bool:
        """Queue `request` for the next admit batch; False when admission rejects it
        or it repeats a link this worker queued lately (recent.py)."""
        if self.recent.repeats(request):
            count_repeat(self.stats)
            return False
        try:
            item = self.admission.item(request, self.spider)
        except Rejected as exc:
            self.stats.inc_value(f"frontier/rejected/{exc.reason}")
            return False
        except RecordError as exc:
            logger.error("Not queued: %s", exc)
            self.stats.inc_value("frontier/rejected/unstorable")
            return False
        self.admits.append(item)
        self.recent.add(request, item)
        lastmod = w3c_time(request.meta.get("lastmod"))
        if lastmod is not None and self.feeder is not None and item.seen_key:
            self.lastmod_hints.append((item.seen_key, lastmod))
        self.stats.inc_value("frontier/enqueued")
        self.kick()
        return True

    def report(self, event: DownloadEvent) -> None:
        self.events.append(event)
        if event.kind != "done":
            self.kick()
        elif self._done_wait is None:
            # Sent with its page's ack, or after DONE_WAIT_S alone (see DONE_WAIT_S).
            self._done_wait = asyncio.get_event_loop().call_later(DONE_WAIT_S, self._done_due)

    def _done_due(self) -> None:
        self._done_wait = None
        if self.events:
            self.stats.inc_value("frontier/done_sent_alone")
            self.kick()

    def clear(self) -> None:
        self.admits.clear()
        self.events.clear()
        self._stop_done_wait()

    def _stop_done_wait(self) -> None:
        if self._done_wait is not None:
            self._done_wait.cancel()
            self._done_wait = None

    def kick(self) -> None:
        if self.flushing is None:
            self.flushing = self.background.spawn(self._flush_loop())

    async def wait(self) -> None:
        if self.flushing is not None:
            with contextlib.suppress(Exception):
                await self.flushing

    async def _flush_loop(self) -> None:
        # Not once the crawl is closing: its close sends what is left, once. A loop that
        # kept retrying a lost Redis while the last pages finished (their outcomes kept
        # it from running dry) spun without a wait, 179,038 errors in one crawl's close.
        try:
            while (self.admits or self.events) and not self.background.closing:
                await self.background.guarded(self.flush())
        finally:
            self.flushing = None
            self.background.wake_engine()

    async def flush(self) -> None:
        """One round trip per non-empty batch: admits (in chunks of ADMIT_CHUNK, every
        one gathered so far before the events: a page's outlinks are queued before its
        lease is acked), lastmod hints, then events."""
        waiting = len(self.admits)
        while waiting > 0 and self.admits:
            waiting -= await self._send_admits()
        if self.lastmod_hints and self.feeder is not None:
            await self._send_hints(self.feeder)
        if self.events:
            events, self.events = self.settling.judged(self.events, self.admits), []
            self._stop_done_wait()  # every 'done' goes now
            self.stats.inc_value("frontier/round_trips/report")
            try:
                reply = await self.frontier.report(events)
            except REDIS_ERRORS:
                self.events[:0] = events  # keep order; retried by the loop
                raise
            self.note(reply)

    async def _send_admits(self) -> int:
        """One admit call of at most ADMIT_CHUNK items (a sitemap's 50,000 URLs in one
        script would hold Redis for seconds, past the client's timeout); items sent."""
        batch, self.admits = self.admits[:ADMIT_CHUNK], self.admits[ADMIT_CHUNK:]
        self.stats.inc_value("frontier/round_trips/admit")
        try:
            reply = await self.frontier.admit(batch)
        except REDIS_ERRORS:  # a missing slot is not a RedisError
            self.admits[:0] = batch  # keep order; retried by the loop
            raise
        self.note(reply)
        self.settling.heard(reply.extra)
        for reason, count in (reply.extra.get("refused") or {}).items():
            self.stats.inc_value(f"frontier/rejected/{reason}", count)
        self.stats.inc_value("frontier/admitted", reply.extra.get("admitted", 0))
        self.stats.inc_value("frontier/duplicate", reply.extra.get("duplicate", 0))
        self.parked.resolve_all(reply.extra.get("parked") or [])
        return len(batch)

    async def _send_hints(self, feeder: RecrawlFeeder) -> None:
        hints, self.lastmod_hints = self.lastmod_hints, []
        moved = await feeder.store.hint_lastmod(hints, self.clock())
        self.stats.inc_value("recrawl/lastmod_due", moved)
        if moved:
            feeder.due_changed()
            self.on_recrawl_due()
