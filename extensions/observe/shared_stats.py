"""Worker-side counts made crawl-wide: every worker adds its own to one Redis hash.

Why: some decisions happen in a worker, outside the frontier's scripts, so only that
worker's Scrapy stats count them: admission refusals before the admit script
(blocklist, URL filters, robots.txt, address policy: `frontier/rejected/<reason>`) and
robots.txt fetch failures by cause (`robots/failed/<cause>`, robots_failures.py). A
scaled crawl has many workers; `scrapy status` and the Prometheus endpoint read the
crawl's numbers from G:worker_stats (keys.py), which this extension feeds with the
growth of those stats every SHARED_STATS_INTERVAL seconds (one pipelined HINCRBY round
trip) and once more at close. A worker killed without closing loses at most one
interval's counts. Refusals the admit script decides are counted by the script in
P:stats (exact) and are not shared again (crawl_gauges.SCRIPT_REASONS).

Stats: shared_stats/pushes (round trips that landed), shared_stats/errors (Redis
refused one; the counts are sent with the next), shared_stats/off (no frontier).
"""

from __future__ import annotations

import functools
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from redis.exceptions import RedisError
from scrapy import signals
from scrapy.exceptions import NotConfigured

from extensions.config import Setting, Table, at_least, read
from extensions.frontier.scheduler import frontier_scheduler
from extensions.observe.crawl_gauges import REJECTED_PREFIX, ROBOTS_FAILED_PREFIX, SCRIPT_REASONS
from extensions.observe.ticker import RedisTicker
from extensions.state.connection import map_slots
from extensions.state.keys import FrontierKeys

if TYPE_CHECKING:
    from scrapy import Spider
    from scrapy.crawler import Crawler
    from scrapy.settings import BaseSettings
    from scrapy.statscollectors import StatsCollector

    from extensions.state.connection import AnyAsyncRedis

logger = logging.getLogger(__name__)

_SCRIPT_STATS = frozenset(REJECTED_PREFIX + reason for reason in SCRIPT_REASONS)


@dataclass(frozen=True)
class SharedStatsConfig:
    shared_interval: float  # seconds; 0 = off

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> SharedStatsConfig:
        config = read(Table(SharedStatsConfig, INTERVAL), settings)
        if config.shared_interval == 0:
            raise NotConfigured
        return config


# The crawl's preflight checks it in the metrics table (observe/metrics.py's METRICS).
INTERVAL = Setting("SHARED_STATS_INTERVAL", "shared_interval", float, at_least(0))


def shared(name: str) -> bool:
    """A worker stat that goes to G:worker_stats."""
    if name.startswith(REJECTED_PREFIX):
        return name not in _SCRIPT_STATS
    return name.startswith(ROBOTS_FAILED_PREFIX)


class Deltas:
    """What this worker's shared stats grew by since the last push that landed."""

    def __init__(self, stats: StatsCollector) -> None:
        self.stats = stats
        self.pushed: dict[str, int] = {}

    def pending(self) -> dict[str, int]:
        current = self.stats.get_stats()
        return {
            name: int(value) - self.pushed.get(name, 0)
            for name, value in current.items()
            if shared(name) and isinstance(value, int) and value != self.pushed.get(name, 0)
        }

    def landed(self, sent: dict[str, int]) -> None:
        for name, by in sent.items():
            self.pushed[name] = self.pushed.get(name, 0) + by

    async def push(self, client: AnyAsyncRedis, key: str) -> bool:
        """One round trip (False: nothing to send); RedisError leaves the counts for
        the next push."""
        sent = self.pending()
        if not sent:
            return False
        pipe = client.pipeline(transaction=False)
        for name, by in sent.items():
            pipe.hincrby(key, name, by)
        await pipe.execute()
        self.landed(sent)
        return True


class SharedStats:
    """Scrapy extension: SHARED_STATS_INTERVAL > 0 turns it on (the default)."""

    def __init__(self, crawler: Crawler, config: SharedStatsConfig) -> None:
        assert crawler.stats is not None
        self.crawler = crawler
        self.stats = crawler.stats
        self.config = config
        self.deltas = Deltas(crawler.stats)
        self._ticker: RedisTicker | None = None  # pushes, once the spider opens

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> SharedStats:
        try:
            config = SharedStatsConfig.from_settings(crawler.settings)
        except ValueError as exc:
            raise NotConfigured(str(exc)) from None
        ext = cls(crawler, config)
        crawler.signals.connect(ext.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(ext.spider_closed, signal=signals.spider_closed)
        return ext

    def spider_opened(self, spider: Spider) -> None:
        scheduler = frontier_scheduler(self.crawler)
        if scheduler is None:
            self.stats.set_value("shared_stats/off", 1)
            return
        key = FrontierKeys(scheduler.frontier.keys.crawl).worker_stats  # crawl-wide
        step = functools.partial(self._push, key=key)
        self._ticker = RedisTicker(self.crawler, self.config.shared_interval, step, final=True)
        self._ticker.start()

    async def _push(self, client: AnyAsyncRedis, key: str) -> None:
        try:
            await map_slots(client)  # a no-op once mapped
            if await self.deltas.push(client, key):
                self.stats.inc_value("shared_stats/pushes")
        except (RedisError, OSError) as exc:
            self.stats.inc_value("shared_stats/errors")
            logger.debug("Shared stats not pushed (%s)", exc)

    async def spider_closed(self, spider: Spider, reason: str, **_: Any) -> None:
        if self._ticker is not None:
            await self._ticker.stop()  # and pushes once more
