"""Live crawl metrics on a Prometheus endpoint (prometheus_client), off by default.

    -s METRICS_PORT=9410        ->  http://127.0.0.1:9410/metrics  (any path answers)

Two sources, chosen for freshness and safety:
- Signals, for what Scrapy stats cannot say: every response off the wire
  (`response_downloaded`, before retry/redirect middlewares, so pages/s and bytes/s are
  what the servers sent, robots.txt included), the politeness gap per IP
  (`request_reached_downloader` / `request_left_downloader`, see fetch_gaps.py) and
  items (content duplicates carry `duplicate_of`).
- Scrapy stats, read when Prometheus scrapes (a custom collector on the reactor
  thread: the endpoint is a Twisted resource, not prometheus_client's threaded
  server, so the stats dict is never read while the crawl mutates it; no
  periodic copy, no staleness). Error causes come from FetchErrorsMiddleware
  (`fetch/errors/*`); enable it alongside.
- Crawl-wide state lives in Redis: frontier counters (lease expiries, backoffs...),
  queue depth per front queue and back-queue lane, Bloom generations, refusals by
  reason, robots.txt failures by cause, the re-crawl backlog (crawl_gauges.py). It is
  read every METRICS_REDIS_INTERVAL seconds in a bounded number of calls. Every
  worker reports the same crawl: aggregate these with max(), not sum(), across workers.

The gap histogram has no IP label (one series per IP is unbounded cardinality); its
buckets include FRONTIER_DELAY, so `le=<delay>` counts the gaps shorter than the
configured delay, and a gauge keeps the smallest gap seen. Gaps are this worker's
view only: two workers alternating on one IP are invisible here (the frontier's
Redis state enforces that case; tests check it from the server's log).
"""

from __future__ import annotations

import functools
import ipaddress
import logging
import math
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest
from redis.exceptions import RedisError
from scrapy import signals
from scrapy.exceptions import NotConfigured
from scrapy.utils.defer import maybe_deferred_to_future
from twisted.web.resource import Resource
from twisted.web.server import Site

from extensions.config import STRINGS, Setting, Table, at_least, between, read, satisfies
from extensions.fetch.gaps import GapTracker, request_ip
from extensions.frontier.config import frontier_config
from extensions.frontier.scheduler import frontier_scheduler
from extensions.observe.crawl_gauges import CrawlGauges, read_gauges
from extensions.observe.metrics_stats import StatsView
from extensions.observe.shared_stats import INTERVAL
from extensions.observe.ticker import RedisTicker
from extensions.state.connection import AnyAsyncRedis, map_slots
from extensions.state.keys import ShardedKeys

if TYPE_CHECKING:
    from scrapy import Request, Spider
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from scrapy.settings import BaseSettings
    from twisted.internet.interfaces import IListeningPort

logger = logging.getLogger(__name__)

_BASE_GAP_BUCKETS = (0.001, 0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 300.0)


def gap_buckets(delay: float) -> list[float]:
    """Fixed buckets plus a few around the configured delay (le=delay is exact)."""
    around = [delay * f for f in (0.5, 0.9, 1.0, 1.1, 1.5, 2.0)] if delay > 0 else []
    return sorted({round(b, 6) for b in (*_BASE_GAP_BUCKETS, *around)})


@dataclass(frozen=True)
class MetricsConfig:
    port: int  # 0 = off
    bind: str
    redis_interval: float
    extra_stats: tuple[str, ...]
    delay: float
    shared_interval: float  # SHARED_STATS_INTERVAL: shared_stats.py's, checked here too

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> MetricsConfig:
        """Raises NotConfigured when off, ValueError (naming the setting) when invalid."""
        config = read(METRICS, settings)
        if config.port == 0:
            raise NotConfigured  # off by default: no argument, so Scrapy logs nothing
        return config


def _is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


METRICS = Table(
    MetricsConfig,
    Setting("METRICS_PORT", "port", int, between(0, 65535)),
    Setting("METRICS_BIND", "bind", str, satisfies(_is_ip, "an IP address")),
    Setting("METRICS_REDIS_INTERVAL", "redis_interval", float, at_least(0)),
    Setting("METRICS_EXTRA_STATS", "extra_stats", STRINGS),
    Setting("FRONTIER_DELAY", "delay", float, at_least(0)),
    INTERVAL,
)


class _MetricsResource(Resource):
    isLeaf = True

    def __init__(self, registry: CollectorRegistry) -> None:
        super().__init__()
        self.registry = registry

    def render_GET(self, request: Any) -> bytes:
        request.setHeader(b"Content-Type", CONTENT_TYPE_LATEST.encode())
        return generate_latest(self.registry)


class CrawlMetrics:
    """Scrapy extension: METRICS_PORT > 0 turns it on."""

    def __init__(self, crawler: Crawler, config: MetricsConfig) -> None:
        assert crawler.stats is not None
        self.crawler = crawler
        self.stats = crawler.stats
        self.config = config
        self.registry = CollectorRegistry(auto_describe=False)
        self.gaps = GapTracker()
        self.crawl_counters: dict[str, int] = {}  # frontier stats hash, all workers
        self.gauges: CrawlGauges | None = None  # crawl-wide, None until first read
        self.n_items = 0
        self.n_content_dups = 0
        self.min_gap = math.inf
        self._port: IListeningPort | None = None
        self._redis: RedisTicker | None = None  # crawl-wide reads, once the spider opens
        self._define_metrics(config.delay)
        self.registry.register(StatsView(self, config.extra_stats))

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> CrawlMetrics:
        try:
            config = MetricsConfig.from_settings(crawler.settings)
        except ValueError as exc:
            raise NotConfigured(str(exc)) from None
        ext = cls(crawler, config)
        connect = crawler.signals.connect
        connect(ext.engine_started, signal=signals.engine_started)
        connect(ext.spider_opened, signal=signals.spider_opened)
        connect(ext.response_downloaded, signal=signals.response_downloaded)
        connect(ext.request_reached, signal=signals.request_reached_downloader)
        connect(ext.request_left, signal=signals.request_left_downloader)
        connect(ext.item_scraped, signal=signals.item_scraped)
        connect(ext.spider_closed, signal=signals.spider_closed)
        connect(ext.engine_stopped, signal=signals.engine_stopped)
        return ext

    def _define_metrics(self, delay: float) -> None:
        r = self.registry
        self.responses = Counter(
            "crawlproj_responses",
            "HTTP responses off the wire (every attempt, robots.txt included)",
            ["status_class"],
            registry=r,
        )
        self.response_bytes = Counter(
            "crawlproj_response_bytes", "Response body bytes off the wire", registry=r
        )
        self.items = Counter("crawlproj_items", "Items scraped", registry=r)
        self.content_dups = Counter(
            "crawlproj_content_duplicates", "Items marked duplicate_of another page", registry=r
        )
        self.gap_hist = Histogram(
            "crawlproj_politeness_gap_seconds",
            "End of one fetch to the start of the next on the same IP (this worker)",
            buckets=gap_buckets(delay),
            registry=r,
        )
        self.gap_min = Gauge(
            "crawlproj_politeness_gap_min_seconds", "Smallest gap observed (NaN: none)", registry=r
        )
        self.gap_min.set(math.nan)
        self.overlaps = Counter(
            "crawlproj_politeness_overlaps",
            "Fetch starts while another fetch on the same IP was in flight here",
            registry=r,
        )
        delay_gauge = Gauge(
            "crawlproj_politeness_delay_seconds", "Configured FRONTIER_DELAY", registry=r
        )
        delay_gauge.set(delay)

    # ---- endpoint lifecycle ----------------------------------------------------------

    def engine_started(self) -> None:
        from twisted.internet import reactor

        site = Site(_MetricsResource(self.registry))
        site.noisy = False
        try:
            # Twisted's listenTCP wants a ServerFactory of its base protocol type, and
            # the generic is invariant, so Site (a factory of HTTP channels) fails it.
            self._port = reactor.listenTCP(
                self.config.port,
                site,  # type: ignore[arg-type]
                interface=self.config.bind,
            )
        except Exception as exc:  # CannotListenError and friends
            self.stats.inc_value("metrics/listen_failed")
            logger.error(
                "METRICS_PORT %d on %s is unavailable (%s); pick another port or set "
                "METRICS_PORT=0; crawling without metrics",
                self.config.port, self.config.bind, str(exc).splitlines()[0],
            )  # fmt: skip
            return
        if not ipaddress.ip_address(self.config.bind).is_loopback:
            logger.warning(
                "METRICS_BIND %s exposes crawl metrics beyond this host", self.config.bind
            )
        self.stats.set_value("metrics/port", self.config.port)
        logger.info(
            "Metrics: Prometheus endpoint on http://%s:%d/metrics",
            self.config.bind, self.config.port,
        )  # fmt: skip

    async def engine_stopped(self) -> None:
        port, self._port = self._port, None
        stopped = port.stopListening() if port is not None else None
        if stopped is not None:  # None: the port closed at once
            await maybe_deferred_to_future(stopped)

    # ---- signals ---------------------------------------------------------------------

    def response_downloaded(self, response: Response, request: Request, **_: Any) -> None:
        self.responses.labels(f"{response.status // 100}xx").inc()
        self.response_bytes.inc(len(response.body))

    def request_reached(self, request: Request, **_: Any) -> None:
        start = self.gaps.started(request_ip(request), time.monotonic())
        if start.overlap:
            self.overlaps.inc()
        elif start.gap is not None:
            self.gap_hist.observe(start.gap)
            if start.gap < self.min_gap:
                self.min_gap = start.gap
                self.gap_min.set(start.gap)

    def request_left(self, request: Request, **_: Any) -> None:
        self.gaps.ended(request_ip(request), time.monotonic())

    def item_scraped(self, item: Any, **_: Any) -> None:
        self.items.inc()
        self.n_items += 1
        if item.get("duplicate_of"):
            self.content_dups.inc()
            self.n_content_dups += 1

    # ---- crawl-wide counters from Redis ----------------------------------------------

    def spider_opened(self, spider: Spider) -> None:
        scheduler = frontier_scheduler(self.crawler)
        frontier = getattr(scheduler, "frontier", None)
        if frontier is None or self.config.redis_interval <= 0:
            self.stats.set_value("metrics/redis_counters", "off")
            return
        # A sharded frontier's own keys (their tag scheme); one shard: the crawl's tag.
        keys = frontier.keys
        if not isinstance(keys, ShardedKeys):
            keys = ShardedKeys(keys.crawl)
        config = frontier_config(self.crawler.settings)
        shape = (config.priorities, config.lanes)
        self._redis = RedisTicker(
            self.crawler,
            self.config.redis_interval,
            functools.partial(self._read_gauges, keys=keys, shape=shape),
        )
        self._redis.start()

    async def _read_gauges(
        self, client: AnyAsyncRedis, keys: ShardedKeys, shape: tuple[int, int]
    ) -> None:
        """Crawl-wide gauges (crawl_gauges.py): a bounded number of Redis calls, read
        every METRICS_REDIS_INTERVAL s rather than per scrape, so scrapes cost none."""
        try:
            await map_slots(client)  # a no-op once mapped
            self.gauges = await read_gauges(client, keys, *shape, time.time())
            self.crawl_counters = self.gauges.counters
            self.stats.inc_value("metrics/redis_reads")
        except (RedisError, OSError, ValueError) as exc:
            self.stats.inc_value("metrics/redis_errors")
            logger.debug("Metrics: crawl-wide gauges not read (%s)", exc)

    async def spider_closed(self, spider: Spider, reason: str) -> None:
        if self._redis is not None:
            await self._redis.stop()
