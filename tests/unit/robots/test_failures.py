"""RobotsFailures: consecutive robots.txt failures counted by all workers together."""

from __future__ import annotations

import asyncio

import redis.asyncio as aioredis

from extensions.robots import failures as failures_module
from extensions.robots.failures import RobotsFailures
from extensions.state.keys import FrontierKeys

ORIGIN = "http://limited.test"


def test_two_workers_give_up_after_the_retries_of_both_together(redis_url, redis_client) -> None:
    async def go() -> list[tuple[bool, bool]]:
        client = aioredis.Redis.from_url(redis_url)
        key = FrontierKeys("unit").robots_errors
        one, two = RobotsFailures(client, key, 2), RobotsFailures(client, key, 2)
        seen = []
        for worker in (one, two, one):  # three unavailable answers, alternating workers
            await worker.failed(ORIGIN)
            await two.load([ORIGIN])
            await one.load([ORIGIN])
            seen.append((one.gave_up(ORIGIN), two.gave_up(ORIGIN)))
        await two.recovered(ORIGIN)  # a good verdict, fetched by the other worker
        await one.load([ORIGIN])
        seen.append((one.gave_up(ORIGIN), two.gave_up(ORIGIN)))
        await client.aclose()
        return seen

    assert asyncio.run(go()) == [(False, False), (False, False), (True, True), (False, False)]


def test_the_local_counts_are_bounded_and_an_evicted_origin_is_read_again(
    redis_url, redis_client, monkeypatch
) -> None:
    # An origin that never recovers must not stay here for the whole crawl; the gate
    # loads every origin without a usable verdict before it judges it.
    monkeypatch.setattr(failures_module, "LOCAL_ORIGINS", 10)

    async def go() -> tuple[int, bool, bool]:
        client = aioredis.Redis.from_url(redis_url)
        key = FrontierKeys("unit-bounded").robots_errors
        worker = RobotsFailures(client, key, 1)
        for _ in range(2):
            await worker.failed(ORIGIN)
        for i in range(30):
            await worker.failed(f"http://other{i}.test")
        kept, evicted = len(worker._counts), worker.gave_up(ORIGIN)
        await worker.load([ORIGIN])
        await client.delete(key)
        await client.aclose()
        return kept, evicted, worker.gave_up(ORIGIN)

    assert asyncio.run(go()) == (10, False, True)
