"""Gates a leased request passes on its way out of the frontier.

A URL queued on an address that stopped answering goes first: routed to its name's
other address (one its name avoids now, or one that is down), else given up when the IP
is down. Then operator blocks (what was queued before a host was blocked is dropped,
never fetched), then robots.txt: a page of an origin whose verdict is unknown spends its
lease on the origin's robots.txt (same IP, same delay) and goes back to the head of
its queue (a redirect to another host goes out on an IP charged for that host:
hops.py); an unavailable robots.txt blocks the IP until the verdict expires. A
dropped request is acked uncharged; a released one is handed back unfetched.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import TYPE_CHECKING, Any

from scrapy import Request

from extensions.admission.filters import host_of
from extensions.admission.noise import strip_params
from extensions.admission.prioritizer import SOURCE_META
from extensions.admission.records import CATCH_META, DOWN_META, FACET_CAP_META, PROBE_META
from extensions.dns.policy import AddressRefused
from extensions.frontier.background import REDIS_ERRORS
from extensions.frontier.core import DownloadEvent
from extensions.frontier.hops import RobotsHops
from extensions.robots.cache import origin_of, robots_url

if TYPE_CHECKING:
    from collections.abc import Callable

    from scrapy import Spider

    from extensions.admission.admit import Admission
    from extensions.frontier.background import Background
    from extensions.frontier.batching import Batches
    from extensions.frontier.core import Frontier
    from extensions.frontier.feeding import RecrawlFeeding
    from extensions.frontier.leases import LeaseBook
    from extensions.frontier.sharded import ShardedFrontier
    from extensions.robots.gate import RobotsGate


logger = logging.getLogger(__name__)

# A down IP's URL admitted again, to its name's other address (kept in its record: it is
# re-routed once, then given up).
REROUTED_META = "frontier_rerouted"


class Dispatch:
    def __init__(
        self,
        *,
        frontier: Frontier | ShardedFrontier,
        spider: Spider,
        book: LeaseBook,
        batches: Batches,
        feeding: RecrawlFeeding,
        admission: Admission,
        robots: RobotsGate | None,
        background: Background,
        clock: Callable[[], float],
        sitemaps: bool,
    ) -> None:
        self.frontier = frontier
        self.spider = spider
        self.book = book
        self.batches = batches
        self.feeding = feeding
        self.admission = admission
        self.robots = robots  # None when ROBOTS_ENABLED is off
        self.background = background
        self.stats = background.stats
        self.clock = clock
        self.sitemaps = sitemaps  # ROBOTS_SITEMAPS
        self.robots_fetches: dict[str, asyncio.Task[None]] = {}  # lease id -> fetch
        self.named_down: set[str] = set()  # down IPs this worker has logged

    async def dispatch_all(self, requests: list[Request]) -> None:
        if requests and self.robots is not None:
            # Shared verdicts for every origin of the lease, in one round trip.
            try:
                await self.robots.prefetch({origin_of(r.url) for r in requests})
            except REDIS_ERRORS:
                for request in requests:  # back unfetched, not left to their lease TTL
                    self.release(request)
                raise
        for request in requests:
            self.dispatch(request)

    def _closed(self, request: Request, listed: bool) -> str | None:
        """Why a queued URL is dropped: trap feedback (Admission.closed), or facet_cap for
        a filter in the path queued before this worker saw its sidebar; None: fetch it."""
        url, meta = request.url, request.meta
        closed = self.admission.closed(url, listed, bool(meta.get(CATCH_META)))
        if closed is not None or listed or meta.get(FACET_CAP_META):
            return closed
        return "facet_cap" if self.admission.unproven_filter(url) else None

    def dispatch(self, request: Request) -> None:
        if request.meta.get(DOWN_META):
            self._give_up(request)
            return
        if self._moved(request):
            self._reroute(request)
            return
        if self.admission.block_rules.match(request.url) is not None:
            self.drop(request, "blocked")
            return
        listed = request.meta.get(SOURCE_META) == "sitemap"
        closed = None if request.meta.get(PROBE_META) else self._closed(request, listed)
        if closed is not None:  # trap feedback closed its pattern, or saw its sequence end
            self.drop(request, closed)
            return
        clean = strip_params(request.url, self.admission.noise)
        if clean != request.url:
            # Queued before its host's noise parameter was learned: the clean URL goes
            # through admission instead (URL-seen admits it once).
            self.drop(request, "noise_param")
            self.batches.enqueue(request.replace(url=clean))
            return
        robots = self.robots
        if robots is None:
            self.book.buffer.append(request)
            return
        origin = origin_of(request.url)
        verdict = robots.verdict(origin)
        if robots.gave_up(origin):
            self.drop(request, "robots_unavailable")
        elif verdict is None:
            self._fetch_robots(robots, request, origin)
        elif robots.unavailable(verdict):
            self.release(request, block_until=verdict.expires_at)
        elif robots.allows(verdict, request.url):
            self.book.buffer.append(request)
        else:
            self.drop(request, "robots_forbidden")

    def _give_up(self, request: Request) -> None:
        """A queued URL of an IP that is down (outcome.lua gone_down): routed again when
        its name has another address now (dns/cache.py avoid), else dropped unfetched, the
        IP named once per worker so the operator knows what the crawl gave up."""
        if self._may_reroute(request):
            self._reroute(request)
            return
        key, host = request.meta["download_slot"], host_of(request.url)
        if key not in self.named_down:
            self.named_down.add(key)
            logger.warning(
                "Giving up the queued URLs of %s (%s): every fetch failed for "
                "FRONTIER_DOWN_AFTER; `scrapy resume %s` takes it back for new URLs",
                key,
                host,
                host,
            )
        self.drop(request, "ip_down")

    def _moved(self, request: Request) -> bool:
        """A URL queued on an address its name avoids now (a fetch there was refused or
        timed out: dns/cache.py avoid) while the name answers another: it goes there, once,
        at its lease, not after a timeout of its own or its IP's quarantine and down time."""
        resolver = self.admission.resolver
        if not resolver.avoiding or request.meta.get(REROUTED_META):
            return False
        host, ip = host_of(request.url), request.meta["frontier_ip"]
        if not resolver.avoids(host, ip):
            return False
        try:
            now = resolver.cached(host)
        except AddressRefused:
            return False
        return now is not None and now != ip

    def _may_reroute(self, request: Request) -> bool:
        """A leased URL whose IP does not answer it (down, or its robots.txt fetch refused
        or timed out): the address is avoided for its name (dns/cache.py), and True when
        the URL may go to another one: the name not answered since (admission asks again)
        or answered with another. Once per URL: back on the same address, it is not
        routed again."""
        if request.meta.get(REROUTED_META):
            return False
        host, ip = host_of(request.url), request.meta["frontier_ip"]
        resolver = self.admission.resolver
        if not resolver.avoids(host, ip):
            resolver.avoid(host, ip)
        try:
            now = resolver.cached(host)
        except AddressRefused:
            return False
        return now != ip

    def _reroute(self, request: Request) -> None:
        """Ack the lease and admit its URL again, to be routed by its name's answer."""
        self._ack_unfetched(request)
        again = request.replace(dont_filter=True)  # URL-seen holds it
        again.meta[REROUTED_META] = True
        self.batches.enqueue(again)
        self.stats.inc_value("frontier/rerouted")

    def release(self, request: Request, block_until: float | None = None) -> None:
        """Hand a leased request back to the head of its queue, unfetched; the IP is
        blocked until `block_until` (robots.txt unavailable) when given."""
        lease_id = request.meta["frontier_lease"]
        self.book.forget(lease_id)
        self.batches.report(
            DownloadEvent("release", lease_id, self.clock(), block_until=block_until)
        )

    def drop(self, request: Request, reason: str) -> None:
        """Ack a leased request that will not be fetched: the IP is freed uncharged."""
        self._ack_unfetched(request)
        self.stats.inc_value(f"frontier/dropped/{reason}")
        self.feeding.postpone(request)

    def _ack_unfetched(self, request: Request) -> None:
        """The lease's ack without a download (report.lua: dropped before the downloader,
        so its IP's clock is not charged); this worker holds it no more."""
        lease_id = request.meta["frontier_lease"]
        self.book.forget(lease_id)
        self.batches.report(DownloadEvent("ack", lease_id, self.clock()))

    async def cancel(self) -> None:
        """Closing: robots.txt fetches in flight stop, their pages are released."""
        for task in list(self.robots_fetches.values()):
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    def _fetch_robots(self, robots: RobotsGate, request: Request, origin: str) -> None:
        """Spend this page's lease on the origin's robots.txt (same IP, same delay)."""
        lease_id = request.meta["frontier_lease"]
        meta = {
            "frontier_lease": lease_id,
            "frontier_ip": request.meta["frontier_ip"],
            "download_slot": request.meta["download_slot"],  # the politeness key
            "frontier_robots": origin,
        }
        task = self.background.spawn(self._robots_then_release(robots, request, origin, meta))
        self.robots_fetches[lease_id] = task
        task.add_done_callback(lambda _: self.robots_fetches.pop(lease_id, None))

    async def _robots_then_release(
        self, robots: RobotsGate, request: Request, origin: str, meta: dict[str, Any]
    ) -> None:
        lease_id, ip = meta["frontier_lease"], meta["download_slot"]  # the key's Crawl-delay
        engine, hops = self.background.engine, self._hops(robots)
        try:
            fetch = await robots.fetch(engine, origin, robots_url(origin), meta, hops)
        except asyncio.CancelledError:
            self.release(request)  # closing: the page goes back, the IP uncharged
            raise
        except REDIS_ERRORS as exc:  # a hop's lease or DNS: the fetch may have gone out
            self.background.failed(exc)
            self._end_robots(request, DownloadEvent("done", lease_id, self.clock(), 0))
            return
        host = host_of(origin + "/")
        if fetch.unreached and self._may_reroute(request):
            # Refused or unanswered at this address: another of the name's may serve the
            # origin, so no verdict is shared; the fetch charged this IP, the page is
            # routed again.
            self.book.end_fetch(lease_id)
            done = DownloadEvent("done", lease_id, fetch.ended_at, 0, host=host)
            self.batches.events.append(done)
            self._reroute(request)
            return
        # Shared before the page goes back; a Redis error here is counted and the page
        # is released all the same, or its lease would wait out FRONTIER_LEASE_TTL.
        await self.background.guarded(robots.record(origin, fetch.verdict))
        if not robots.unavailable(fetch.verdict):  # a failure says nothing of Crawl-delay
            # Before the fetch is reported, so the next_fetch_at it sets includes it.
            delay, until = robots.crawl_delay(fetch.verdict), fetch.verdict.expires_at
            await self.background.guarded(self.frontier.set_crawl_delay(ip, host, delay, until))
        # A 429/503's Retry-After sets the IP's backoff (outcome.lua), not a doubling.
        at, status, wait = fetch.ended_at, fetch.status, fetch.retry_after
        done = DownloadEvent("done", lease_id, at, status, wait, host=host)
        block = fetch.verdict.expires_at if robots.unavailable(fetch.verdict) else None
        self._end_robots(request, done, block)
        self._queue_sitemaps(fetch.verdict.sitemaps)

    def _end_robots(
        self, request: Request, done: DownloadEvent, block_until: float | None = None
    ) -> None:
        """The robots.txt fetch charged the IP (`done`); its page goes back unfetched."""
        self.book.end_fetch(done.lease_id)
        self.batches.events.append(done)
        self.release(request, block_until=block_until)

    def _hops(self, robots: RobotsGate) -> RobotsHops:
        """robots.txt redirect hops, each on an IP charged for its host (hops.py)."""
        return RobotsHops(
            frontier=self.frontier,
            resolver=self.admission.resolver,
            batches=self.batches,
            background=self.background,
            clock=self.clock,
            policy=robots.policy,
            hop_delay_s=robots.hop_delay,
            key_of=self.admission.politeness.key,  # FRONTIER_HOST_IP_NETWORKS, as admission
        )

    def _queue_sitemaps(self, sitemaps: tuple[str, ...]) -> None:
        """Sitemaps from robots.txt enter the frontier scored as sitemap URLs."""
        callback = getattr(self.spider, "parse_sitemap", None)
        if not sitemaps or callback is None or not self.sitemaps:
            return
        for url in sitemaps:
            meta = {SOURCE_META: "sitemap", "sitemap": True}
            self.batches.enqueue(Request(url, callback=callback, meta=meta))
            self.stats.inc_value("robots/sitemaps_queued")
