"""Scrapy scheduler backed by the Redis frontier (SCHEDULER = this class).

The engine calls enqueue_request and next_request synchronously and often, so
neither touches Redis: admissions and download outcomes are batched and flushed
by a background task (one round trip per batch), and next_request hands out
requests from a local buffer that a background lease refills. When nothing is
ready, a timer wakes the engine when the ready heap's top comes due, instead of
leaving it to the engine's 5 s heartbeat (DESIGN invariant 5).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from typing import TYPE_CHECKING, Any

from redis.exceptions import RedisError, ResponseError
from scrapy import Request
from scrapy.exceptions import CloseSpider, NotConfigured
from scrapy.utils.defer import deferred_from_coro

from extensions.admission.admit import Admission, Rejected, url_filter_from_settings
from extensions.admission.canonical import (
    DEFAULT_SESSION_PARAMS,
    DEFAULT_TRACKING_PARAMS,
    Canonicalizer,
)
from extensions.admission.filters import compile_block_rules, host_of
from extensions.admission.records import AdmitItem, RecordError, decode_request
from extensions.admission.seen import UrlSeen
from extensions.dns.cache import DnsSettings, HostResolver
from extensions.dns.policy import AddressRefused
from extensions.fetch.http_dates import w3c_time
from extensions.frontier.config import frontier_config, scheduler_settings
from extensions.frontier.core import DownloadEvent, Frontier, FrontierReply
from extensions.frontier.sharded import ShardedFrontier, crawl_shards, open_frontier
from extensions.recrawl.feeder import RecrawlFeeder
from extensions.recrawl.state import RecrawlConfig, recrawl_store
from extensions.robots.cache import RobotsCache, origin_of, robots_url
from extensions.robots.gate import RobotsGate
from extensions.robots.rules import RobotsPolicy
from extensions.state.connection import (
    RedisUnavailable,
    data_dir_from_settings,
    map_slots,
    redis_lifecycle,
)
from extensions.state.keys import ShardedKeys

if TYPE_CHECKING:
    from collections.abc import Coroutine

    from scrapy import Spider
    from scrapy.crawler import Crawler
    from twisted.internet.defer import Deferred

logger = logging.getLogger(__name__)


class FrontierScheduler:
    """Scrapy's scheduler API over extensions.frontier.core.Frontier."""

    def __init__(self, crawler: Crawler) -> None:
        settings = crawler.settings
        self.crawler = crawler
        self.stats = crawler.stats
        self.config = frontier_config(settings)
        self.opts = scheduler_settings(settings, self.config.priorities)
        try:
            self.resolver = HostResolver(DnsSettings.from_settings(settings), stats=self.stats)
            url_filter = url_filter_from_settings(settings)
            self.robots_policy = (
                RobotsPolicy.from_settings(settings)
                if settings.getbool("ROBOTS_ENABLED", True)
                else None
            )
            self.initial_block_rules = settings.getlist("URL_BLOCKLIST")
            compile_block_rules(self.initial_block_rules)
            if settings.getbool("RECRAWL_ENABLED", True):  # validated up front
                RecrawlConfig.from_settings(settings, self.config.priorities)
        except ValueError as exc:
            raise NotConfigured(str(exc)) from None
        self.admission = Admission(
            canonicalizer=Canonicalizer(
                settings.getlist("URL_TRACKING_PARAMS", list(DEFAULT_TRACKING_PARAMS)),
                settings.getlist("URL_SESSION_PARAMS", list(DEFAULT_SESSION_PARAMS)),
            ),
            url_filter=url_filter,
            resolver=self.resolver,
            default_priority=self.opts.default_priority,
            priorities=self.config.priorities,
            keep_referer=self.opts.keep_referer,
        )
        self.concurrency = settings.getint("CONCURRENT_REQUESTS", 16)
        self.frontier: Frontier | ShardedFrontier | None = None
        self.seen: UrlSeen  # opened with the frontier: its files live in CRAWL_DATA_DIR
        self.spider: Spider | None = None
        self._admit_batch: list[AdmitItem] = []
        self._events: list[DownloadEvent] = []
        self._buffer: deque[Request] = deque()
        self._leases: dict[str, Request] = {}  # lease id -> request, until acked
        self._downloading: set[str] = set()  # lease ids whose fetch has not ended
        self._remaining: int | None = None  # work left in Redis; None = not known yet
        self._resolving: set[str] = set()
        self._dns_failures: dict[str, int] = {}
        self._flush_task: asyncio.Task[None] | None = None
        self._lease_task: asyncio.Task[None] | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self._wake_at: float | None = None
        self._wake_handle: asyncio.TimerHandle | None = None
        self._redis_failures = 0
        self._closing = False
        self._lease_again = False
        self._blocklist_due = 0.0
        self._blocklist_lines: list[str] | None = None
        self._blocklist_key = ""
        self._robots_tasks: dict[str, asyncio.Task[None]] = {}
        self.robots: RobotsGate | None = None  # set at open when ROBOTS_ENABLED
        self.feeder: RecrawlFeeder | None = None  # set at open when RECRAWL_ENABLED
        self._recrawl_queued = 0
        self._confirmed_zero = False  # see _end_confirmed
        self._confirm_task: asyncio.Task[None] | None = None
        self._lastmod_hints: list[tuple[str, float]] = []  # (fp, sitemap <lastmod>)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> FrontierScheduler:
        return cls(crawler)

    # ---- Scrapy scheduler API ---------------------------------------------------

    def open(self, spider: Spider) -> Deferred[None]:
        self.spider = spider
        return deferred_from_coro(self._open(spider))

    async def _open(self, spider: Spider) -> None:
        crawl = self.opts.crawl_name or spider.name
        lifecycle = redis_lifecycle(self.crawler)
        try:
            client = await map_slots(lifecycle.async_client())
            shards = crawl_shards(lifecycle.client, crawl, self.opts.shards)
        except (RedisUnavailable, RedisError) as exc:
            logger.error("%s", exc)
            raise CloseSpider("redis_unavailable") from None
        except ValueError as exc:
            logger.error("%s", exc)
            raise CloseSpider("frontier_shards") from None
        sharded = ShardedKeys(crawl, shards)
        keys = sharded.crawl_keys  # crawl-wide keys: blocklist, DNS, robots
        self.frontier = open_frontier(client, sharded, self.config, self.opts.poll_interval)
        try:
            self.seen = UrlSeen.from_settings(
                self.crawler.settings, data_dir_from_settings(self.crawler.settings), self.stats
            )
        except (ValueError, RuntimeError) as exc:
            logger.error("URL-seen: %s", exc)
            raise CloseSpider("seen_unavailable") from None
        self.resolver.redis, self.resolver.redis_key = client, keys.dns
        self._blocklist_key = keys.blocklist
        if self.robots_policy is not None:
            self.robots = RobotsGate(
                self.robots_policy,
                RobotsCache(client, keys.robots),
                self.stats,
                hop_delay=self.config.delay,
                max_crawl_delay=self.opts.robots_max_crawl_delay,
                max_error_retries=self.opts.robots_max_error_retries,
            )
            self.admission.robots = self.robots
        if self.initial_block_rules:
            await client.sadd(keys.blocklist, *self.initial_block_rules)
        await self._refresh_blocklist()
        store = recrawl_store(self.crawler)
        if store is not None:
            await map_slots(store.redis)  # shared with the pipelines: map before they run
            self.feeder = RecrawlFeeder(store, spider)
        self._hook_engine()
        logger.info(
            "Frontier %s (%d shard(s)): delay %.2fs, %d back queues, lease TTL %.0fs",
            keys.prefix,
            shards,
            self.config.delay,
            self.config.back_queues,
            self.config.lease_ttl,
        )
        self._kick_lease()

    def close(self, reason: str) -> Deferred[None]:
        return deferred_from_coro(self._close(reason))

    async def _close(self, reason: str) -> None:
        self._closing = True
        self._cancel_wake()
        now = time.time()
        # Leases still buffered never reached the downloader: hand them back.
        while self._buffer:
            request = self._buffer.popleft()
            lease_id = request.meta["frontier_lease"]
            self._leases.pop(lease_id, None)
            self._events.append(DownloadEvent("release", lease_id, now))
        for task in list(self._robots_tasks.values()):
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        for task in (self._lease_task, self._flush_task):
            if task is not None:
                with contextlib.suppress(Exception):
                    await task
        with contextlib.suppress(RedisError):
            await self._flush()
        if self.frontier is not None:
            stats = await self.frontier.stats()
            for name, value in stats.items():
                self.stats.set_value(f"frontier/redis/{name}", value)
            await self.frontier.redis.aclose()
            self.seen.close()
        logger.info("Frontier closed (%s): %d leases unacked", reason, len(self._leases))

    def has_pending_requests(self) -> bool:
        # Called on every engine tick: answered from local state only.
        if self._buffer or self._admit_batch or self._events or self._resolving:
            return True
        if self._flush_task is not None or self._remaining is None:
            return True
        if self._feeder_keeps_running() or self._remaining > 0:
            return True
        return not self._end_confirmed()

    def _end_confirmed(self) -> bool:
        """Nothing left, by a reply that is known to be the latest. Replies of calls in
        flight together can be applied out of order (a lease sent before an admit, and
        its 'nothing queued' applied after the admit's 'one queued'), so zero ends the
        crawl only once a counters-only round trip, sent when nothing else was pending,
        says so too."""
        if self._confirmed_zero:
            return True
        if self._confirm_task is None and self.frontier is not None and not self._closing:
            self._confirm_task = self._spawn(self._confirm_end())
        return False

    async def _confirm_end(self) -> None:
        assert self.frontier is not None
        try:
            reply = await self.frontier.lease(0)
            self._note(reply)
            self._confirmed_zero = reply.remaining == 0
        except RedisError:
            pass  # asked again on the next engine tick
        finally:
            self._confirm_task = None
            self._wake_engine()

    def _feeder_keeps_running(self) -> bool:
        return self.feeder is not None and self.feeder.keeps_running()

    def enqueue_request(self, request: Request) -> bool:
        assert self.spider is not None
        try:
            item = self.admission.item(request, self.spider)
        except Rejected as exc:
            self.stats.inc_value(f"frontier/rejected/{exc.reason}")
            return False
        except RecordError as exc:
            logger.error("Not queued: %s", exc)
            self.stats.inc_value("frontier/rejected/unstorable")
            return False
        self._admit_batch.append(item)
        lastmod = w3c_time(request.meta.get("lastmod"))
        if lastmod is not None and self.feeder is not None and item.seen_key:
            self._lastmod_hints.append((item.seen_key, lastmod))
        self.stats.inc_value("frontier/enqueued")
        self._kick_flush()
        return True

    def next_request(self) -> Request | None:
        if self._buffer:
            request = self._buffer.popleft()
            self.stats.inc_value("frontier/dispatched")
            return request
        self._kick_lease()
        return None

    # ---- download outcomes (from FrontierDownloaderMiddleware and the engine) --------

    def download_done(
        self,
        request: Request,
        status: int = 0,
        retry_after: float | None = None,
        timeout: bool = False,
    ) -> None:
        lease_id = request.meta.get("frontier_lease")
        if (
            lease_id is None
            or lease_id not in self._downloading
            or "frontier_robots" in request.meta
        ):
            return  # robots.txt fetches report their own outcome (after redirect hops)
        self._downloading.discard(lease_id)
        latency = request.meta.get("download_latency")
        self._events.append(
            DownloadEvent(
                "done",
                lease_id,
                time.time(),
                status,
                retry_after,
                timeout,
                latency,
                host=host_of(request.url),
            )
        )
        self._kick_flush()

    def request_finished(self, request: Request) -> None:
        """The engine is done with `request`: response parsed and its outlinks queued
        (or a redirect/retry queued, or the request dropped). Ack its lease."""
        lease_id = request.meta.get("frontier_lease")
        if "frontier_robots" in request.meta:
            return  # the page behind a robots.txt fetch is released, not acked
        if lease_id is None or self._leases.pop(lease_id, None) is None:
            return
        self._downloading.discard(lease_id)
        if request.meta.get("frontier_release"):
            # A component could not finish the page (its body could not be stored):
            # it goes back to the frontier instead of being acked, so nothing is lost.
            self.stats.inc_value("frontier/released/unfinished")
            self._events.append(DownloadEvent("release", lease_id, time.time()))
        else:
            # Queued after the outlinks already in _admit_batch: the flush admits first.
            self._events.append(DownloadEvent("ack", lease_id, time.time()))
        self._kick_flush()

    def _hook_engine(self) -> None:
        # The engine has no signal for "request fully processed"; its slot's
        # remove_request is exactly that moment, for responses, failures and drops.
        slot = self.crawler.engine._slot  # type: ignore[union-attr]
        original = slot.remove_request

        def remove_request(request: Request) -> None:
            original(request)
            self.request_finished(request)

        slot.remove_request = remove_request

    # ---- background work ---------------------------------------------------------

    def _spawn(self, coro: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        task = asyncio.get_event_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    def _kick_flush(self) -> None:
        if self._flush_task is None and self.frontier is not None:
            self._flush_task = self._spawn(self._flush_loop())

    async def _flush_loop(self) -> None:
        try:
            while self._admit_batch or self._events:
                await self._guarded(self._flush())
        finally:
            self._flush_task = None
            self._wake_engine()

    async def _flush(self) -> None:
        assert self.frontier is not None
        if self._admit_batch:
            batch, self._admit_batch = self._admit_batch, []
            batch = self._drop_seen_locally(batch)
            self.stats.inc_value("frontier/round_trips/admit")
            try:
                reply = await self.frontier.admit(batch)
            except RedisError:
                self._admit_batch[:0] = batch  # keep order; retried by the loop
                raise
            # Every key sent is in the exact set now, admitted or confirmed seen.
            self.seen.record([item.seen_key for item in batch if item.seen_key])
            self._note(reply)
            for reason, count in (reply.extra.get("refused") or {}).items():
                self.stats.inc_value(f"frontier/rejected/{reason}", count)
            self.stats.inc_value("frontier/admitted", reply.extra.get("admitted", 0))
            self.stats.inc_value("frontier/duplicate", reply.extra.get("duplicate", 0))
            for host in reply.extra.get("parked") or []:
                self._start_resolution(host)
        if self._lastmod_hints and self.feeder is not None:
            hints, self._lastmod_hints = self._lastmod_hints, []
            moved = await self.feeder.store.hint_lastmod(hints, time.time())
            self.stats.inc_value("recrawl/lastmod_due", moved)
            if moved:
                self.feeder.due_changed()
                self._kick_lease()
        if self._events:
            events, self._events = self._events, []
            self.stats.inc_value("frontier/round_trips/report")
            try:
                reply = await self.frontier.report(events)
            except RedisError:
                self._events[:0] = events
                raise
            self._note(reply)

    def _drop_seen_locally(self, batch: list[AdmitItem]) -> list[AdmitItem]:
        """URL-seen's local side: drop keys this worker already had confirmed by Redis
        (or, with SEEN_EXACT off, every Bloom hit) before the round trip."""
        send, dropped = self.seen.split([item.seen_key for item in batch])
        if dropped:
            self.stats.inc_value("frontier/duplicate", len(dropped))
        return batch if not dropped else [batch[i] for i in send]

    async def _guarded(self, coro: Coroutine[Any, Any, None]) -> None:
        """Run one Redis step; on a Redis error back off, and give up (closing the
        crawl with a one-line reason) after FRONTIER_MAX_REDIS_FAILURES in a row."""
        try:
            await coro
            self._redis_failures = 0
        except ResponseError as exc:
            # A script error is a bug, not an outage: retrying the same batch would
            # loop forever, so stop the crawl loudly (the batch stays unacked).
            logger.error("Frontier script failed: %s", exc)
            self.stats.inc_value("frontier/script_errors")
            self._close_crawl("frontier_error")
        except RedisError as exc:
            self._redis_failures += 1
            self.stats.inc_value("frontier/redis_errors")
            reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            if self._redis_failures >= self.opts.max_redis_failures:
                logger.error("Redis unavailable (%s); closing the crawl", reason)
                self._close_crawl("redis_unavailable")
                return
            logger.warning("Redis error (%s); retrying", reason)
            await asyncio.sleep(min(5.0, 0.2 * 2**self._redis_failures))

    def _close_crawl(self, reason: str) -> None:
        if not self._closing:
            self._closing = True
            self._admit_batch.clear()
            self._events.clear()
            engine = self.crawler.engine
            assert engine is not None
            self._spawn(engine.close_spider_async(reason=reason))

    def _kick_lease(self) -> None:
        if self.frontier is None or self._closing:
            return
        if self._lease_task is not None:
            # A wake-up during a lease round trip must not be lost: lease again after.
            self._lease_again = True
            return
        self._lease_task = self._spawn(self._lease_once())

    async def _lease_once(self) -> None:
        try:
            await self._guarded(self._lease())
        finally:
            self._lease_task = None
            if self._lease_again:
                self._lease_again = False
                self._kick_lease()

    async def _lease(self) -> None:
        assert self.frontier is not None and self.spider is not None
        if self.feeder is not None and time.time() >= self.feeder.next_tick:
            await self._feed_recrawl(self.feeder)
        active = len(self.crawler.engine.downloader.active)  # type: ignore[union-attr]
        want = self.concurrency - active - len(self._buffer)
        if want <= 0:
            return
        if time.time() >= self._blocklist_due:
            await self._refresh_blocklist()
        self.stats.inc_value("frontier/round_trips/lease")
        reply = await self.frontier.lease(want)
        self._note(reply)
        requests = [self._leased_request(lease_id, record) for lease_id, record in reply.leases]
        if requests and self.robots is not None:
            await self.robots.prefetch({origin_of(r.url) for r in requests})
        for request in requests:
            self._dispatch(request)
        self.stats.inc_value("frontier/leased", len(reply.leases))
        if reply.leases or (reply.remaining == 0 and not self._feeder_keeps_running()):
            self._wake_engine()  # work to hand out, or the end of the crawl to notice
        # Armed even when this lease returned work: the next IP may come due before
        # the engine asks again.
        wake = [t for t in (reply.next_due, reply.next_expiry) if t is not None]
        if self.feeder is not None:
            wake.append(self.feeder.next_tick)
        self._schedule_wake(min([*wake, time.time() + self.opts.poll_interval]))

    async def _feed_recrawl(self, feeder: RecrawlFeeder) -> None:
        """Due stored URLs enter the frontier as conditional GETs; one the frontier
        refuses now (blocked, robots.txt) is postponed by RECRAWL_INTERVAL."""
        now = time.time()
        requests = await feeder.feed(self._recrawl_queued, now)
        for request in requests:
            if self.enqueue_request(request):
                self.stats.inc_value("recrawl/fed")
                continue
            self.stats.inc_value("recrawl/refused")
            await feeder.postpone(request.meta["recrawl"], now)
        self.stats.set_value("recrawl/due_now", feeder.due)

    def _dispatch(self, request: Request) -> None:
        """Gates applied when a request leaves the frontier: operator blocks (what was
        queued before a host was blocked is dropped, never fetched), then robots.txt."""
        if self.admission.block_rules.match(request.url) is not None:
            self._drop(request, "blocked")
            return
        if self.robots is None:
            self._buffer.append(request)
            return
        origin = origin_of(request.url)
        verdict = self.robots.verdict(origin)
        if self.robots.gave_up(origin):
            self._drop(request, "robots_unavailable")
        elif verdict is None:
            self._fetch_robots(request, origin)
        elif self.robots.unavailable(verdict):
            self._release(request, block_until=verdict.expires_at)
        elif self.robots.allows(verdict, request.url):
            self._buffer.append(request)
        else:
            self._drop(request, "robots_forbidden")

    def _release(self, request: Request, block_until: float | None = None) -> None:
        """Hand a leased request back to the head of its queue, unfetched; the IP is
        blocked until `block_until` (robots.txt unavailable) when given."""
        lease_id = request.meta["frontier_lease"]
        self._leases.pop(lease_id, None)
        self._downloading.discard(lease_id)
        self._events.append(
            DownloadEvent("release", lease_id, time.time(), block_until=block_until)
        )
        self._kick_flush()

    def _fetch_robots(self, request: Request, origin: str) -> None:
        """Spend this page's lease on the origin's robots.txt (same IP, same delay)."""
        lease_id = request.meta["frontier_lease"]
        ip = request.meta["frontier_ip"]
        meta = {
            "frontier_lease": lease_id,
            "frontier_ip": ip,
            "download_slot": ip,
            "frontier_robots": origin,
        }
        task = self._spawn(self._robots_then_release(request, origin, meta))
        self._robots_tasks[lease_id] = task
        task.add_done_callback(lambda _: self._robots_tasks.pop(lease_id, None))

    async def _robots_then_release(
        self, request: Request, origin: str, meta: dict[str, Any]
    ) -> None:
        assert self.robots is not None and self.frontier is not None
        lease_id, ip = meta["frontier_lease"], meta["frontier_ip"]
        engine = self.crawler.engine
        assert engine is not None
        try:
            fetch = await self.robots.fetch(engine, origin, robots_url(origin), meta)
        except asyncio.CancelledError:
            self._release(request)  # closing: the page goes back, the IP uncharged
            raise
        delay = self.robots.crawl_delay(fetch.verdict)
        if delay is not None:
            # Before the fetch is reported, so the next_fetch_at it sets includes it.
            await self._guarded(self.frontier.set_ip_delay(ip, "crawl_delay", delay))
        self._downloading.discard(lease_id)
        host = host_of(origin + "/")
        self._events.append(
            DownloadEvent("done", lease_id, fetch.ended_at, fetch.status, host=host)
        )
        block = fetch.verdict.expires_at if self.robots.unavailable(fetch.verdict) else None
        self._release(request, block_until=block)
        self._queue_sitemaps(fetch.verdict.sitemaps)

    def _queue_sitemaps(self, sitemaps: tuple[str, ...]) -> None:
        """Sitemaps from robots.txt enter the frontier at the lowest priority."""
        callback = getattr(self.spider, "parse_sitemap", None)
        if not sitemaps or callback is None or not self.opts.robots_sitemaps:
            return
        for url in sitemaps:
            meta = {"frontier_priority": self.config.priorities - 1, "sitemap": True}
            self.enqueue_request(Request(url, callback=callback, meta=meta))
            self.stats.inc_value("robots/sitemaps_queued")

    def _drop(self, request: Request, reason: str) -> None:
        """Ack a leased request that will not be fetched: the IP is freed uncharged."""
        lease_id = request.meta["frontier_lease"]
        self._leases.pop(lease_id, None)
        self._downloading.discard(lease_id)
        self._events.append(DownloadEvent("ack", lease_id, time.time()))
        self.stats.inc_value(f"frontier/dropped/{reason}")
        self._kick_flush()
        fp = request.meta.get("recrawl")
        if fp and self.feeder is not None:
            self._spawn(self._guarded(self.feeder.postpone(fp, time.time())))

    async def _refresh_blocklist(self) -> None:
        """Operators change the blocklist in Redis while the crawl runs."""
        assert self.frontier is not None
        self._blocklist_due = time.time() + self.opts.blocklist_refresh
        lines = sorted(m.decode() for m in await self.frontier.redis.smembers(self._blocklist_key))
        if lines == self._blocklist_lines:
            return
        self._blocklist_lines = lines
        try:
            self.admission.block_rules = compile_block_rules(lines)
        except ValueError as exc:
            logger.error("Blocklist not updated: %s", exc)
            self.stats.inc_value("frontier/blocklist/invalid")
            return
        logger.info("Blocklist: %d rules", len(lines))

    def _leased_request(self, lease_id: str, record: str) -> Request:
        assert self.spider is not None
        request = decode_request(record, self.spider)
        ip = lease_id.rsplit("#", 1)[0]
        request.meta["frontier_lease"] = lease_id
        request.meta["frontier_ip"] = ip
        # One downloader slot per IP: Scrapy then keeps at most one request per IP
        # in flight in this process, and the frontier does it across processes.
        request.meta["download_slot"] = ip
        self._leases[lease_id] = request
        self._downloading.add(lease_id)
        return request

    def _note(self, reply: FrontierReply) -> None:
        self._remaining = reply.remaining
        self._confirmed_zero = False
        self._recrawl_queued = reply.recrawl_queued
        self.stats.set_value("frontier/queued", reply.queued)
        self.stats.set_value("frontier/leases", reply.leased)
        # Parked hosts whose resolution is due, claimed for this worker (by a lease,
        # or by a sharded frontier's counter refresh).
        for host in reply.hosts:
            self._start_resolution(host)

    # ---- DNS for parked hosts ----------------------------------------------------

    def _start_resolution(self, host: str) -> None:
        if host in self._resolving:
            return
        self._resolving.add(host)
        self._spawn(self._resolve(host))

    async def _resolve(self, host: str) -> None:
        assert self.frontier is not None
        try:
            try:
                ip = await self.resolver.resolve(host)
            except AddressRefused as exc:
                await self._guarded(self._address_refused(exc))
                return
            except Exception as exc:  # DNS errors come in many types
                await self._guarded(self._resolution_failed(host, exc))
                return
            self._dns_failures.pop(host, None)
            self.stats.inc_value("frontier/dns/resolved")

            async def route() -> None:
                self._note(await self.frontier.route_pending(host, ip=ip))  # type: ignore[union-attr]

            await self._guarded(route())
        finally:
            self._resolving.discard(host)
            self._wake_engine()

    async def _address_refused(self, exc: AddressRefused) -> None:
        assert self.frontier is not None
        logger.warning("Dropping URLs of %s", exc)
        self.stats.inc_value(f"frontier/dns/refused/{exc.reason}")
        self._note(await self.frontier.route_pending(exc.host, drop=True))

    async def _resolution_failed(self, host: str, exc: Exception) -> None:
        assert self.frontier is not None
        failures = self._dns_failures.get(host, 0) + 1
        self._dns_failures[host] = failures
        self.stats.inc_value("frontier/dns/failed")
        if failures > self.opts.dns_retries:
            logger.warning(
                "Dropping URLs of %s: resolution failed %d times (%s)", host, failures, exc
            )
            self._note(await self.frontier.route_pending(host, drop=True))
            return
        retry_at = time.time() + self.opts.dns_retry_delay * 4 ** (failures - 1)
        logger.info(
            "Resolving %s failed (%s); retry %d in %.0fs",
            host,
            exc,
            failures,
            retry_at - time.time(),
        )
        self._note(await self.frontier.route_pending(host, retry_at=retry_at))

    # ---- waking the engine ---------------------------------------------------------

    def _wake_engine(self) -> None:
        engine = self.crawler.engine
        slot = getattr(engine, "_slot", None) if engine else None
        if slot is not None and not self._closing:
            slot.nextcall.schedule()

    def _schedule_wake(self, at: float) -> None:
        if self._wake_at is not None and self._wake_at <= at:
            return
        self._cancel_wake()
        self._wake_at = at
        delay = max(0.0, at - time.time())
        self._wake_handle = asyncio.get_event_loop().call_later(delay, self._on_wake)

    def _cancel_wake(self) -> None:
        if self._wake_handle is not None:
            self._wake_handle.cancel()
        self._wake_handle = None
        self._wake_at = None

    def _on_wake(self) -> None:
        self._wake_handle = None
        self._wake_at = None
        self._kick_lease()
