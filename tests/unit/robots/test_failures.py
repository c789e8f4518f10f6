"""RobotsFailures: consecutive robots.txt failures counted by all workers together."""

from __future__ import annotations

import asyncio

import redis.asyncio as aioredis

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
