"""Crawl-wide gauges on a real Redis: back-queue lane counters kept by the scripts equal
the lists' lengths through admit, lease, reclaim and release (and say "unknown" for a
crawl queued before them until it drains), Bloom fill and estimated false-positive rate
per generation, refusals by reason from the script and the workers, the re-crawl
backlog, and a bounded number of Redis calls whatever the number of IPs."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import Callable, Coroutine
from functools import partial
from typing import Any

import pytest
import redis
import redis.asyncio as aioredis

from extensions.admission.bloom import fp_theory
from extensions.admission.records import AdmitItem
from extensions.frontier.core import DownloadEvent, Frontier, FrontierConfig
from extensions.frontier.sharded import ShardedFrontier
from extensions.observe import crawl_gauges
from extensions.observe.crawl_gauges import CrawlGauges, read_gauges, rejections
from extensions.state.connection import as_str
from extensions.state.keys import FrontierKeys, ShardedKeys
from tests.project_settings import project_frontier_config
from tests.unit.frontier.test_frontier_sim import VirtualClock

CRAWL = "gauges"
KEYS = FrontierKeys(CRAWL)


def config(**fields: Any) -> FrontierConfig:
    return project_frontier_config(delay=1.0, lease_ttl=60, **fields)


def admits(ips: list[str], per_ip: int, start: int = 0) -> list[AdmitItem]:
    """Priorities 0.. in turn, so records land in every lane."""
    cfg = config()
    return [
        AdmitItem(f"{ip}-{n}", ip, f"h{ip}", n % cfg.priorities, f'{{"u":"http://{ip}/{n}"}}')
        for n in range(start, start + per_ip)
        for ip in ips
    ]


def lane_lengths(client: redis.Redis, ips: list[str], lanes: int) -> list[int]:
    return [sum(int(client.llen(KEYS.back_queue(ip, lane))) for ip in ips) for lane in range(lanes)]


def run_with(url: str, job: Callable[[aioredis.Redis], Coroutine[Any, Any, Any]]) -> Any:
    async def go() -> Any:
        client = aioredis.Redis.from_url(url)
        try:
            return await job(client)
        finally:
            await client.aclose()

    return asyncio.run(go())


def gauges(url: str, cfg: FrontierConfig, now: float = 1e6) -> CrawlGauges:
    keys = ShardedKeys(CRAWL)
    return run_with(url, lambda c: read_gauges(c, keys, cfg.priorities, cfg.lanes, now))


def test_lane_counters_equal_the_back_queues_through_admit_lease_reclaim_release(
    redis_url: str, redis_client: redis.Redis
) -> None:
    cfg, clock = config(), VirtualClock()
    ips = [f"10.9.0.{n}" for n in range(1, 9)]

    async def steps(client: aioredis.Redis) -> None:
        async def check() -> None:
            lengths = lane_lengths(redis_client, ips, cfg.lanes)
            read = await read_gauges(client, ShardedKeys(CRAWL), cfg.priorities, cfg.lanes, 0)
            assert read.back_lanes == tuple(lengths)

        frontier = Frontier(client, KEYS, cfg, clock=clock)
        await frontier.admit(admits(ips, 6))  # routed by refill into back queues
        await frontier.admit(admits(ips, 6, start=6))  # IPs active: straight into lanes
        await check()
        assert sum(lane_lengths(redis_client, ips, cfg.lanes)) > 0
        first = await frontier.lease(5)
        await check()
        clock.now += 61  # the leases expire: reclaim puts them back at a lane's head
        clock.now += 1
        second = await frontier.lease(3)
        await check()
        assert first.leases and second.leases
        release = [DownloadEvent("release", lease[0], clock.now) for lease in second.leases]
        await frontier.report(release)
        await check()
        for _ in range(40):  # drain everything: the counters come back to zero
            clock.now += 2
            reply = await frontier.lease(20)
            done = [DownloadEvent("done", lease[0], clock.now) for lease in reply.leases]
            acks = [DownloadEvent("ack", lease[0], clock.now) for lease in reply.leases]
            await frontier.report(done + acks)
        await check()

    run_with(redis_url, steps)
    assert gauges(redis_url, cfg).back_lanes == (0,) * cfg.lanes


def test_a_crawl_queued_before_the_counters_is_unknown_until_its_back_queues_drain(
    redis_url: str, redis_client: redis.Redis
) -> None:
    cfg, clock = config(), VirtualClock()
    ips = ["10.9.1.1", "10.9.1.2"]

    async def queue_old_crawl(client: aioredis.Redis) -> Frontier:
        frontier = Frontier(client, KEYS, cfg, clock=clock)
        await frontier.admit(admits(ips, 3))
        # What a crawl queued before the counters holds: its lists, no counters.
        lanes = [f"lane_{lane}" for lane in range(cfg.lanes)]
        await client.hdel(KEYS.key("stats"), "lanes_counted", *lanes)
        return frontier

    run_with(redis_url, queue_old_crawl)
    assert gauges(redis_url, cfg).back_lanes is None

    async def drain_then_admit(client: aioredis.Redis) -> None:
        frontier = Frontier(client, KEYS, cfg, clock=clock)
        for _ in range(10):
            clock.now += 2
            reply = await frontier.lease(10)
            events = [DownloadEvent("done", lease[0], clock.now) for lease in reply.leases]
            await frontier.report(events + [dataclasses.replace(e, kind="ack") for e in events])
        await frontier.admit(admits(ips, 4, start=10))
        await frontier.lease(1)

    run_with(redis_url, drain_then_admit)
    assert gauges(redis_url, cfg).back_lanes == tuple(lane_lengths(redis_client, ips, cfg.lanes))


def test_bloom_generations_report_fill_and_the_estimated_false_positive_rate(
    redis_url: str, redis_client: redis.Redis
) -> None:
    base = config()
    cfg = dataclasses.replace(base, seen=dataclasses.replace(base.seen, capacity=100))
    ips = [f"10.9.2.{n}" for n in range(1, 6)]
    run_with(
        redis_url, lambda c: Frontier(c, KEYS, cfg, clock=VirtualClock()).admit(admits(ips, 30))
    )
    found = gauges(redis_url, cfg).bloom
    assert [g.generation for g in found] == [1, 2]
    raw = {as_str(k): float(v) for k, v in redis_client.hgetall(KEYS.key("seen_bloom")).items()}
    for g in found:
        k, n, m = raw[f"k{g.generation}"], raw[f"c{g.generation}"], raw[f"m{g.generation}"]
        bits = m * raw[f"s{g.generation}"]
        assert g.inserted == n and g.fill == n / raw[f"n{g.generation}"]
        blocks = int(raw[f"b{g.generation}"])
        assert g.fp_rate == pytest.approx(fp_theory(n / bits, int(k), blocks))
    assert found[0].fill == 1.0 and sum(g.inserted for g in found) == 150


def test_refusals_add_the_scripts_verdicts_and_the_workers_shared_counts() -> None:
    counters = {"pattern_cap": 3, "host_budget": 2, "admitted": 10, "lease_expired": 4}
    shared = {"frontier/rejected/blocked": 5, "frontier/rejected/filter/length": 1}
    shared["robots/failed/timeout"] = 7
    assert rejections(counters, shared) == {
        "pattern_cap": 3,
        "host_budget": 2,
        "blocked": 5,
        "filter/length": 1,
    }


def store_docs(client: redis.Redis, visits: list[tuple[float, float]]) -> None:
    """(last visit, due time) per stored URL."""
    due = KEYS.legacy_pages.recrawl_due
    for n, (at, due_at) in enumerate(visits):
        fp = f"{n:016x}"
        client.zadd(due, {fp: due_at})
        client.set(KEYS.legacy_pages.doc(fp), json.dumps({"u": f"http://d.test/{n}", "at": at}))


def test_the_recrawl_backlog_counts_due_and_overdue_by_more_than_an_interval(
    redis_url: str, redis_client: redis.Redis
) -> None:
    now = 1e6
    # Interval 100: due 50 s ago (late, not overdue), due 150 s ago (overdue), not due.
    store_docs(redis_client, [(now - 150, now - 50)] * 30 + [(now - 250, now - 150)] * 20)
    store_docs_offset = [(now, now + 100)] * 10
    for n, (at, due_at) in enumerate(store_docs_offset, start=50):
        fp = f"{n:016x}"
        redis_client.zadd(KEYS.legacy_pages.recrawl_due, {fp: due_at})
        redis_client.set(KEYS.legacy_pages.doc(fp), json.dumps({"u": "x", "at": at}))
    found = gauges(redis_url, config(), now)
    assert found.recrawl_due_now == 50
    assert found.recrawl_overdue == crawl_gauges.Overdue(20, True, 50)


def test_a_large_backlog_is_estimated_from_a_sample(
    redis_url: str, redis_client: redis.Redis
) -> None:
    now = 1e6
    store_docs(redis_client, [(now - 150, now - 50), (now - 250, now - 150)] * 1000)
    found = gauges(redis_url, config(), now)
    assert found.recrawl_due_now == 2000
    late = found.recrawl_overdue
    assert not late.exact and late.sampled == crawl_gauges.OVERDUE_SAMPLE
    assert 700 <= late.count <= 1300  # half of them, from 200 (sd ~ 70)


async def admit(client: aioredis.Redis, cfg: FrontierConfig, batch: list[AdmitItem]) -> None:
    await Frontier(client, KEYS, cfg, clock=VirtualClock()).admit(batch)


def calls(client: redis.Redis) -> dict[str, int]:
    """Commands by name since the last reset, without the connection's own hand-shake."""
    stats = client.info("commandstats")
    skip = ("cmdstat_info", "cmdstat_client", "cmdstat_hello", "cmdstat_config")
    return {k: int(v["calls"]) for k, v in stats.items() if not k.startswith(skip)}


def test_reading_the_gauges_costs_the_same_calls_whatever_the_number_of_ips(
    redis_url: str, redis_client: redis.Redis
) -> None:
    cfg = config()
    seen: list[dict[str, int]] = []
    for n_ips in (10, 1000):
        redis_client.flushall()
        batch = admits([f"10.{n // 250}.{n % 250}.1" for n in range(n_ips)], 2)
        run_with(redis_url, partial(admit, cfg=cfg, batch=batch))
        redis_client.config_resetstat()
        gauges(redis_url, cfg)
        seen.append(calls(redis_client))
    # One shard: its stats, each front queue, the Bloom hash; then crawl-wide: the
    # workers' counts, the due URLs (none: no sample), the failing robots origins.
    assert seen[0] == seen[1]
    assert seen[0] == {
        "cmdstat_hgetall": 3,
        "cmdstat_llen": cfg.priorities,
        "cmdstat_zcount": 1,
        "cmdstat_hlen": 1,
    }


def test_a_sharded_crawl_sums_its_lanes_and_lists_each_shards_bloom(
    redis_url: str, redis_client: redis.Redis
) -> None:
    cfg, keys = config(), ShardedKeys(CRAWL, 3)
    ips = [f"10.9.3.{n}" for n in range(1, 31)]

    async def admit_and_read(client: aioredis.Redis) -> CrawlGauges:
        frontier = ShardedFrontier(client, keys, cfg, VirtualClock())
        await frontier.admit(admits(ips, 4))
        await frontier.lease(7)
        return await read_gauges(client, keys, cfg.priorities, cfg.lanes, 0)

    found = run_with(redis_url, admit_and_read)
    lengths = [
        sum(int(redis_client.llen(keys.for_ip(ip).back_queue(ip, lane))) for ip in ips)
        for lane in range(cfg.lanes)
    ]
    assert found.back_lanes == tuple(lengths) and sum(lengths) > 0
    assert sorted(g.shard for g in found.bloom) == [0, 1, 2]
    assert sum(g.inserted for g in found.bloom) == 120
