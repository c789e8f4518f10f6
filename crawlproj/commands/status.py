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
from extensions.frontier.settings import frontier_config
from extensions.recrawl_schedule import NEW_BUCKET, ZERO_BUCKET, bucket_rate
from extensions.robots import RobotsVerdict

if TYPE_CHECKING:
    import argparse

    import redis

    from extensions.frontier.keys import FrontierKeys

# Back queues sampled for the oldest-URL estimate (reading every head would be O(IPs)).
_SAMPLED_BACK_QUEUES = 200


def _bucket_order(bucket: str) -> float:
    return {NEW_BUCKET: -2.0, ZERO_BUCKET: -1.0}.get(bucket) or bucket_rate(bucket)


def _num(value: bytes | None) -> float:
    return float(value) if value is not None else 0.0


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
        self, client: redis.Redis, keys: FrontierKeys, args: list[str], opts: argparse.Namespace
    ) -> dict[str, Any]:
        if opts.host:
            return self._host(client, keys, opts.host)
        return self._overall(client, keys, max(0.0, opts.sample))

    def _overall(self, client: redis.Redis, keys: FrontierKeys, sample: float) -> dict[str, Any]:
        assert self.settings is not None
        priorities = frontier_config(self.settings).priorities
        before = _num(client.hget(keys.key("stats"), "acked"))
        time.sleep(sample)
        stats = {k.decode(): int(v) for k, v in client.hgetall(keys.key("stats")).items()}
        now = time.time()
        front = [client.llen(keys.front_queue(p)) for p in range(priorities)]
        return {
            "crawl": keys.crawl,
            "paused": bool(client.exists(keys.key("paused"))),
            "paused_ips": {
                k.decode(): v.decode() for k, v in client.hgetall(keys.key("paused_ips")).items()
            },
            "queued": stats.get("queued", 0),
            "queued_by_priority": {f"front_{p}": n for p, n in enumerate(front)},
            "queued_in_back_queues": stats.get("queued", 0) - sum(front),
            "ips_with_back_queue": client.scard(keys.key("active")),
            "ips_ready": client.zcount(keys.key("ready"), "-inf", now),
            "ips_waiting": client.zcount(keys.key("ready"), f"({now}", "+inf"),
            "leases": client.zcard(keys.key("leases")),
            "hosts_waiting_for_dns": client.zcard(keys.key("pending_hosts")),
            "oldest_queued_age_s": self._oldest_age(client, keys, priorities, now),
            "pages_per_s": round((stats.get("acked", 0) - before) / sample, 2) if sample else None,
            "blocklist_rules": client.scard(keys.blocklist),
            "recrawl": self._recrawl(client, keys, stats, now),
            "counters": stats,
        }

    @staticmethod
    def _recrawl(
        client: redis.Redis, keys: FrontierKeys, stats: dict[str, int], now: float
    ) -> dict[str, Any]:
        """Stored URLs under re-crawl, how many are due, and the change-rate histogram
        (changes per day at each bucket's middle -> URLs)."""
        histogram = {k.decode(): int(v) for k, v in client.hgetall(keys.recrawl_rates).items()}
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

    def _oldest_age(
        self, client: redis.Redis, keys: FrontierKeys, priorities: int, now: float
    ) -> float | None:
        heads = [client.lindex(keys.front_queue(p), 0) for p in range(priorities)]
        heads = [h.split(b"|", 1)[1] for h in heads if h]
        for ip in client.srandmember(keys.key("active"), _SAMPLED_BACK_QUEUES) or []:
            head = client.lindex(keys.back_queue(ip.decode()), 0)
            if head:
                heads.append(head)
        times = [json.loads(h).get("t") for h in heads]
        times = [t for t in times if t]
        return round(now - min(times), 1) if times else None

    def _host(self, client: redis.Redis, keys: FrontierKeys, target: str) -> dict[str, Any]:
        assert self.settings is not None
        ip = ip_of(client, keys, self.settings, target)
        host = target.lower()
        state = {k.decode(): v.decode() for k, v in client.hgetall(keys.ip_state(ip)).items()}
        counts = self._host_counts(client, keys, host)
        delay_sources = {
            "configured": frontier_config(self.settings).delay,
            **{k: float(state[k]) for k in ("crawl_delay", "override", "adaptive") if k in state},
        }
        return {
            "host": host,
            "ip": ip,
            "queued_in_back_queue": client.llen(keys.back_queue(ip)),
            "has_back_queue": bool(client.sismember(keys.key("active"), ip)),
            "next_fetch_at": client.zscore(keys.key("ready"), ip),
            "in_flight": int(state.get("inflight", 0)),
            "delay_s": max(delay_sources.values()),
            "delay_sources": delay_sources,
            "last_fetch_end": float(state["last_end"]) if "last_end" in state else None,
            "blocked_until": float(state["blocked_until"]) if "blocked_until" in state else None,
            "paused": bool(client.hexists(keys.key("paused_ips"), ip)),
            "fetched": counts.pop("fetched", 0),
            "outcomes": counts,
            "robots": self._robots(client, keys, host),
        }

    @staticmethod
    def _host_counts(client: redis.Redis, keys: FrontierKeys, host: str) -> dict[str, Any]:
        counts: dict[str, Any] = {}
        for field, value in client.hscan_iter(keys.key("host_stats"), match=f"{host}|*"):
            name = field.decode().split("|", 1)[1]
            counts[name] = float(value) if name == "last_fetch" else int(value)
        return counts

    @staticmethod
    def _robots(client: redis.Redis, keys: FrontierKeys, host: str) -> dict[str, Any]:
        verdicts = {}
        for key in client.scan_iter(match=keys.robots(f"*://{host}*"), count=1000):
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
