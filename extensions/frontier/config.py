"""FRONTIER_* settings: the frontier's and the scheduler's tables (extensions/config.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from scrapy.exceptions import NotConfigured

from extensions.admission.bloom import BloomConfig
from extensions.admission.budgets import trap_config
from extensions.admission.priorities import priority_weights
from extensions.config import Setting, Table, above, at_least, at_most, between, read
from extensions.frontier.core import FrontierConfig

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

__all__ = ["frontier_config", "priority_weights", "scheduler_settings"]

FRONTIER = Table(
    FrontierConfig,
    Setting("FRONTIER_DELAY", "delay", float, at_least(0)),
    Setting("FRONTIER_BACK_QUEUES", "back_queues", int, at_least(1)),
    Setting("FRONTIER_IP_CONCURRENCY", "ip_concurrency", int, at_least(1)),
    Setting("PRIORITY_LANES", "lanes", int, at_least(1)),
    Setting("FRONTIER_BACKOFF_BASE", "backoff_base", float, above(0)),
    # Issue 13's floor: a timeout, reset or 5xx keeps its IP idle for at least 1 s.
    Setting("FRONTIER_FAILURE_BACKOFF_BASE", "failure_backoff_base", float, at_least(1)),
    Setting("FRONTIER_BACKOFF_MAX", "backoff_max", float, at_least("FRONTIER_BACKOFF_BASE")),
    Setting("FRONTIER_QUARANTINE_AFTER", "quarantine_after", int, at_least(1)),
    Setting("FRONTIER_QUARANTINE_S", "quarantine_s", float, at_least(0)),
    Setting(
        "FRONTIER_QUARANTINE_MAX", "quarantine_max_s", float, at_least("FRONTIER_QUARANTINE_S")
    ),
    Setting("FRONTIER_DOWN_AFTER", "down_after_s", float, at_least(0)),
    Setting("FRONTIER_ADAPTIVE_DELAY_FACTOR", "adaptive_factor", float, at_least(0)),
    # 0 would never give a halved rate back; 1 is back to full speed at the first success.
    Setting("FRONTIER_RATE_STEP", "rate_step", float, above(0), at_most(1)),
    Setting("FRONTIER_MAX_PAGES_PER_HOST", "max_pages_per_host", int, at_least(0)),
    Setting("URL_MAX_PER_PATTERN", "max_per_pattern", int, at_least(0)),
    Setting("RECRAWL_SHARE", "recrawl_share", float, between(0, 1)),
)


@dataclass(frozen=True)
class Lease:
    download_timeout: float
    ttl: float | None  # None: DOWNLOAD_TIMEOUT + 60

    @property
    def seconds(self) -> float:
        return self.ttl or self.download_timeout + 60


# A lease that ends before a slow download does would hand the page out twice (DESIGN 4).
LEASE = Table(
    Lease,
    Setting("DOWNLOAD_TIMEOUT", "download_timeout", float, above(0)),
    Setting("FRONTIER_LEASE_TTL", "ttl", float, above("DOWNLOAD_TIMEOUT"), optional=True),
)


@dataclass(frozen=True)
class SchedulerSettings:
    crawl_name: str  # '' = the spider's name
    keep_referer: bool
    poll_interval: float
    dns_retries: int
    dns_retry_delay: float
    max_redis_failures: int
    blocklist_refresh: float
    robots_max_crawl_delay: float
    robots_max_error_retries: int
    robots_sitemaps: bool
    shards: int  # 0 = auto (sharded.crawl_keys)
    max_processing: int  # fetched pages not yet processed before leasing more; 0 = no bound
    max_backoffs: int  # 429/503s, or refusals, a page waits out before it is given up


SCHEDULER = Table(
    SchedulerSettings,
    Setting("FRONTIER_CRAWL_NAME", "crawl_name", str),
    Setting("FRONTIER_KEEP_REFERER", "keep_referer", bool),
    Setting("FRONTIER_POLL_INTERVAL", "poll_interval", float, above(0)),
    Setting("FRONTIER_DNS_RETRIES", "dns_retries", int, at_least(0)),
    Setting("FRONTIER_DNS_RETRY_DELAY", "dns_retry_delay", float, above(0)),
    Setting("FRONTIER_MAX_REDIS_FAILURES", "max_redis_failures", int, at_least(1)),
    Setting("URL_BLOCKLIST_REFRESH", "blocklist_refresh", float, above(0)),
    Setting("ROBOTS_MAX_CRAWL_DELAY", "robots_max_crawl_delay", float, at_least(0)),
    Setting("ROBOTS_MAX_ERROR_RETRIES", "robots_max_error_retries", int, at_least(0)),
    Setting("ROBOTS_SITEMAPS", "robots_sitemaps", bool),
    Setting("FRONTIER_SHARDS", "shards", int, at_least(0)),
    Setting("FRONTIER_MAX_PROCESSING", "max_processing", int, at_least(0)),
    Setting("FRONTIER_MAX_BACKOFFS", "max_backoffs", int, at_least(0)),
)


def frontier_config(settings: BaseSettings) -> FrontierConfig:
    """Raises NotConfigured naming the bad setting (the scheduler cannot run without it)."""
    try:
        lease = read(LEASE, settings)
        return read(
            FRONTIER,
            settings,
            weights=priority_weights(settings),
            lease_ttl=lease.seconds,
            traps=trap_config(settings),
            seen=BloomConfig.from_settings(settings),
        )
    except ValueError as exc:
        raise NotConfigured(str(exc)) from None


def scheduler_settings(settings: BaseSettings) -> SchedulerSettings:
    try:
        return read(SCHEDULER, settings)
    except ValueError as exc:
        raise NotConfigured(str(exc)) from None
