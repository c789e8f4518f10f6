"""FRONTIER_* settings read and validated once, with errors that name the setting."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from scrapy.exceptions import NotConfigured

from extensions.frontier.core import FrontierConfig

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings


@dataclass(frozen=True)
class SchedulerSettings:
    crawl_name: str  # '' = the spider's name
    default_priority: int
    keep_referer: bool
    poll_interval: float
    dns_retries: int
    dns_retry_delay: float
    max_redis_failures: int
    blocklist_refresh: float
    robots_max_crawl_delay: float
    robots_max_error_retries: int
    robots_sitemaps: bool
    shards: int  # 0 = auto (sharded.crawl_shards)


def priority_weights(settings: BaseSettings) -> tuple[int, ...]:
    """FRONTIER_PRIORITY_WEIGHTS: one weight per front queue, priority 0 first."""
    raw = settings.getlist("FRONTIER_PRIORITY_WEIGHTS", ["16", "8", "4", "2", "1"])
    try:
        return tuple(int(w) for w in raw)
    except ValueError:
        raise NotConfigured(
            f"FRONTIER_PRIORITY_WEIGHTS must be whole numbers, one per priority: {raw!r}"
        ) from None


def frontier_config(settings: BaseSettings) -> FrontierConfig:
    download_timeout = settings.getfloat("DOWNLOAD_TIMEOUT", 180)
    lease_ttl = settings.getfloat("FRONTIER_LEASE_TTL", 0) or download_timeout + 60
    if lease_ttl <= download_timeout:
        raise NotConfigured(
            f"FRONTIER_LEASE_TTL ({lease_ttl}) must exceed DOWNLOAD_TIMEOUT "
            f"({download_timeout}), or a slow download would be handed out twice"
        )
    try:
        return FrontierConfig(
            delay=settings.getfloat("FRONTIER_DELAY", 1.0),
            back_queues=settings.getint("FRONTIER_BACK_QUEUES", 1024),
            ip_concurrency=settings.getint("FRONTIER_IP_CONCURRENCY", 1),
            weights=priority_weights(settings),
            lease_ttl=lease_ttl,
            backoff_base=settings.getfloat("FRONTIER_BACKOFF_BASE", 5.0),
            backoff_max=settings.getfloat("FRONTIER_BACKOFF_MAX", 600.0),
            quarantine_after=settings.getint("FRONTIER_QUARANTINE_AFTER", 5),
            quarantine_s=settings.getfloat("FRONTIER_QUARANTINE_S", 600.0),
            adaptive_factor=settings.getfloat("FRONTIER_ADAPTIVE_DELAY_FACTOR", 0.0),
            max_pages_per_host=settings.getint("FRONTIER_MAX_PAGES_PER_HOST", 0),
            max_per_pattern=settings.getint("URL_MAX_PER_PATTERN", 1000),
            recrawl_share=settings.getfloat("RECRAWL_SHARE", 0.5),
        )
    except ValueError as exc:
        raise NotConfigured(str(exc)) from None


def scheduler_settings(settings: BaseSettings, priorities: int) -> SchedulerSettings:
    default_priority = settings.getint("FRONTIER_DEFAULT_PRIORITY", 2)
    if not 0 <= default_priority < priorities:
        raise NotConfigured(
            f"FRONTIER_DEFAULT_PRIORITY ({default_priority}) must be a front queue, "
            f"0..{priorities - 1}"
        )
    opts = SchedulerSettings(
        crawl_name=settings.get("FRONTIER_CRAWL_NAME") or "",
        default_priority=default_priority,
        keep_referer=settings.getbool("FRONTIER_KEEP_REFERER", False),
        poll_interval=settings.getfloat("FRONTIER_POLL_INTERVAL", 1.0),
        dns_retries=settings.getint("FRONTIER_DNS_RETRIES", 3),
        dns_retry_delay=settings.getfloat("FRONTIER_DNS_RETRY_DELAY", 5.0),
        max_redis_failures=settings.getint("FRONTIER_MAX_REDIS_FAILURES", 10),
        blocklist_refresh=settings.getfloat("URL_BLOCKLIST_REFRESH", 5.0),
        robots_max_crawl_delay=settings.getfloat("ROBOTS_MAX_CRAWL_DELAY", 300.0),
        robots_max_error_retries=settings.getint("ROBOTS_MAX_ERROR_RETRIES", 3),
        robots_sitemaps=settings.getbool("ROBOTS_SITEMAPS", True),
        shards=settings.getint("FRONTIER_SHARDS", 0),
    )
    _check_bounds(opts)
    return opts


def _check_bounds(opts: SchedulerSettings) -> None:
    # (setting, value, smallest allowed, whether the smallest itself is allowed)
    bounds = [
        ("FRONTIER_POLL_INTERVAL", opts.poll_interval, 0, False),
        ("FRONTIER_DNS_RETRIES", opts.dns_retries, 0, True),
        ("FRONTIER_DNS_RETRY_DELAY", opts.dns_retry_delay, 0, False),
        ("FRONTIER_MAX_REDIS_FAILURES", opts.max_redis_failures, 1, True),
        ("URL_BLOCKLIST_REFRESH", opts.blocklist_refresh, 0, False),
        ("ROBOTS_MAX_CRAWL_DELAY", opts.robots_max_crawl_delay, 0, True),
        ("ROBOTS_MAX_ERROR_RETRIES", opts.robots_max_error_retries, 0, True),
        ("FRONTIER_SHARDS", opts.shards, 0, True),
    ]
    for name, value, least, inclusive in bounds:
        if value < least or (value == least and not inclusive):
            relation = ">=" if inclusive else ">"
            raise NotConfigured(f"{name} ({value}) must be {relation} {least}")
