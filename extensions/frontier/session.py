"""An open scheduler's collaborators, built together once the frontier is reachable.

Settings are read and validated when Scrapy builds the scheduler (SchedulerSetup), so
a bad value fails before the crawl starts; open() connects to Redis and builds
every collaborator at once (FrontierSession), so none of them is ever half there.
"""

from __future__ import annotations

import contextlib
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

from redis.exceptions import RedisError
from scrapy.exceptions import CloseSpider, NotConfigured

from extensions.admission.admit import Admission, url_filter_from_settings
from extensions.admission.blocklist import BlocklistRefresh
from extensions.admission.canonical import (
    Canonicalizer,
)
from extensions.admission.filters import compile_block_rules
from extensions.admission.new_items import NEW_ITEMS
from extensions.admission.noise import noise_learned
from extensions.admission.politeness_key import HOST_IP_KEYS
from extensions.admission.prioritizer import Prioritizer
from extensions.admission.recent import RECENT, RecentLinks
from extensions.admission.recent import register as register_recent
from extensions.config import read
from extensions.dns.cache import HostResolver, process_resolver
from extensions.frontier.background import REDIS_ERRORS, Background, one_line
from extensions.frontier.batching import Batches
from extensions.frontier.config import frontier_config, scheduler_settings
from extensions.frontier.core import DownloadEvent
from extensions.frontier.dispatch import Dispatch
from extensions.frontier.ending import EndOfCrawl
from extensions.frontier.feeding import RecrawlFeeding
from extensions.frontier.leases import LeaseBook, LeaseRenewal
from extensions.frontier.leasing import LeaseLoop
from extensions.frontier.parked import ParkedHosts
from extensions.frontier.sharded import crawl_keys, open_frontier
from extensions.recrawl.feeder import RecrawlFeeder
from extensions.recrawl.state import RecrawlConfig, recrawl_store
from extensions.robots.cache import RobotsCache
from extensions.robots.failures import RobotsFailures
from extensions.robots.gate import RobotsGate
from extensions.robots.rules import RobotsPolicy
from extensions.state.connection import (
    RedisUnavailable,
    map_slots,
    redis_lifecycle,
)
from extensions.state.keys import ShardedKeys

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from scrapy import Spider
    from scrapy.core.engine import ExecutionEngine
    from scrapy.crawler import Crawler
    from scrapy.settings import BaseSettings

    from extensions.frontier.config import SchedulerSettings
    from extensions.frontier.core import Frontier, FrontierConfig, FrontierReply
    from extensions.frontier.sharded import ShardedFrontier
    from extensions.state.connection import AnyAsyncRedis
    from extensions.state.keys import FrontierKeys

logger = logging.getLogger(__name__)

# Closed URL patterns kept in the crawl's stats at close (the report lists them).
REPORTED_PATTERNS = 50


@dataclass
class SchedulerSetup:
    """What the scheduler builds from settings before Redis is there."""

    config: FrontierConfig
    opts: SchedulerSettings
    resolver: HostResolver
    admission: Admission
    robots_policy: RobotsPolicy | None  # None when ROBOTS_ENABLED is off
    block_rules: list[str]  # URL_BLOCKLIST, added to the crawl's blocklist at open
    concurrency: int  # CONCURRENT_REQUESTS
    recent_links: int  # SEEN_LOCAL_CACHE: raw links remembered to drop repeats
    new_items: int  # PRIORITY_NEW_ITEMS: a listing copy's items new to the crawl, at least

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> SchedulerSetup:
        settings = crawler.settings
        config = frontier_config(settings)
        opts = scheduler_settings(settings)
        try:
            resolver = process_resolver(settings, crawler.stats)
            url_filter = url_filter_from_settings(settings)
            robots_enabled = settings.getbool("ROBOTS_ENABLED")
            robots_policy = RobotsPolicy.from_settings(settings) if robots_enabled else None
            prioritizer = Prioritizer.from_settings(settings)
            block_rules = settings.getlist("URL_BLOCKLIST")
            politeness = read(HOST_IP_KEYS, settings)
            recent = read(RECENT, settings)
            new_items = read(NEW_ITEMS, settings).least
            compile_block_rules(block_rules)
            if settings.getbool("RECRAWL_ENABLED"):  # validated up front
                RecrawlConfig.from_settings(settings, config.priorities)
        except ValueError as exc:
            raise NotConfigured(str(exc)) from None
        admission = Admission(
            canonicalizer=_canonicalizer(settings),
            url_filter=url_filter,
            resolver=resolver,
            prioritizer=prioritizer,
            priorities=config.priorities,
            keep_referer=opts.keep_referer,
            politeness=politeness,
        )
        concurrency = settings.getint("CONCURRENT_REQUESTS")
        return cls(
            config,
            opts,
            resolver,
            admission,
            robots_policy,
            block_rules,
            concurrency,
            recent.capacity,
            new_items,
        )


def _canonicalizer(settings: BaseSettings) -> Canonicalizer:
    return Canonicalizer(
        settings.getlist("URL_TRACKING_PARAMS"),
        settings.getlist("URL_SESSION_PARAMS"),
    )


@dataclass(frozen=True)
class Opened:
    """What open_session() connected or opened, before the collaborators exist."""

    engine: ExecutionEngine
    spider: Spider
    frontier: Frontier | ShardedFrontier
    robots: RobotsGate | None
    feeder: RecrawlFeeder | None
    blocklist_key: str
    closed_keys: list[str]  # each shard's closed URL patterns
    noise_key: str  # learned noise parameters (crawl-wide)


class FrontierSession:
    """Every collaborator of one open scheduler, wired together."""

    def __init__(self, setup: SchedulerSetup, opened: Opened, clock: Callable[[], float]) -> None:
        opts = setup.opts
        self.frontier = opened.frontier
        self.clock = clock
        self.stats = opened.engine.crawler.stats
        self.background = Background(
            opened.engine, self.stats, opts.max_redis_failures, _address(self.frontier.redis)
        )
        self.book = LeaseBook()
        self.renewal = LeaseRenewal(
            frontier=self.frontier, book=self.book, background=self.background, clock=clock
        )
        self.parked = self._parked(setup)
        self.ending = EndOfCrawl(self.frontier, self.background, self.note)
        recent = RecentLinks(setup.admission, setup.recent_links)
        register_recent(opened.engine.crawler, recent)  # the spider's check too
        self.batches = Batches(
            frontier=self.frontier,
            spider=opened.spider,
            admission=setup.admission,
            recent=recent,
            background=self.background,
            note=self.note,
            parked=self.parked,
            feeder=opened.feeder,
            on_recrawl_due=lambda: self.leasing.wake(),  # built below
            clock=clock,
            new_items=setup.new_items,
        )
        self.background.discard_on_close(self.batches.clear)
        self.feeding = RecrawlFeeding(
            feeder=opened.feeder, batches=self.batches, background=self.background, clock=clock
        )
        self.blocklist = BlocklistRefresh(
            redis=self.frontier.redis,
            key=opened.blocklist_key,
            admission=setup.admission,
            stats=self.stats,
            clock=clock,
            refresh_s=opts.blocklist_refresh,
            closed_keys=opened.closed_keys,
            noise_key=opened.noise_key,
        )
        opened.engine.crawler.signals.connect(self.blocklist.noise_learned, noise_learned)
        self.dispatch = self._dispatch(setup, opened)
        self.leasing = self._lease_loop(setup, opened)

    def _parked(self, setup: SchedulerSetup) -> ParkedHosts:
        return ParkedHosts(
            frontier=self.frontier,
            resolver=setup.resolver,
            background=self.background,
            note=self.note,
            clock=self.clock,
            retries=setup.opts.dns_retries,
            retry_delay_s=setup.opts.dns_retry_delay,
            retry_due=lambda at: self.leasing.due_at(at),  # built after the parked hosts
            politeness=setup.admission.politeness,  # parked URLs get admission's keys
        )

    def _dispatch(self, setup: SchedulerSetup, opened: Opened) -> Dispatch:
        return Dispatch(
            frontier=self.frontier,
            spider=opened.spider,
            book=self.book,
            batches=self.batches,
            feeding=self.feeding,
            admission=setup.admission,
            robots=opened.robots,
            background=self.background,
            clock=self.clock,
            sitemaps=setup.opts.robots_sitemaps,
        )

    def _lease_loop(self, setup: SchedulerSetup, opened: Opened) -> LeaseLoop:
        return LeaseLoop(
            frontier=self.frontier,
            spider=opened.spider,
            book=self.book,
            dispatch=self.dispatch,
            feeding=self.feeding,
            blocklist=self.blocklist,
            background=self.background,
            note=self.note,
            clock=self.clock,
            concurrency=setup.concurrency,
            max_processing=setup.opts.max_processing,
            poll_interval_s=setup.opts.poll_interval,
        )

    def note(self, reply: FrontierReply) -> None:
        """Every frontier reply passes here: counters, and the parked hosts it names."""
        self.leasing.saw_reply(reply)  # a change a lease may find (leasing.py's gate)
        self.ending.saw(reply)
        self.feeding.saw(reply)
        self.stats.set_value("frontier/queued", reply.queued)
        self.blocklist.patterns_changed(reply.extra.get("closed"), reply.extra.get("reopened"))
        self.blocklist.saw(reply.extra.get("closed_seen"))
        self.stats.set_value("frontier/leases", reply.leased)
        # Parked hosts whose resolution is due, claimed for this worker (by a lease,
        # or by a sharded frontier's counter refresh).
        self.parked.resolve_all(reply.hosts)

    async def close(self, reason: str) -> None:
        """Everything that does not need Redis is done even when Redis is gone (the
        stats written); what could not be done is one line."""
        self.background.closing = True
        self.leasing.timer.cancel()
        await self.renewal.stop()
        now = self.clock()
        # Leases still buffered never reached the downloader: hand them back.
        for lease_id in self.book.drain():
            self.batches.events.append(DownloadEvent("release", lease_id, now))
        await self.dispatch.cancel()
        for task in (self.leasing.leasing, self.batches.flushing):
            if task is not None:
                with contextlib.suppress(Exception):
                    await task
        steps = (
            ("send the last outcomes", self.batches.flush),
            ("read the frontier's counters", self._redis_stats),
            ("read the closed patterns", self.blocklist.refresh),  # for the report
            ("close the Redis connection", self.frontier.redis.aclose),
        )
        errors = {what: await _attempt(step) for what, step in steps}
        admission = self.blocklist.admission
        closed = sorted(admission.closed_patterns)
        self.stats.set_value("frontier/closed_patterns", closed[:REPORTED_PATTERNS])
        ends = sorted(f"{p} past {n}" for p, n in admission.ceilings.items())
        self.stats.set_value("frontier/ended_sequences", ends[:REPORTED_PATTERNS])
        failed = {what: error for what, error in errors.items() if error is not None}
        if failed:
            first = next(iter(failed.values()))
            logger.error("Frontier closed but could not %s (%s)", ", ".join(failed), first)
        logger.info("Frontier closed (%s): %d leases unacked", reason, len(self.book.leases))

    async def _redis_stats(self) -> None:
        for name, value in (await self.frontier.stats()).items():
            self.stats.set_value(f"frontier/redis/{name}", value)


def _address(client: object) -> str:
    """host:port of a single-server client, for error lines; '' for a cluster."""
    pool = getattr(client, "connection_pool", None)
    kwargs = getattr(pool, "connection_kwargs", {})
    host, port = kwargs.get("host"), kwargs.get("port")
    return f"{host}:{port}" if host and port else ""


async def _attempt(step: Callable[[], Awaitable[object]]) -> str | None:
    """Run one closing step; the first line of its Redis error, None when it worked."""
    try:
        await step()
    except REDIS_ERRORS as exc:
        return one_line(exc)
    return None


async def open_session(
    engine: ExecutionEngine, spider: Spider, setup: SchedulerSetup, clock: Callable[[], float]
) -> FrontierSession:
    """Connect to the crawl's frontier and build the session; CloseSpider (with a
    one-line reason logged) when Redis cannot be used."""
    crawler = engine.crawler
    crawl = setup.opts.crawl_name or spider.name
    client, sharded = await _connect(crawler, crawl, setup.opts.shards)
    keys = sharded.crawl_keys  # crawl-wide keys: blocklist, DNS, robots
    frontier = open_frontier(client, sharded, setup.config, setup.opts.poll_interval, clock)
    setup.resolver.redis, setup.resolver.redis_key = client, keys.dns
    robots = _robots_gate(setup, client, keys, crawler)
    if robots is not None:
        setup.admission.robots = robots
    store = recrawl_store(crawler)
    feeder = None
    if store is not None:
        await map_slots(store.redis)  # shared with the pipelines: map before they run
        feeder = RecrawlFeeder(store, spider)
    closed = [shard.key("closed_patterns") for shard in sharded.all()]
    opened = Opened(
        engine, spider, frontier, robots, feeder, keys.blocklist, closed, keys.noise_params
    )
    session = FrontierSession(setup, opened, clock)
    await session.blocklist.add(setup.block_rules)
    await session.blocklist.refresh()
    logger.info(
        "Frontier %s (%d shard(s)): delay %.2fs, %d back queues, lease TTL %.0fs",
        keys.prefix,
        sharded.count,
        setup.config.delay,
        setup.config.back_queues,
        setup.config.lease_ttl,
    )
    session.renewal.start()
    return session


async def _connect(
    crawler: Crawler, crawl: str, configured: int
) -> tuple[AnyAsyncRedis, ShardedKeys]:
    lifecycle = redis_lifecycle(crawler)
    try:
        client = await map_slots(lifecycle.async_client())
        return client, crawl_keys(lifecycle.client, crawl, configured)
    except (RedisUnavailable, RedisError) as exc:
        logger.error("%s", exc)
        raise CloseSpider("redis_unavailable") from None
    except ValueError as exc:
        logger.error("%s", exc)
        raise CloseSpider("frontier_shards") from None


def _robots_gate(
    setup: SchedulerSetup, client: AnyAsyncRedis, keys: FrontierKeys, crawler: Crawler
) -> RobotsGate | None:
    if setup.robots_policy is None:
        return None
    failures = RobotsFailures(client, keys.robots_errors, setup.opts.robots_max_error_retries)
    return RobotsGate(
        setup.robots_policy,
        RobotsCache(client, keys.robots),
        crawler.stats,
        hop_delay=setup.config.delay,
        max_crawl_delay=setup.opts.robots_max_crawl_delay,
        failures=failures,
    )
