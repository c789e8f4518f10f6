"""Redis errors inside the scheduler's background tasks and at close, on a real Redis
and a virtual clock: the failing step is counted, the page it held goes back to its
queue at once (not after its lease TTL), and nothing prints a traceback."""

from __future__ import annotations

import asyncio
import gc
import logging
import time
from typing import Any

import pytest
from redis.exceptions import ClusterDownError, RedisClusterException
from redis.exceptions import ConnectionError as RedisConnectionError
from scrapy import Request

from extensions.frontier.background import Background
from tests.unit.frontier.scheduler_harness import (
    Engine,
    VirtualClock,
    close,
    lease_now,
    open_scheduler,
    settle,
    until,
)

DOWN = "Error 111 connecting to 127.0.0.1:7001. Connection refused."


class RefusingWrites:
    """The robots cache's client, whose writes fail as if Redis had just gone away."""

    def __init__(self, redis: Any) -> None:
        self._redis = redis

    async def set(self, *args: Any, **kwargs: Any) -> None:
        raise RedisConnectionError(DOWN)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._redis, name)


def tracebacks(records: list[logging.LogRecord]) -> list[str]:
    return [r.getMessage() for r in records if r.exc_info or "Traceback" in r.getMessage()]


def test_a_failed_robots_cache_write_releases_the_page_at_once(settings, caplog) -> None:
    async def go():
        unretrieved: list[dict[str, Any]] = []
        asyncio.get_running_loop().set_exception_handler(lambda _, ctx: unretrieved.append(ctx))
        clock = VirtualClock(start=time.time())
        scheduler, engine, _ = await open_scheduler(settings(ROBOTS_ENABLED=True), clock)
        engine.pages["http://127.0.0.1/robots.txt"] = (200, "User-agent: *\nDisallow:\n")
        cache = scheduler.session.dispatch.robots.cache
        cache._redis = RefusingWrites(cache._redis)
        scheduler.enqueue_request(Request("http://127.0.0.1/page"))
        handed = await lease_now(scheduler)
        frontier = scheduler.session.frontier
        await until(lambda: not scheduler.session.dispatch.robots_fetches)
        await settle(scheduler.session)
        leases = await frontier.redis.zcard(frontier.keys.key("leases"))
        held = dict(scheduler.session.book.leases)
        # The verdict is still used here: the page goes out on the next lease.
        clock.now = time.time() + 5.0  # the robots.txt fetch ended at the real time
        again = await lease_now(scheduler)
        stats = scheduler.stats.get_stats()
        await close(scheduler)
        gc.collect()
        await asyncio.sleep(0)
        return handed, [r.url for r in engine.downloads], leases, held, again, stats, unretrieved

    with caplog.at_level(logging.INFO):
        handed, downloads, leases, held, again, stats, unretrieved = asyncio.run(go())
    assert handed == [] and downloads == ["http://127.0.0.1/robots.txt"]
    assert (leases, held) == (0, {})  # released, not left to FRONTIER_LEASE_TTL
    assert [r.url for r in again] == ["http://127.0.0.1/page"]
    assert stats["frontier/redis_errors"] == 1
    assert unretrieved == []  # no "Task exception was never retrieved"
    assert tracebacks(caplog.records) == []
    assert f"Redis error ({DOWN}); retrying" in caplog.text


def test_close_without_redis_writes_the_stats_and_says_what_it_could_not(
    settings, caplog, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def refused() -> None:
        raise RedisConnectionError(DOWN)

    async def go():
        scheduler, _, _ = await open_scheduler(settings(), VirtualClock())
        session = scheduler.session
        monkeypatch.setattr(session.frontier, "stats", refused)
        monkeypatch.setattr(session.blocklist, "refresh", refused)
        await close(scheduler)
        return scheduler.stats.get_stats()

    with caplog.at_level(logging.INFO):
        stats = asyncio.run(go())
    assert stats["frontier/closed_patterns"] == []  # the report's stats are still written
    [line] = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert line == (
        "Frontier closed but could not read the frontier's counters, "
        f"read the closed patterns ({DOWN})"
    )
    assert "Frontier closed (finished): 0 leases unacked" in caplog.text
    assert tracebacks(caplog.records) == []


class Stats:
    def __init__(self) -> None:
        self.values: dict[str, int] = {}

    def inc_value(self, key: str, count: int = 1) -> None:
        self.values[key] = self.values.get(key, 0) + count


async def raising(exc: Exception) -> None:
    raise exc


@pytest.mark.parametrize(
    "exc",
    [RedisConnectionError(DOWN), RedisClusterException("Slot 12 not covered by the cluster")],
)
def test_a_redis_error_escaping_a_task_is_counted_and_closes_the_crawl(exc, caplog) -> None:
    async def go():
        unretrieved: list[dict[str, Any]] = []
        asyncio.get_running_loop().set_exception_handler(lambda _, ctx: unretrieved.append(ctx))
        engine, stats = Engine(None), Stats()
        background = Background(engine, stats, max_redis_failures=1)
        await background.spawn(raising(exc))
        await background.spawn(raising(exc))  # closing: counted, no second line
        await asyncio.sleep(0)
        gc.collect()
        return engine.closed, stats.values, unretrieved

    closed, values, unretrieved = asyncio.run(go())
    assert closed == ["redis_unavailable"]
    assert values == {"frontier/redis_errors": 2}
    assert unretrieved == []
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert errors == [f"Redis unavailable ({exc}); closing the crawl"]


def test_a_cluster_down_after_a_lost_node_names_the_node(caplog) -> None:
    async def go():
        engine = Engine(None)
        background = Background(engine, Stats(), max_redis_failures=2)
        await background.guarded(raising(RedisConnectionError(DOWN)))
        await background.guarded(raising(ClusterDownError("CLUSTERDOWN The cluster is down")))
        await asyncio.sleep(0)
        return engine.closed

    assert asyncio.run(go()) == ["redis_unavailable"]  # an outage, not a script error
    [line] = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert line == (
        f"Redis unavailable (CLUSTERDOWN The cluster is down; after: {DOWN}); closing the crawl"
    )


def test_a_connection_the_server_dropped_is_named_by_the_servers_address(caplog) -> None:
    """redis-py's "Connection closed by server." names no node (a killed Redis mid-call)."""

    async def go():
        engine = Engine(None)
        background = Background(engine, Stats(), max_redis_failures=2, address="127.0.0.1:6390")
        await background.guarded(raising(RedisConnectionError("Connection closed by server.")))
        await background.guarded(raising(RedisConnectionError(DOWN)))  # names its node
        await asyncio.sleep(0)
        return engine.closed

    assert asyncio.run(go()) == ["redis_unavailable"]
    lines = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert lines == [
        "Redis error (Connection closed by server. (127.0.0.1:6390)); retrying",
        f"Redis unavailable ({DOWN}); closing the crawl",
    ]
