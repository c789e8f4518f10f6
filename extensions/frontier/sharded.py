"""A frontier split into shards (FRONTIER_SHARDS), so a Redis Cluster spreads it.

ShardedFrontier has Frontier's interface and runs one Frontier per shard, each on its
own hash tag (keys.py). An IP lives in one shard: admissions, leases and reports of
that IP are one atomic script there, as on a single Redis. Across shards:

- admit: items are grouped by the shard of their IP. An unresolved host parks its
  items in the shard of the host, unchecked (URL-seen and budgets live with the IP,
  which is not known yet); the item keeps its seen key and pattern.
- route_pending: once the host resolves, its parked items are admitted into the IP's
  shard (URL-seen checked there) and only then removed from the host's shard: two
  steps, at least once. A crash between them re-admits, and URL-seen drops the copy.
- lease: the shards with something due (their last known ready-heap top or lease
  expiry has come, or they were not asked for FRONTIER_POLL_INTERVAL) are asked
  concurrently, the request split between them.
- counters: the crawl's are the sum of each shard's latest. Zero work left ends the
  crawl, so a zero is only reported once every shard has just confirmed it.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import time
from collections import defaultdict
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, cast

from extensions.admission.records import NO_PATTERNS
from extensions.frontier.core import (
    AdmitItem,
    DownloadEvent,
    Frontier,
    FrontierConfig,
    FrontierReply,
    IpLease,
)
from extensions.state.connection import AnyAsyncRedis, cluster_primaries
from extensions.state.keys import SALTED_TAGS, FrontierKeys, ShardedKeys

if TYPE_CHECKING:
    from redis import Redis
    from redis.cluster import RedisCluster

# Shards per master when FRONTIER_SHARDS is 0 (auto) on a cluster: more shards than
# masters evens out their load, and leaves room to add masters without re-sharding.
SHARDS_PER_MASTER = 4


@dataclass
class ShardView:
    """What this worker last heard from one shard."""

    reply: FrontierReply
    next_expiry: float | None = None
    poll_at: float = 0.0  # ask it on the next lease from this time on


class ShardedFrontier:
    """Frontier's async interface over `keys.count` shards of one crawl."""

    def __init__(
        self,
        redis: AnyAsyncRedis,
        keys: ShardedKeys,
        config: FrontierConfig,
        clock: Callable[[], float] = time.time,
        poll_interval: float = 1.0,
    ) -> None:
        self.redis = redis
        self.keys = keys
        self.config = config
        self.clock = clock
        self.poll_interval = poll_interval
        # FRONTIER_BACK_QUEUES stays a crawl-wide number: each shard holds its share.
        per_shard = replace(config, back_queues=max(1, math.ceil(config.back_queues / keys.count)))
        self.shards = [Frontier(redis, keys.shard(i), per_shard, clock) for i in range(keys.count)]
        self._views = [ShardView(FrontierReply()) for _ in self.shards]

    # ---- the Frontier interface ----------------------------------------------------

    async def admit(self, items: Sequence[AdmitItem]) -> FrontierReply:
        groups: dict[int, list[AdmitItem]] = defaultdict(list)
        for item in items:
            if item.ip:
                groups[self.keys.index_of(item.ip)].append(item)
            else:
                groups[self.keys.index_of(item.host)].append(park(item))
        replies = await _gather({i: self.shards[i].admit(g) for i, g in groups.items()})
        return await self._merge(replies, due_now=True)

    async def lease(self, n: int) -> FrontierReply:
        """Lease up to n requests from the shards with something due; n = 0 asks every
        shard (reclaim and counters only)."""
        now = self.clock()
        asking = [i for i, view in enumerate(self._views) if n <= 0 or view.poll_at <= now]
        want, leases, hosts = max(0, n), [], []
        replies: dict[int, FrontierReply] = {}
        # Two rounds: the request split evenly, then the rest to the shards that
        # filled their share (they may have more).
        for _ in range(2):
            share = math.ceil(want / len(asking)) if asking and want else 0
            got = await self._lease_all({i: share for i in asking})
            self._heard_lease(got)
            replies.update(got)
            for reply in got.values():
                leases += reply.leases
                hosts += reply.hosts
            want -= sum(len(reply.leases) for reply in got.values())
            asking = [i for i, reply in got.items() if share and len(reply.leases) >= share]
            if want <= 0 or not asking:
                break
        merged = await self._merge(replies)
        merged.leases, merged.hosts = leases, hosts + merged.hosts
        return merged

    async def _lease_all(self, shares: dict[int, int]) -> dict[int, FrontierReply]:
        """Each shard's lease call; when one fails, the others' leases are handed back
        (Frontier.lost: no one dispatches them) and the error is raised."""
        calls = [self.shards[i].lease(share) for i, share in shares.items()]
        results = await asyncio.gather(*calls, return_exceptions=True)
        failed = next((r for r in results if isinstance(r, BaseException)), None)
        if failed is None:
            return dict(zip(shares, cast("list[FrontierReply]", results), strict=True))
        for i, result in zip(shares, results, strict=True):
            if isinstance(result, FrontierReply) and result.call:
                self.shards[i].lost(result.call)
        raise failed

    async def lease_ip(self, ip: str, latest: float) -> IpLease:
        """Lease `ip` in its own shard, where its politeness state lives; its 'done' and
        'ack' go there too (report groups events by the IP of the lease id)."""
        return await self.shards[self.keys.index_of(ip)].lease_ip(ip, latest)

    async def report(self, events: Sequence[DownloadEvent]) -> FrontierReply:
        groups: dict[int, list[DownloadEvent]] = defaultdict(list)
        for event in events:
            groups[self.keys.index_of(event.lease_id.rsplit("#", 1)[0])].append(event)
        replies = await _gather({i: self.shards[i].report(g) for i, g in groups.items()})
        for i, reply in replies.items():
            view = self._views[i]
            if reply.next_due is not None:
                view.poll_at = min(view.poll_at, reply.next_due)
        return await self._merge(replies)

    async def route_pending(
        self, host: str, ip: str = "", retry_at: float | None = None, drop: bool = False
    ) -> FrontierReply:
        home = self.keys.index_of(host)
        if not ip:
            reply = await self.shards[home].route_pending(host, retry_at=retry_at, drop=drop)
            return await self._merge({home: reply})
        key = self.keys.shard(home).pending(host)
        # The frontier's clients never decode replies (records are bytes end to end).
        entries = cast(list[bytes], await self.redis.lrange(key, 0, -1))
        replies: dict[int, FrontierReply] = {}
        if entries:
            target = self.keys.index_of(ip)
            items = [unpark(entry, host, ip) for entry in entries]
            replies[target] = await self.shards[target].admit(items)
        # Only once they are queued in the IP's shard: at least once, never lost.
        replies[home] = await self.shards[home].unpark(host, len(entries), digest(entries))
        return await self._merge(replies, due_now=True)

    async def set_crawl_delay(
        self, ip: str, host: str, seconds: float | None, expires_at: float
    ) -> None:
        shard = self.shards[self.keys.index_of(ip)]
        await shard.set_crawl_delay(ip, host, seconds, expires_at)

    async def stats(self) -> dict[str, int]:
        totals: dict[str, int] = defaultdict(int)
        for shard_stats in await asyncio.gather(*(shard.stats() for shard in self.shards)):
            for name, value in shard_stats.items():
                totals[name] += value
        return dict(totals)

    # ---- combining the shards' replies -------------------------------------------

    def _heard_lease(self, replies: dict[int, FrontierReply]) -> None:
        now = self.clock()
        for i, reply in replies.items():
            view = self._views[i]
            view.next_expiry = reply.next_expiry
            times = [t for t in (reply.next_due, reply.next_expiry) if t is not None]
            view.poll_at = min([*times, now + self.poll_interval])

    async def _merge(
        self, replies: dict[int, FrontierReply], due_now: bool = False
    ) -> FrontierReply:
        """The crawl's reply: each shard's latest counters summed, its extras combined."""
        for i, reply in replies.items():
            self._views[i].reply = reply
            if due_now:  # it was just given work that may be due at once
                self._views[i].poll_at = 0.0
        merged = self._summary()
        stale = [i for i in range(len(self.shards)) if i not in replies]
        if merged.remaining == 0 and stale:
            # Zero ends the crawl: never conclude it from counters heard earlier.
            fresh = await _gather({i: self.shards[i].lease(0) for i in stale})
            self._heard_lease(fresh)
            for i, reply in fresh.items():
                self._views[i].reply = reply
            merged = self._summary()
            merged.hosts = [host for reply in fresh.values() for host in reply.hosts]
        merged.extra = combine_extras([reply.extra for reply in replies.values()])
        return merged

    def _summary(self) -> FrontierReply:
        views = self._views
        dues = [v.reply.next_due for v in views if v.reply.next_due is not None]
        expiries = [v.next_expiry for v in views if v.next_expiry is not None]
        return FrontierReply(
            queued=sum(v.reply.queued for v in views),
            leased=sum(v.reply.leased for v in views),
            pending_hosts=sum(v.reply.pending_hosts for v in views),
            recrawl_queued=sum(v.reply.recrawl_queued for v in views),
            next_due=min(dues, default=None),
            next_expiry=min(expiries, default=None),
        )


async def _gather(calls: dict[int, Awaitable[FrontierReply]]) -> dict[int, FrontierReply]:
    results = await asyncio.gather(*calls.values())
    return dict(zip(calls, results, strict=True))


def combine_extras(extras: list[dict[str, Any]]) -> dict[str, Any]:
    """Numbers add up, lists (parked hosts) concatenate, dicts (refused) add per key."""
    out: dict[str, Any] = {}
    for extra in extras:
        for name, value in extra.items():
            if isinstance(value, dict | list) and not value:
                continue  # cjson encodes every empty table as {}, lists included
            if isinstance(value, dict):
                into = out.setdefault(name, {})
                for k, v in value.items():
                    into[k] = into.get(k, 0) + v
            elif isinstance(value, list):
                out[name] = out.get(name, []) + value
            elif isinstance(value, int | float):
                out[name] = out.get(name, 0) + value
    return out


# ---- parking unresolved hosts ----------------------------------------------------


def park(item: AdmitItem) -> AdmitItem:
    """The item parked in its host's shard: unchecked (seen key '' skips URL-seen and
    budgets there), everything the IP's shard needs to admit it kept in the record."""
    parked = {
        "k": item.seen_key,
        "pt": list(item.patterns),
        "s": item.score,
        "rf": item.referrer,
        "sm": int(item.sitemap),
        "f": item.family,
        "p": item.priority,  # -1 (the score's bucket) is decided in the IP's shard
        "r": item.record,
    }
    record = json.dumps(parked, separators=(",", ":"))
    return AdmitItem("", "", item.host, item.priority, record, score=item.score)


def unpark(entry: bytes, host: str, ip: str) -> AdmitItem:
    """A parked entry ("priority|parked JSON") as the item to admit into the IP's shard.
    Entries parked before trap feedback have a bare pattern string ("pt"): no patterns."""
    priority, raw = entry.decode().split("|", 1)
    if not raw.startswith("{"):
        raw = raw.split("|", 1)[1]  # "priority|lane|parked": the lane is the IP shard's
    parked = json.loads(raw)
    patterns = parked.get("pt")
    return AdmitItem(
        parked["k"],
        ip,
        host,
        int(parked.get("p", priority)),
        parked["r"],
        tuple(patterns) if isinstance(patterns, list) else NO_PATTERNS,
        score=float(parked.get("s", 0.0)),
        referrer=parked.get("rf", ""),
        sitemap=bool(parked.get("sm", 0)),
        family=parked.get("f", ""),
    )


def digest(entries: Sequence[bytes]) -> str:
    """sha1 of the entries, each length-prefixed: unpark.lua computes the same."""
    return hashlib.sha1(b"".join(b"%d:%s" % (len(e), e) for e in entries)).hexdigest()


# ---- opening a crawl's frontier ----------------------------------------------------


def crawl_keys(client: Redis | RedisCluster, crawl: str, configured: int) -> ShardedKeys:
    """The crawl's keys, its shard count fixed when its frontier is first used: changing
    it later would strand every queued URL in shards no worker reads. `configured` 0 =
    auto: 1 on a single Redis, SHARDS_PER_MASTER x masters on a cluster. A new crawl
    records salted shard tags beside the count (one MSETNX: no worker sees the count
    without the marker); a crawl created before keeps its unsalted tags."""
    if configured < 0:
        raise ValueError(f"FRONTIER_SHARDS must be >= 0 (0 = auto), not {configured}")
    keys = FrontierKeys(crawl)
    auto = SHARDS_PER_MASTER * cluster_primaries(client) or 1
    client.msetnx({keys.shards: configured or auto, keys.shard_tags: SALTED_TAGS})
    stored = ShardedKeys.stored(crawl, *client.mget(keys.shards, keys.shard_tags))
    if configured and stored.count != configured:
        raise ValueError(
            f"FRONTIER_SHARDS ({configured}) differs from the {stored.count} shard(s) crawl "
            f"{crawl!r} was created with: use {stored.count}, 0 (auto), or a new "
            "FRONTIER_CRAWL_NAME"
        )
    return stored


def open_frontier(
    client: AnyAsyncRedis,
    keys: ShardedKeys,
    config: FrontierConfig,
    poll_interval: float = 1.0,
    clock: Callable[[], float] = time.time,
) -> Frontier | ShardedFrontier:
    """One shard is the plain Frontier on the crawl's own keys (a single Redis)."""
    if keys.count == 1:
        return Frontier(client, keys.shard(0), config, clock)
    return ShardedFrontier(client, keys, config, clock, poll_interval=poll_interval)
