"""`scrapy status [--host HOST|IP] [--json]`: the crawl at a glance, from Redis.

Overall: frontier size by priority, IPs ready/waiting, leases, parked hosts, the oldest
queued URL's age (sampled from queue heads), pages/s (acked pages over --sample s),
pause state and counters. Per host: its IP's queue, politeness state (delay sources,
last fetch, blocked until), fetch counts by outcome and its robots.txt verdict.
"""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any

from crawlproj.operator import OperatorCommand, ip_of
from extensions.frontier.config import frontier_config
from extensions.recrawl.schedule import NEW_BUCKET, ZERO_BUCKET, bucket_rate
from extensions.robots.rules import RobotsVerdict

if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable

    from extensions.state.connection import AnyRedis
    from extensions.state.keys import FrontierKeys, ShardedKeys

# Back queues sampled for the oldest-URL estimate (reading every head would be O(IPs)).
_SAMPLED_BACK_QUEUES = 200


def _bucket_order(bucket: str) -> float:
    return {NEW_BUCKET: -2.0, ZERO_BUCKET: -1.0}.get(bucket) or bucket_rate(bucket)


def _decoded(raw: dict[bytes, bytes]) -> dict[str, str]:
    return {k.decode(): v.decode() for k, v in raw.items()}


def _sum_hashes(client: AnyRedis, keys: list[str]) -> dict[str, int]:
    """Counters kept per shard, summed."""
    totals: dict[str, int] = {}
    for key in keys:
        for name, value in _decoded(client.hgetall(key)).items():
            totals[name] = totals.get(name, 0) + int(value)
    return totals


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
        self, client: AnyRedis, keys: ShardedKeys, args: list[str], opts: argparse.Namespace
    ) -> dict[str, Any]:
        if opts.host:
            return self._host(client, keys, opts.host)
        return self._overall(client, keys, max(0.0, opts.sample))

    def _overall(self, client: AnyRedis, keys: ShardedKeys, sample: float) -> dict[str, Any]:
        assert self.settings is not None
        priorities = frontier_config(self.settings).priorities
        shards = keys.all()  # one read per shard: on a cluster they sit in different slots
        before = _sum_hashes(client, keys.stats_keys()).get("acked", 0)
        time.sleep(sample)
        stats = _sum_hashes(client, keys.stats_keys())
        now = time.time()
        front = [sum(client.llen(s.front_queue(p)) for s in shards) for p in range(priorities)]
        paused_ips = {}
        for shard in shards:
            paused_ips.update(_decoded(client.hgetall(shard.key("paused_ips"))))

        def total(read: Callable[[FrontierKeys], int]) -> int:
            return sum(read(shard) for shard in shards)

        return {
            "crawl": keys.crawl,
            "shards": keys.count,
            "paused": any(client.exists(shard.key("paused")) for shard in shards),
            "paused_ips": paused_ips,
            "queued": stats.get("queued", 0),
            "queued_by_priority": {f"front_{p}": n for p, n in enumerate(front)},
            "queued_in_back_queues": stats.get("queued", 0) - sum(front),
            "ips_with_back_queue": total(lambda s: client.scard(s.key("active"))),
            "ips_ready": total(lambda s: client.zcount(s.key("ready"), "-inf", now)),
            "ips_waiting": total(lambda s: client.zcount(s.key("ready"), f"({now}", "+inf")),
            "leases": total(lambda s: client.zcard(s.key("leases"))),
            "hosts_waiting_for_dns": total(lambda s: client.zcard(s.key("pending_hosts"))),
            "oldest_queued_age_s": self._oldest_age(client, keys, priorities, now),
            "pages_per_s": round((stats.get("acked", 0) - before) / sample, 2) if sample else None,
            "blocklist_rules": client.scard(keys.crawl_keys.blocklist),
            "recrawl": self._recrawl(client, keys.crawl_keys, stats, now),
            "counters": stats,
        }

    @staticmethod
    def _recrawl(
        client: AnyRedis, keys: FrontierKeys, stats: dict[str, int], now: float
    ) -> dict[str, Any]:
        """Stored URLs under re-crawl, how many are due, and the change-rate histogram
        (changes per day at each bucket's middle -> URLs)."""
        histogram = _sum_hashes(client, [keys.recrawl_rates])
        by_rate = {
            (b if b in (NEW_BUCKET, ZERO_BUCKET) else f"{bucket_rate(b) * 86400:.3g}/day"): n
            for b, n in sorted(histogram.items(), key=lambda kv: _bucket_order(kv[0]))
        }
        return {
            "stored_urls": client.zcard(keys.recrawl_due),
            "due_now": client.zcount(keys.recrawl_due, "-inf", now),
            "queued": stats.get("recrawl_queued", 0),
            "urls_by_change_rate": by_rate,
        }

    @staticmethod
    def _oldest_age(
        client: AnyRedis, keys: ShardedKeys, priorities: int, now: float
    ) -> float | None:
        heads = []
        sampled = max(1, _SAMPLED_BACK_QUEUES // keys.count)
        for shard in keys.all():
            fronts = [client.lindex(shard.front_queue(p), 0) for p in range(priorities)]
            heads += [h.split(b"|", 1)[1] for h in fronts if h]
            for ip in client.srandmember(shard.key("active"), sampled) or []:
                head = client.lindex(shard.back_queue(ip.decode()), 0)
                if head:
                    heads.append(head)
        times = [json.loads(h).get("t") for h in heads]
        times = [t for t in times if t]
        return round(now - min(times), 1) if times else None

    def _host(self, client: AnyRedis, keys: ShardedKeys, target: str) -> dict[str, Any]:
        assert self.settings is not None
        ip = ip_of(client, keys, self.settings, target)
        host = target.lower()
        shard = keys.for_ip(ip)
        state = _decoded(client.hgetall(shard.ip_state(ip)))
        counts = self._host_counts(client, keys, host)
        delay_sources = {
            "configured": frontier_config(self.settings).delay,
            **{k: float(state[k]) for k in ("crawl_delay", "override", "adaptive") if k in state},
        }
        return {
            "host": host,
            "ip": ip,
            "queued_in_back_queue": client.llen(shard.back_queue(ip)),
            "queued_in_recrawl_queue": client.llen(shard.recrawl_queue(ip)),
            "has_back_queue": bool(client.sismember(shard.key("active"), ip)),
            "next_fetch_at": client.zscore(shard.key("ready"), ip),
            "in_flight": int(state.get("inflight", 0)),
            "delay_s": max(delay_sources.values()),
            "delay_sources": delay_sources,
            "last_fetch_end": float(state["last_end"]) if "last_end" in state else None,
            "blocked_until": float(state["blocked_until"]) if "blocked_until" in state else None,
            "paused": bool(client.hexists(shard.key("paused_ips"), ip)),
            "fetched": counts.pop("fetched", 0),
            "outcomes": counts,
            "robots": self._robots(client, keys, host),
        }

    @staticmethod
    def _host_counts(client: AnyRedis, keys: ShardedKeys, host: str) -> dict[str, Any]:
        # Written in the shard of the host's IP; summed over all in case the IP changed.
        counts: dict[str, Any] = {}
        for shard in keys.all():
            for field, value in client.hscan_iter(shard.key("host_stats"), match=f"{host}|*"):
                name = field.decode().split("|", 1)[1]
                if name == "last_fetch":
                    counts[name] = max(counts.get(name, 0.0), float(value))
                else:
                    counts[name] = counts.get(name, 0) + int(value)
        return counts

    @staticmethod
    def _robots(client: AnyRedis, keys: ShardedKeys, host: str) -> dict[str, Any]:
        verdicts = {}
        # On a cluster, scan_iter visits every master.
        pattern = keys.crawl_keys.robots(f"*://{host}*")
        for key in client.scan_iter(match=pattern, count=1000):
            origin = key.decode().split(":robots:", 1)[1]
            raw = client.get(key)
            if raw:
                verdict = RobotsVerdict.from_json(raw)
                verdicts[origin] = {
                    "verdict": verdict.kind,
                    "status": verdict.status,
                    "crawl_delay": verdict.crawl_delay,
                    "expires_at": verdict.expires_at,
                }
        return verdicts or {"verdict": "not fetched yet"}
