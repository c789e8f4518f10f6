"""RECRAWL_SHARE: how an IP's fetches split between re-crawls and new URLs, enforced
by the frontier's lease script (real Redis, virtual clock)."""

from __future__ import annotations

import asyncio
import json

import pytest
import redis.asyncio as aioredis

from extensions.admission.records import AdmitItem, mark_recrawl
from extensions.frontier.core import Frontier
from extensions.state.keys import FrontierKeys
from tests.project_settings import project_frontier_config
from tests.unit.frontier.test_frontier_sim import VirtualClock, simulate

IP = "10.0.0.7"


def admit_items(kind: str, n: int, recrawl: bool) -> list[AdmitItem]:
    out = []
    for i in range(n):
        record = mark_recrawl(json.dumps({"u": f"http://h.test/{kind}/{i}"}), recrawl)
        seen = "" if recrawl else f"{kind}-{i}"
        out.append(AdmitItem(seen, IP, "h.test", 1 if recrawl else 2, record))
    return out


async def leased_kinds(redis_url: str, share: float, recrawls: int, fresh: int) -> list[str]:
    client = aioredis.Redis.from_url(redis_url)
    clock = VirtualClock()
    config = project_frontier_config(delay=1.0, lease_ttl=60, recrawl_share=share)
    frontier = Frontier(client, FrontierKeys(f"share-{share}"), config, clock=clock)
    # Both kinds wait before the first lease, as they would on a busy host.
    await frontier.admit(
        admit_items("new", fresh, recrawl=False) + admit_items("re", recrawls, True)
    )
    kinds = []
    original = frontier.lease

    async def lease(n: int):
        reply = await original(n)
        kinds.extend("re" if rec.startswith("R|") else "new" for _, rec in reply.leases)
        return reply

    frontier.lease = lease  # type: ignore[method-assign]
    await simulate(frontier, clock, 10_000.0)
    stats = await frontier.stats()
    await client.aclose()
    assert stats.get("recrawl_queued", 0) == 0 and stats["queued"] == 0
    return kinds


@pytest.mark.parametrize("share", [0.5, 0.25, 0.8])
def test_contested_fetches_follow_the_share(redis_url: str, redis_client, share: float) -> None:
    kinds = asyncio.run(leased_kinds(redis_url, share, recrawls=200, fresh=200))
    contested = kinds[:100]  # both queues still hold work during the first 100 fetches
    assert contested.count("re") / len(contested) == pytest.approx(share, abs=0.02)
    # Smooth, not bursty: any 20 consecutive contested fetches are within 1 of the share.
    for start in range(0, 80):
        window = contested[start : start + 20]
        assert abs(window.count("re") - 20 * share) <= 1.0 + 1e-9


def test_work_conserving_when_one_kind_is_empty(redis_url: str, redis_client) -> None:
    only_recrawls = asyncio.run(leased_kinds(redis_url, 0.1, recrawls=30, fresh=0))
    assert only_recrawls == ["re"] * 30
    only_new = asyncio.run(leased_kinds(redis_url, 0.9, recrawls=0, fresh=30))
    assert only_new == ["new"] * 30


def test_share_zero_and_one_give_strict_precedence(redis_url: str, redis_client) -> None:
    first_new = asyncio.run(leased_kinds(redis_url, 0.0, recrawls=10, fresh=10))
    assert first_new == ["new"] * 10 + ["re"] * 10
    first_re = asyncio.run(leased_kinds(redis_url, 1.0, recrawls=10, fresh=10))
    assert first_re == ["re"] * 10 + ["new"] * 10


def test_reclaimed_recrawl_lease_returns_to_the_recrawl_queue(redis_url: str, redis_client) -> None:
    async def go() -> tuple[int, int, str]:
        client = aioredis.Redis.from_url(redis_url)
        clock = VirtualClock()
        keys = FrontierKeys("reclaim")
        frontier = Frontier(client, keys, project_frontier_config(lease_ttl=60), clock=clock)
        await frontier.admit(admit_items("re", 1, recrawl=True))
        assert len((await frontier.lease(1)).leases) == 1
        assert (await frontier.stats())["recrawl_queued"] == 0
        clock.now += 61  # the worker died: its lease expires
        await frontier.lease(0)
        queued = (await frontier.stats())["recrawl_queued"]
        in_rq = await client.llen(keys.recrawl_queue(IP))
        head = (await client.lindex(keys.recrawl_queue(IP), 0)).decode()
        await client.aclose()
        return queued, in_rq, head

    queued, in_rq, head = asyncio.run(go())
    assert (queued, in_rq) == (1, 1) and head.startswith("R|")
