"""The lease loop that fills the local buffer (leases.py), and the wake timer.

next_request never touches Redis: it hands out requests from a local buffer that a
background lease refills (lease, not pop: DESIGN invariant 4). When nothing is ready,
a timer wakes the engine when the ready heap's top (its next_fetch_at) comes due,
instead of leaving it to the engine's 5 s heartbeat (DESIGN invariant 5).

The engine asks on every tick, and with every IP in flight most asks found nothing
(6.1 lease round trips per page on a one-site crawl, 5 of them empty, each ~300 us of
client CPU). A lease that got fewer than it asked for says Redis has nothing more until
its wake time, or until a script changes the frontier: until then an engine tick does
not ask again. Any other reply (admit, report, parked host, the end-of-crawl check), the
timer (the heap's top, the earliest lease expiry, a re-crawl tick, a parked host's DNS
retry), a re-crawl hint or the clock passing the timer's time opens the gate; other
workers' changes are seen at the next of those, FRONTIER_POLL_INTERVAL at the latest
(as when the engine is idle). A report's reply names the ready heap's top: when that is
not due yet the reply opens nothing and moves the timer to it instead (a 'done' keeps its
IP held until the ack, so on a one-site crawl every 'done' reply opened the gate for a
lease that came back empty: 1.1 of 2.1 lease round trips per page).

Stats: frontier/lease_waits/unchanged  engine asks answered by the gate, no round trip
       frontier/lease_waits/not_due    report replies whose heap top was not due
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING

from extensions.admission.politeness_key import ip_of
from extensions.admission.records import decode_request

if TYPE_CHECKING:
    from collections.abc import Callable

    from scrapy import Request, Spider

    from extensions.admission.blocklist import BlocklistRefresh
    from extensions.frontier.background import Background
    from extensions.frontier.core import Frontier, FrontierReply
    from extensions.frontier.dispatch import Dispatch
    from extensions.frontier.feeding import RecrawlFeeding
    from extensions.frontier.leases import LeaseBook
    from extensions.frontier.sharded import ShardedFrontier


class WakeTimer:
    """One timer for the earliest due time: Scrapy's `CallLaterOnce.schedule` ignores
    a second call while one is pending, so the frontier keeps its own."""

    def __init__(self, clock: Callable[[], float], on_wake: Callable[[], None]) -> None:
        self.clock = clock
        self.on_wake = on_wake
        self.wake_at: float | None = None  # epoch seconds; None = not armed
        self._handle: asyncio.TimerHandle | None = None

    def schedule(self, at: float) -> None:
        """Wake at `at` unless an earlier wake-up is armed already."""
        if self.wake_at is not None and self.wake_at <= at:
            return
        self.cancel()
        self.wake_at = at
        delay = max(0.0, at - self.clock())
        self._handle = asyncio.get_event_loop().call_later(delay, self._fire)

    def cancel(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
        self._handle = None
        self.wake_at = None

    def _fire(self) -> None:
        self._handle = None
        self.wake_at = None
        self.on_wake()


class LeaseLoop:
    def __init__(
        self,
        *,
        frontier: Frontier | ShardedFrontier,
        spider: Spider,
        book: LeaseBook,
        dispatch: Dispatch,
        feeding: RecrawlFeeding,
        blocklist: BlocklistRefresh,
        background: Background,
        note: Callable[[FrontierReply], None],
        clock: Callable[[], float],
        concurrency: int,
        max_processing: int,
        poll_interval_s: float,
    ) -> None:
        self.frontier = frontier
        self.spider = spider
        self.book = book
        self.dispatch = dispatch
        self.feeding = feeding
        self.blocklist = blocklist
        self.background = background
        self.stats = background.stats
        self.note = note
        self.clock = clock
        self.concurrency = concurrency  # CONCURRENT_REQUESTS
        self.max_processing = max_processing  # FRONTIER_MAX_PROCESSING, 0 = no bound
        self.poll_interval_s = poll_interval_s
        self.timer = WakeTimer(clock, self.wake)
        self.leasing: asyncio.Task[None] | None = None  # the lease round trip in flight
        self._again = False
        self._replies = 0  # frontier replies noted (saw_reply), this loop's own included
        # After a lease that Redis could not fill: the reply count then (see kick).
        self._quiet: int | None = None

    def saw_reply(self, reply: FrontierReply) -> None:
        """Every frontier reply passes here (the session's note). A report's shows the
        ready heap: with its top not due yet (or none) and work left, a lease now finds
        nothing there, so the reply arms the timer instead of opening the gate."""
        due = reply.next_due
        if reply.heap_known and reply.remaining and (due is None or due > self.clock()):
            self.stats.inc_value("frontier/lease_waits/not_due")
            if due is not None:
                self.timer.schedule(due)
            return
        self._replies += 1

    def wake(self) -> None:
        """Lease even if nothing was noted since the last empty lease (the timer, a
        re-crawl hint)."""
        self._quiet = None
        self.kick()

    def due_at(self, at: float) -> None:
        """The lease script will find something at `at` that no reply's wake time
        names (a parked host's DNS retry): the timer wakes then."""
        self.timer.schedule(at)

    def kick(self) -> None:
        if self.background.closing:
            return
        if self.leasing is not None:
            # A wake-up during a lease round trip must not be lost: lease again after.
            self._again = True
            return
        # Quiet: nothing noted since a lease Redis could not fill, and the earliest wake
        # time (armed on the timer) not reached (a virtual clock or a late timer).
        wake_at = self.timer.wake_at
        if self._quiet == self._replies and wake_at is not None and self.clock() < wake_at:
            self.stats.inc_value("frontier/lease_waits/unchanged")
            return
        self._quiet = None
        self.leasing = self.background.spawn(self._lease_once())

    async def wait(self) -> None:
        if self.leasing is not None:
            with contextlib.suppress(Exception):
                await self.leasing

    async def _lease_once(self) -> None:
        try:
            await self.background.guarded(self.lease())
        finally:
            self.leasing = None
            if self._again:
                self._again = False
                self.kick()

    async def lease(self) -> None:
        """Lease what the downloader has room for, pass it through the gates into the
        buffer, and arm the timer for the next due time."""
        await self.feeding.feed_if_due()
        active = len(self.background.engine.downloader.active)
        want = self.concurrency - active - len(self.book.buffer)
        # Fetched pages wait for the parse and pipelines (CPU-bound) while downloads run
        # ahead; each waiting page is a trap outcome, a duplicate or a noise parameter the
        # frontier does not know yet. Bounding them bounds that lag (at delay 0 a trap
        # pattern got ~45 fetches before its first verdicts arrived).
        room = self.max_processing - self.book.processing if self.max_processing else want
        if want > 0 and room <= 0:
            self.stats.inc_value("frontier/lease_waits/processing")
        want = min(want, room)
        if want <= 0:
            return
        await self.blocklist.refresh_if_due()
        self.stats.inc_value("frontier/round_trips/lease")
        sent = self._replies
        reply = await self.frontier.lease(want)
        self.note(reply)
        # Another worker closed a pattern: its queued URLs among these are dropped now.
        await self.blocklist.refresh_if_due()
        await self.dispatch.dispatch_all([self._leased(*lease) for lease in reply.leases])
        self.stats.inc_value("frontier/leased", len(reply.leases))
        if reply.leases or (reply.remaining == 0 and not self.feeding.keeps_running()):
            self.background.wake_engine()  # work to hand out, or the end to notice
        # Fewer than asked, and no reply but this one's noted since it was sent (one
        # that landed meanwhile may have run after the lease script): quiet (see kick).
        if len(reply.leases) < want and self._replies == sent + 1:
            self._quiet = self._replies
        # Armed even when this lease returned work: the next IP may come due before
        # the engine asks again.
        self.timer.schedule(self._next_wake(reply))

    def _next_wake(self, reply: FrontierReply) -> float:
        wake = [t for t in (reply.next_due, reply.next_expiry) if t is not None]
        tick = self.feeding.next_tick()
        if tick is not None:
            wake.append(tick)
        return min([*wake, self.clock() + self.poll_interval_s])

    def _leased(self, lease_id: str, record: str) -> Request:
        request = decode_request(record, self.spider)
        key = lease_id.rsplit("#", 1)[0]  # the IP, or "<ip>@<host>" (politeness_key.py)
        request.meta["frontier_lease"] = lease_id
        request.meta["frontier_ip"] = ip_of(key)  # the connection goes to the bare address
        # One downloader slot per politeness key: Scrapy then keeps at most one request
        # per key in flight in this process, and the frontier does it across processes.
        request.meta["download_slot"] = key
        self.book.take(lease_id, request)
        return request
