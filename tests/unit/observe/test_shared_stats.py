"""Worker-side counts made crawl-wide (shared_stats.py) on a real Redis: two workers'
refusals and robots.txt failures add up in G:worker_stats, each push sends only what
grew, a failed push keeps its counts for the next, the admit script's own verdicts are
not counted twice; and robots.txt failures are classified by cause on the wire."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
import redis
import redis.asyncio as aioredis
from redis.exceptions import ConnectionError as RedisConnectionError
from scrapy import Request
from scrapy.http import Response
from scrapy.statscollectors import MemoryStatsCollector
from scrapy.utils.test import get_crawler
from twisted.internet.error import ConnectionRefusedError as TxConnectionRefused
from twisted.internet.error import DNSLookupError

from extensions.observe.robots_failures import RobotsFailuresMiddleware
from extensions.observe.shared_stats import Deltas, SharedStatsConfig, shared
from extensions.state.connection import as_str
from extensions.state.keys import FrontierKeys
from tests.project_settings import project_settings

KEY = FrontierKeys("shared").worker_stats


def stats() -> MemoryStatsCollector:
    return MemoryStatsCollector(get_crawler())


def push(url: str, deltas: Deltas) -> bool:
    async def go() -> bool:
        client = aioredis.Redis.from_url(url)
        try:
            return await deltas.push(client, KEY)
        finally:
            await client.aclose()

    return asyncio.run(go())


def test_two_workers_counts_add_up_and_each_push_sends_only_the_growth(
    redis_url: str, redis_client: redis.Redis
) -> None:
    one, two = stats(), stats()
    one.inc_value("frontier/rejected/blocked", 3)
    one.inc_value("frontier/rejected/pattern_cap", 9)  # the admit script counted it
    one.inc_value("frontier/admitted", 40)  # not a shared stat
    two.inc_value("frontier/rejected/blocked", 2)
    two.inc_value("robots/failed/timeout")
    first, second = Deltas(one), Deltas(two)
    assert push(redis_url, first) and push(redis_url, second)
    assert not push(redis_url, first)  # nothing grew
    one.inc_value("frontier/rejected/blocked")
    assert push(redis_url, first)
    found = {as_str(k): int(v) for k, v in redis_client.hgetall(KEY).items()}
    assert found == {"frontier/rejected/blocked": 6, "robots/failed/timeout": 1}


def test_a_failed_push_keeps_its_counts_for_the_next(
    redis_url: str, redis_client: redis.Redis
) -> None:
    worker = stats()
    worker.inc_value("frontier/rejected/filter/length", 4)
    deltas = Deltas(worker)

    async def refused() -> None:
        client = aioredis.Redis(host="127.0.0.1", port=1)  # nothing listens there
        try:
            await deltas.push(client, KEY)
        finally:
            await client.aclose()

    with pytest.raises(RedisConnectionError):
        asyncio.run(refused())
    worker.inc_value("frontier/rejected/filter/length")
    assert push(redis_url, deltas)
    assert int(redis_client.hget(KEY, "frontier/rejected/filter/length") or 0) == 5


def test_which_stats_are_shared() -> None:
    assert shared("frontier/rejected/robots_forbidden")
    assert shared("robots/failed/http_5xx")
    assert not shared("frontier/rejected/host_budget")  # the admit script's own
    assert not shared("robots/verdict/allow_all")


def test_the_interval_setting_turns_it_off_at_zero() -> None:
    from scrapy.exceptions import NotConfigured

    assert SharedStatsConfig.from_settings(project_settings()).shared_interval == 5.0
    with pytest.raises(NotConfigured):
        SharedStatsConfig.from_settings(project_settings({"SHARED_STATS_INTERVAL": 0}))


@pytest.mark.parametrize(
    ("outcome", "cause"),
    [
        (503, "http_5xx"),
        (429, "http_429"),
        (DNSLookupError("nx.test"), "dns"),
        (TxConnectionRefused(), "connect"),
    ],
)
def test_robots_failures_are_counted_by_cause(outcome: Any, cause: str) -> None:
    collected = stats()
    middleware = RobotsFailuresMiddleware(collected)
    robots, page = Request("http://a.test/robots.txt"), Request("http://a.test/page")
    for request in (robots, page):
        if isinstance(outcome, int):
            middleware.process_response(request, Response(request.url, status=outcome))
        else:
            middleware.process_exception(request, outcome)
    assert collected.get_stats() == {f"robots/failed/{cause}": 1}


def test_a_missing_robots_txt_is_no_failure() -> None:
    collected = stats()
    request = Request("http://a.test/robots.txt")
    RobotsFailuresMiddleware(collected).process_response(request, Response(request.url, status=404))
    assert collected.get_stats() == {}
