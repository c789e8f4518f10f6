"""`scrapy status [--host HOST|IP] [--json]`: the crawl at a glance, from Redis.

Overall: frontier size by priority and by back-queue lane, IPs ready/waiting, leases,
parked hosts, the oldest queued URL's age (sampled from queue heads), pages/s (acked
pages over --sample s), pause state and counters; URLs admitted and refused by reason,
robots.txt failures by cause, each Bloom generation's fill and estimated false-positive
rate, the re-crawl backlog (observe/crawl_gauges.py: crawl-wide, every worker's).
Per host: its IP's queue, politeness state (delay sources, last fetch, blocked until),
fetch counts by outcome and its robots.txt verdict.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, Any

from crawlproj.operator import OperatorCommand
from extensions.frontier.config import frontier_config
from extensions.observe.crawl_gauges import read_gauges
from extensions.recrawl.schedule import NEW_BUCKET, ZERO_BUCKET, bucket_rate
from extensions.state.connection import async_twin, map_slots

if TYPE_CHECKING:
    import argparse

    from extensions.frontier.admin import FrontierAdmin, FrontierStats
    from extensions.observe.crawl_gauges import BloomGauge, CrawlGauges


def _bucket_order(bucket: str) -> float:
    return {NEW_BUCKET: -2.0, ZERO_BUCKET: -1.0}.get(bucket) or bucket_rate(bucket)


async def _read_gauges(
    admin: FrontierAdmin, priorities: int, lanes: int, now: float
) -> CrawlGauges:
    client = await map_slots(async_twin(admin.client))
    try:
        return await read_gauges(client, admin.keys, priorities, lanes, now)
    finally:
        await client.aclose()


def _lanes(gauges: CrawlGauges) -> dict[str, int] | str:
    if gauges.back_lanes is None:
        return "unknown: queued before the lane counters; exact once the back queues drain"
    return {f"lane_{lane}": n for lane, n in enumerate(gauges.back_lanes)}


def _generation(g: BloomGauge) -> dict[str, Any]:
    return {
        "shard": g.shard,
        "generation": g.generation,
        "capacity": g.capacity,
        "inserted": g.inserted,
        "fill": round(g.fill, 4),
        "estimated_fp_rate": float(f"{g.fp_rate:.3g}"),
    }


def _backlog(gauges: CrawlGauges) -> dict[str, Any]:
    late = gauges.recrawl_overdue
    how = "exact" if late.exact else f"estimated from {late.sampled} due URLs"
    return {"overdue_by_more_than_one_interval": late.count, "overdue_count": how}


class Command(OperatorCommand):
    def syntax(self) -> str:
        return "[--host HOST|IP] [--json]"

    def short_desc(self) -> str:
        return "Show the crawl's frontier, politeness and per-host state"

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument("--host", help="one host name or IP")
        parser.add_argument("--sample", type=float, default=1.0, help="seconds to measure pages/s")

    def act(
        self, admin: FrontierAdmin, args: list[str], opts: argparse.Namespace
    ) -> dict[str, Any]:
        if opts.host:
            return self._host(admin, opts.host)
        return self._overall(admin, max(0.0, opts.sample))

    def _overall(self, admin: FrontierAdmin, sample: float) -> dict[str, Any]:
        assert self.settings is not None
        before = admin.counters().get("acked", 0)
        time.sleep(sample)
        now = time.time()
        config = frontier_config(self.settings)
        stats = admin.stats(config, now)
        gauges = asyncio.run(_read_gauges(admin, config.priorities, config.lanes, now))
        oldest = stats.oldest_queued_at
        return {
            "crawl": admin.keys.crawl,
            "shards": admin.keys.count,
            "paused": stats.paused,
            "paused_ips": stats.paused_ips,
            "queued": stats.size,
            "queued_by_priority": {f"front_{p}": n for p, n in enumerate(stats.front_queues)},
            "queued_in_back_queues": stats.size - sum(stats.front_queues),
            "queued_by_lane": _lanes(gauges),
            "ips_with_back_queue": stats.ips_with_back_queue,
            "ips_ready": stats.ips_ready,
            "ips_waiting": stats.ips_waiting,
            "leases": stats.in_process,
            "hosts_waiting_for_dns": stats.hosts_waiting_for_dns,
            "oldest_queued_age_s": round(now - oldest, 1) if oldest is not None else None,
            "pages_per_s": round((stats.completed - before) / sample, 2) if sample else None,
            "blocklist_rules": stats.blocklist_rules,
            "admitted": gauges.counters.get("admitted", 0),
            "rejected_by_reason": gauges.rejected,
            "robots_failures_by_cause": gauges.robots_failures,
            "robots_failing_origins": gauges.robots_failing_origins,
            "seen_bloom": [_generation(g) for g in gauges.bloom],
            "recrawl": {**self._recrawl(admin, stats, now), **_backlog(gauges)},
            "counters": stats.counters,
        }

    @staticmethod
    def _recrawl(admin: FrontierAdmin, stats: FrontierStats, now: float) -> dict[str, Any]:
        """Stored URLs under re-crawl, how many are due, and the change-rate histogram
        (changes per day at each bucket's middle -> URLs)."""
        recrawl = admin.recrawl_stats(now)
        by_rate = {
            (b if b in (NEW_BUCKET, ZERO_BUCKET) else f"{bucket_rate(b) * 86400:.3g}/day"): n
            for b, n in sorted(recrawl.rates.items(), key=lambda kv: _bucket_order(kv[0]))
        }
        return {
            "stored_urls": recrawl.stored_urls,
            "due_now": recrawl.due_now,
            "queued": stats.counters.get("recrawl_queued", 0),
            "urls_by_change_rate": by_rate,
        }

    def _host(self, admin: FrontierAdmin, target: str) -> dict[str, Any]:
        assert self.settings is not None
        host = target.lower()
        state = admin.ip_state(admin.ip_of(target), frontier_config(self.settings).lanes)
        counts = admin.host_counts(host)
        delay_sources = {"configured": frontier_config(self.settings).delay, **state.delays}
        return {
            "host": host,
            "ip": state.ip,
            "queued_in_back_queue": state.queued,
            "queued_in_recrawl_queue": state.recrawl_queued,
            "has_back_queue": state.has_back_queue,
            "next_fetch_at": state.next_fetch_at,
            "in_flight": state.in_flight,
            "delay_s": max(delay_sources.values()),
            "delay_sources": delay_sources,
            "last_fetch_end": state.last_end,
            "blocked_until": state.blocked_until,
            "paused": state.paused,
            "down_since": state.down_since,
            "host_keys": state.host_keys,  # an IP inside FRONTIER_HOST_IP_NETWORKS: its hosts'
            "fetched": counts.pop("fetched", 0),
            "outcomes": counts,
            "robots": self._robots(admin, host),
            "url_patterns": admin.host_patterns(host),
        }

    @staticmethod
    def _robots(admin: FrontierAdmin, host: str) -> dict[str, Any]:
        verdicts = {
            origin: {
                "verdict": verdict.kind,
                "status": verdict.status,
                "crawl_delay": verdict.crawl_delay,
                "expires_at": verdict.expires_at,
            }
            for origin, verdict in admin.robots(host).items()
        }
        return verdicts or {"verdict": "not fetched yet"}
