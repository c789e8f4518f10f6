"""A lease call whose reply is lost: the client times out while Redis stalls (SIGSTOP, by
PID), and Redis runs the script when it resumes. Its leases go back at the worker's next
lease call (frontier/lua/cancel_lease.lua), uncharged, instead of waiting out their TTL
with their IPs (60 s here)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
import redis.asyncio as aioredis
from redis.exceptions import TimeoutError as RedisTimeoutError

from extensions.frontier.core import Frontier
from extensions.state.keys import FrontierKeys
from tests.integration.redis_cluster import LocalRedis
from tests.project_settings import project_frontier_config
from tests.unit.frontier.test_frontier_sim import VirtualClock
from tests.unit.frontier.test_traps import item

URL = "http://shop.test/page/1"


async def lose_a_lease_reply(server: LocalRedis) -> tuple[list[str], int, float]:
    """Admit one URL, lose the reply of the call that leases it, then lease again: the
    URLs leased, the leases given back, and when the IP is due after the first lease."""
    client = aioredis.Redis.from_url(server.url, socket_timeout=0.5)
    clock = VirtualClock()
    config = project_frontier_config(delay=1.0, lease_ttl=60)
    frontier = Frontier(client, FrontierKeys("lost"), config, clock=clock)
    try:
        await frontier.admit([item(URL)])
        await frontier.lease(0)  # the script loaded, as in a crawl: EVALSHA alone
        server.pause()
        try:
            with pytest.raises(RedisTimeoutError):
                await frontier.lease(1)
        finally:
            server.resume()
        await asyncio.sleep(0.2)  # the buffered script runs: the lease nobody holds
        await frontier.lease(0)  # gives it back (or, on a slow machine, the next call does)
        reply = await frontier.lease(1)  # the IP was not charged: due at once
        stats = await frontier.stats()
        return (
            [url_of(record) for _, record in reply.leases],
            stats.get("lost_leases_given_back", 0),
            clock.now,
        )
    finally:
        await client.aclose()


def url_of(record: str) -> str:
    return record.rpartition('"u":"')[2].partition('"')[0]


def test_a_lost_lease_reply_gives_its_leases_back(tmp_path: Path) -> None:
    server = LocalRedis(tmp_path / "redis").start()
    try:
        leased, given, _ = asyncio.run(lose_a_lease_reply(server))
    finally:
        server.stop()
    assert leased == [URL]
    assert given == 1
