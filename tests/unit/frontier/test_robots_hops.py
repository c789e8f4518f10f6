"""A robots.txt redirect hop to another host goes out on an IP charged for that host
(frontier/hops.py), through the real scheduler on a real Redis and a virtual clock: a
lease of its own on the target's IP, reported 'done' and acked; the lease's own IP for
a host on it; nothing at all for a refused address or an IP not due in time."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from scrapy import Request

from extensions.frontier.core import DownloadEvent
from extensions.robots.verdicts import DISALLOW_ALL, RULES
from tests.unit.frontier.scheduler_harness import (
    Engine,
    VirtualClock,
    close,
    lease_now,
    open_scheduler,
    settle,
    until,
)

A_ROBOTS = "http://a.test/robots.txt"
B_ROBOTS = "http://b.test/robots.txt"
RULES_TXT = "User-agent: *\nDisallow: /private\n"
MOVED = (301, "", {"Location": B_ROBOTS})


def hop_settings(settings: Any, b_ip: str = "127.0.0.2", **values: Any) -> dict[str, Any]:
    return settings(
        ROBOTS_ENABLED=True,
        ROBOTS_SITEMAPS=False,
        DNS_HOSTS_MAP={"a.test": "127.0.0.1", "b.test": b_ip},
        **values,
    )


def serve_moved_robots(engine: Engine) -> None:
    engine.pages[A_ROBOTS] = MOVED
    engine.pages[B_ROBOTS] = (200, RULES_TXT)


async def ip_state(scheduler: Any, ip: str) -> dict[str, str]:
    frontier = scheduler.session.frontier
    raw = await frontier.redis.hgetall(frontier.keys.ip_state(ip))
    return {k.decode(): v.decode() for k, v in raw.items()}


def verdict_of_a(scheduler: Any) -> Any:
    return scheduler.session.dispatch.robots.verdict("http://a.test")


def test_a_hop_to_a_host_on_another_ip_takes_a_lease_there(settings) -> None:
    async def go() -> tuple[Any, ...]:
        clock = VirtualClock(start=time.time())
        scheduler, engine, _ = await open_scheduler(hop_settings(settings), clock)
        serve_moved_robots(engine)
        scheduler.enqueue_request(Request("http://a.test/page"))
        await lease_now(scheduler)
        await settle(scheduler.session)
        b_state = await ip_state(scheduler, "127.0.0.2")
        leases = await scheduler.session.frontier.redis.zcard(
            scheduler.session.frontier.keys.key("leases")
        )
        verdict, stats = verdict_of_a(scheduler), scheduler.stats.get_stats()
        await close(scheduler)
        return engine.downloads, b_state, leases, verdict, stats

    downloads, b_state, leases, verdict, stats = asyncio.run(go())
    first, hop = downloads
    assert first.url == A_ROBOTS and first.meta["frontier_ip"] == "127.0.0.1"
    assert hop.url == B_ROBOTS
    assert (hop.meta["frontier_ip"], hop.meta["download_slot"]) == ("127.0.0.2", "127.0.0.2")
    assert hop.meta["frontier_ip_host"] == "b.test"  # the download handler connects there
    assert hop.meta["frontier_lease"].startswith("127.0.0.2#")
    assert hop.meta["frontier_robots"] == "http://a.test"
    # Reported: b.test's IP was charged (last_end) and freed, the hop's lease acked.
    assert b_state["inflight"] == "0" and float(b_state["last_end"]) > 0
    assert leases == 0  # the page's lease was released, the hop's acked
    assert verdict.kind == RULES  # b.test's rules are a.test's verdict
    assert not verdict.allows("http://a.test/private/x", "crawlproj")
    assert stats["robots/hop/leased"] == 1 and stats["robots/redirect"] == 1


def test_a_hop_to_another_host_on_the_same_ip_goes_out_under_the_lease(settings) -> None:
    async def go() -> tuple[Any, ...]:
        clock = VirtualClock(start=time.time())
        values = hop_settings(settings, b_ip="127.0.0.1", FRONTIER_DELAY=0.01)
        scheduler, engine, _ = await open_scheduler(values, clock)
        serve_moved_robots(engine)
        scheduler.enqueue_request(Request("http://a.test/page"))
        await lease_now(scheduler)
        verdict, stats = verdict_of_a(scheduler), scheduler.stats.get_stats()
        await close(scheduler)
        return engine.downloads, verdict, stats

    (first, hop), verdict, stats = asyncio.run(go())
    assert hop.meta["frontier_lease"] == first.meta["frontier_lease"]
    assert hop.meta["frontier_ip_host"] == "b.test"
    assert verdict.kind == RULES
    assert stats["robots/hop/same_key"] == 1 and "robots/hop/leased" not in stats


def test_a_hop_to_a_refused_address_is_never_sent(settings) -> None:
    async def go() -> tuple[Any, ...]:
        clock = VirtualClock(start=time.time())
        scheduler, engine, _ = await open_scheduler(hop_settings(settings, "10.0.0.9"), clock)
        serve_moved_robots(engine)
        scheduler.enqueue_request(Request("http://a.test/page"))
        await lease_now(scheduler)
        verdict, stats = verdict_of_a(scheduler), scheduler.stats.get_stats()
        await close(scheduler)
        return engine.downloads, verdict, stats

    downloads, verdict, stats = asyncio.run(go())
    assert [r.url for r in downloads] == [A_ROBOTS]
    assert verdict.kind == DISALLOW_ALL  # unreachable: a complete disallow for a while
    assert stats["robots/hop/refused"] == 1


def test_a_hop_whose_ip_is_not_due_within_the_fetch_timeout_is_given_up(settings) -> None:
    async def go() -> tuple[Any, ...]:
        clock = VirtualClock(start=time.time())
        values = hop_settings(settings, ROBOTS_FETCH_TIMEOUT=10.0)
        scheduler, engine, _ = await open_scheduler(values, clock)
        serve_moved_robots(engine)
        frontier = scheduler.session.frontier
        # b.test's IP is backing off for longer than the hop may wait.
        await frontier.redis.hset(
            frontier.keys.ip_state("127.0.0.2"), "blocked_until", clock() + 60
        )
        scheduler.enqueue_request(Request("http://a.test/page"))
        await lease_now(scheduler)
        verdict, stats = verdict_of_a(scheduler), scheduler.stats.get_stats()
        await close(scheduler)
        return engine.downloads, verdict, stats

    downloads, verdict, stats = asyncio.run(go())
    assert [r.url for r in downloads] == [A_ROBOTS]
    assert verdict.kind == DISALLOW_ALL
    assert stats["robots/hop/not_due"] == 1


def test_a_hop_waits_for_the_fetch_in_flight_on_its_ip_and_the_delay(settings) -> None:
    delay = 0.2

    async def go() -> tuple[Any, ...]:
        clock = VirtualClock(start=time.time())
        scheduler, engine, _ = await open_scheduler(
            hop_settings(settings, FRONTIER_DELAY=delay), clock
        )
        serve_moved_robots(engine)
        session = scheduler.session
        busy = await session.frontier.lease_ip("127.0.0.2", clock.now)  # b.test busy
        scheduler.enqueue_request(Request("http://a.test/page"))
        await settle(session)  # admitted; nothing leased yet
        session.leasing.kick()  # the robots.txt fetch stays in flight: no settle here
        await until(lambda: scheduler.stats.get_value("robots/hop/waited", 0) >= 1)
        downloads_while_busy = len(engine.downloads)
        ended = clock.now = clock.now + 1.0
        await session.frontier.report(
            [
                DownloadEvent("done", busy.lease_id, ended, 200),
                DownloadEvent("ack", busy.lease_id, ended),
            ]
        )
        waited_at_end = scheduler.stats.get_value("robots/hop/waited")
        clock.now = ended + delay
        await until(lambda: len(engine.downloads) == 2)
        await settle(session)
        b_state = await ip_state(scheduler, "127.0.0.2")
        await close(scheduler)
        return downloads_while_busy, waited_at_end, engine.downloads, b_state, ended

    while_busy, waited, downloads, b_state, ended = asyncio.run(go())
    assert while_busy == 1  # nothing went to b.test while its fetch was in flight
    assert waited >= 1
    assert downloads[1].url == B_ROBOTS
    assert float(b_state["last_start"]) >= ended + delay  # the delay after the other fetch


def test_inside_host_ip_networks_a_hop_to_a_host_on_the_same_ip_takes_its_own_key(
    settings,
) -> None:
    async def go() -> tuple[Any, ...]:
        clock = VirtualClock(start=time.time())
        values = hop_settings(settings, b_ip="127.0.0.1", FRONTIER_HOST_IP_NETWORKS="127.0.0.0/24")
        scheduler, engine, _ = await open_scheduler(values, clock)
        serve_moved_robots(engine)
        scheduler.enqueue_request(Request("http://a.test/page"))
        await lease_now(scheduler)
        await settle(scheduler.session)
        b_state = await ip_state(scheduler, "127.0.0.1@b.test")
        await close(scheduler)
        return engine.downloads, b_state

    (first, hop), b_state = asyncio.run(go())
    assert first.meta["download_slot"] == "127.0.0.1@a.test"
    # b.test has its own politeness key on the address: charged there, not a.test's.
    assert (hop.meta["download_slot"], hop.meta["frontier_ip"]) == ("127.0.0.1@b.test", "127.0.0.1")
    assert hop.meta["frontier_lease"].startswith("127.0.0.1@b.test#")
    assert b_state["inflight"] == "0" and float(b_state["last_end"]) > 0
