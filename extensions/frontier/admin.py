"""The one admin API of a crawl's frontier, for operators: url-frontier's verbs on Redis.

Why: the operator verbs (crawlproj/commands/) wrote Redis keys themselves, so each knew
key names, shard placement and record formats, and one decoded the DNS cache a second
time. They now say what they mean, in the words of url-frontier's urlfrontier.proto:
SetActive (`set_active`), SetDelay (`set_delay`), BlockQueueUntil (`block_until`) and
GetStats{size, inProcess, completed} (`stats`); plus the blocklist, seeding and re-crawl
marking they need. A url-frontier queue is a politeness key here: an IP (politeness is
per server), or "<ip>@<host>" inside FRONTIER_HOST_IP_NETWORKS, where a host name names
its own key and the IP stands for all of its hosts (the scripts read the IP's pause,
override and block next to each key's own: lua/ready_heap.lua).

Synchronous: commands run without a reactor. The same calls work on one Redis, on a
sharded frontier and on a Redis Cluster: per-IP state lives in the IP's shard, and what
every shard's lease script reads (the kill switch) is written once per shard, one
command each, as the shards sit in different cluster slots. A multi-key step inside one
slot is one Lua script (invariant 9). Every key comes from extensions/state/keys.py.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Any, cast

from extensions.admission.budgets import pattern_state
from extensions.admission.filters import compile_block_rules
from extensions.admission.politeness_key import PER_IP, PolitenessKeys, parse_key
from extensions.admission.records import (
    front_entry_record,
    parse_record,
    record_text,
    without_marks,
)
from extensions.dns.cache import decode_shared
from extensions.frontier.admin_recrawl import RecrawlVerbs
from extensions.frontier.core import ADMIT_CHUNK
from extensions.frontier.sharded import open_frontier
from extensions.robots.verdicts import RobotsVerdict
from extensions.state.connection import as_str, async_twin, map_slots
from extensions.state.lua import read_lua

if TYPE_CHECKING:
    from redis.asyncio import Redis as AsyncRedis

    from extensions.admission.records import AdmitItem
    from extensions.frontier.core import FrontierConfig
    from extensions.state.connection import AnyRedis
    from extensions.state.keys import FrontierKeys, ShardedKeys

# Back queues sampled for the oldest-URL estimate (reading every head would be O(IPs)).
SAMPLED_BACK_QUEUES = 200
# Fields of an IP's politeness state that are delay sources (lua/ready_heap.lua: ip_delay).
DELAY_FIELDS = ("crawl_delay", "override", "adaptive", "throttle")  # throttle: 429/503 AIMD


class Scope(Enum):
    ALL = "all"  # the whole crawl (set_active)


ALL = Scope.ALL


class UnknownHost(ValueError):
    """A host name the crawl has not resolved: its IP, hence its queue, is unknown."""


@dataclass(frozen=True)
class Change:
    ip: str | None  # the politeness key acted on; None for the whole crawl
    changed: int  # keys, fields or rules that changed (0: it was so already)


@dataclass(frozen=True)
class FrontierStats:
    """GetStats (size, inProcess, completed), and the rest of `scrapy status`."""

    size: int  # URLs queued, front and back queues (the "queued" counter)
    in_process: int  # leases not yet acked
    completed: int  # leases acked (the "acked" counter)
    front_queues: tuple[int, ...]  # URLs per front queue, priority 0 first
    ips_with_back_queue: int
    ips_ready: int  # on the ready heap and due
    ips_waiting: int  # on the ready heap, due later
    hosts_waiting_for_dns: int
    oldest_queued_at: float | None  # entry time of the oldest sampled queue head
    paused: bool
    paused_ips: dict[str, str]  # ip -> the host or IP the operator paused
    blocklist_rules: int
    counters: dict[str, int]  # every shard's counters, summed


@dataclass(frozen=True)
class IpState:
    """One IP's queues and politeness state."""

    ip: str
    queued: int  # back queue (discovered URLs)
    recrawl_queued: int  # re-crawl back queue
    has_back_queue: bool
    next_fetch_at: float | None  # its ready-heap score; None when off the heap
    in_flight: int
    delays: dict[str, float]  # its own delay sources that are set (DELAY_FIELDS)
    last_end: float | None
    blocked_until: float | None
    paused: bool
    down_since: float | None  # given up as down (FRONTIER_DOWN_AFTER): `scrapy resume` clears
    # An IP inside FRONTIER_HOST_IP_NETWORKS: its per-host keys with a back queue or due.
    host_keys: dict[str, dict[str, Any]]


@dataclass(frozen=True)
class Admitted:
    admitted: int
    duplicate: int
    queued: int  # the crawl's queued URLs after admission, every shard counted


class FrontierAdmin(RecrawlVerbs):
    """Operator verbs on one crawl's frontier. `pinned` gives a host's DNS_HOSTS_MAP IP;
    `politeness`: FRONTIER_HOST_IP_NETWORKS."""

    def __init__(
        self,
        client: AnyRedis,
        keys: ShardedKeys,
        pinned: Callable[[str], str | None] = lambda host: None,
        politeness: PolitenessKeys = PER_IP,
    ) -> None:
        self.client = client
        self.keys = keys
        self.pinned = pinned
        self.politeness = politeness
        self._block_until = client.register_script(read_lua("extensions.frontier", "block_until"))
        self._mark = client.register_script(read_lua("extensions.recrawl", "mark"))

    # ---- queues: an IP, named by itself or by a host ---------------------------------

    def ip_of(self, target: str) -> str:
        """The politeness key a host name, IP or key stands for: a host's IP from
        DNS_HOSTS_MAP, else the crawl's DNS cache (a stale answer too: it is the IP the
        host's URLs are queued under), as "<ip>@<host>" inside the networks."""
        with contextlib.suppress(ValueError):
            return parse_key(target)
        host = target.lower().rstrip(".")
        pinned = self.pinned(host)
        if pinned:
            return self.politeness.key(pinned, host)
        raw = self.client.get(self.keys.crawl_keys.dns(host))
        answer = decode_shared(raw) if raw else None
        if answer is not None and answer.kind == "ok":
            return self.politeness.key(answer.value, host)
        raise UnknownHost(
            f"{host} has not been resolved by this crawl yet: pass its IP address instead"
        )

    def set_active(self, target: str | Scope, active: bool) -> Change:
        """SetActive: pause or resume the whole crawl (ALL) or one host's IP (every host
        on that IP with it). Pausing keeps queues and leases; in-flight fetches finish."""
        if target is ALL:
            # Every shard's lease script reads its own kill switch.
            switches = [shard.key("paused") for shard in self.keys.all()]
            if active:
                return Change(None, sum(int(self.client.delete(key)) for key in switches))
            return Change(None, sum(bool(self.client.set(key, 1, nx=True)) for key in switches))
        assert isinstance(target, str)
        ip = self.ip_of(target)
        shard = self.keys.for_ip(ip)
        paused_ips = shard.key("paused_ips")
        if active:
            # Resuming also takes back an IP given up as down (outcome.lua gone_down).
            down = self.client.hdel(shard.ip_state(ip), "down", "failing_since")
            return Change(ip, int(self.client.hdel(paused_ips, ip)) + int(down > 0))
        return Change(ip, int(self.client.hset(paused_ips, ip, target)))

    def set_delay(self, target: str, seconds: float | None) -> Change:
        """SetDelay: an operator override of the IP's delay, or None to clear it. delay(IP)
        = max(configured, Crawl-delay, override, backoff): it can slow a server, never
        speed it past the others. In effect from the IP's next scheduling."""
        if seconds is not None and not seconds > 0:
            raise ValueError(f"a delay must be > 0 seconds, not {seconds}")
        ip = self.ip_of(target)
        state = self.keys.for_ip(ip).ip_state(ip)
        if seconds is None:
            return Change(ip, int(self.client.hdel(state, "override")))
        before = self.client.hget(state, "override")
        self.client.hset(state, "override", seconds)
        return Change(ip, int(before is None or float(before) != seconds))

    def block_until(self, target: str, epoch: float) -> Change:
        """BlockQueueUntil: the IP starts nothing before `epoch`; never shortens a block."""
        ip = self.ip_of(target)
        shard = self.keys.for_ip(ip)
        grew = 0  # an IP's per-host keys already on the ready heap move too
        for key in [ip, *self._host_keys(ip)]:
            grew += self._block_until(
                keys=[shard.ip_state(key), shard.key("ready")], args=[key, epoch]
            )
        return Change(ip, int(grew))

    # ---- the blocklist (URL patterns, crawl-wide) ------------------------------------

    def block(self, rules: Sequence[str]) -> Change:
        """Add block rules (host:H, re:REGEX, glob); ValueError names a bad one."""
        compile_block_rules(rules)
        return Change(None, int(self.client.sadd(self.keys.crawl_keys.blocklist, *rules)))

    def unblock(self, rules: Sequence[str]) -> Change:
        """Remove block rules, exactly as they were added."""
        return Change(None, int(self.client.srem(self.keys.crawl_keys.blocklist, *rules)))

    def block_rules(self) -> list[str]:
        return sorted(as_str(r) for r in self.client.smembers(self.keys.crawl_keys.blocklist))

    def block_rule_count(self) -> int:
        return int(self.client.scard(self.keys.crawl_keys.blocklist))

    # ---- seeds and re-crawls ---------------------------------------------------------

    def admit(self, items: Sequence[AdmitItem], config: FrontierConfig) -> Admitted:
        """Queue admission items through the frontier's own admit script(s)."""
        if not items:
            return Admitted(0, 0, 0)
        return asyncio.run(self._admit(items, config))

    async def _admit(self, items: Sequence[AdmitItem], config: FrontierConfig) -> Admitted:
        async_client = await map_slots(async_twin(self.client))
        try:
            # A cluster client speaks the frontier's commands too (open_frontier's
            # annotation names the single-server class only).
            frontier = open_frontier(cast("AsyncRedis", async_client), self.keys, config)
            admitted = duplicate = 0
            # One admit call per chunk: a seeds file of 100,000 URLs in one script would hold
            # Redis (every worker's lease and report) for seconds, past its busy-script limit.
            for start in range(0, len(items), ADMIT_CHUNK):
                reply = await frontier.admit(items[start : start + ADMIT_CHUNK])
                admitted += reply.extra.get("admitted", 0)
                duplicate += reply.extra.get("duplicate", 0)
        finally:
            await async_client.aclose()
        # Not reply.queued: a sharded reply sums only the shards this admission touched.
        queued = self.counters().get("queued", 0)
        return Admitted(admitted, duplicate, queued)

    # ---- reading -------------------------------------------------------------------

    def counters(self) -> dict[str, int]:
        """The crawl's counters: each shard's, summed."""
        return self._sum_hashes(self.keys.stats_keys())

    def stats(self, config: FrontierConfig, now: float) -> FrontierStats:
        priorities = config.priorities
        counters = self.counters()
        shards = self.keys.all()  # one read per shard: on a cluster, different slots
        paused_ips: dict[str, str] = {}
        for shard in shards:
            paused_ips.update(_decoded(self.client.hgetall(shard.key("paused_ips"))))

        def total(read: Callable[[FrontierKeys], int]) -> int:
            return sum(int(read(shard)) for shard in shards)

        def front(priority: int) -> int:
            return total(lambda s: self.client.llen(s.front_queue(priority)))

        ready = [s.key("ready") for s in shards]
        return FrontierStats(
            size=counters.get("queued", 0),
            in_process=total(lambda s: self.client.zcard(s.key("leases"))),
            completed=counters.get("acked", 0),
            front_queues=tuple(front(p) for p in range(priorities)),
            ips_with_back_queue=total(lambda s: self.client.scard(s.key("active"))),
            ips_ready=sum(int(self.client.zcount(r, "-inf", now)) for r in ready),
            ips_waiting=sum(int(self.client.zcount(r, f"({now}", "+inf")) for r in ready),
            hosts_waiting_for_dns=total(lambda s: self.client.zcard(s.key("pending_hosts"))),
            oldest_queued_at=self._oldest_entry(priorities, config.lanes),
            paused=any(self.client.exists(shard.key("paused")) for shard in shards),
            paused_ips=paused_ips,
            blocklist_rules=self.block_rule_count(),
            counters=counters,
        )

    def _oldest_entry(self, priorities: int, lanes: int) -> float | None:
        heads: list[str] = []  # queued records: "t" is the entry time
        sampled = max(1, SAMPLED_BACK_QUEUES // self.keys.count)
        for shard in self.keys.all():
            fronts = [self.client.lindex(shard.front_queue(p), 0) for p in range(priorities)]
            heads += [front_entry_record(as_str(h)) for h in fronts if h]
            # With a count, SRANDMEMBER replies a list of members (never an int).
            ips = cast("list[bytes]", self.client.srandmember(shard.key("active"), sampled))
            for ip in ips or []:
                for lane in range(lanes):
                    head = self.client.lindex(shard.back_queue(as_str(ip), lane), 0)
                    if head:
                        heads.append(without_marks(record_text(head)))
        times = [t for t in (parse_record(h).get("t") for h in heads) if t]
        return min(times) if times else None

    def ip_state(self, ip: str, lanes: int) -> IpState:
        """`lanes`: PRIORITY_LANES, the lanes of an IP's back queue."""
        shard = self.keys.for_ip(ip)
        state = _decoded(self.client.hgetall(shard.ip_state(ip)))
        queued = [int(self.client.llen(shard.back_queue(ip, lane))) for lane in range(lanes)]
        return IpState(
            ip=ip,
            queued=sum(queued),
            recrawl_queued=int(self.client.llen(shard.recrawl_queue(ip))),
            has_back_queue=bool(self.client.sismember(shard.key("active"), ip)),
            next_fetch_at=self.client.zscore(shard.key("ready"), ip),
            in_flight=int(state.get("inflight", 0)),
            delays={k: float(state[k]) for k in DELAY_FIELDS if k in state},
            last_end=float(state["last_end"]) if "last_end" in state else None,
            blocked_until=float(state["blocked_until"]) if "blocked_until" in state else None,
            paused=bool(self.client.hexists(shard.key("paused_ips"), ip)),
            down_since=float(state["down"]) if "down" in state else None,
            host_keys={k: self._key_summary(k, lanes) for k in self._host_keys(ip)},
        )

    def _host_keys(self, ip: str, limit: int = 50) -> list[str]:
        """The per-host keys "<ip>@<host>" of an IP inside FRONTIER_HOST_IP_NETWORKS that
        hold a back queue or sit on the ready heap (its shard's, at most `limit`)."""
        if not self.politeness.covers(ip):
            return []
        shard, match = self.keys.for_ip(ip), f"{ip}@*"
        found = {as_str(k) for k in self.client.sscan_iter(shard.key("active"), match=match)}
        for key, _ in self.client.zscan_iter(shard.key("ready"), match=match):
            found.add(as_str(key))
        return sorted(found)[:limit]

    def _key_summary(self, key: str, lanes: int) -> dict[str, Any]:
        state = self.ip_state(key, lanes)
        return {
            "queued": state.queued,
            "next_fetch_at": state.next_fetch_at,
            "in_flight": state.in_flight,
            "paused": state.paused,
        }

    def host_counts(self, host: str) -> dict[str, float]:
        """The host's fetch counters by outcome, and its last fetch time."""
        # Written in the shard of the host's IP; summed over all in case the IP changed.
        counts: dict[str, float] = {}
        for shard in self.keys.all():
            pairs = self.client.hscan_iter(shard.key("host_stats"), match=f"{host}|*")
            for field, value in pairs:
                name = field.decode().split("|", 1)[1]
                if name == "last_fetch":
                    counts[name] = max(counts.get(name, 0.0), float(value))
                else:
                    counts[name] = counts.get(name, 0) + int(value)
        return counts

    def host_patterns(self, host: str, limit: int = 20) -> dict[str, dict[str, Any]]:
        """The host's URL patterns (trap feedback): closed and demoted ones, then the
        most admitted, at most `limit`."""
        found: dict[str, dict[str, Any]] = {}
        for shard in self.keys.all():
            # Patterns, paths' query variants, and families of sibling patterns.
            for match in (f"{host}/*", f"p|{host}/*", f"f|{host}/*"):
                for field, value in self.client.hscan_iter(shard.key("patterns"), match=match):
                    found[as_str(field)] = pattern_state(as_str(value))
        order = sorted(found, key=lambda p: (found[p]["state"] == "open", -found[p]["admitted"]))
        return {p: found[p] for p in order[:limit]}

    def robots(self, host: str) -> dict[str, RobotsVerdict]:
        """The cached robots.txt verdict of each origin of `host`."""
        verdicts = {}
        # On a cluster, scan_iter visits every master.
        pattern = self.keys.crawl_keys.robots(f"*://{host}*")
        for key in self.client.scan_iter(match=pattern, count=1000):
            raw = self.client.get(key)
            if raw:
                verdicts[key.decode().split(":robots:", 1)[1]] = RobotsVerdict.from_json(raw)
        return verdicts

    def _sum_hashes(self, keys: list[str]) -> dict[str, int]:
        totals: dict[str, int] = {}
        for key in keys:
            for name, value in _decoded(self.client.hgetall(key)).items():
                totals[name] = totals.get(name, 0) + int(value)
        return totals


def _decoded(raw: Mapping[bytes | str, bytes | str]) -> dict[str, str]:
    return {as_str(k): as_str(v) for k, v in raw.items()}
