"""Lease renewal (leases.py): a lease its live worker still holds is never re-delivered;
one it gave up (acked, released) or one of a dead worker is not kept alive. Real Redis,
the frontier's own scripts, a virtual clock (TTL 60 s: ticks every 20 s)."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
import redis.asyncio as aioredis

from extensions.admission.records import AdmitItem
from extensions.frontier.core import DownloadEvent, Frontier
from extensions.frontier.leases import LeaseBook, LeaseRenewal
from extensions.frontier.sharded import ShardedFrontier, open_frontier
from extensions.state.keys import ShardedKeys
from tests.project_settings import project_frontier_config
from tests.unit.frontier.scheduler_harness import VirtualClock

TTL_S = 60.0


class Stats(Counter[str]):
    def inc_value(self, name: str, count: int = 1) -> None:
        self[name] += count


class QuietBackground:
    """What LeaseRenewal uses of Background: stats, and Redis steps run as they are."""

    def __init__(self) -> None:
        self.stats = Stats()
        self.closing = False

    async def guarded(self, coro: Any) -> None:
        await coro


@pytest.fixture
def make(redis_url: str, redis_client: Any) -> Iterator[Any]:
    clients: list[aioredis.Redis] = []

    def build(shards: int = 1) -> tuple[Frontier | ShardedFrontier, VirtualClock, LeaseRenewal]:
        clock = VirtualClock()
        client = aioredis.Redis.from_url(redis_url)
        clients.append(client)
        config = project_frontier_config(delay=1.0, lease_ttl=TTL_S)
        frontier = open_frontier(client, ShardedKeys("renew", shards), config, clock=clock)
        book = LeaseBook()
        background: Any = QuietBackground()
        return (
            frontier,
            clock,
            LeaseRenewal(frontier=frontier, book=book, background=background, clock=clock),
        )

    yield build


def items(ips: list[str]) -> list[AdmitItem]:
    return [AdmitItem(ip, ip, f"h{ip}", 2, f'{{"u":"http://{ip}/"}}') for ip in ips]


async def lease_all(frontier: Frontier | ShardedFrontier, renewal: LeaseRenewal) -> list[str]:
    reply = await frontier.lease(20)
    for lease_id, _ in reply.leases:
        renewal.book.take(lease_id, None)  # type: ignore[arg-type]  # the request is not read
    return [lease_id for lease_id, _ in reply.leases]


def test_a_held_lease_outlives_its_ttl_and_a_dropped_one_does_not(make) -> None:
    async def go() -> tuple[int, Stats, bool, dict[str, int]]:
        frontier, clock, renewal = make()
        await frontier.admit(items(["10.9.0.1", "10.9.0.2"]))
        held, dropped = sorted(await lease_all(frontier, renewal))
        # Both fetched; `held`'s body is still being stored, `dropped`'s worker is gone.
        await frontier.report([DownloadEvent("done", i, clock.now, 200) for i in (held, dropped)])
        renewal.book.finish(dropped)
        redelivered = 0
        for _ in range(int(4 * TTL_S / renewal.interval_s)):  # four TTLs of ticks
            clock.now += renewal.interval_s
            await renewal.tick()
            again = (await frontier.lease(10)).leases
            redelivered += len(again)
            await frontier.report([DownloadEvent("ack", i, clock.now) for i, _ in again])
        still = await frontier.redis.zscore(frontier.keys.key("leases"), held) is not None
        return redelivered, renewal.background.stats, still, await frontier.stats()

    redelivered, stats, still_held, counters = asyncio.run(go())
    assert redelivered == 1  # `dropped`, once its lease expired; `held` never
    assert counters["lease_expired"] == 1 and still_held
    assert stats["frontier/leases_renewed"] >= 10


def test_a_renewal_never_revives_an_acked_lease_nor_shortens_one(make, redis_client) -> None:
    async def go() -> tuple[int, int, float | None]:
        frontier, clock, renewal = make()
        await frontier.admit(items(["10.9.0.3", "10.9.0.4"]))
        acked, later = sorted(await lease_all(frontier, renewal))
        await frontier.report([DownloadEvent("ack", acked, clock.now)])
        # `later`'s fetch ended in the future of this clock: its expiry is past now + TTL.
        await frontier.report([DownloadEvent("done", later, clock.now + 30, 200)])
        renewed = await renewal.renew([acked, later])
        expiry = redis_client.zscore(frontier.keys.key("leases"), later)
        return renewed, redis_client.zcard(frontier.keys.key("leases")), expiry - clock.now

    renewed, leases, ahead = asyncio.run(go())
    assert (renewed, leases) == (0, 1)
    assert ahead == pytest.approx(30 + TTL_S)


def test_renewals_reach_each_leases_own_shard(make, redis_client) -> None:
    ips = [f"10.9.1.{n}" for n in range(12)]

    async def go() -> tuple[int, int, float]:
        frontier, clock, renewal = make(shards=3)
        await frontier.admit(items(ips))
        leased = await lease_all(frontier, renewal)
        clock.now += 50
        renewed = await renewal.renew(leased)
        clock.now += 20  # past the first expiry, inside the renewed one
        return len(leased), renewed, len((await frontier.lease(20)).leases)

    leased, renewed, again = asyncio.run(go())
    assert leased == renewed == len(ips)
    assert again == 0  # none expired: every shard's lease was renewed in its own zset
