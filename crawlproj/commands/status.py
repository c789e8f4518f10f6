"""`scrapy status [--host HOST|IP] [--json]`: the crawl at a glance, from Redis.

Overall: frontier size by priority, IPs ready/waiting, leases, parked hosts, the oldest
queued URL's age (sampled from queue heads), pages/s (acked pages over --sample s),
pause state and counters. Per host: its IP's queue, politeness state (delay sources,
last fetch, blocked until), fetch counts by outcome and its robots.txt verdict.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from crawlproj.operator import OperatorCommand
from extensions.frontier.config import frontier_config
from extensions.recrawl.schedule import NEW_BUCKET, ZERO_BUCKET, bucket_rate

if TYPE_CHECKING:
    import argparse

    from extensions.frontier.admin import FrontierAdmin, FrontierStats


def _bucket_order(bucket: str) -> float:
    return {NEW_BUCKET: -2.0, ZERO_BUCKET: -1.0}.get(bucket) or bucket_rate(bucket)


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
        stats = admin.stats(frontier_config(self.settings), now)
        oldest = stats.oldest_queued_at
        return {
            "crawl": admin.keys.crawl,
            "shards": admin.keys.count,
            "paused": stats.paused,
            "paused_ips": stats.paused_ips,
            "queued": stats.size,
            "queued_by_priority": {f"front_{p}": n for p, n in enumerate(stats.front_queues)},
            "queued_in_back_queues": stats.size - sum(stats.front_queues),
            "ips_with_back_queue": stats.ips_with_back_queue,
            "ips_ready": stats.ips_ready,
            "ips_waiting": stats.ips_waiting,
            "leases": stats.in_process,
            "hosts_waiting_for_dns": stats.hosts_waiting_for_dns,
            "oldest_queued_age_s": round(now - oldest, 1) if oldest is not None else None,
            "pages_per_s": round((stats.completed - before) / sample, 2) if sample else None,
            "blocklist_rules": stats.blocklist_rules,
            "recrawl": self._recrawl(admin, stats, now),
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
