"""ShardedFrontier on real Redis: one redis-server with 4 shards, and a three-master
Redis Cluster with the automatic 4 x masters shards. Time is a virtual clock."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import pytest
import redis
import redis.asyncio as aioredis
from redis.asyncio.cluster import RedisCluster as AsyncRedisCluster

from extensions.admission.records import AdmitItem
from extensions.frontier.core import DownloadEvent
from extensions.frontier.sharded import ShardedFrontier, combine_extras, crawl_keys, digest
from extensions.state.connection import connect_url, map_slots
from tests.integration.redis_cluster import LocalCluster
from tests.project_settings import project_frontier_config
from tests.unit.frontier.test_frontier_sim import VirtualClock, simulate

DELAY_S = 1.0
DONE = ("done", "ack")
IPS = [f"10.0.{i // 250}.{i % 250 + 1}" for i in range(60)]


def item(ip: str, n: int, host: str = "") -> AdmitItem:
    host = host or f"h{ip}"
    return AdmitItem(f"{host}-{n}", ip, host, 2, f'{{"u":"http://{host}/{n}"}}')


@pytest.fixture(params=["one-redis", "cluster"])
def backend(request: pytest.FixtureRequest) -> tuple[str, list[redis.Redis]]:
    """(URL, a plain client per master), flushed."""
    if request.param == "cluster":
        cluster: LocalCluster = request.getfixturevalue("cluster")
        return cluster.url, cluster.nodes()
    client: redis.Redis = request.getfixturevalue("redis_client")
    url = request.getfixturevalue("redis_url")
    return url, [client]


@asynccontextmanager
async def frontiers(
    url: str, workers: int = 1
) -> AsyncIterator[tuple[list[ShardedFrontier], VirtualClock]]:
    """Workers' frontiers on one crawl: 4 shards on one Redis, auto on a cluster."""
    sync = connect_url(url)
    keys = crawl_keys(sync, "sharded", 0 if isinstance(sync, redis.cluster.RedisCluster) else 4)
    sync.close()
    clock = VirtualClock()
    config = project_frontier_config(delay=DELAY_S, lease_ttl=60)
    clients = [
        AsyncRedisCluster.from_url(url) if keys.count > 4 else aioredis.Redis.from_url(url)
        for _ in range(workers)
    ]
    for client in clients:
        await map_slots(client)
    try:
        yield [ShardedFrontier(c, keys, config, clock=clock) for c in clients], clock
    finally:
        for client in clients:
            await client.aclose()


def run(test: Callable[[], object]) -> None:
    asyncio.run(test())  # type: ignore[arg-type]


def test_keys_of_every_shard_spread_over_every_master(backend) -> None:
    url, nodes = backend

    async def go() -> None:
        async with frontiers(url) as ([frontier], _):
            reply = await frontier.admit([item(ip, n) for ip in IPS for n in range(2)])
            assert reply.extra["admitted"] == 120 and reply.queued == 120
            used = {frontier.keys.index_of(ip) for ip in IPS}
            assert used == set(range(frontier.keys.count))

    run(go)
    assert all(node.dbsize() > 0 for node in nodes)
    if len(nodes) == 3:  # every key of a master is in that master's slots
        assert sum(node.dbsize() for node in nodes) >= 3 * 12


def test_at_most_one_lease_per_ip_and_counters_sum(backend) -> None:
    url, _ = backend

    async def go() -> None:
        async with frontiers(url, workers=2) as ([a, b], clock):
            await a.admit([item(ip, n) for ip in IPS[:30] for n in range(3)])
            first, second = await asyncio.gather(a.lease(40), b.lease(40))
            leases = first.leases + second.leases
            ips = [lease_id.rsplit("#", 1)[0] for lease_id, _ in leases]
            assert sorted(ips) == sorted(IPS[:30])  # one each, across both workers
            assert (await a.lease(40)).leases == []  # every IP has its one request out
            done = [
                DownloadEvent(kind, i, clock.now, 200)
                for i, _ in leases
                for kind in ("done", "ack")
            ]
            reply = await a.report(done)
            assert (reply.queued, reply.leased) == (60, 0)
            clock.now += DELAY_S
            again = await b.lease(100)
            assert len(again.leases) == 30
            stats = await b.stats()
            assert (stats["admitted"], stats["leased"], stats["acked"]) == (90, 60, 30)
            assert stats["queued"] == 30

    run(go)


def test_duplicates_are_dropped_in_the_ips_shard(backend) -> None:
    url, _ = backend

    async def go() -> None:
        async with frontiers(url, workers=2) as ([a, b], _):
            batch = [item(ip, 0) for ip in IPS]
            await a.admit(batch)
            reply = await b.admit(batch)
            assert (reply.extra.get("admitted", 0), reply.extra["duplicate"]) == (0, len(IPS))
            assert (await a.stats())["duplicate"] == len(IPS)

    run(go)


def test_parked_host_is_routed_into_the_shard_of_its_ip(backend) -> None:
    url, _ = backend

    async def go() -> None:
        async with frontiers(url, workers=2) as ([a, b], clock):
            keys = a.keys
            ip = IPS[0]
            host = next(
                f"p{n}.test" for n in range(100) if keys.index_of(f"p{n}.test") != keys.index_of(ip)
            )
            await a.admit([item(ip, 0, host)])  # already seen through the IP's shard
            parked = [
                AdmitItem(f"{host}-{n}", "", host, 2, f'{{"u":"http://{host}/{n}"}}')
                for n in range(3)
            ]
            reply = await a.admit(parked)
            assert reply.extra["parked"] == [host]
            assert (reply.queued, reply.pending_hosts) == (4, 1)  # parked count as queued
            routed = await b.route_pending(host, ip=ip)  # another worker resolved it
            assert routed.pending_hosts == 0
            assert routed.queued == 3  # the copy of the seen URL was dropped there
            assert not await a.redis.exists(keys.for_host(host).pending(host))
            leased = await a.lease(10)
            assert len(leased.leases) == 1 and leased.leases[0][0].startswith(ip + "#")
            clock.now += 10
            events = [
                DownloadEvent(k, leased.leases[0][0], clock.now, 200) for k in ("done", "ack")
            ]
            await a.report(events)
            for _ in range(10):  # worker b drains the rest, one per IP per delay
                clock.now += 10
                reply = await b.lease(10)
                acks = [DownloadEvent(k, i, clock.now, 200) for i, _ in reply.leases for k in DONE]
                if acks:
                    reply = await b.report(acks)
                if reply.remaining == 0:
                    break
            assert reply.remaining == 0
            stats = await a.stats()
            assert (stats["admitted"], stats["duplicate"], stats["acked"]) == (3, 1, 3)

    run(go)


def test_unpark_leaves_entries_another_worker_already_moved(backend) -> None:
    url, _ = backend

    async def go() -> None:
        async with frontiers(url) as ([frontier], _):
            host = "moved.test"
            parked = [
                AdmitItem(f"k{n}", "", host, 2, f'{{"u":"http://{host}/{n}"}}') for n in range(2)
            ]
            await frontier.admit(parked)
            home = frontier.shards[frontier.keys.index_of(host)]
            entries = await frontier.redis.lrange(home.keys.pending(host), 0, -1)
            stale = await home.unpark(host, 1, digest(entries[1:]))
            assert stale.extra["moved"] == 0 and stale.queued == 2
            moved = await home.unpark(host, 1, digest(entries[:1]))
            assert moved.extra["moved"] == 1 and moved.queued == 1 and moved.pending_hosts == 1

    run(go)


def test_zero_work_left_is_confirmed_by_every_shard(backend) -> None:
    url, _ = backend

    async def go() -> None:
        async with frontiers(url, workers=2) as ([a, b], _):
            assert (await a.lease(0)).remaining == 0
            await b.admit([item(IPS[5], 0)])  # a's counters of that shard are now stale
            assert (await a.report([])).remaining == 1

    run(go)


def test_sharded_throughput_matches_the_politeness_ceiling(backend) -> None:
    url, _ = backend

    async def go() -> float:
        async with frontiers(url) as ([frontier], clock):
            await frontier.admit([item(ip, n) for ip in IPS[:20] for n in range(100)])
            fetches = await simulate(frontier, clock, 30.0)  # type: ignore[arg-type]
            return len(fetches) / 30.0

    pages_per_s = asyncio.run(go())
    assert pages_per_s == pytest.approx(20 / (0.2 + DELAY_S), rel=0.05)


def test_extras_combine_although_cjson_encodes_empty_lists_as_objects() -> None:
    extras = [{"parked": {}, "refused": {}}, {"parked": ["a.test"], "refused": {"x": 1}, "n": 2}]
    assert combine_extras(extras) == {"parked": ["a.test"], "refused": {"x": 1}, "n": 2}
